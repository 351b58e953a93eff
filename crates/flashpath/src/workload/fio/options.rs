//! The one table of fio 3.33 option names, what kind of value each takes, and
//! what flashpath does with it. Names, aliases and types come from fio 3.33's
//! own `fio --cmdhelp=NAME` (options.c `fio_options[]`); engine options from
//! `fio --enghelp=ENGINE` (engines/io_uring.c, libaio.c, sync.c).
//!
//! Handling, following DESIGN.md ("an option flashpath does not model is
//! refused by name, unless it cannot change the simulated I/O"):
//! - `Model`: resolved into [`JobSpec`](super::JobSpec) fields.
//! - `Record`: output-only options, recorded in `JobSpec` for the reporter.
//! - `Ignore`: cannot change the simulated I/O (logging, file creation,
//!   buffer contents, page-cache hints, process/thread choice); listed in
//!   `JobFile::ignored`.
//! - `Inert(master)`: has an effect only when `master` is enabled, and every
//!   non-default `master` is refused; so it is accepted and listed as ignored.
//! - `RefuseUnless(values)`: accepted (and listed as ignored) only at its
//!   default / "off" values; any other value changes the I/O and is refused.
//! - `Refuse`: could change the simulated I/O and is not modelled.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// OPT_BOOL: a value is required, 0 or 1 (parse.c: "requires an argument").
    Bool,
    /// OPT_STR_SET: a bare key means 1; `=0`/`=1` work.
    Set,
    /// OPT_INT/OPT_ULL: integer with byte suffixes (check_str_bytes).
    Int,
    /// OPT_STR_VAL_TIME: integer with time suffixes, seconds by default.
    Time,
    /// OPT_STR_VAL(_ZONE): size with suffixes, or `N%`.
    Size,
    /// OPT_FLOAT_LIST: floats joined by `:`.
    FloatList,
    /// OPT_RANGE: `low-high` or `low:high`, per direction.
    Range,
    /// OPT_STR / OPT_STR_STORE: free text (or a list the callback checks).
    Str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    Model,
    Record,
    Ignore,
    Inert(&'static str),
    RefuseUnless(&'static [&'static str]),
    Refuse,
}

#[derive(Clone, Copy, Debug)]
pub struct OptDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    pub handling: Handling,
    /// Engine options: the engines that provide it (None: a general option).
    pub engines: Option<&'static [&'static str]>,
}

const fn o(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    handling: Handling,
) -> OptDef {
    OptDef {
        name,
        aliases,
        kind,
        handling,
        engines: None,
    }
}

const fn e(
    name: &'static str,
    engines: &'static [&'static str],
    kind: Kind,
    handling: Handling,
) -> OptDef {
    OptDef {
        name,
        aliases: &[],
        kind,
        handling,
        engines: Some(engines),
    }
}

const URING: &[&str] = &["io_uring"];
const URING_AIO: &[&str] = &["io_uring", "libaio"];
const URING_AIO_PV2: &[&str] = &["io_uring", "libaio", "pvsync2"];
const URING_PV2: &[&str] = &["io_uring", "pvsync2"];

/// Every option fio 3.33 knows (general ones, then the options of the
/// engines flashpath models).
pub static OPTIONS: &[OptDef] = &[
    o("description", &[], Kind::Str, Handling::Model),
    o("name", &[], Kind::Str, Handling::Model),
    o("wait_for", &[], Kind::Str, Handling::Model),
    o("filename", &[], Kind::Str, Handling::Model),
    o(
        "lockfile",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["none"]),
    ),
    o("directory", &[], Kind::Str, Handling::Model),
    o("filename_format", &[], Kind::Str, Handling::Ignore),
    o("unique_filename", &[], Kind::Bool, Handling::Ignore),
    o("opendir", &[], Kind::Str, Handling::Refuse),
    o("rw", &["readwrite"], Kind::Str, Handling::Model),
    o("bs", &["blocksize"], Kind::Int, Handling::Model),
    o("ba", &["blockalign"], Kind::Int, Handling::Model),
    o(
        "bsrange",
        &["blocksize_range"],
        Kind::Range,
        Handling::Model,
    ),
    o("bssplit", &[], Kind::Str, Handling::Model),
    o(
        "bs_unaligned",
        &["blocksize_unaligned"],
        Kind::Set,
        Handling::Model,
    ),
    o("randrepeat", &[], Kind::Bool, Handling::Model),
    o("randseed", &[], Kind::Str, Handling::Model),
    o("norandommap", &[], Kind::Set, Handling::Model),
    o("ignore_error", &[], Kind::Str, Handling::Ignore),
    o(
        "rw_sequencer",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["sequential"]),
    ),
    o("ioengine", &[], Kind::Str, Handling::Model),
    o("iodepth", &[], Kind::Int, Handling::Model),
    o(
        "iodepth_batch",
        &["iodepth_batch_submit"],
        Kind::Int,
        Handling::Model,
    ),
    o(
        "iodepth_batch_complete_min",
        &["iodepth_batch_complete"],
        Kind::Int,
        Handling::Model,
    ),
    o(
        "iodepth_batch_complete_max",
        &[],
        Kind::Int,
        Handling::Model,
    ),
    o("iodepth_low", &[], Kind::Int, Handling::Model),
    o(
        "serialize_overlap",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "io_submit_mode",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["inline"]),
    ),
    o("size", &[], Kind::Size, Handling::Model),
    o("io_size", &["io_limit"], Kind::Size, Handling::Model),
    o(
        "fill_device",
        &["fill_fs"],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o("filesize", &[], Kind::Str, Handling::Model),
    o(
        "file_append",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o("offset", &["fileoffset"], Kind::Size, Handling::Model),
    o("offset_increment", &[], Kind::Size, Handling::Model),
    o(
        "offset_align",
        &[],
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    o("number_ios", &[], Kind::Str, Handling::Model),
    o("random_generator", &[], Kind::Str, Handling::Ignore),
    o("random_distribution", &[], Kind::Str, Handling::Model),
    o("percentage_random", &[], Kind::Int, Handling::Model),
    o("allrandrepeat", &[], Kind::Bool, Handling::Ignore),
    o("nrfiles", &["nr_files"], Kind::Int, Handling::Model),
    o(
        "file_service_type",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["roundrobin"]),
    ),
    o("openfiles", &[], Kind::Int, Handling::Ignore),
    o("fallocate", &[], Kind::Str, Handling::Ignore),
    o("fadvise_hint", &[], Kind::Str, Handling::Model),
    o("fsync", &[], Kind::Int, Handling::Model),
    o("fdatasync", &[], Kind::Int, Handling::Model),
    o(
        "write_barrier",
        &[],
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    o("sync_file_range", &[], Kind::Int, Handling::Refuse),
    o("direct", &[], Kind::Bool, Handling::Model),
    o("atomic", &[], Kind::Bool, Handling::RefuseUnless(&["0"])),
    o("buffered", &[], Kind::Bool, Handling::Model),
    o("overwrite", &[], Kind::Bool, Handling::Ignore),
    o("loops", &[], Kind::Int, Handling::Model),
    o("numjobs", &[], Kind::Int, Handling::Model),
    o("startdelay", &[], Kind::Time, Handling::Model),
    o("runtime", &["timeout"], Kind::Time, Handling::Model),
    o("time_based", &[], Kind::Set, Handling::Model),
    o(
        "verify_only",
        &[],
        Kind::Set,
        Handling::RefuseUnless(&["0"]),
    ),
    o("ramp_time", &[], Kind::Time, Handling::Model),
    o("clocksource", &[], Kind::Str, Handling::Ignore),
    o("mem", &["iomem"], Kind::Str, Handling::Model),
    o("verify", &[], Kind::Str, Handling::Model),
    o("do_verify", &[], Kind::Bool, Handling::Model),
    o("verify_interval", &[], Kind::Int, Handling::Ignore),
    o("verify_offset", &[], Kind::Int, Handling::Ignore),
    o("verify_pattern", &[], Kind::Str, Handling::Ignore),
    o("verify_fatal", &[], Kind::Bool, Handling::Ignore),
    o("verify_dump", &[], Kind::Bool, Handling::Ignore),
    o(
        "verify_async",
        &[],
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "verify_backlog",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "verify_backlog_batch",
        &[],
        Kind::Int,
        Handling::Inert("verify_backlog"),
    ),
    o(
        "experimental_verify",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o("verify_state_load", &[], Kind::Bool, Handling::Ignore),
    o("verify_state_save", &[], Kind::Bool, Handling::Ignore),
    o(
        "trim_percentage",
        &[],
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "trim_verify_zero",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0", "1"]),
    ),
    o(
        "trim_backlog",
        &[],
        Kind::Str,
        Handling::Inert("trim_percentage"),
    ),
    o(
        "trim_backlog_batch",
        &[],
        Kind::Int,
        Handling::Inert("trim_percentage"),
    ),
    o("write_iolog", &[], Kind::Str, Handling::Model),
    o("read_iolog", &[], Kind::Str, Handling::Model),
    // Reading the log in chunks changes when fio reads it, not the I/O.
    o("read_iolog_chunked", &[], Kind::Bool, Handling::Ignore),
    o("replay_no_stall", &[], Kind::Bool, Handling::Model),
    o("replay_redirect", &[], Kind::Str, Handling::Model),
    o("replay_scale", &[], Kind::Int, Handling::Model),
    o("replay_align", &[], Kind::Int, Handling::Model),
    o("replay_time_scale", &[], Kind::Int, Handling::Model),
    o("replay_skip", &[], Kind::Str, Handling::Model),
    o("merge_blktrace_file", &[], Kind::Str, Handling::Refuse),
    o(
        "merge_blktrace_scalars",
        &[],
        Kind::FloatList,
        Handling::Inert("merge_blktrace_file"),
    ),
    o(
        "merge_blktrace_iters",
        &[],
        Kind::FloatList,
        Handling::Inert("merge_blktrace_file"),
    ),
    o("exec_prerun", &[], Kind::Str, Handling::Ignore),
    o("exec_postrun", &[], Kind::Str, Handling::Ignore),
    o("ioscheduler", &[], Kind::Str, Handling::Refuse),
    o(
        "zonemode",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["none"]),
    ),
    o("zonesize", &[], Kind::Str, Handling::RefuseUnless(&["0"])),
    o(
        "zonecapacity",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["0"]),
    ),
    o("zonerange", &[], Kind::Str, Handling::RefuseUnless(&["0"])),
    o("zoneskip", &[], Kind::Size, Handling::RefuseUnless(&["0"])),
    o(
        "read_beyond_wp",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "max_open_zones",
        &[],
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "job_max_open_zones",
        &[],
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "ignore_zone_limits",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "zone_reset_threshold",
        &[],
        Kind::FloatList,
        Handling::Inert("zonemode"),
    ),
    o(
        "zone_reset_frequency",
        &[],
        Kind::FloatList,
        Handling::Inert("zonemode"),
    ),
    o("lockmem", &[], Kind::Str, Handling::Ignore),
    o("rwmixread", &[], Kind::Int, Handling::Model),
    o("rwmixwrite", &[], Kind::Int, Handling::Model),
    o("nice", &[], Kind::Int, Handling::RefuseUnless(&["0"])),
    o("prio", &[], Kind::Int, Handling::Refuse),
    o("prioclass", &[], Kind::Int, Handling::Refuse),
    o("thinktime", &[], Kind::Int, Handling::Model),
    o("thinktime_spin", &[], Kind::Int, Handling::Model),
    o("thinktime_blocks", &[], Kind::Int, Handling::Model),
    o(
        "thinktime_blocks_type",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["complete"]),
    ),
    o(
        "thinktime_iotime",
        &[],
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    o("rate", &[], Kind::Int, Handling::Model),
    o("rate_min", &["ratemin"], Kind::Int, Handling::Model),
    o("rate_process", &[], Kind::Str, Handling::Model),
    o("rate_cycle", &["ratecycle"], Kind::Int, Handling::Ignore),
    o(
        "rate_ignore_thinktime",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o("rate_iops", &[], Kind::Int, Handling::Model),
    o("rate_iops_min", &[], Kind::Int, Handling::Refuse),
    o("max_latency", &[], Kind::Int, Handling::Refuse),
    o("latency_target", &[], Kind::Time, Handling::Refuse),
    o(
        "latency_window",
        &[],
        Kind::Time,
        Handling::Inert("latency_target"),
    ),
    o(
        "latency_percentile",
        &[],
        Kind::FloatList,
        Handling::Inert("latency_target"),
    ),
    o(
        "latency_run",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o("invalidate", &[], Kind::Bool, Handling::Model),
    o(
        "sync",
        &[],
        Kind::Str,
        Handling::RefuseUnless(&["none", "0"]),
    ),
    o("write_hint", &[], Kind::Str, Handling::Refuse),
    o("create_serialize", &[], Kind::Bool, Handling::Ignore),
    o("create_fsync", &[], Kind::Bool, Handling::Ignore),
    o("create_on_open", &[], Kind::Bool, Handling::Ignore),
    o(
        "create_only",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o("allow_file_create", &[], Kind::Bool, Handling::Ignore),
    o("allow_mounted_write", &[], Kind::Bool, Handling::Ignore),
    o("pre_read", &[], Kind::Bool, Handling::RefuseUnless(&["0"])),
    o("cpumask", &[], Kind::Int, Handling::Model),
    o("cpus_allowed", &[], Kind::Str, Handling::Model),
    o("cpus_allowed_policy", &[], Kind::Str, Handling::Model),
    o("numa_cpu_nodes", &[], Kind::Str, Handling::Refuse),
    o("numa_mem_policy", &[], Kind::Str, Handling::Refuse),
    o("end_fsync", &[], Kind::Bool, Handling::Model),
    o("fsync_on_close", &[], Kind::Bool, Handling::Model),
    o("unlink", &[], Kind::Bool, Handling::Ignore),
    o("unlink_each_loop", &[], Kind::Bool, Handling::Ignore),
    o("exitall", &[], Kind::Set, Handling::Model),
    o("exit_what", &[], Kind::Str, Handling::Model),
    o("exitall_on_error", &[], Kind::Set, Handling::Ignore),
    o(
        "stonewall",
        &["wait_for_previous"],
        Kind::Set,
        Handling::Model,
    ),
    o("new_group", &[], Kind::Set, Handling::Model),
    o("thread", &[], Kind::Set, Handling::Ignore),
    o("per_job_logs", &[], Kind::Bool, Handling::Model),
    o("write_bw_log", &[], Kind::Str, Handling::Model),
    o("bwavgtime", &[], Kind::Int, Handling::Ignore),
    o("write_lat_log", &[], Kind::Str, Handling::Model),
    o("write_iops_log", &[], Kind::Str, Handling::Model),
    o("iopsavgtime", &[], Kind::Int, Handling::Ignore),
    o("log_entries", &[], Kind::Int, Handling::Ignore),
    o("log_avg_msec", &[], Kind::Int, Handling::Model),
    o("log_hist_msec", &[], Kind::Int, Handling::Ignore),
    o("log_hist_coarseness", &[], Kind::Int, Handling::Ignore),
    o("write_hist_log", &[], Kind::Str, Handling::Ignore),
    o("log_max_value", &[], Kind::Bool, Handling::Model),
    o("log_offset", &[], Kind::Bool, Handling::Model),
    o("log_prio", &[], Kind::Bool, Handling::Ignore),
    o("log_compression", &[], Kind::Int, Handling::Ignore),
    o("log_compression_cpus", &[], Kind::Str, Handling::Ignore),
    o("log_store_compressed", &[], Kind::Bool, Handling::Ignore),
    o("log_unix_epoch", &[], Kind::Bool, Handling::Ignore),
    o("log_alternate_epoch", &[], Kind::Bool, Handling::Ignore),
    o(
        "log_alternate_epoch_clock_id",
        &[],
        Kind::Int,
        Handling::Ignore,
    ),
    o("block_error_percentiles", &[], Kind::Bool, Handling::Ignore),
    o("group_reporting", &[], Kind::Set, Handling::Model),
    o("stats", &[], Kind::Bool, Handling::Ignore),
    o("zero_buffers", &[], Kind::Set, Handling::Ignore),
    o("refill_buffers", &[], Kind::Set, Handling::Ignore),
    o("scramble_buffers", &[], Kind::Bool, Handling::Ignore),
    o("buffer_pattern", &[], Kind::Str, Handling::Ignore),
    o(
        "buffer_compress_percentage",
        &[],
        Kind::Int,
        Handling::Ignore,
    ),
    o("buffer_compress_chunk", &[], Kind::Int, Handling::Ignore),
    o("dedupe_percentage", &[], Kind::Int, Handling::Ignore),
    o("dedupe_mode", &[], Kind::Str, Handling::Ignore),
    o(
        "dedupe_working_set_percentage",
        &[],
        Kind::Int,
        Handling::Ignore,
    ),
    o("dedupe_global", &[], Kind::Bool, Handling::Ignore),
    o("clat_percentiles", &[], Kind::Bool, Handling::Record),
    o("lat_percentiles", &[], Kind::Bool, Handling::Record),
    o("slat_percentiles", &[], Kind::Bool, Handling::Record),
    o("percentile_list", &[], Kind::FloatList, Handling::Record),
    o("significant_figures", &[], Kind::Int, Handling::Ignore),
    o("disk_util", &[], Kind::Bool, Handling::Ignore),
    o("gtod_reduce", &[], Kind::Bool, Handling::Ignore),
    o("disable_lat", &[], Kind::Bool, Handling::Ignore),
    o("disable_clat", &[], Kind::Bool, Handling::Ignore),
    o("disable_slat", &[], Kind::Bool, Handling::Ignore),
    o(
        "disable_bw_measurement",
        &["disable_bw"],
        Kind::Bool,
        Handling::Ignore,
    ),
    o("gtod_cpu", &[], Kind::Int, Handling::Ignore),
    o("unified_rw_reporting", &[], Kind::Str, Handling::Record),
    o("continue_on_error", &[], Kind::Str, Handling::Ignore),
    o("error_dump", &[], Kind::Bool, Handling::Ignore),
    o("profile", &[], Kind::Str, Handling::Refuse),
    o("cgroup", &[], Kind::Str, Handling::Refuse),
    o(
        "cgroup_nodelete",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o("cgroup_weight", &[], Kind::Int, Handling::Refuse),
    o("uid", &[], Kind::Int, Handling::Ignore),
    o("gid", &[], Kind::Int, Handling::Ignore),
    o("kb_base", &[], Kind::Str, Handling::Model),
    o("unit_base", &[], Kind::Str, Handling::Record),
    o("flow_id", &[], Kind::Int, Handling::RefuseUnless(&["0"])),
    o("flow", &[], Kind::Int, Handling::RefuseUnless(&["0"])),
    o("flow_sleep", &[], Kind::Int, Handling::RefuseUnless(&["0"])),
    o("steadystate", &["ss"], Kind::Str, Handling::Refuse),
    o(
        "steadystate_duration",
        &["ss_dur"],
        Kind::Time,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "steadystate_ramp_time",
        &["ss_ramp"],
        Kind::Time,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "bs_is_seq_rand",
        &[],
        Kind::Bool,
        Handling::RefuseUnless(&["0"]),
    ),
    o("hugepage-size", &[], Kind::Int, Handling::Ignore),
    o("iomem_align", &["mem_align"], Kind::Int, Handling::Ignore),
    o("softrandommap", &[], Kind::Bool, Handling::Ignore),
    o("verify_async_cpus", &[], Kind::Str, Handling::Ignore),
    // Hidden in 3.33's --cmdhelp=all but accepted by its parser (found by
    // running `fio --parse-only` on each name in the binary's strings).
    o("threads", &[], Kind::Int, Handling::Ignore),
    o("flow_watermark", &[], Kind::Int, Handling::Inert("flow")),
    // Deprecated no-ops in 3.33 (options.c FIO_OPT_DEPRECATED).
    o("verifysort", &[], Kind::Str, Handling::Ignore),
    o("verifysort_nr", &[], Kind::Str, Handling::Ignore),
    // Options of fio's built-in job profiles (profiles/act.c, tiobench.c);
    // `profile=` itself is refused.
    o("device-names", &[], Kind::Str, Handling::Inert("profile")),
    o(
        "large-block-op-kbytes",
        &[],
        Kind::Str,
        Handling::Inert("profile"),
    ),
    o("prep", &[], Kind::Str, Handling::Inert("profile")),
    o(
        "read-req-num-512-blocks",
        &[],
        Kind::Str,
        Handling::Inert("profile"),
    ),
    o("test-duration", &[], Kind::Str, Handling::Inert("profile")),
    o(
        "threads-per-queue",
        &[],
        Kind::Str,
        Handling::Inert("profile"),
    ),
    // Engine options (fio 3.33 --enghelp). hipri: io_uring (IORING_SETUP_IOPOLL)
    // and pvsync2 (RWF_HIPRI); libaio has no hipri in 3.33.
    e("hipri", URING_PV2, Kind::Set, Handling::Model),
    e(
        "hipri_percentage",
        &["pvsync2"],
        Kind::Int,
        Handling::RefuseUnless(&["100"]),
    ),
    e("cmdprio_percentage", URING_AIO, Kind::Str, Handling::Refuse),
    e("cmdprio_class", URING_AIO, Kind::Str, Handling::Refuse),
    e("cmdprio", URING_AIO, Kind::Str, Handling::Refuse),
    e("cmdprio_bssplit", URING_AIO, Kind::Str, Handling::Refuse),
    // Buffer and file registration save CPU work in the kernel that the
    // host model charges per I/O anyway; they do not change the I/O.
    e("fixedbufs", URING, Kind::Set, Handling::Ignore),
    e("registerfiles", URING, Kind::Set, Handling::Ignore),
    e(
        "sqthread_poll",
        URING,
        Kind::Set,
        Handling::RefuseUnless(&["0"]),
    ),
    e(
        "sqthread_poll_cpu",
        URING,
        Kind::Int,
        Handling::Inert("sqthread_poll"),
    ),
    e("nonvectored", URING, Kind::Int, Handling::Ignore),
    e(
        "uncached",
        &["io_uring", "pvsync2"],
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    e(
        "nowait",
        URING_AIO_PV2,
        Kind::Set,
        Handling::RefuseUnless(&["0"]),
    ),
    e(
        "force_async",
        URING,
        Kind::Int,
        Handling::RefuseUnless(&["0"]),
    ),
    e("cmd_type", URING, Kind::Str, Handling::Ignore),
    e("userspace_reap", &["libaio"], Kind::Set, Handling::Ignore),
];

/// Look an option up by name or alias.
pub fn find(name: &str) -> Option<&'static OptDef> {
    OPTIONS
        .iter()
        .find(|d| d.name == name || d.aliases.contains(&name))
}

/// All names and aliases, for "did you mean".
pub fn all_names() -> impl Iterator<Item = &'static str> {
    OPTIONS
        .iter()
        .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
}

/// ioengine values fio 3.33 (Debian build) knows; flashpath models the ones
/// in [`super::IoEngine`].
pub static KNOWN_ENGINES: &[&str] = &[
    "cpuio",
    "mmap",
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "null",
    "net",
    "netsplice",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "exec",
    "posixaio",
    "falloc",
    "e4defrag",
    "splice",
    "gfapi",
    "gfapi_async",
    "mtd",
    "sg",
    "io_uring",
    "io_uring_cmd",
    "nbd",
    "libaio",
    "rdma",
    "rados",
    "rbd",
    "pmemblk",
    "dev-dax",
    "libpmem",
];
