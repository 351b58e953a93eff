//! Where a job file's files live on the simulated device, as fio lays
//! them out before it runs (filesetup.c): one region per distinct file.

use crate::error::{InputError, Result};
use crate::workload::fio::{IoEngine, JobFile};
use std::collections::BTreeMap;

/// Where a job's files live on the device: consecutive regions, one per
/// distinct file name, in order of first use. A job on a raw device path
/// (`/dev/...`) without a size uses the whole device.
pub fn layout(jobs: &JobFile, capacity: u64) -> Result<Vec<Vec<(u64, u64)>>> {
    const ALIGN: u64 = 1 << 20;
    let mut files: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut next = 0u64;
    let mut out = Vec::new();
    for spec in &jobs.jobs {
        let mut per_clone = Vec::new();
        for clone in 0..spec.numjobs.max(1) {
            let (key, raw_device) = match &spec.filename {
                Some(f) => (f.clone(), f.starts_with("/dev/")),
                None => (format!("{}.{}.0", spec.name, clone), false),
            };
            let size = match (spec.size, spec.filesize) {
                (Some(s), _) => s,
                (None, Some(f)) => f * u64::from(spec.nrfiles.max(1)),
                (None, None) if raw_device => capacity.saturating_sub(spec.offset),
                (None, None) => {
                    return Err(InputError::new(
                        jobs.path.clone(),
                        Some(spec.line),
                        format!(
                        "job '{}': you need to specify size= (fio: \"you need to specify size=\")",
                        spec.name
                    ),
                    ))
                }
            };
            let region = match files.get(&key) {
                Some(r) => *r,
                None => {
                    // The file holds every clone's area: offset_increment
                    // places clone i at offset + i * increment (fio's
                    // get_start_offset).
                    let span = spec
                        .offset
                        .saturating_add(
                            u64::from(spec.numjobs.max(1) - 1)
                                .saturating_mul(spec.offset_increment),
                        )
                        .saturating_add(size);
                    let len = if raw_device {
                        capacity
                    } else {
                        span.div_ceil(ALIGN).saturating_mul(ALIGN)
                    };
                    let start = if raw_device { 0 } else { next };
                    if start.saturating_add(len) > capacity {
                        // fio's null engine needs no space (it does no
                        // I/O); flashpath still lays its files out.
                        let why = if spec.ioengine == IoEngine::Null {
                            "; a null-engine file larger than the simulated device is not \
                             modelled by flashpath"
                        } else {
                            ""
                        };
                        return Err(InputError::new(
                            jobs.path.clone(),
                            Some(spec.line),
                            format!(
                                "job '{}': its files need {} bytes past offset {} but the device has {} bytes{why}",
                                spec.name, len, start, capacity
                            ),
                        ));
                    }
                    if !raw_device {
                        next = start + len;
                    }
                    files.insert(key, (start, len));
                    (start, len)
                }
            };
            let offset = spec
                .offset
                .saturating_add(u64::from(clone).saturating_mul(spec.offset_increment));
            let len = size.min(region.1.saturating_sub(offset));
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
