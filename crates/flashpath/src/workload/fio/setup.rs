//! The checks fio 3.33 makes on a job file before its jobs run (init.c
//! add_job and fixup_options, filesetup.c, backend.c's allocations), and
//! what flashpath refuses because it does not model it: a job file fio
//! refuses, or one flashpath cannot simulate faithfully, is refused with
//! the reason before anything is simulated.

use crate::block::QueueSettings;
use crate::error::{InputError, Result};
use crate::workload::fio::{BlockSize, IoEngine, JobFile, JobSpec, RandomDistribution, ZoneMode};
use crate::workload::Ddir;

/// fio 3.33 keeps its jobs in shared-memory segments of 8 (JOBS_PER_SEG)
/// and stops at 512 (REAL_MAX_SEG, fio.h; add_thread_segment refuses the
/// last): every job and clone of a file must fit in 511 * 8.
const FIO_MAX_JOBS: u64 = 511 * 8;

/// What fio 3.33 allocates per iodepth slot besides its buffer: the io_u
/// (backend.c init_io_u, measured: 440 bytes a slot at iodepth=1000000).
const IO_U_BYTES: u64 = 448;

/// fio's shared-memory pool (smalloc.c: 16 pools of 16 MiB) holds each
/// file's struct fio_file and name; about 896 bytes a file (fio 3.33 runs
/// out at 299,218 to 300,000 files with short names).
const SMALLOC_BYTES: u64 = 16 * (16 << 20);
const SMALLOC_PER_FILE: u64 = 896;

/// O_DIRECT needs sizes and offsets in whole logical blocks, 512 bytes at
/// the least (SECTOR_SIZE); a disk with larger blocks is checked again once
/// the machine is built (`check_direct_blocks`).
const DIRECT_ALIGN: u64 = 512;

/// The checks fio 3.33 makes when it sets the jobs up (init.c add_job and
/// fixup_options) and when they start: a job file fio refuses is refused.
pub fn check_fio_setup(jobs: &JobFile) -> Result<()> {
    let at = |spec: &JobSpec, what: String| {
        Err(InputError::new(
            jobs.path.clone(),
            Some(spec.line),
            format!("job '{}': {what}", spec.name),
        ))
    };
    if jobs.jobs.is_empty() {
        return Err(InputError::new(
            jobs.path.clone(),
            None,
            "No job(s) defined (fio: the file has no job section, only global ones or none)",
        ));
    }
    let mut total_jobs = 0u64;
    let mut files = 0u64;
    for spec in &jobs.jobs {
        // init.c add_job: numjobs=0 clones until the slots run out.
        let clones = if spec.numjobs == 0 {
            u64::MAX
        } else {
            u64::from(spec.numjobs)
        };
        total_jobs = total_jobs.saturating_add(clones);
        if total_jobs > FIO_MAX_JOBS {
            return at(
                spec,
                format!(
                    "numjobs={}: fio 3.33 has room for {FIO_MAX_JOBS} jobs and clones in all \
                     (\"error: maximum number of jobs reached\")",
                    spec.numjobs
                ),
            );
        }
        files = files.saturating_add(clones.saturating_mul(u64::from(spec.nrfiles.max(1))));
        if files.saturating_mul(SMALLOC_PER_FILE) > SMALLOC_BYTES {
            return at(
                spec,
                format!(
                    "nrfiles={}: fio 3.33's shared pool holds about {} files in all \
                     (\"smalloc: OOM\")",
                    spec.nrfiles,
                    SMALLOC_BYTES / SMALLOC_PER_FILE
                ),
            );
        }
        // fixup_options: a size below the smallest block size.
        let min_bs = spec.bs.iter().map(|b| b.bounds().0).min().unwrap_or(4096);
        if let Some(size) = spec.size.filter(|s| *s > 0 && *s < min_bs) {
            return at(
                spec,
                format!(
                    "size too small, must not be less than minimum block size: {size} < {min_bs}"
                ),
            );
        }
        // filesetup.c setup_files: the size is at most what the files
        // hold (filesize each).
        if let Some(filesize) = spec.filesize {
            let total = filesize.saturating_mul(u64::from(spec.nrfiles.max(1)));
            let size = spec.size.filter(|s| *s > 0 && *s <= total).unwrap_or(total);
            if size < min_bs {
                return at(
                    spec,
                    format!(
                        "blocksize is larger than data set range ({size} bytes of files, \
                         blocks of {min_bs})"
                    ),
                );
            }
        }
        // engines/cmdprio.c fio_cmdprio_init: the engine's init fails.
        if spec.cmdprio_bssplit.is_some() && spec.cmdprio_percentage.iter().any(|p| *p > 0) {
            return at(
                spec,
                "cmdprio_percentage and cmdprio_bssplit options are mutually exclusive".into(),
            );
        }
        // backend.c thread_main: ioprio_set with the job's class and level.
        if let Some(why) = spec.ioprio_error() {
            return at(spec, why);
        }
        if spec.rate.iter().any(|r| *r > 0) && spec.rate_iops.iter().any(|r| *r > 0) {
            return at(spec, "rate and rate_iops are mutually exclusive".into());
        }
        for (d, (rate, min)) in spec.rate.iter().zip(&spec.rate_min).enumerate() {
            if *rate > 0 && rate < min {
                return at(spec, format!("minimum rate exceeds rate, ddir {d}"));
            }
        }
        check_direct_alignment(spec, DIRECT_ALIGN).or_else(|what| at(spec, what))?;
        // fixup_options on the zone options.
        let z = &spec.zones;
        if z.mode == crate::workload::fio::ZoneMode::None && z.size > 0 {
            return at(
                spec,
                "fio: --zonemode=none and --zonesize are not compatible.".into(),
            );
        }
        if z.mode == crate::workload::fio::ZoneMode::Strided && z.size == 0 {
            return at(
                spec,
                "fio: --zonesize must be specified when using --zonemode=strided.".into(),
            );
        }
        // io_u.c __get_next_rand_offset_zoned_abs: a zone past the end of
        // the file fails the job's I/O.
        if let RandomDistribution::ZonedAbs(zones) = &spec.random_distribution {
            let zones_end = zones.iter().fold(0u64, |a, z| a.saturating_add(z.1));
            let file = spec
                .filesize
                .or(spec.size.map(|s| s / u64::from(spec.nrfiles.max(1))));
            if let Some(file) = file.filter(|f| spec.rw.is_random() && zones_end > *f) {
                return at(
                    spec,
                    format!(
                        "zoned_abs sizes exceed file size ({zones_end} bytes of zones, \
                         {file} bytes of file)"
                    ),
                );
            }
        }
    }
    Ok(())
}

/// O_DIRECT I/O that is not whole sectors fails with EINVAL: fio's first
/// I/O errors ("first direct IO errored", err=22; a real run on ext4 with
/// bs=100 and direct=1). The null engine does no I/O and never fails, nor
/// do falloc's fallocate and ftruncate's ftruncate, which take any byte
/// range whatever the file's flags.
fn check_direct_alignment(spec: &JobSpec, align: u64) -> std::result::Result<(), String> {
    if !spec.direct || !spec.ioengine.moves_data() {
        return Ok(());
    }
    let misaligned = |v: u64| !v.is_multiple_of(align);
    for d in Ddir::ALL.iter().filter(|d| spec.rw.has(**d)) {
        let bad = match &spec.bs[d.index()] {
            BlockSize::Fixed(b) => misaligned(*b).then_some(*b),
            BlockSize::Range { min, max } => [*min, *max]
                .into_iter()
                .find(|b| misaligned(*b) || (spec.bs_unaligned && min != max)),
            BlockSize::Split(v) => v.iter().map(|e| e.0).find(|b| misaligned(*b)),
        };
        if let Some(b) = bad {
            return Err(format!(
                "direct=1 with a block size of {b} bytes: O_DIRECT I/O must be whole \
                 {align}-byte sectors; fio's first I/O fails with EINVAL \
                 (\"first direct IO errored\", err=22)"
            ));
        }
    }
    for (what, v) in [
        ("offset", spec.offset),
        ("offset_increment", spec.offset_increment),
        ("the rw= offset step", spec.rw_seq_add.unsigned_abs()),
    ] {
        if misaligned(v) {
            return Err(format!(
                "direct=1 with {what} {v}: O_DIRECT I/O must start on a {align}-byte \
                 sector; fio's I/O fails with EINVAL (err=22)"
            ));
        }
    }
    Ok(())
}

/// O_DIRECT on a disk whose logical blocks are larger than a sector (a UFS
/// LU's 4 KiB): the block layer refuses an I/O that is not whole logical
/// blocks with EINVAL, on the raw device (block/fops.c
/// blkdev_dio_invalid: `(pos | count) & (bdev_logical_block_size - 1)`)
/// and through a file system on it alike (fs/iomap/direct-io.c checks the
/// same size), so fio's first I/O errors as it does for a size that is not
/// whole sectors. Passthrough engines (sg, libzbc, io_uring_cmd) bypass
/// that check; `check_passthrough` makes theirs.
pub fn check_direct_blocks(jobs: &JobFile, logical_block: u32, disk: &str) -> Result<()> {
    if u64::from(logical_block) <= DIRECT_ALIGN {
        return Ok(());
    }
    let passthrough =
        |e: IoEngine| matches!(e, IoEngine::Sg | IoEngine::Libzbc | IoEngine::IoUringCmd);
    for spec in jobs.jobs.iter().filter(|s| !passthrough(s.ioengine)) {
        if let Err(what) = check_direct_alignment(spec, u64::from(logical_block)) {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!("job '{}': {what} ({disk}'s logical block size)", spec.name),
            ));
        }
    }
    Ok(())
}

/// What fio allocates for a job before it runs: its io_us and buffers
/// (iodepth of each, backend.c init_io_u and init_io_u_buffers), and the
/// random map of a random job (one bit per block, filesetup.c
/// init_random_map). fio fails the job when that is more than the machine
/// has ("unable to allocate aligned memory", "failed allocating random
/// map"); flashpath refuses it against the simulated host's memory.
pub fn check_memory(jobs: &JobFile, regions: &[Vec<(u64, u64)>], memory: u64) -> Result<()> {
    let mut total = 0u64;
    for (si, spec) in jobs.jobs.iter().enumerate() {
        let max_bs = spec.bs.iter().map(|b| b.bounds().1).max().unwrap_or(4096);
        let min_bs = spec
            .bs
            .iter()
            .map(|b| b.bounds().0)
            .min()
            .unwrap_or(4096)
            .max(1);
        let buffers = u64::from(spec.iodepth).saturating_mul(IO_U_BYTES.saturating_add(max_bs));
        // An LFSR job has no map (filesetup.c init_random_map).
        let map = if spec.rw.is_random()
            && !spec.norandommap
            && !spec.lfsr
            && spec.random_distribution == RandomDistribution::Random
        {
            regions[si].first().map_or(0, |r| r.1 / min_bs / 8)
        } else {
            0
        };
        let each = buffers.saturating_add(map);
        total = total.saturating_add(each.saturating_mul(u64::from(spec.numjobs.max(1))));
        if total > memory {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': fio would allocate {each} bytes for it (iodepth {} of {} \
                     byte buffers and io_us, and its random map), more than the host's {memory} \
                     bytes of memory; fio's job fails (\"unable to allocate aligned memory\", \
                     ENOMEM)",
                    spec.name, spec.iodepth, max_bs
                ),
            ));
        }
    }
    Ok(())
}

/// verify_state_load: before any job starts, fio opens each loading
/// job's state file, `local-NAME-N-verify.state` (N: the job's thread
/// number less one, clones counted) in its working directory (backend.c
/// fio_verify_load_state, verify.c open_state_file), and fails the run
/// when it is not there; flashpath looks beside the job file (as for
/// `include`). A state file that is there would make the verify phase
/// check only the writes it records (verify.c verify_state_should_stop):
/// flashpath writes none and reads none, so that job is refused.
pub fn check_verify_state(jobs: &JobFile, dir: &std::path::Path) -> Result<()> {
    let mut thread = 0u32;
    for spec in &jobs.jobs {
        for _ in 0..spec.numjobs.max(1) {
            if spec.verify_state_load {
                let name = format!("local-{}-{thread}-verify.state", spec.name);
                let path = dir.join(&name);
                let why = if path.exists() {
                    format!(
                        "job '{}': verify_state_load with the state file {name} there (the verify \
                         would check only the writes it records) is not modelled by flashpath",
                        spec.name
                    )
                } else {
                    format!(
                        "job '{}': verify_state_load=1: open state file: No such file or directory \
                         (fio: \"open state file: No such file or directory\", \"state file: \
                         {name} (for_write=0)\")",
                        spec.name
                    )
                };
                return Err(InputError::new(jobs.path.clone(), Some(spec.line), why));
            }
            thread += 1;
        }
    }
    Ok(())
}

/// What fio runs but flashpath does not simulate (yet): refused with the
/// option named, rather than simulated wrongly.
pub fn check_modelled(jobs: &JobFile) -> Result<()> {
    super::e4defrag::check_e4defrag(jobs)?;
    for (si, spec) in jobs.jobs.iter().enumerate() {
        // init.c wait_for_ok: the waitee is one job defined before this one.
        if let Some(w) = &spec.wait_for {
            let name = &spec.name;
            let earlier = jobs.jobs[..si].iter().filter(|j| j.name == *w).count();
            let why = if w == name {
                Some(format!(
                    "{name}: a job cannot wait for itself (wait_for={w})."
                ))
            } else if earlier == 0 {
                Some(format!("{name}: waitee job {w} unknown."))
            } else if earlier > 1 {
                Some(format!(
                    "{name}: multiple waitees {w} found, please avoid duplicates when using wait_for option."
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(InputError::new(jobs.path.clone(), Some(spec.line), why));
            }
        }
        // engines/ftruncate.c fio_ftruncate_queue: anything but a write is
        // EINVAL, and fio ends the job at its first I/O (the real fio 3.33:
        // "err=22/file:ioengines.c:399, func=td_io_queue, error=Invalid
        // argument").
        if spec.ioengine == IoEngine::Ftruncate
            && (spec.rw.has(Ddir::Read) || spec.rw.has(Ddir::Trim))
        {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': ioengine=ftruncate does only writes (engines/ftruncate.c); fio \
                     fails the job's first read or trim: func=td_io_queue, error=Invalid argument",
                    spec.name
                ),
            ));
        }
        let unmodelled = [
            // The report prints every second of the steady-state window
            // (stat.c): a window above a day is refused rather than printed.
            (
                spec.steadystate.dur > 86_400,
                "steadystate_duration (ss_dur) above 86400 s (one day)",
            ),
            // fill_device on a regular file: fio writes until the file
            // system is full and ends the job at ENOSPC (td->error cleared);
            // the layout gives the file the room left, so a sequential
            // write ends there. Another pattern, or time_based (which would
            // wrap around here), is not modelled.
            (
                spec.fill_device
                    && !spec
                        .filename
                        .as_deref()
                        .is_some_and(|f| f.starts_with("/dev/"))
                    && (spec.time_based || spec.rw != super::RwKind::Write),
                "fill_device=1 on a file with anything but a sequential write (rw=write) \
                 or with time_based",
            ),
            // size=N% takes N% of the file's real size (filesetup.c
            // setup_files): a raw device's capacity is modelled; a file
            // that does not exist yet has no size, and fio fails the job
            // ("you need to specify size=", from the layout); a file fio
            // would first create at filesize= is not modelled.
            (
                spec.size_percent.is_some() && spec.filesize.is_some(),
                "size=N% with filesize=",
            ),
            (
                spec.file_service.0 == super::FileService::Skewed,
                "file_service_type=zipf, pareto, normal or gauss (a skewed draw of files)",
            ),
            // Left on by fixup_options only for an inline job that writes
            // or trims at iodepth > 1 (or replays an iolog): fio then
            // holds back an I/O that overlaps one of the job's own in
            // flight (backend.c io_u_submit returns FIO_Q_BUSY).
            (
                spec.serialize_overlap && !spec.io_submit_offload,
                "serialize_overlap=1 without io_submit_mode=offload (on a job that writes \
                 or trims at iodepth > 1, or replays an iolog)",
            ),
            (
                spec.write_iolog.is_some() && spec.numjobs > 1,
                "write_iolog with numjobs > 1",
            ),
        ];
        if let Some((_, what)) = unmodelled.iter().find(|(set, _)| *set) {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!("job '{}': {what} is not modelled by flashpath", spec.name),
            ));
        }
        let buffered = !spec.direct && spec.ioengine.moves_data();
        if spec.io_submit_offload {
            check_offload(jobs, spec, buffered)?;
        }
        // io_uring's buffered calls are modelled one at a time per thread
        // (machine/buffered.rs): a read that waits for its pages, or a
        // write an io-wq worker runs, while fio queues more is not.
        let refused = if buffered && spec.ioengine == IoEngine::IoUring && spec.iodepth > 1 {
            Some("io_uring with buffered I/O (direct=0) at iodepth > 1 (several calls in the page cache at once: reads waiting on page-unlock callbacks, writes on io-wq workers) is not modelled by flashpath; set iodepth=1 or direct=1")
        } else if spec.sqthread_poll && spec.hipri {
            Some("sqthread_poll with hipri (IORING_SETUP_SQPOLL with IORING_SETUP_IOPOLL: the SQ thread polls for the completions, io_uring/sqpoll.c __io_sq_thread) is not modelled by flashpath")
        } else if spec.sqthread_poll && buffered {
            Some("sqthread_poll with buffered I/O (direct=0: the SQ thread runs the page-cache calls and punts to io-wq) is not modelled by flashpath; set direct=1")
        } else if spec.o_sync && buffered {
            Some("sync=1 / sync=dsync with direct=0 (O_SYNC buffered writes: a writeback and a cache flush in every write) is not modelled by flashpath; set direct=1")
        } else if spec.fsync_blocks > 0 && spec.ioengine == IoEngine::Null {
            Some("fsync=N / fdatasync=N with ioengine=null (fio opens no file to sync) is not modelled by flashpath")
        } else if spec.end_fsync && spec.ioengine == IoEngine::Null {
            Some("end_fsync / fsync_on_close with ioengine=null (fio opens no file to sync) is not modelled by flashpath")
        } else {
            None
        };
        if let Some(what) = refused {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!("job '{}': {what}", spec.name),
            ));
        }
    }
    Ok(())
}

/// io_submit_mode=offload as fio 3.33 runs it (rate-submit.c,
/// `machine/offload.rs`). fio refuses the engines flagged FIO_NO_OFFLOAD
/// (io_uring, io_uring_cmd: ioengines.c check_engine_ops, then "failed to
/// load engine"); flashpath models the submit workers for the null
/// engine, the synchronous engines and libaio on direct I/O, and refuses
/// by name what it does not model with them.
fn check_offload(jobs: &JobFile, spec: &JobSpec, buffered: bool) -> Result<()> {
    let refuse = |what: String| {
        Err(InputError::new(
            jobs.path.clone(),
            Some(spec.line),
            format!("job '{}': {what}", spec.name),
        ))
    };
    if matches!(spec.ioengine, IoEngine::IoUring | IoEngine::IoUringCmd) {
        return refuse(format!(
            "{}: can't be used with offloaded submit. Use a sync engine (fio 3.33 then fails \
             with 'failed to load engine')",
            spec.ioengine.fio_name()
        ));
    }
    let modelled = matches!(
        spec.ioengine,
        IoEngine::Null
            | IoEngine::Sync
            | IoEngine::Psync
            | IoEngine::Vsync
            | IoEngine::Pvsync
            | IoEngine::Pvsync2
            | IoEngine::Libaio
    );
    let unmodelled = [
        (
            !modelled,
            "an engine other than null, the sync engines and libaio",
        ),
        (buffered, "buffered I/O (direct=0)"),
        (spec.hipri, "hipri"),
        (
            spec.fsync_blocks > 0 || spec.end_fsync,
            "fsync=N, fdatasync=N or end_fsync",
        ),
        (spec.iodepth_batch_submit > 1, "iodepth_batch_submit > 1"),
        (spec.read_iolog.is_some(), "read_iolog"),
        (spec.zones.mode != super::job::ZoneMode::None, "zonemode"),
        (spec.verify.is_some(), "verify"),
        (spec.latency_target > 0, "latency_target"),
    ];
    if let Some((_, what)) = unmodelled.iter().find(|(set, _)| *set) {
        return refuse(format!(
            "io_submit_mode=offload with {what} is not modelled by flashpath"
        ));
    }
    Ok(())
}

/// The sg engine needs a SCSI disk's device file: on a regular file fio
/// 3.33 fails its type check ("ioengine sg only works on block or
/// character devices", EINVAL), and on a block device whose driver does
/// not take SG_IO the READ CAPACITY it sends fails with ENOTTY
/// (engines/sg.c fio_sgio_get_file_size; a real run on a loop device
/// prints its line and "error=Success"). On a SCSI disk (`sg_lbs`: its
/// logical block size) every I/O's length must be whole blocks, or
/// fio_sgio_prep fails it with EINVAL ("read/write not sector aligned")
/// before any command: flashpath refuses any of these jobs with fio's
/// line.
///
/// io_uring_cmd needs an NVMe namespace's generic character device
/// (/dev/ngXnY): fio 3.33 refuses any other file ("only works with nvme
/// ns generic char devices"), and a character device that is not an NVMe
/// namespace fails its NVME_IOCTL_ID ("failed to fetch namespace-id").
///
/// libzbc needs a zoned SCSI disk (`zoned`: the disk reports zones):
/// fio's libzbc_open_dev refuses other files ("ioengine libzbc only works
/// on block or character devices") and opens the disk with libzbc's SCSI
/// and ATA backends only (zbc_open with ZBC_O_DRV_SCSI | ZBC_O_DRV_ATA),
/// which fail on a disk that does not take SG_IO (its INQUIRY's ioctl
/// fails with ENOTTY, lib/zbc_sg.c) and on a SCSI disk that is not zoned
/// (lib/zbc_scsi.c zbc_scsi_classify; libzbc 6.2): fio prints
/// "zbc_open() failed".
pub fn check_passthrough(
    jobs: &JobFile,
    sg_lbs: Option<u32>,
    zoned: bool,
    nvme: bool,
    disk: &str,
) -> Result<()> {
    for spec in jobs.jobs.iter().filter(|s| s.ioengine.passthrough()) {
        let uring = spec.ioengine == IoEngine::IoUringCmd;
        let zbc = spec.ioengine == IoEngine::Libzbc;
        let why = match &spec.filename {
            Some(f) if zbc && f.starts_with("/dev/") => match sg_lbs {
                Some(_) if zoned => continue,
                Some(_) => format!(
                    "{f} ({disk}) is a SCSI disk that is not zoned, which libzbc does not \
                     open: fio '{f}: zbc_open() failed'"
                ),
                None => format!(
                    "{f} is not a SCSI or ATA disk ({disk}'s driver answers SG_IO with ENOTTY, \
                     so libzbc's INQUIRY fails): fio '{f}: zbc_open() failed, err=-25'"
                ),
            },
            _ if zbc => "ioengine libzbc only works on block or character devices (fio: wrong \
                         file type, EINVAL); name the zoned disk with filename=/dev/..."
                .to_string(),
            _ if uring && spec.zone_append && spec.zones.mode != ZoneMode::Zbd => {
                "write_mode=zone_append needs zonemode=zbd (fio: 'io_uring_cmd with \
                 write_mode=zone_append requires zonemode=zbd')"
                    .to_string()
            }
            Some(f) if uring && f.starts_with("/dev/ng") && nvme => continue,
            Some(f) if uring && f.starts_with("/dev/ng") => format!(
                "{f} is not an NVMe namespace's generic character device ({disk}'s driver has \
                 none: fio 'failed to fetch namespace-id')"
            ),
            _ if uring => "ioengine io_uring_cmd only works with nvme ns generic char devices \
                           (/dev/ngXnY) (fio 3.33); name it with filename=/dev/ng0n1"
                .to_string(),
            Some(f) if f.starts_with("/dev/") => match sg_lbs {
                Some(lbs) => match sg_misaligned(spec, lbs) {
                    None => continue,
                    Some(b) => format!(
                        "a {b}-byte I/O is not whole {lbs}-byte logical blocks of {f} \
                         ({disk}): fio 'read/write not sector aligned' (EINVAL, err=22) \
                         at its first I/O"
                    ),
                },
                None => format!(
                    "{f} is not a SCSI disk ({disk}'s driver answers SG_IO with ENOTTY): fio \
                     'ioengine sg unable to successfully execute read capacity to get block \
                     size and maximum lba'"
                ),
            },
            _ => "ioengine sg only works on block or character devices (fio: wrong file type, \
                  EINVAL); name the disk with filename=/dev/..."
                .to_string(),
        };
        return Err(InputError::new(
            jobs.path.clone(),
            Some(spec.line),
            format!(
                "job '{}': ioengine={}: {why}",
                spec.name,
                spec.ioengine.fio_name()
            ),
        ));
    }
    Ok(())
}

/// A block size of the job's that is not whole `lbs`-byte blocks, as
/// fio_sgio_prep checks each I/O's `xfer_buflen & (sd->bs - 1)`.
fn sg_misaligned(spec: &JobSpec, lbs: u32) -> Option<u64> {
    let bad = |b: u64| !b.is_multiple_of(u64::from(lbs));
    Ddir::ALL
        .iter()
        .filter(|d| spec.rw.has(**d))
        .find_map(|d| match &spec.bs[d.index()] {
            BlockSize::Fixed(b) => bad(*b).then_some(*b),
            BlockSize::Range { min, max } => [*min, *max].into_iter().find(|b| bad(*b)),
            BlockSize::Split(v) => v.iter().map(|e| e.0).find(|b| bad(*b)),
        })
}

/// A polled submission (hipri with pvsync2's RWF_HIPRI or io_uring's
/// IOPOLL) on a queue that cannot poll: kernels with the poll-queue check in
/// submit_bio_noacct fail every such I/O with EOPNOTSUPP, and fio stops the
/// job with err=95 (the real run in fixtures/fio/real-runs/iouring-hipri).
/// flashpath refuses the job up front rather than simulate a run of errors.
pub fn check_polled(jobs: &JobFile, settings: &QueueSettings, driver_can_poll: bool) -> Result<()> {
    if !settings.polled_without_poll_fails || (settings.io_poll && driver_can_poll) {
        return Ok(());
    }
    let polled = |spec: &&JobSpec| {
        spec.hipri
            && matches!(
                spec.ioengine,
                IoEngine::Pvsync2 | IoEngine::IoUring | IoEngine::IoUringCmd
            )
    };
    match jobs.jobs.iter().find(polled) {
        None => Ok(()),
        Some(spec) => {
            let why = if driver_can_poll {
                "the queue has io_poll=0 (set block.io_poll=1)"
            } else {
                "this device's driver has no poll queues"
            };
            Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': hipri asks for polled completion but {why}; this host's kernel \
                     fails such I/O with EOPNOTSUPP (fio: err=95, Operation not supported) \
                     (block.polled_without_poll_queue=eopnotsupp); drop hipri or set that key \
                     to 'interrupt' for a kernel without the check",
                    spec.name
                ),
            ))
        }
    }
}
