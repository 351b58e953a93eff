//! fio's e4defrag engine (engines/e4defrag.c, fio 3.33): what fio refuses
//! before or at the job's first I/O, and the file state the kernel's move
//! depends on. The move itself is machine/defrag.rs.
//!
//! fio_e4defrag_init opens the donor (`directory`/`donorname`) and, unless
//! `inplace=1`, fallocates it over `[start_offset, file_size_high)`;
//! fio_e4defrag_queue fails anything but a write with EINVAL, and sends
//! each write as one EXT4_IOC_MOVE_EXT (fs/ext4/ioctl.c), which a block
//! device's driver does not know.

use crate::error::{InputError, Result};
use crate::workload::fio::{IoEngine, JobFile, JobSpec};
use crate::workload::Ddir;
use std::collections::BTreeMap;

/// The e4defrag jobs of a job file that fio 3.33 fails, with fio's own
/// words, and the ones whose move flashpath does not model (see
/// machine/defrag.rs: the model is the move of unwritten extents).
pub fn check_e4defrag(jobs: &JobFile) -> Result<()> {
    // The first job to use a file lays it out (fio's setup_files runs for
    // each job in job order before any starts, create_serialize=1): with
    // data when that job reads it or has overwrite=1 (filesetup.c
    // extend_file `new_layout`), else unlinked and fallocated (fio's
    // default fallocate=native: unwritten extents).
    let mut creator: BTreeMap<String, &JobSpec> = BTreeMap::new();
    for spec in &jobs.jobs {
        for clone in 0..spec.numjobs.max(1) {
            creator.entry(file_key(spec, clone)).or_insert(spec);
        }
    }
    for spec in jobs
        .jobs
        .iter()
        .filter(|s| s.ioengine == IoEngine::E4defrag)
    {
        let fail = |why: String| {
            Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!("job '{}': {why}", spec.name),
            ))
        };
        if spec.donorname.as_deref().is_none_or(str::is_empty) {
            return fail(
                "ioengine=e4defrag needs donorname= (fio 3.33: \"'donorname' options required\", \
                 \"fio: io engine e4defrag init failed.\")"
                    .into(),
            );
        }
        if let Some(why) = init_fallocate_fails(spec) {
            return fail(format!(
                "{why}; fio fails the job at start: err=22/file:engines/e4defrag.c:113, \
                 func=io_queue_init, error=Invalid argument"
            ));
        }
        if spec.rw.has(Ddir::Read) || spec.rw.has(Ddir::Trim) {
            return fail(
                "ioengine=e4defrag does only writes (engines/e4defrag.c fio_e4defrag_queue); \
                 fio fails the job's first read or trim: func=td_io_queue, error=Invalid argument"
                    .into(),
            );
        }
        // A write job that verifies reads its data back through its engine
        // (backend.c do_verify, or verify_backlog's reads as it writes):
        // the first such read fails as any e4defrag read does (the real fio
        // 3.33 with verify=md5: err=22 at td_io_queue).
        if spec.verify.is_some() && spec.do_verify && (!spec.time_based || spec.verify_backlog > 0)
        {
            return fail(
                "ioengine=e4defrag with verify= reads the data back through the engine, which \
                 does only writes; fio fails the first verify read: func=td_io_queue, \
                 error=Invalid argument"
                    .into(),
            );
        }
        if let Some(dev) = spec.filename.as_deref().filter(|f| f.starts_with("/dev/")) {
            return fail(format!(
                "ioengine=e4defrag needs a regular file on ext4, not the block device {dev}: \
                 the block driver does not know EXT4_IOC_MOVE_EXT and fio fails the job's \
                 first I/O with its answer (func=td_io_queue, error=Invalid argument on a \
                 loop device)"
            ));
        }
        for clone in 0..spec.numjobs.max(1) {
            let key = file_key(spec, clone);
            let Some(first) = creator.get(&key) else {
                continue;
            };
            if first.overwrite || first.rw.has(Ddir::Read) {
                return fail(format!(
                    "ioengine=e4defrag on '{key}', a file fio lays out with data (overwrite=1, \
                     or its first job reads it), is not modelled by flashpath: the kernel reads \
                     each page of the range and leaves it dirty (fs/ext4/move_extent.c \
                     move_extent_per_page's data copy); flashpath models the move of the \
                     unwritten extents fio's own layout of a write job gives"
                ));
            }
            if let Some(why) = layout_fails(first.fallocate) {
                return fail(format!(
                    "'{key}' is laid out with fallocate={} ({why}), where the first move fails: \
                     fio fails the job's first write: {}",
                    first.fallocate,
                    if first.fallocate == "truncate" {
                        "err=61, func=td_io_queue, error=No data available"
                    } else {
                        "err=22, func=td_io_queue, error=Invalid argument"
                    }
                ));
            }
        }
    }
    Ok(())
}

/// Why a write job's file laid out with this fallocate= mode has nothing
/// for EXT4_IOC_MOVE_EXT to move (filesetup.c extend_file without
/// new_layout; the real fio 3.33 on ext4: none and keep fail the first
/// move with EINVAL, truncate with ENODATA). native and posix give the
/// unwritten extents the model moves.
fn layout_fails(fallocate: &str) -> Option<&'static str> {
    match fallocate {
        "none" => Some("the file is created empty"),
        "keep" => Some("FALLOC_FL_KEEP_SIZE leaves its size 0"),
        "truncate" => Some("ftruncate leaves it a hole"),
        _ => None,
    }
}

/// Why fio_e4defrag_init's fallocate(donor, 0, start_offset,
/// file_size_high - start_offset) fails, if it does: with `inplace=0`, a
/// length of 0 or less is EINVAL. Without filesize= fio's file_size_high
/// is 0 (measured: size=8M alone fails at e4defrag.c:113).
fn init_fallocate_fails(spec: &JobSpec) -> Option<String> {
    if spec.inplace {
        return None;
    }
    match spec.filesize {
        None => Some(
            "ioengine=e4defrag with inplace=0 needs filesize= (the donor is fallocated over \
             [offset, filesize) at start; without filesize= that length is 0)"
                .into(),
        ),
        Some(f) if f <= spec.offset => Some(format!(
            "ioengine=e4defrag with inplace=0 fallocates the donor over [offset, filesize) at \
             start, an empty range here (offset={}, filesize={f})",
            spec.offset
        )),
        Some(_) => None,
    }
}

/// The file a clone of the job uses, as fio names it (a job without
/// filename= has its own, jobname.clone.0: filesetup.c).
fn file_key(spec: &JobSpec, clone: u32) -> String {
    match &spec.filename {
        Some(f) => match &spec.directory {
            Some(d) if !f.starts_with('/') => format!("{d}/{f}"),
            _ => f.clone(),
        },
        None => format!("{}.{}.0", spec.name, clone),
    }
}
