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
            if len == 0 {
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
    spec.offset
        .saturating_add(u64::from(clone).saturating_mul(spec.offset_increment))
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
