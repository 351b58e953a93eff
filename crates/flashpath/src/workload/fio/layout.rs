//! Where a job file's files live on the simulated device, as fio lays
//! them out before it runs (filesetup.c): one region per distinct file.

use crate::error::{InputError, Result};
use crate::workload::fio::{IoEngine, JobFile, JobSpec};
use std::collections::BTreeMap;

/// Where a job's files live on the device: consecutive regions, one per
/// distinct file name, in order of first use. A job on a raw device path
/// (`/dev/...`) without a size uses the whole device.
///
/// A file shared by several jobs is as long as the farthest any of them
/// reaches (offset + size): fio extends a regular file a later job needs
/// past its end (filesetup.c setup_files: `f->file_offset + f->io_size >
/// f->real_file_size` makes it extend the file). A file that only
/// null-engine jobs use needs no room on the device (engines/null.c does no
/// I/O and opens nothing, FIO_DISKLESSIO): it is laid out in an address
/// space of its own, past the device's end, whatever its size.
pub fn layout(jobs: &JobFile, capacity: u64) -> Result<Vec<Vec<(u64, u64)>>> {
    const ALIGN: u64 = 1 << 20;
    // Pass 1: each file's extent over every clone that uses it, and
    // whether only the null engine touches it.
    let mut extent: BTreeMap<String, (u64, bool)> = BTreeMap::new();
    // Files a fill_device job writes: they end where the device is full.
    let mut fills: BTreeMap<String, ()> = BTreeMap::new();
    for spec in &jobs.jobs {
        for clone in 0..spec.numjobs.max(1) {
            let (key, raw_device, size) = file_of(spec, clone, capacity)?;
            let size = match size {
                Some(s) => s,
                // No size: the file an earlier job made, at its size
                // (fio sizes an existing file from the file system).
                None => match extent.get(&key) {
                    Some((reach, _)) if *reach > 0 => 0,
                    _ => return Err(no_size(jobs, spec)),
                },
            };
            let reach = clone_offset(spec, clone).saturating_add(size);
            let null = spec.ioengine == IoEngine::Null && !raw_device;
            if spec.fill_device && !raw_device {
                fills.insert(key.clone(), ());
            }
            let e = extent.entry(key).or_insert((0, true));
            e.0 = e.0.max(reach);
            e.1 &= null;
        }
    }
    let mut files: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut next = 0u64;
    // Diskless files start past the largest device address, so that no
    // offset of theirs can be mistaken for the device's.
    let mut next_diskless = capacity.div_ceil(ALIGN).saturating_mul(ALIGN);
    let mut out = Vec::new();
    for spec in &jobs.jobs {
        let mut per_clone = Vec::new();
        for clone in 0..spec.numjobs.max(1) {
            let (key, raw_device, size) = file_of(spec, clone, capacity)?;
            let region = match files.get(&key) {
                Some(r) => *r,
                None => {
                    let (reach, diskless) = extent[&key];
                    let len = if raw_device {
                        capacity
                    } else if fills.contains_key(&key) {
                        // fill_device: the file grows until the device is
                        // full, and its writes end there (ENOSPC): the room
                        // left, or less when its size is smaller.
                        reach
                            .div_ceil(ALIGN)
                            .saturating_mul(ALIGN)
                            .min(capacity.saturating_sub(next))
                    } else {
                        reach.div_ceil(ALIGN).saturating_mul(ALIGN)
                    };
                    let start = if raw_device {
                        0
                    } else if diskless {
                        next_diskless
                    } else {
                        next
                    };
                    if !diskless && start.saturating_add(len) > capacity {
                        return Err(InputError::new(
                            jobs.path.clone(),
                            Some(spec.line),
                            format!(
                                "job '{}': its files need {} bytes past offset {} but the device has {} bytes",
                                spec.name, len, start, capacity
                            ),
                        ));
                    }
                    if diskless {
                        next_diskless = start.saturating_add(len);
                    } else if !raw_device {
                        next = start + len;
                    }
                    files.insert(key, (start, len));
                    (start, len)
                }
            };
            let offset = clone_offset(spec, clone);
            let len = size
                .unwrap_or(u64::MAX)
                .min(region.1.saturating_sub(offset));
            if len == 0 && !offset_past_end(spec, clone, region.1) {
                return Err(InputError::new(
                    jobs.path.clone(),
                    Some(spec.line),
                    format!(
                        "job '{}': offset {} leaves no room in its file",
                        spec.name, offset
                    ),
                ));
            }
            // The stream places the clone's area inside its file itself
            // (offset, offset_increment, size): it gets the whole file.
            per_clone.push(region);
        }
        out.push(per_clone);
    }
    Ok(out)
}

/// Where clone `clone` starts in its file: offset_increment places clone i
/// at offset + i * increment (fio's get_start_offset).
fn clone_offset(spec: &JobSpec, clone: u32) -> u64 {
    spec.clone_offset(clone)
}

/// Whether fio 3.33 fails clone `clone` as it sets its file up because
/// the clone starts past the end of a raw device of `capacity` bytes
/// (filesetup.c setup_files: without size=, ->io_size is 0, and a
/// `->file_offset` past `->real_file_size` goes to err_offset, "you need
/// to specify valid offset="). fio runs the job's other clones; the failed
/// one does no I/O, is left out of the normal report (it did none), is in
/// the JSON with zeros, and counts in fio's exit status (seen with the
/// real fio 3.33 on a 1 GiB loop device, offset_increment=124m,
/// numjobs=30: 9 clones ran, 21 failed, exit status 21). With size= the
/// clone is not failed here (its I/O past the end fails instead), and the
/// null engine's file has no size to be past (-1).
pub fn offset_past_end(spec: &JobSpec, clone: u32, capacity: u64) -> bool {
    spec.size.is_none()
        && spec.size_percent.is_none()
        && spec.filesize.is_none()
        && spec.ioengine != IoEngine::Null
        && spec.trace.is_none()
        && spec.read_iolog.is_none()
        && spec.iolog.is_none()
        && spec
            .filename
            .as_deref()
            .is_some_and(|f| f.starts_with("/dev/"))
        && spec.clone_offset(clone) > capacity
}

/// `offset=N%` in bytes, as fio 3.33 computes it when it sets a job's
/// files up (filesetup.c get_start_offset): N% of the file's real size
/// (`f->real_file_size`, from get_file_sizes), then rounded up per clone
/// (`JobSpec::clone_offset`). The real size is:
///
/// - the null engine's (it opens nothing, even a `/dev/` path):
///   `size / nrfiles` (get_file_sizes sets a size it could not read to
///   that); without `size=` it stays -1 and fio fails the job ("you need
///   to specify valid offset=");
/// - a raw device's: its capacity (bdev_size);
/// - a regular file's: 0, as the file does not exist yet when fio sizes
///   it (stat's ENOENT is cleared and the size left at 0), so the job
///   starts at 0. A file an earlier job section also uses may exist by
///   then, depending on which job fio sets up first: not modelled.
pub fn resolve_offset_percent(jobs: &mut JobFile, capacity: u64) -> Result<()> {
    let mut seen: BTreeMap<String, ()> = BTreeMap::new();
    for i in 0..jobs.jobs.len() {
        let spec = &jobs.jobs[i];
        let shared = spec.filename.as_ref().is_some_and(|f| seen.contains_key(f));
        if let Some(f) = &spec.filename {
            seen.insert(f.clone(), ());
        }
        let Some(p) = spec.offset_percent else {
            continue;
        };
        if p == 0 {
            // start_offset_percent 0 is no percentage: the plain offset.
            jobs.jobs[i].offset_percent = None;
            continue;
        }
        let raw_device = spec
            .filename
            .as_deref()
            .is_some_and(|f| f.starts_with("/dev/"));
        let fail = |what: &str| {
            Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!("job '{}': {what}", spec.name),
            ))
        };
        if spec.zones.mode != super::job::ZoneMode::None {
            // zonemode aligns a job's area to zones (zbd.rs) before this
            // runs; a percentage's offset would miss that alignment.
            return fail("offset=N% with zonemode is not modelled by flashpath");
        }
        let real = if spec.trace.is_some() || spec.read_iolog.is_some() {
            // An iolog's offsets are its own (filesetup.c setup_files
            // skips the sizing for read_iolog).
            0
        } else if spec.ioengine == IoEngine::Null {
            match spec.size {
                Some(s) => s / u64::from(spec.nrfiles.max(1)),
                None => {
                    return fail(
                        "offset=N% with ioengine=null and no size=: fio 3.33 takes the file's \
                         size as -1 and fails the job (fio: \"you need to specify valid offset=\")",
                    )
                }
            }
        } else if raw_device {
            capacity
        } else if shared {
            return fail(
                "offset=N% on a file an earlier job also uses (its size when fio sets this job \
                 up depends on which job fio sets up first) is not modelled by flashpath",
            );
        } else {
            0
        };
        let spec = &mut jobs.jobs[i];
        spec.offset = (u128::from(real) * u128::from(p) / 100) as u64;
        spec.offset_percent = None;
        spec.offset_aligned = true;
    }
    Ok(())
}

/// The reach of a fill_device file: all the room the device has left.
const FILL: u64 = u64::MAX;

fn no_size(jobs: &JobFile, spec: &JobSpec) -> InputError {
    InputError::new(
        jobs.path.clone(),
        Some(spec.line),
        format!(
            "job '{}': you need to specify size= (fio: \"you need to specify size=\")",
            spec.name
        ),
    )
}

/// A clone's file: its name, whether it is a raw device, and the bytes the
/// clone does in it (None: no size, the file's own if an earlier job made
/// it; FILL: fill_device, all the device has left).
fn file_of(spec: &JobSpec, clone: u32, capacity: u64) -> Result<(String, bool, Option<u64>)> {
    let (key, raw_device) = match &spec.filename {
        // A block trace's addresses are the device's, whatever file
        // replay_redirect names (fio opens it as the trace's device).
        Some(f) => (f.clone(), f.starts_with("/dev/") || spec.trace.is_some()),
        None => (format!("{}.{}.0", spec.name, clone), false),
    };
    let size = match (spec.size, spec.filesize) {
        // init.c fixup_options: fill_device without size= sets the size
        // to -1: writes go on until the file system is full (ENOSPC).
        (None, None) if spec.fill_device && !raw_device => Some(FILL),
        (Some(s), _) => Some(s),
        (None, Some(f)) => Some(f.saturating_mul(u64::from(spec.nrfiles.max(1)))),
        (None, None) if raw_device => Some(capacity.saturating_sub(spec.offset)),
        (None, None) => None,
    };
    Ok((key, raw_device, size))
}
