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
    /// Bandwidth samples, KiB/s, one per bwavgtime interval (500 ms).
    pub bw_samples: Vec<u64>,
    /// IOPS samples, one per iopsavgtime interval (500 ms).
    pub iops_samples: Vec<u64>,
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
}

/// Per-device statistics (fio's disk_util).
#[derive(Clone, Debug, Default)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: Ns,
    pub write_ticks: Ns,
    /// Time-weighted queue occupancy integral, ns (in_queue).
    pub in_queue: Ns,
    /// Time the device had at least one request, ns.
    pub busy: Ns,
    /// Length of the run, ns.
    pub total: Ns,
}

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
