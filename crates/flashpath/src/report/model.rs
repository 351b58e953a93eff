//! What a run measured, per job clone, before any formatting. The
//! simulator fills these; the formatters turn them into fio's formats.

use crate::sim::hist::LatencyHist;
use crate::sim::Ns;

/// One direction (read, write or trim) of one job.
#[derive(Clone, Debug, Default)]
pub struct DirResult {
    /// Bytes completed.
    pub io_bytes: u64,
    /// I/Os completed.
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    /// Time this direction was active, ns (fio's per-direction runtime).
    pub runtime: Ns,
    /// Submission latency; no samples for synchronous engines.
    pub slat: LatencyHist,
    /// Completion latency (issue to completion).
    pub clat: LatencyHist,
    /// Total latency (slat + clat).
    pub lat: LatencyHist,
    /// fio's clat_prio: per I/O priority value, the clat (the lat with
    /// lat_percentiles) of the I/Os that carried it; the thread's own
    /// priority first (engines/cmdprio.c init_cmdprio_values). Empty
    /// unless the job sets a command priority for the direction.
    pub prios: Vec<(u16, LatencyHist)>,
    /// Bandwidth samples, KiB/s, one per bwavgtime interval (500 ms).
    pub bw_samples: Vec<u64>,
    /// IOPS samples, one per iopsavgtime interval (500 ms).
    pub iops_samples: Vec<u64>,
}

/// One completed I/O in fio's latency logs (stat.c add_log_sample).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatSample {
    /// ms since the job started, at completion.
    pub time_ms: u64,
    pub lat_ns: u64,
    pub clat_ns: u64,
    /// None for synchronous engines (fio records no slat for them).
    pub slat_ns: Option<u64>,
    pub ddir: u8,
    pub bs: u32,
    /// Offset in the job's file.
    pub offset: u64,
    /// The I/O's priority (`io_u->ioprio`, `IOPRIO_PRIO_VALUE`).
    pub ioprio: u16,
}

/// One job clone's results.
#[derive(Clone, Debug, Default)]
pub struct JobResult {
    pub name: String,
    pub description: Option<String>,
    pub groupid: u32,
    /// Index of the job section in the file, and of this clone.
    pub section_index: u32,
    pub clone_index: u32,
    pub group_reporting: bool,
    /// The section's own options as written (fio JSON "job options").
    pub own_options: Vec<(String, String)>,
    /// Header facts for the normal output.
    pub rw: String,
    pub ioengine: String,
    pub iodepth: u32,
    /// Block size (min, max) per direction, bytes.
    pub bs_range: [(u64, u64); 3],
    /// read, write, trim.
    pub dirs: [DirResult; 3],
    /// ms the job ran (fio's job_runtime), in ns.
    pub job_runtime: Ns,
    /// CPU use in percent of job_runtime, as fio prints usr_cpu/sys_cpu.
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// Time-weighted share of each queue-depth level, fio's iodepth_level
    /// buckets 1, 2, 4, 8, 16, 32, >=64 (fractions summing to 1, or all 0).
    pub iodepth_level: [f64; 7],
    /// Share of submit calls by batch size: buckets 0, 4, 8, 16, 32, 64, >=64.
    pub iodepth_submit: [f64; 7],
    pub iodepth_complete: [f64; 7],
    /// errno of the first error, 0 if none.
    pub error: i32,
    /// Per-I/O samples for `write_lat_log` (empty unless the job asks).
    pub lat_log: Vec<LatSample>,
    /// Issued I/Os for `write_iolog`: (us since the job started, the job's
    /// file it went to, unit with its offset in that file) (empty unless
    /// the job asks).
    pub io_log: Vec<(u64, u32, crate::types::IoUnit)>,
    /// What fio adds to each bw/iops/lat/hist log sample's time with
    /// `log_unix_epoch` or `log_alternate_epoch` (stat.c __add_log_sample:
    /// `t + td->alternate_epoch`): the job's start in ms since the Unix
    /// epoch (time.c set_epoch_time, called as the job starts); flashpath's
    /// virtual clock starts at the epoch. 0 without those options.
    pub log_epoch_ms: u64,
    /// When the job started on the run's clock (fio's genesis is 0).
    pub start_ns: Ns,
    // ---- Added for the report formatters (all optional: Default is fio's
    // behaviour when the simulator does not fill them). ----
    /// fio's verror text for the normal output's `err=95 (...)`, e.g.
    /// "file:io_u.c:1876, func=io_u error, error=Operation not supported".
    pub error_msg: String,
    /// Exact counts of I/Os per fio latency bucket (io_u.c
    /// io_u_mark_latency). When `None` the formatters derive them from the
    /// clat histograms, which can misplace I/Os whose latency lies within
    /// 1/128 of a bucket edge.
    pub io_u_lat: Option<IoULat>,
    /// fsync/fdatasync latencies (fio's sync_stat); empty when none.
    pub sync_lat: LatencyHist,
    /// fio's total_io_u[DDIR_SYNC]: the fsyncs among them (a replayed
    /// `datasync` has a latency in sync_lat but no count here).
    pub sync_ios: u64,
    /// latency_target mode settings; `None` means off (fio then reports
    /// target 0, window 0, percentile 100 and depth = iodepth).
    pub latency_target: Option<LatencyTarget>,
    /// Process id printed in the normal output's job line; `None` prints a
    /// deterministic stand-in (see report::normal).
    pub pid: Option<u32>,
    /// The job ended on an error (fio's td->error): fio prints
    /// `fio: pid=N, err=E/VERROR` and counts it in its exit status.
    pub failed: bool,
    /// fio failed the clone as it set its file up (filesetup.c
    /// setup_files): it did no I/O and printed its message before the
    /// run; it counts in fio's exit status but prints no `fio: pid=` line.
    pub setup_failed: bool,
    /// continue_on_error (or ignore_error) was set: fio then reports
    /// `total_err` and `first_error` (stat.c).
    pub continue_on_error: bool,
    /// Errors counted by update_error_count, and the first of them.
    pub total_err: u64,
    pub first_error: i32,
    /// Zones zonemode=zbd reset (td->ts.nr_zone_resets, zbd_reset_zone).
    pub zone_resets: u64,
    /// The `fio: io_u error on file ...` lines fio printed on stderr.
    pub error_lines: Vec<String>,
    /// The job's options that change how its latencies are reported.
    pub stat: StatOpts,
    /// Bytes the job had completed (all directions) when another job's end
    /// terminated it under `exitall` (fio_terminate_threads); `None` when it
    /// ran to its own end. fio's report counts the I/O it reaped after
    /// that too; iozone's stonewall does not (workload/iozone.rs).
    pub stopped_bytes: Option<u64>,
    /// steadystate's data (thread_stat's ss_* fields), from the job that
    /// holds it: every job with ss_dur, or its group's last job with
    /// group_reporting. `None` without steady-state detection.
    pub steadystate: Option<SsReport>,
}

/// What fio prints about a job's steady-state detection (stat.c
/// show_ss_normal and the JSON's "steadystate" object).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SsReport {
    /// The "ss" text: criterion and limit ("iops_slope:10.000000%").
    pub label: String,
    /// IOPS (else bandwidth), the slope (else the mean deviation), the
    /// limit in percent of the mean.
    pub iops: bool,
    pub slope: bool,
    pub pct: bool,
    /// ss_dur in seconds.
    pub duration: u32,
    pub attained: bool,
    pub criterion: f64,
    pub max_deviation: f64,
    pub slope_value: f64,
    /// Per-second samples in fio's print order (IOPS; bytes/s).
    pub iops_data: Vec<u64>,
    pub bw_data: Vec<u64>,
}

impl SsReport {
    /// steadystate_bw_mean / steadystate_iops_mean: integer means over
    /// the whole window (slots never filled count as 0).
    pub fn bw_mean(&self) -> u64 {
        self.bw_data.iter().sum::<u64>() / (self.duration.max(1) as u64)
    }

    pub fn iops_mean(&self) -> u64 {
        self.iops_data.iter().sum::<u64>() / (self.duration.max(1) as u64)
    }
}

/// fio's `unified_rw_reporting` (options.c; stat.h UNIFIED_SPLIT,
/// UNIFIED_MIXED, UNIFIED_BOTH).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnifiedRw {
    /// One entry per direction (fio's default, `none`).
    #[default]
    Split,
    /// Reads, writes and trims summed into one `mixed` entry.
    Mixed,
    /// The split entries, then the `mixed` one (`both`).
    Both,
}

/// The options that change what fio prints about a job's latencies
/// (options.c `clat_percentiles`, `lat_percentiles`, `slat_percentiles`,
/// `percentile_list`, `unified_rw_reporting`), as thread_stat carries them.
#[derive(Clone, Debug, PartialEq)]
pub struct StatOpts {
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// The percentiles as stat.c calc_clat_percentiles reads the list: up
    /// to its first 0 entry, sorted.
    pub percentile_list: Vec<f64>,
    /// Digits printed after the point: the most any entry of the list was
    /// written with (parse.c, FIO_OPT_FLOAT_LIST into percentile_precision).
    pub percentile_precision: usize,
    pub unified_rw: UnifiedRw,
}

impl StatOpts {
    /// calc_clat_percentiles' view of a percentile list: entries up to the
    /// first 0.0, sorted (it qsorts them in place).
    pub fn effective_list(list: &[f64]) -> Vec<f64> {
        let mut v: Vec<f64> = list.iter().copied().take_while(|p| *p != 0.0).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v
    }
}

impl Default for StatOpts {
    /// fio's defaults: clat percentiles on, lat and slat off, the default
    /// list "1:5:10:...:99.99" (precision 2), split directions.
    fn default() -> Self {
        StatOpts {
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            percentile_list: crate::sim::hist::FIO_DEFAULT_PERCENTILES.to_vec(),
            percentile_precision: 2,
            unified_rw: UnifiedRw::Split,
        }
    }
}

/// fio's io_u_lat_n / io_u_lat_u / io_u_lat_m counters (stat.h
/// FIO_IO_U_LAT_N_NR = 10, _U_NR = 10, _M_NR = 12).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoULat {
    pub n: [u64; 10],
    pub u: [u64; 10],
    pub m: [u64; 12],
}

impl IoULat {
    /// fio's io_u_mark_latency: below 1 us by ns, below 1 ms by us, else by
    /// ms. Bucket "N" holds values from the previous edge up to N-1.
    pub fn record(&mut self, ns: u64) {
        const EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
        fn idx(v: u64) -> usize {
            EDGES.iter().position(|e| v < *e).unwrap_or(EDGES.len())
        }
        if ns < 1_000 {
            self.n[idx(ns)] += 1;
        } else if ns < 1_000_000 {
            self.u[idx(ns / 1_000)] += 1;
        } else {
            let ms = ns / 1_000_000;
            let i = if ms < 1000 {
                idx(ms)
            } else if ms < 2000 {
                10
            } else {
                11
            };
            self.m[i] += 1;
        }
    }

    pub fn add(&mut self, other: &IoULat) {
        self.n.iter_mut().zip(other.n).for_each(|(a, b)| *a += b);
        self.u.iter_mut().zip(other.u).for_each(|(a, b)| *a += b);
        self.m.iter_mut().zip(other.m).for_each(|(a, b)| *a += b);
    }
}

/// latency_target / latency_window / latency_percentile and the depth fio
/// settled on (fio's latency_qd).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyTarget {
    /// ns.
    pub target: u64,
    /// us, as fio keeps it.
    pub window: u64,
    pub percentile: f64,
    pub depth: u32,
}

// The disk's statistics are the block layer's (it keeps them as
// /sys/block/<dev>/stat does); fio's disk_util reports them.
pub use crate::block::DiskUtil;

/// A whole run.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// Every job clone, in start order.
    pub jobs: Vec<JobResult>,
    /// Options of the global section(s) as written, when the file had one.
    pub global_options: Option<Vec<(String, String)>>,
    /// Virtual time at the end of the run, ns: fio's timestamp and elapsed
    /// come from it, so output stays deterministic.
    pub end_time: Ns,
    pub disks: Vec<DiskUtil>,
    /// flashpath's own section: per-layer breakdown, model counters, the
    /// options listed as ignored, warnings. Rendered under "flashpath".
    pub flashpath: serde_json::Value,
}
