//! A fio job as fio resolves it: every option that shapes the simulated I/O,
//! in fio's units (bytes, nanoseconds), after global sections, includes,
//! variables and arithmetic have been applied.

use crate::types::Op;
use crate::workload::Ddir;

/// rw= / readwrite=.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwKind {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// rw / readwrite: sequential mixed reads and writes.
    ReadWrite,
    /// randrw.
    RandReadWrite,
    /// trimwrite: trim then write the same block.
    TrimWrite,
    /// randtrimwrite.
    RandTrimWrite,
}

/// How a job with several files picks the file of its next I/O
/// (file_service_type, io_u.c __get_next_file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileService {
    /// roundrobin (fio's default): the next open file in turn.
    RoundRobin,
    /// sequential: each file until it is done, then the next.
    Sequential,
    /// random: a file drawn uniformly (get_next_file_rand).
    Random,
    /// zipf, pareto, normal, gauss: a skewed draw (not modelled).
    Skewed,
}

/// fio's fadvise_hint values (options.c: "0", "1", "random",
/// "sequential"; default "1").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FadviseHint {
    /// "0": no posix_fadvise call.
    None,
    /// "1": POSIX_FADV_RANDOM for random patterns, else SEQUENTIAL
    /// (ioengines.c td_io_open_file).
    ByPattern,
    Random,
    Sequential,
}

impl RwKind {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwKind::RandRead
                | RwKind::RandWrite
                | RwKind::RandTrim
                | RwKind::RandReadWrite
                | RwKind::RandTrimWrite
        )
    }

    /// Which directions this pattern can issue.
    pub fn has(self, d: Ddir) -> bool {
        use RwKind::*;
        match d {
            Ddir::Read => matches!(self, Read | RandRead | ReadWrite | RandReadWrite),
            Ddir::Write => matches!(
                self,
                Write | RandWrite | ReadWrite | RandReadWrite | TrimWrite | RandTrimWrite
            ),
            Ddir::Trim => matches!(self, Trim | RandTrim | TrimWrite | RandTrimWrite),
        }
    }

    /// The pattern an `rw=` word names (options.c's posvals; `readwrite`
    /// is `rw`).
    pub fn from_fio_word(word: &str) -> Option<RwKind> {
        use RwKind::*;
        Some(match word {
            "read" => Read,
            "write" => Write,
            "trim" => Trim,
            "randread" => RandRead,
            "randwrite" => RandWrite,
            "randtrim" => RandTrim,
            "rw" | "readwrite" => ReadWrite,
            "randrw" => RandReadWrite,
            "trimwrite" => TrimWrite,
            "randtrimwrite" => RandTrimWrite,
            _ => return None,
        })
    }

    /// fio's name, as printed in the normal output header.
    pub fn fio_name(self) -> &'static str {
        use RwKind::*;
        match self {
            Read => "read",
            Write => "write",
            Trim => "trim",
            RandRead => "randread",
            RandWrite => "randwrite",
            RandTrim => "randtrim",
            ReadWrite => "rw",
            RandReadWrite => "randrw",
            TrimWrite => "trimwrite",
            RandTrimWrite => "randtrimwrite",
        }
    }
}

/// Block size choice for one direction.
#[derive(Clone, Debug, PartialEq)]
pub enum BlockSize {
    Fixed(u64),
    /// bsrange=min-max: uniform, in multiples of min (fio's get_next_buflen).
    Range {
        min: u64,
        max: u64,
    },
    /// bssplit: (size, percent) pairs; percents of 0 share the remainder.
    Split(Vec<(u64, u32)>),
}

impl BlockSize {
    /// The smallest and the largest size it gives (fio's min_bs, max_bs).
    pub fn bounds(&self) -> (u64, u64) {
        match self {
            BlockSize::Fixed(b) => (*b, *b),
            BlockSize::Range { min, max } => (*min, *max),
            BlockSize::Split(v) => (
                v.iter().map(|e| e.0).min().unwrap_or(4096),
                v.iter().map(|e| e.0).max().unwrap_or(4096),
            ),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    Sync,
    Psync,
    Vsync,
    Pvsync,
    Pvsync2,
    Libaio,
    IoUring,
    PosixAio,
    Null,
    /// fio's sg engine on a SCSI disk's block device: each I/O one SG_IO
    /// ioctl (engines/sg.c fio_sgio_ioctl_doio; FIO_SYNCIO | FIO_RAWIO),
    /// a passthrough request the block layer does not schedule, merge,
    /// plug or count in the disk's statistics.
    Sg,
    /// fio's io_uring_cmd engine with cmd_type=nvme (engines/io_uring.c,
    /// fio 3.33): NVMe commands passed through io_uring on the namespace's
    /// generic character device /dev/ngXnY (IORING_OP_URING_CMD ->
    /// nvme_ns_chr_uring_cmd): asynchronous like io_uring, each I/O a
    /// passthrough request as sg's.
    IoUringCmd,
    /// fio's libzbc engine (engines/libzbc.c, FIO_SYNCIO | FIO_RAWIO, fio
    /// built with libzbc): each read or write one zbc_pread / zbc_pwrite,
    /// which libzbc's SCSI backend sends as one SG_IO READ(16)/WRITE(16)
    /// on a zoned SCSI disk (lib/zbc_scsi.c): a passthrough request as
    /// sg's. Its zones are libzbc's REPORT ZONES (zone capacity = zone
    /// size: ZBC has none) and its trims zbc_reset_zone's.
    Libzbc,
    /// fio's falloc engine (engines/falloc.c, FIO_SYNCIO): each I/O one
    /// fallocate(2) on the file's range, a read with FALLOC_FL_KEEP_SIZE, a
    /// write with mode 0, a trim with FALLOC_FL_KEEP_SIZE |
    /// FALLOC_FL_PUNCH_HOLE. It moves no data: a system call, no request.
    Falloc,
    /// fio's ftruncate engine (engines/ftruncate.c, FIO_SYNCIO |
    /// FIO_FAKEIO): each write one ftruncate(2) of the file to the I/O's
    /// offset; a read or a trim fails with EINVAL. No data moves.
    Ftruncate,
    /// fio's e4defrag engine (engines/e4defrag.c, FIO_SYNCIO): each write
    /// one EXT4_IOC_MOVE_EXT ioctl that swaps the file's blocks in the
    /// range with the donor file's (`donorname`), after a fallocate(2) of
    /// the donor's range when `inplace=1` and followed by its
    /// ftruncate(2) to 0; a read or a trim fails with EINVAL. The kernel's
    /// side is machine/defrag.rs.
    E4defrag,
}

impl IoEngine {
    /// Engines whose I/O is a single system call on the file that moves no
    /// data (falloc, ftruncate): no page cache, no request, no device I/O.
    /// e4defrag's ioctl moves no data through the job's buffer either (the
    /// kernel's own page cache work is machine/defrag.rs's).
    pub fn syscall_only(self) -> bool {
        matches!(
            self,
            IoEngine::Falloc | IoEngine::Ftruncate | IoEngine::E4defrag
        )
    }

    /// Engines that move data: a buffered job's I/O goes through the page
    /// cache. The null engine (no I/O) and the syscall-only ones do not.
    pub fn moves_data(self) -> bool {
        !(self == IoEngine::Null || self.syscall_only())
    }

    /// Engines whose I/O is a passthrough request (a device command built
    /// from the user's buffer, not a bio).
    pub fn passthrough(self) -> bool {
        matches!(self, IoEngine::Sg | IoEngine::IoUringCmd | IoEngine::Libzbc)
    }
}

impl IoEngine {
    /// Synchronous engines: one I/O per system call, the thread blocks in it
    /// (fio's FIO_SYNCIO), so iodepth is effectively 1 and slat is not
    /// recorded.
    pub fn is_sync(self) -> bool {
        matches!(
            self,
            IoEngine::Sync
                | IoEngine::Psync
                | IoEngine::Vsync
                | IoEngine::Pvsync
                | IoEngine::Pvsync2
                | IoEngine::Sg
                | IoEngine::Libzbc
                | IoEngine::Falloc
                | IoEngine::Ftruncate
                | IoEngine::E4defrag
        )
    }

    /// The modelled engine an `ioengine=` name names.
    pub fn from_fio_name(name: &str) -> Option<IoEngine> {
        Some(match name {
            "sync" => IoEngine::Sync,
            "psync" => IoEngine::Psync,
            "vsync" => IoEngine::Vsync,
            "pvsync" => IoEngine::Pvsync,
            "pvsync2" => IoEngine::Pvsync2,
            "libaio" => IoEngine::Libaio,
            "io_uring" => IoEngine::IoUring,
            "posixaio" => IoEngine::PosixAio,
            "null" => IoEngine::Null,
            "sg" => IoEngine::Sg,
            "io_uring_cmd" => IoEngine::IoUringCmd,
            "libzbc" => IoEngine::Libzbc,
            "falloc" => IoEngine::Falloc,
            "ftruncate" => IoEngine::Ftruncate,
            "e4defrag" => IoEngine::E4defrag,
            _ => return None,
        })
    }

    pub fn fio_name(self) -> &'static str {
        match self {
            IoEngine::Sync => "sync",
            IoEngine::Psync => "psync",
            IoEngine::Vsync => "vsync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::PosixAio => "posixaio",
            IoEngine::Null => "null",
            IoEngine::Sg => "sg",
            IoEngine::IoUringCmd => "io_uring_cmd",
            IoEngine::Libzbc => "libzbc",
            IoEngine::Falloc => "falloc",
            IoEngine::Ftruncate => "ftruncate",
            IoEngine::E4defrag => "e4defrag",
        }
    }
}

/// The sg engine's command for a write (engines/sg.c fio_sgio_prep, fio
/// 3.33's `sg_write_mode`); write_stream (WRITE STREAM(16)) is refused
/// at the option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SgWriteMode {
    /// WRITE(10), or WRITE(16) past MAX_10B_LBA.
    Write,
    /// WRITE AND VERIFY(10/16) with BYTCHK 0 (`write_and_verify`, and
    /// its deprecated alias `verify`).
    WriteVerify,
    /// WRITE SAME(10/16): one block of data out (`dxfer_len = sd->bs`).
    WriteSame,
    /// WRITE SAME(16) with NDOB: no data out.
    WriteSameNdob,
    /// VERIFY(10/16) with BYTCHK 00b, 01b or 11b.
    Verify(u8),
}

impl SgWriteMode {
    /// The mode an `sg_write_mode=` word names (its option's values).
    pub fn from_fio_name(word: &str) -> Option<SgWriteMode> {
        Some(match word {
            "write" => SgWriteMode::Write,
            "write_and_verify" | "verify" => SgWriteMode::WriteVerify,
            "write_same" => SgWriteMode::WriteSame,
            "write_same_ndob" => SgWriteMode::WriteSameNdob,
            "verify_bytchk_00" => SgWriteMode::Verify(0),
            "verify_bytchk_01" => SgWriteMode::Verify(1),
            "verify_bytchk_11" => SgWriteMode::Verify(3),
            _ => return None,
        })
    }

    /// The command a write of this mode is.
    pub fn op(self) -> Op {
        match self {
            SgWriteMode::Write => Op::Write,
            SgWriteMode::WriteVerify => Op::WriteVerify,
            SgWriteMode::WriteSame => Op::WriteSame { ndob: false },
            SgWriteMode::WriteSameNdob => Op::WriteSame { ndob: true },
            SgWriteMode::Verify(bytchk) => Op::Verify { bytchk },
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    Linear,
    Poisson,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RandomDistribution {
    Random,
    Zipf(f64),
    Pareto(f64),
    /// normal:<dev percent>
    Normal(f64),
    /// zoned: (access percent, size percent) per zone.
    Zoned(Vec<(f64, f64)>),
    /// zoned_abs: (access percent, size in bytes) per zone, from the
    /// file's start.
    ZonedAbs(Vec<(f64, u64)>),
}

/// fio's data placement interface (`dataplacement=`, dataplacement.h
/// FIO_DP_*): fio 3.38's options, absent from fio 3.33.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpKind {
    #[default]
    None,
    /// NVMe Flexible Data Placement: directive type 2h, DSPEC the
    /// placement identifier.
    Fdp,
    /// NVMe Streams: directive type 1h, DSPEC the stream id.
    Streams,
}

/// How fio picks each write's placement id (`plid_select=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpSelect {
    #[default]
    RoundRobin,
    Random,
}

/// fio 3.38's data placement options (`fdp`, `dataplacement`, `plids`,
/// `plid_select`; fio 3.34 added `fdp` and `fdp_pli`, 3.35
/// `fdp_pli_select`, 3.38 `dataplacement`, `plids`, `plid_select` as the
/// names with the old ones as aliases).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataPlacement {
    /// `fdp=1`.
    pub fdp: bool,
    /// `dataplacement=` when given.
    pub kind: Option<DpKind>,
    /// `plids=`: the placement id indices (FDP) or stream ids, sorted as
    /// str_fdp_pli_cb sorts them; the device's placement identifiers once
    /// the run's setup has read the namespace's handles.
    pub ids: Vec<u16>,
    pub select: DpSelect,
}

impl DataPlacement {
    /// The interface in effect (init.c fixup_options: `fdp=1` is
    /// dataplacement=fdp).
    pub fn kind(&self) -> DpKind {
        if self.fdp {
            DpKind::Fdp
        } else {
            self.kind.unwrap_or_default()
        }
    }
}

/// One direction's cmdprio_bssplit: (block size, percent, ioprio value or
/// None for cmdprio_class/cmdprio).
pub type CmdprioBssplit = Vec<(u64, u32, Option<u16>)>;

/// One job section, resolved. `numjobs` clones are made by the simulator.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub name: String,
    pub description: Option<String>,
    /// 1-based line of the `[section]` header, for messages.
    pub line: u32,
    /// Options written in this job's own section, as written (after
    /// `$keyword` substitution), in order; bare flags are left out. This is
    /// fio's JSON "job options".
    pub own_options: Vec<(String, String)>,

    pub rw: RwKind,
    /// The `:N` suffix of rw (sequential: skip N bytes after each I/O;
    /// random: a new random offset only every N I/Os). 0 = none.
    pub rw_nr: u64,
    /// rwmixread percent (rwmixwrite = 100 - this).
    pub rwmixread: u32,
    /// Per direction: read, write, trim.
    pub bs: [BlockSize; 3],

    /// size= in bytes (None: the whole file / device region).
    pub size: Option<u64>,
    /// filesize= per file (None: size / nrfiles).
    pub filesize: Option<u64>,
    pub offset: u64,
    pub offset_increment: u64,
    /// io_size / io_limit: bytes of I/O to do (None: size).
    pub io_size: Option<u64>,
    pub number_ios: Option<u64>,
    pub loops: u32,

    pub iodepth: u32,
    /// io_submit_mode=offload: submit workers run the engine (fio's
    /// rate-submit.c; `machine/offload.rs`).
    pub io_submit_offload: bool,
    /// serialize_overlap, after init.c fixup_options (which clears it for
    /// an inline job that cannot overlap itself); with offload, checked
    /// across every job of the run (rate-submit.c check_overlap;
    /// `machine/overlap.rs`).
    pub serialize_overlap: bool,
    /// iodepth= was given (fio_option_is_set): a blktrace replay without
    /// it takes the depth fio probes from the trace (blktrace.c).
    pub iodepth_set: bool,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    pub iodepth_batch_complete_max: u32,
    pub iodepth_low: u32,
    pub numjobs: u32,
    pub ioengine: IoEngine,
    pub direct: bool,
    /// invalidate (default 1): drop the file's cached pages at open.
    pub invalidate: bool,
    /// end_fsync or fsync_on_close: fsync the file before the job ends.
    pub end_fsync: bool,
    /// sync=1 / sync / dsync: the file is opened O_SYNC or O_DSYNC (fio's
    /// filesetup.c), so a direct write on a block device carries REQ_FUA
    /// (block/fops.c dio_bio_write_op: iocb_is_dsync).
    pub o_sync: bool,
    /// fsync=N / fdatasync=N: a sync after every N writes (0: none).
    pub fsync_blocks: u32,
    /// fadvise_hint: the advice fio gives the kernel at open.
    pub fadvise_hint: FadviseHint,
    /// file_service_type and its `:N` (td->file_service_nr: the I/Os a
    /// picked file gets before the next pick; atoi, so 0 and negative
    /// values wrap as fio's unsigned int does).
    pub file_service: (FileService, u32),
    /// mem= / iomem=: how fio allocates the I/O buffers (their physical
    /// contiguity sets a request's DMA segments).
    pub io_mem: crate::mm::thp::IoMem,
    pub hipri: bool,
    /// io_uring's sqthread_poll: the ring is set up with
    /// IORING_SETUP_SQPOLL (engines/io_uring.c fio_ioring_queue_init), a
    /// kernel thread takes the SQEs (`machine/sqpoll.rs`).
    pub sqthread_poll: bool,
    /// sqthread_poll_cpu: IORING_SETUP_SQ_AFF with sq_thread_cpu, the CPU
    /// the SQ thread is bound to.
    pub sqthread_poll_cpu: Option<u64>,
    /// sg_write_mode=: the SCSI command the sg engine sends for a write.
    pub sg_write_mode: SgWriteMode,
    /// io_uring_cmd's write_mode=zone_append (fio after 3.41, commit
    /// ebf4b46d): its writes are NVMe Zone Appends.
    pub zone_append: bool,
    /// e4defrag's donorname=: the donor file (in `directory`), None when
    /// not given (engines/e4defrag.c fio_e4defrag_init fails the job).
    pub donorname: Option<String>,
    /// e4defrag's inplace=1: the donor's range is fallocated before each
    /// move and the donor truncated to 0 after it.
    pub inplace: bool,
    /// overwrite=1: fio lays a file out by writing it (filesetup.c
    /// extend_file `new_layout`); only e4defrag's model depends on it.
    pub overwrite: bool,
    /// fallocate=: how fio allocates a file it lays out (none, native,
    /// posix, keep, truncate; fio 3.33's default native, the aliases 0 and
    /// 1 read as none and posix). Only e4defrag's model depends on it.
    pub fallocate: &'static str,
    /// prioclass= and prio=: the class and level fio's thread sets with
    /// ioprio_set before its I/O (backend.c thread_main); None when
    /// neither is given.
    pub prioclass: Option<u32>,
    pub prio: Option<u32>,
    /// cmdprio_percentage, cmdprio_class, cmdprio per direction (read,
    /// write; engines/cmdprio.h): the share of I/Os that carry the
    /// command priority (class 0: unset, RT as fio_cmdprio_parse_and_gen
    /// makes it).
    pub cmdprio_percentage: [u32; 2],
    pub cmdprio_class: [u16; 2],
    pub cmdprio_level: [u16; 2],
    /// cmdprio_bssplit, per direction: (block size, percent, ioprio value
    /// or None for cmdprio_class/cmdprio), zero-percent entries left out,
    /// sorted by block size (options.c split_parse_prio_ddir); None when
    /// the option is not given.
    pub cmdprio_bssplit: Option<[CmdprioBssplit; 2]>,
    /// Data placement (fio 3.38's FDP and streams options).
    pub placement: DataPlacement,
    /// ioscheduler=: the scheduler fio switches the device's queue to
    /// (backend.c switch_ioscheduler), as written.
    pub ioscheduler: Option<String>,
    /// read_iolog: the log to replay, as written (None: fio's own I/O).
    pub read_iolog: Option<String>,
    /// replay_* options applied to the log.
    pub replay: crate::workload::iolog::ReplayOptions,
    /// replay_redirect: the file the log's I/O goes to instead.
    pub replay_redirect: Option<String>,
    /// merge_blktrace_file, merge_blktrace_scalars, merge_blktrace_iters:
    /// read_iolog's blktrace files merged into this one, which the job
    /// replays (workload::trace::merge).
    pub merge_blktrace_file: Option<String>,
    pub merge_blktrace_scalars: Vec<f64>,
    pub merge_blktrace_iters: Vec<f64>,
    /// write_lat_log: the prefix of the per-I/O latency logs.
    pub write_lat_log: Option<String>,
    /// write_bw_log / write_iops_log: prefixes of the per-I/O bandwidth
    /// and IOPS logs.
    pub write_bw_log: Option<String>,
    pub write_iops_log: Option<String>,
    /// write_iolog: the I/O log to record (fio's version 3).
    pub write_iolog: Option<String>,
    /// write_hist_log: the prefix of the clat histogram log, one line per
    /// direction every `log_hist_msec` (0: the file stays empty), its bins
    /// summed `2^log_hist_coarseness` at a time (stat.c add_clat_sample,
    /// iolog.c flush_hist_samples).
    pub write_hist_log: Option<String>,
    pub log_hist_msec: u64,
    pub log_hist_coarseness: u32,
    /// log_offset: the latency logs carry each I/O's offset.
    pub log_offset: bool,
    /// log_prio: the logs' priority column is the I/O's whole ioprio
    /// value (`0x%04x`) instead of 1 for an RT-class I/O, else 0
    /// (iolog.c flush_samples).
    pub log_prio: bool,
    /// per_job_logs: one log file per job (the default) or one shared.
    pub per_job_logs: bool,
    /// log_avg_msec: average the logs over this many ms (0: every I/O).
    pub log_avg_msec: u64,
    /// Keep each completion's sample although no job log asks for it
    /// (`--bandwidth-log`'s aggregate logs are made from them).
    pub keep_completions: bool,
    /// log_max_value: an averaged log records the window's maximum.
    pub log_max_value: bool,
    /// The loaded log (filled in by the runner, which knows where the job
    /// file lives).
    pub iolog: Option<std::sync::Arc<crate::workload::iolog::Iolog>>,
    /// How `read_iolog` reads a block trace (`flashpath replay` sets it;
    /// a job file gets the defaults: format detected, every device).
    pub trace_opts: crate::workload::trace::replay::TraceOptions,
    /// The checked trace, when `read_iolog` names one that is not a fio
    /// iolog (filled in with `iolog`).
    pub trace: Option<std::sync::Arc<crate::workload::trace::replay::TraceJob>>,

    /// runtime in ns (None: no limit).
    pub runtime: Option<u64>,
    pub time_based: bool,
    pub ramp_time: u64,
    pub startdelay: u64,
    /// thinktime in ns, spin part in ns, every `thinktime_blocks` I/Os.
    pub thinktime: u64,
    pub thinktime_spin: u64,
    pub thinktime_blocks: u32,

    /// Bytes per second cap per direction (0 = none).
    pub rate: [u64; 3],
    pub rate_iops: [u64; 3],
    pub rate_min: [u64; 3],
    pub rate_process: RateProcess,

    pub random_distribution: RandomDistribution,
    pub randrepeat: bool,
    pub randseed: Option<u64>,
    pub norandommap: bool,
    /// random_generator=lfsr: every block once per pass, with or without
    /// the random map (filesetup.c init_random_map sets up the LFSR instead
    /// of the map).
    pub lfsr: bool,

    /// CPUs this job may run on (None: any).
    pub cpus_allowed: Option<Vec<u32>>,

    pub group_reporting: bool,
    pub stonewall: bool,
    pub new_group: bool,

    pub filename: Option<String>,
    pub nrfiles: u32,
    pub directory: Option<String>,

    // Fields added by the fio parser (fio 3.33 semantics).
    /// `size=N%`: percent of the file/device region (then `size` is None).
    pub size_percent: Option<u32>,
    /// `offset=N%`: percent of the file's real size (then `offset` is 0
    /// until `resolve_offset_percent` turns it into bytes).
    pub offset_percent: Option<u32>,
    /// `offset_align=N` (0: the minimum block size): where an offset
    /// from a percentage is rounded up to (filesetup.c get_start_offset).
    pub offset_align: u64,
    /// The offset came from `offset=N%`: each clone's start is rounded up
    /// to `offset_align` (get_start_offset's `align`).
    pub offset_aligned: bool,
    /// `startdelay=low-high`: fio picks a delay in [startdelay, high] (ns).
    pub startdelay_high: Option<u64>,
    /// Sequential `rw=read:-8k` suffix: bytes added to the next offset
    /// after each I/O (fio's ddir_seq_add; may be negative). `rw_nr` holds
    /// the same value when it is positive.
    pub rw_seq_add: i64,
    /// kb_base=1024 (default) or 1000: how unit prefixes were read.
    pub kb_base: u32,
    /// bs_unaligned: bsrange sizes are not rounded to multiples of the min.
    pub bs_unaligned: bool,
    /// Output-only options, recorded for the reporter.
    pub percentile_list: Option<Vec<f64>>,
    /// Digits after the point in the printed percentiles (parse.c
    /// FIO_OPT_FLOAT_LIST: the longest run of digits after a '.' in the
    /// list's text; 2 for fio's default list).
    pub percentile_precision: usize,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// unified_rw_reporting: "none", "mixed" or "both".
    pub unified_rw_reporting: String,
    /// unit_base: 0 (auto), 8 (bytes), 1 (bits).
    pub unit_base: u32,
    /// ba / blockalign per direction: alignment of random offsets in bytes
    /// (0 = fio's default, the minimum block size).
    pub blockalign: [u64; 3],
    /// exitall: when this job finishes, the simulator stops all others.
    pub exitall: bool,
    /// percentage_random per direction: share of random offsets for
    /// random patterns (the rest sequential). Default 100.
    pub percentage_random: [u32; 3],
    /// verify=TYPE (None for 0/none). With do_verify, a write job reads
    /// back what it wrote after its write phase (the stream yields those
    /// reads); read jobs check their data inline (host CPU only).
    pub verify: Option<String>,
    pub do_verify: bool,
    /// verify_backlog=N: a writing job with do_verify reads back its
    /// logged writes while it writes, every N writes (io_u.c
    /// check_get_verify); 0 verifies only after the write phase.
    pub verify_backlog: u64,
    /// verify_state_load: load the verify state file a verify_state_save
    /// run wrote before the job starts (verify.c verify_load_state).
    pub verify_state_load: bool,
    /// log_unix_epoch and log_alternate_epoch: with either, log sample
    /// times are ms since the Unix epoch, not since the job started.
    pub log_epoch: [bool; 2],
    /// verify_backlog_batch: how many of them per round (0: N).
    pub verify_batch: u64,
    /// flow_id, flow (the job's weight, 0: no flow control) and
    /// flow_sleep (ns): fio's flow control between jobs (flow.c).
    pub flow_id: u64,
    pub flow: u64,
    /// zonemode and its options (fio's zbd.c; workload/fio/zbd.rs).
    pub zones: ZoneOptions,
    pub flow_sleep: u64,
    /// wait_for=NAME: start only after that job has finished.
    pub wait_for: Option<String>,
    /// exit_what (with exitall): "group", "stonewall" or "all".
    pub exit_what: String,
    /// cpus_allowed_policy=split: each thread gets one CPU of its
    /// cpus_allowed set, by its number in the run (plan.rs).
    pub cpus_allowed_split: bool,
    /// continue_on_error, ignore_error, error_dump.
    pub errors: super::errors::ErrorPolicy,
    /// steadystate, ss_dur, ss_ramp (steadystate.c; off while dur is 0).
    pub steadystate: super::steadystate::SsSpec,
    /// fill_device / fill_fs: write until the device (file system) is full.
    pub fill_device: bool,
    /// latency_target (ns, 0: off), latency_window (us) and
    /// latency_percentile: fio's queue-depth search (io_u.c lat_target_*).
    pub latency_target: u64,
    pub latency_window: u64,
    pub latency_percentile: f64,
}

impl JobSpec {
    /// fio's td->ioprio: `ioprio_value(prioclass, prio)` once either is
    /// set (a class of 0 is BE, os/os-linux.h ioprio_value), else 0. Only
    /// a value `ioprio_error` lets through reaches a run.
    pub fn td_ioprio(&self) -> u16 {
        self.raw_ioprio().map_or(0, |v| v as u16)
    }

    /// ioprio_value over the unsigned ints fio stores `prioclass` and
    /// `prio` in (a negative or percent value parses and wraps).
    fn raw_ioprio(&self) -> Option<u32> {
        if self.prioclass.is_none() && self.prio.is_none() {
            return None;
        }
        let class = match self.prioclass.unwrap_or(0) {
            0 => u32::from(crate::block::elevator::IOPRIO_CLASS_BE),
            c => c,
        };
        Some((class << 13) | self.prio.unwrap_or(0))
    }

    /// What the kernel's ioprio_set says to the job's priority: fio calls
    /// it when the thread starts and fails the job with its errno (fio
    /// 3.33 prints "job error 22"). block/ioprio.c ioprio_check_cap: the
    /// class (bits 13-15) must be RT or BE with a level below
    /// IOPRIO_NR_LEVELS (8), IDLE, or NONE with level 0; anything else is
    /// EINVAL.
    pub fn ioprio_error(&self) -> Option<String> {
        let v = self.raw_ioprio()?;
        let class = (v >> 13) & 7;
        let level = v & 0x1fff;
        let ok = match class {
            1 | 2 => level < 8,
            3 => true,
            0 => level == 0,
            _ => false,
        };
        (!ok).then(|| {
            format!(
                "prioclass={} prio={} make ioprio {v:#x}, which ioprio_set refuses with EINVAL \
                 (block/ioprio.c ioprio_check_cap: class {class}, level {level}); fio fails the \
                 job with error 22",
                self.prioclass.unwrap_or(0) as i32,
                self.prio.unwrap_or(0) as i32
            )
        })
    }

    /// The command priority cmdprio_class/cmdprio give direction `d` (0
    /// read, 1 write): an unset class is RT (fio_cmdprio_parse_and_gen).
    pub fn cmdprio_value(&self, d: usize) -> u16 {
        let class = match self.cmdprio_class[d] {
            0 => crate::block::elevator::IOPRIO_CLASS_RT,
            c => c,
        };
        crate::block::elevator::ioprio_value(class, self.cmdprio_level[d])
    }

    /// The command priority of direction `d` (0 read, 1 write) by
    /// cmdprio_percentage: its percentage and ioprio value.
    pub fn cmdprio(&self, d: usize) -> Option<(u32, u16)> {
        let perc = self.cmdprio_percentage[d];
        (perc > 0 && self.cmdprio_bssplit.is_none()).then(|| (perc, self.cmdprio_value(d)))
    }

    /// cmdprio_bssplit's entries of direction `d` with their priorities
    /// resolved: (block size, percent, ioprio value).
    pub fn cmdprio_bs(&self, d: usize) -> Vec<(u64, u32, u16)> {
        self.cmdprio_bssplit.as_ref().map_or(Vec::new(), |b| {
            b[d].iter()
                .map(|&(bs, perc, prio)| (bs, perc, prio.unwrap_or(self.cmdprio_value(d))))
                .collect()
        })
    }
}

impl Default for JobSpec {
    /// fio's defaults (options.c): rw=read, bs=4k, ioengine=psync,
    /// iodepth=1, numjobs=1, randrepeat=1, rwmixread=50, loops=1.
    fn default() -> Self {
        JobSpec {
            name: String::new(),
            description: None,
            line: 0,
            own_options: Vec::new(),
            rw: RwKind::Read,
            rw_nr: 0,
            rwmixread: 50,
            bs: [
                BlockSize::Fixed(4096),
                BlockSize::Fixed(4096),
                BlockSize::Fixed(4096),
            ],
            size: None,
            filesize: None,
            offset: 0,
            offset_increment: 0,
            io_size: None,
            number_ios: None,
            loops: 1,
            iodepth: 1,
            io_submit_offload: false,
            serialize_overlap: false,
            iodepth_set: false,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 1,
            iodepth_low: 1,
            numjobs: 1,
            ioengine: IoEngine::Psync,
            direct: false,
            invalidate: true,
            o_sync: false,
            end_fsync: false,
            fsync_blocks: 0,
            fadvise_hint: FadviseHint::ByPattern,
            file_service: (FileService::RoundRobin, 1),
            io_mem: crate::mm::thp::IoMem::Malloc,
            hipri: false,
            sqthread_poll: false,
            sqthread_poll_cpu: None,
            sg_write_mode: SgWriteMode::Write,
            zone_append: false,
            donorname: None,
            inplace: false,
            overwrite: false,
            fallocate: "native",
            prioclass: None,
            prio: None,
            cmdprio_percentage: [0; 2],
            cmdprio_class: [0; 2],
            cmdprio_level: [0; 2],
            cmdprio_bssplit: None,
            placement: DataPlacement::default(),
            ioscheduler: None,
            read_iolog: None,
            replay: crate::workload::iolog::ReplayOptions::default(),
            replay_redirect: None,
            merge_blktrace_file: None,
            merge_blktrace_scalars: Vec::new(),
            merge_blktrace_iters: Vec::new(),
            write_lat_log: None,
            write_bw_log: None,
            write_iops_log: None,
            write_iolog: None,
            write_hist_log: None,
            log_hist_msec: 0,
            log_hist_coarseness: 0,
            log_offset: false,
            log_prio: false,
            per_job_logs: true,
            log_avg_msec: 0,
            keep_completions: false,
            log_max_value: false,
            iolog: None,
            trace_opts: Default::default(),
            trace: None,
            runtime: None,
            time_based: false,
            ramp_time: 0,
            startdelay: 0,
            thinktime: 0,
            thinktime_spin: 0,
            thinktime_blocks: 1,
            rate: [0; 3],
            rate_iops: [0; 3],
            rate_min: [0; 3],
            rate_process: RateProcess::Linear,
            random_distribution: RandomDistribution::Random,
            randrepeat: true,
            randseed: None,
            norandommap: false,
            lfsr: false,
            cpus_allowed: None,
            group_reporting: false,
            stonewall: false,
            new_group: false,
            filename: None,
            nrfiles: 1,
            directory: None,
            size_percent: None,
            offset_percent: None,
            offset_align: 0,
            offset_aligned: false,
            startdelay_high: None,
            rw_seq_add: 0,
            kb_base: 1024,
            bs_unaligned: false,
            percentile_list: None,
            percentile_precision: 2,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            unified_rw_reporting: "none".to_string(),
            unit_base: 0,
            blockalign: [0; 3],
            exitall: false,
            percentage_random: [100; 3],
            verify: None,
            do_verify: true,
            verify_backlog: 0,
            verify_state_load: false,
            log_epoch: [false; 2],
            verify_batch: 0,
            zones: ZoneOptions::default(),
            flow_id: 0,
            flow: 0,
            flow_sleep: 0,
            wait_for: None,
            exit_what: "group".to_string(),
            cpus_allowed_split: false,
            errors: Default::default(),
            steadystate: Default::default(),
            fill_device: false,
            latency_target: 0,
            latency_window: 0,
            latency_percentile: 100.0,
        }
    }
}

/// A whole job file.
#[derive(Clone, Debug, Default)]
pub struct JobFile {
    /// Path as given, for messages.
    pub path: String,
    pub jobs: Vec<JobSpec>,
    /// Options of the global section(s), as written: fio's JSON
    /// "global options" (present only when the file has one).
    pub global_options: Option<Vec<(String, String)>>,
    /// Options accepted but that cannot change the simulated I/O.
    pub ignored: Vec<crate::error::Diagnostic>,
    /// fio quirks read as fio reads them (e.g. `bs= 8k` is 8 bytes).
    pub warnings: Vec<crate::error::Diagnostic>,
    /// Lines fio 3.33 itself prints on stderr for this file while
    /// accepting it, word for word (parse.c log_err of a value part that
    /// failed: `iodepth: min value out of range: -1 (1 min)`).
    pub fio_messages: Vec<String>,
    /// fio's `--bandwidth-log` (init.c write_bw_log): write
    /// `agg-{read,write,trim}_bw.log`, sampled as the flags say
    /// (report::logs::agg_bw_logs).
    pub bandwidth_log: Option<AggBwSampling>,
}

/// When fio samples `--bandwidth-log`'s logs (eta.c calc_thread_status).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggBwSampling {
    /// At each wake of the helper thread (every 250 ms): only when fio
    /// prints its status line (a terminal, or `--eta=always`, and the
    /// normal output or `--output`).
    pub periodic: bool,
    /// Once more as the report is made: the JSON output asks for the
    /// status of each job (stat.c show_thread_status_json:
    /// `get_jobs_eta(true)`, which samples whatever `--eta` says).
    pub at_report: bool,
}

impl AggBwSampling {
    /// Whether any sample is taken (the completions must then be kept).
    pub fn samples(self) -> bool {
        self.periodic || self.at_report
    }
}

impl JobSpec {
    /// Whether any per-I/O log (lat, clat, slat, bw, iops) is asked for.
    pub fn logs_per_io(&self) -> bool {
        self.write_lat_log.is_some()
            || self.write_bw_log.is_some()
            || self.write_iops_log.is_some()
            || self.write_hist_log.is_some()
    }
}

impl JobSpec {
    /// Where clone `clone` starts in its file (filesetup.c
    /// get_start_offset): offset plus clone * offset_increment; an offset
    /// from `offset=N%` is then rounded up to offset_align, or to the
    /// smallest block size of the three directions (td_min_bs) when
    /// offset_align is 0.
    pub fn clone_offset(&self, clone: u32) -> u64 {
        let raw = self
            .offset
            .saturating_add(u64::from(clone).saturating_mul(self.offset_increment));
        if !self.offset_aligned {
            return raw;
        }
        let align = match self.offset_align {
            0 => self.bs.iter().map(|b| b.bounds().0).min().unwrap_or(1),
            a => a,
        }
        .max(1);
        raw.div_ceil(align).saturating_mul(align)
    }
}

impl JobSpec {
    /// The readahead advice the job's file gets at open.
    pub fn fadvise_advice(&self) -> crate::mm::readahead::Advice {
        use crate::mm::readahead::Advice;
        match self.fadvise_hint {
            FadviseHint::None => Advice::Normal,
            FadviseHint::Random => Advice::Random,
            FadviseHint::Sequential => Advice::Sequential,
            FadviseHint::ByPattern if self.rw.is_random() => Advice::Random,
            FadviseHint::ByPattern => Advice::Sequential,
        }
    }
}

/// zonemode= (options.c: none, strided, zbd).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZoneMode {
    #[default]
    None,
    Strided,
    Zbd,
}

/// A job's zone options as fio 3.33 stores them (thread_options.h):
/// sizes in bytes, 0 meaning unset.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneOptions {
    pub mode: ZoneMode,
    /// zonesize (0: the device's, for zonemode=zbd on a zoned disk).
    pub size: u64,
    /// zonecapacity (0: zonesize), for zones fio emulates.
    pub capacity: u64,
    /// zonerange (strided only).
    pub range: u64,
    /// zoneskip in bytes.
    pub skip: u64,
    pub read_beyond_wp: bool,
    pub max_open_zones: u32,
    pub job_max_open_zones: u32,
    pub ignore_zone_limits: bool,
    /// zone_reset_threshold and zone_reset_frequency (fractions, 0..1).
    pub reset_threshold: f64,
    pub reset_frequency: f64,
    /// Values given in zones (`Nz`), resolved once the zone size is known
    /// (zbd.c zbd_recalc_options_with_zone_granularity): size, io_size,
    /// offset, offset_increment, zoneskip.
    pub nz: ZoneCounts,
}

/// Options given as a number of zones (`Nz`), each None when not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneCounts {
    pub size: Option<u64>,
    pub io_size: Option<u64>,
    pub offset: Option<u64>,
    pub offset_increment: Option<u64>,
    pub skip: Option<u64>,
}

impl ZoneCounts {
    pub fn any(&self) -> bool {
        self.size.is_some()
            || self.io_size.is_some()
            || self.offset.is_some()
            || self.offset_increment.is_some()
            || self.skip.is_some()
    }
}

impl Default for ZoneOptions {
    fn default() -> Self {
        ZoneOptions {
            mode: ZoneMode::None,
            size: 0,
            capacity: 0,
            range: 0,
            skip: 0,
            read_beyond_wp: false,
            max_open_zones: 0,
            job_max_open_zones: 0,
            ignore_zone_limits: false,
            reset_threshold: 0.0,
            reset_frequency: 0.0,
            nz: ZoneCounts::default(),
        }
    }
}

impl JobSpec {
    /// zbd.c zbd_recalc_options_with_zone_granularity: the `Nz` values in
    /// bytes, with zones of `zone_size` bytes (nothing when it is 0).
    pub fn resolve_zone_counts(&mut self, zone_size: u64) {
        if zone_size == 0 {
            return;
        }
        let nz = std::mem::take(&mut self.zones.nz);
        if let Some(n) = nz.size {
            self.size = Some(n.saturating_mul(zone_size));
            self.size_percent = None;
        }
        if let Some(n) = nz.io_size {
            self.io_size = Some(n.saturating_mul(zone_size));
        }
        if let Some(n) = nz.offset {
            self.offset = n.saturating_mul(zone_size);
            self.offset_percent = None;
        }
        if let Some(n) = nz.offset_increment {
            self.offset_increment = n.saturating_mul(zone_size);
        }
        if let Some(n) = nz.skip {
            self.zones.skip = n.saturating_mul(zone_size);
        }
    }
}
