//! fio's reporting step (stat.c __show_run_stats): job clones are summed
//! into reporting entries ("thread stats") and per-group run statistics.
//!
//! - Without `group_reporting` every clone is its own entry; with it,
//!   consecutive clones of the same group are summed (sum_thread_stats):
//!   I/O bytes and counts add up, latency histograms and their Welford
//!   statistics are merged, the per-direction runtime is the maximum,
//!   `job_runtime` (total_run_time) is the sum, and the entry takes the
//!   first clone's name, description, group and pid.
//! - Bandwidth and IOPS sample statistics are "pure sums" in fio (stat.c
//!   sum_stat(..., pure_sum = true)): min, max, mean, S and the sample
//!   count of each clone are added, so a grouped `bw_mean` is the sum of
//!   the clones' means (the group's mean bandwidth) and `bw_samples` counts
//!   every clone's samples. We copy that rather than summing per interval.
//! - Group statistics (group_run_stats): per direction, the sum of bytes,
//!   the min and max of each entry's bandwidth, min and max runtime, and
//!   the aggregate bandwidth = bytes * 1000 / max runtime.
//!
//! Units become fio's here: runtimes in ms, bandwidth samples in KiB/s.

use super::model::{IoULat, JobResult, LatencyTarget, RunResult, StatOpts, UnifiedRw};
use crate::sim::hist::LatencyHist;
use crate::sim::Ns;

/// fio's struct io_stat for bandwidth and IOPS samples, which it sums
/// rather than merges (so it cannot be `sim::hist::RunningStat`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleStat {
    pub min: u64,
    pub max: u64,
    pub samples: u64,
    pub mean: f64,
    pub s: f64,
}

impl SampleStat {
    /// stat.c add_stat_sample (Welford).
    pub fn add(&mut self, v: u64) {
        if self.samples == 0 || v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
        let val = v as f64;
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    pub fn from_samples(xs: &[u64]) -> Self {
        let mut s = SampleStat::default();
        xs.iter().for_each(|x| s.add(*x));
        s
    }

    /// stat.c sum_stat(dst, src, pure_sum = true).
    pub fn pure_sum(&mut self, o: &SampleStat) {
        if o.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *o;
        } else {
            self.min += o.min;
            self.max += o.max;
            self.samples += o.samples;
            self.mean += o.mean;
            self.s += o.s;
        }
    }

    /// stat.c calc_lat: (min, max, mean, stddev), or None without samples.
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        if self.samples == 0 {
            return None;
        }
        let n = self.samples as f64;
        let dev = if n > 1.0 {
            (self.s / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some((self.min, self.max, self.mean, dev))
    }
}

/// stat.c calc_lat for a latency series: (min, max, mean, stddev) in ns.
pub fn calc_lat(h: &LatencyHist) -> Option<(u64, u64, f64, f64)> {
    if h.samples() == 0 {
        return None;
    }
    Some((h.stat.min, h.stat.max, h.stat.mean(), h.stat.stddev()))
}

/// One direction of a reporting entry, in fio's units.
#[derive(Clone, Debug, Default)]
pub struct DirStat {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    /// ms.
    pub runtime: u64,
    pub slat: LatencyHist,
    pub clat: LatencyHist,
    pub lat: LatencyHist,
    /// fio's clat_prio: (ioprio, latency) per priority.
    pub prios: Vec<(u16, LatencyHist)>,
    /// KiB/s samples.
    pub bw: SampleStat,
    pub iops: SampleStat,
}

/// One reporting entry (fio's struct thread_stat after summing).
#[derive(Clone, Debug, Default)]
pub struct ThreadStat {
    pub name: String,
    pub description: String,
    pub groupid: u32,
    pub members: u32,
    pub error: i32,
    pub verror: String,
    pub pid: u32,
    pub own_options: Vec<(String, String)>,
    pub dirs: [DirStat; 3],
    pub sync: LatencyHist,
    /// total_io_u[DDIR_SYNC] (JobResult::sync_ios).
    pub sync_ios: u64,
    /// ms (sum over members).
    pub total_run_time: u64,
    /// ms of user / system CPU time (sum over members).
    pub usr_time: f64,
    pub sys_time: f64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// Percent, already as fio's stat_calc_dist would give them.
    pub iodepth_level: [f64; 7],
    pub iodepth_submit: [f64; 7],
    pub iodepth_complete: [f64; 7],
    pub io_u_lat: IoULat,
    pub latency_target: u64,
    pub latency_window: u64,
    pub latency_percentile: f64,
    pub latency_depth: u32,
    /// steadystate's data, from the member that holds it.
    pub steadystate: Option<super::model::SsReport>,
    /// continue_on_error was set; errors counted and the first one.
    pub continue_on_error: bool,
    pub total_err: u64,
    pub first_error: i32,
    /// nr_zone_resets (zonemode=zbd), summed over the group.
    pub zone_resets: u64,
    /// The reporting options (the last member's, as __show_run_stats
    /// takes them).
    pub stat: StatOpts,
}

impl ThreadStat {
    /// Whether the directions are reported as one `mixed` entry.
    pub fn mixed(&self) -> bool {
        self.stat.unified_rw == UnifiedRw::Mixed
    }

    /// fio's ddir_rw_sum(total_io_u).
    pub fn total_ios(&self) -> u64 {
        self.dirs.iter().map(|d| d.total_ios).sum()
    }

    pub fn usr_cpu(&self) -> f64 {
        cpu_pct(self.usr_time, self.total_run_time)
    }

    pub fn sys_cpu(&self) -> f64 {
        cpu_pct(self.sys_time, self.total_run_time)
    }

    /// stat_calc_lat: percent of all I/Os per bucket, at least 0.01 for a
    /// non-empty bucket. Returns (ns, us, ms).
    pub fn lat_dist(&self) -> ([f64; 10], [f64; 10], [f64; 12]) {
        let total = self.total_ios();
        let pct = |c: u64| {
            if total == 0 {
                return 0.0;
            }
            let v = c as f64 / total as f64 * 100.0;
            if v < 0.01 && c > 0 {
                0.01
            } else {
                v
            }
        };
        (
            self.io_u_lat.n.map(pct),
            self.io_u_lat.u.map(pct),
            self.io_u_lat.m.map(pct),
        )
    }
}

fn cpu_pct(t: f64, runtime: u64) -> f64 {
    if runtime == 0 {
        0.0
    } else {
        t * 100.0 / runtime as f64
    }
}

/// ns -> ms rounded up from whole microseconds, as backend.c
/// update_runtime does for the per-direction runtime.
pub fn dir_runtime_ms(ns: Ns) -> u64 {
    (ns / 1_000).div_ceil(1_000)
}

/// ns -> whole ms (mtime_since), for job_runtime and disk ticks.
pub fn ms_floor(ns: Ns) -> u64 {
    ns / 1_000_000
}

/// stat_calc_dist applied to shares (fractions): percent, at least 0.1
/// for a non-empty bucket.
fn dist_pct(fr: f64) -> f64 {
    let v = fr * 100.0;
    if v < 0.1 && fr > 0.0 {
        0.1
    } else {
        v
    }
}

/// Latency bucket counts from the clat histograms of all directions, used
/// when the simulator did not count them exactly: each histogram bucket's
/// representative value decides its fio latency bucket.
pub fn io_u_lat_from_hists(hists: &[&LatencyHist]) -> IoULat {
    let mut l = IoULat::default();
    for h in hists {
        for (v, c) in h.bins() {
            let mut one = IoULat::default();
            one.record(v);
            for (a, b) in l.n.iter_mut().zip(one.n) {
                *a += b * c;
            }
            for (a, b) in l.u.iter_mut().zip(one.u) {
                *a += b * c;
            }
            for (a, b) in l.m.iter_mut().zip(one.m) {
                *a += b * c;
            }
        }
    }
    l
}

/// The per-job numbers of one clone, in fio units, before summing.
fn clone_stat(j: &JobResult, index: usize) -> ThreadStat {
    let rt = ms_floor(j.job_runtime);
    let mut ts = ThreadStat {
        name: j.name.clone(),
        description: j.description.clone().unwrap_or_default(),
        groupid: j.groupid,
        members: 1,
        error: j.error,
        verror: j.error_msg.clone(),
        continue_on_error: j.continue_on_error,
        total_err: j.total_err,
        first_error: j.first_error,
        zone_resets: j.zone_resets,
        // fio prints the OS pid; a simulation has none, so the stand-in is
        // the clone's 1-based start position (deterministic).
        pid: j.pid.unwrap_or(index as u32 + 1),
        own_options: j.own_options.clone(),
        sync: j.sync_lat.clone(),
        sync_ios: j.sync_ios,
        total_run_time: rt,
        usr_time: j.usr_cpu * rt as f64 / 100.0,
        sys_time: j.sys_cpu * rt as f64 / 100.0,
        ctx: j.ctx,
        majf: j.majf,
        minf: j.minf,
        iodepth_level: j.iodepth_level,
        iodepth_submit: j.iodepth_submit,
        iodepth_complete: j.iodepth_complete,
        io_u_lat: j.io_u_lat.unwrap_or_else(|| {
            io_u_lat_from_hists(&[&j.dirs[0].clat, &j.dirs[1].clat, &j.dirs[2].clat])
        }),
        ..Default::default()
    };
    let lt = j.latency_target.unwrap_or(LatencyTarget {
        target: 0,
        window: 0,
        percentile: 100.0,
        depth: j.iodepth,
    });
    ts.latency_target = lt.target;
    ts.latency_window = lt.window;
    ts.latency_percentile = lt.percentile;
    ts.latency_depth = lt.depth;
    ts.steadystate = j.steadystate.clone();
    for (d, src) in ts.dirs.iter_mut().zip(j.dirs.iter()) {
        d.io_bytes = src.io_bytes;
        d.total_ios = src.total_ios;
        d.short_ios = src.short_ios;
        d.drop_ios = src.drop_ios;
        d.runtime = if src.runtime == 0 {
            0
        } else {
            dir_runtime_ms(src.runtime)
        };
        d.slat = src.slat.clone();
        d.clat = src.clat.clone();
        d.lat = src.lat.clone();
        d.prios = src.prios.clone();
        d.bw = SampleStat::from_samples(&src.bw_samples);
        d.iops = SampleStat::from_samples(&src.iops_samples);
    }
    ts.stat = j.stat.clone();
    if ts.mixed() {
        collapse_mixed(&mut ts);
    }
    ts
}

/// gen_mixed_ddir_stats_from_ts: the entry with its directions summed
/// into one `mixed` direction (for unified_rw_reporting=both).
pub fn mixed_view(ts: &ThreadStat) -> ThreadStat {
    let mut m = ts.clone();
    m.stat.unified_rw = UnifiedRw::Mixed;
    collapse_mixed(&mut m);
    m
}

/// stat.c sum_thread_stats under UNIFIED_MIXED: every direction of a
/// member is summed into the first (latencies merged, bandwidth and IOPS
/// samples pure-summed, the longest runtime kept).
fn collapse_mixed(ts: &mut ThreadStat) {
    let mut m = DirStat::default();
    for d in &ts.dirs {
        m.clat.merge(&d.clat);
        m.slat.merge(&d.slat);
        m.lat.merge(&d.lat);
        merge_prios(&mut m.prios, &d.prios);
        m.bw.pure_sum(&d.bw);
        m.iops.pure_sum(&d.iops);
        m.io_bytes += d.io_bytes;
        m.runtime = m.runtime.max(d.runtime);
        m.total_ios += d.total_ios;
        m.short_ios += d.short_ios;
        m.drop_ios += d.drop_ios;
    }
    ts.dirs = [m, DirStat::default(), DirStat::default()];
}

/// sum_clat_prio_stats: each of `src`'s priorities merges into `dst`'s
/// entry of the same ioprio, or is appended (alloc_or_get_clat_prio_index).
fn merge_prios(dst: &mut Vec<(u16, LatencyHist)>, src: &[(u16, LatencyHist)]) {
    for (p, h) in src {
        match dst.iter_mut().find(|(q, _)| q == p) {
            Some((_, d)) => d.merge(h),
            None => dst.push((*p, h.clone())),
        }
    }
}

/// sum_thread_stats(dst, src) plus the per-member bookkeeping of
/// __show_run_stats.
fn sum_into(dst: &mut ThreadStat, src: &ThreadStat) {
    // Depth and latency shares are per-I/O percentages: weight each member
    // by its I/O count (fio sums the underlying counters).
    let (wd, ws) = (dst.total_ios() as f64, src.total_ios() as f64);
    let mix = |a: &mut [f64; 7], b: &[f64; 7]| {
        if wd + ws > 0.0 {
            for (x, y) in a.iter_mut().zip(b) {
                *x = (*x * wd + *y * ws) / (wd + ws);
            }
        }
    };
    mix(&mut dst.iodepth_level, &src.iodepth_level);
    mix(&mut dst.iodepth_submit, &src.iodepth_submit);
    mix(&mut dst.iodepth_complete, &src.iodepth_complete);
    for (d, s) in dst.dirs.iter_mut().zip(src.dirs.iter()) {
        d.clat.merge(&s.clat);
        d.slat.merge(&s.slat);
        d.lat.merge(&s.lat);
        merge_prios(&mut d.prios, &s.prios);
        d.bw.pure_sum(&s.bw);
        d.iops.pure_sum(&s.iops);
        d.io_bytes += s.io_bytes;
        d.runtime = d.runtime.max(s.runtime);
        d.total_ios += s.total_ios;
        d.short_ios += s.short_ios;
        d.drop_ios += s.drop_ios;
    }
    dst.sync.merge(&src.sync);
    dst.sync_ios += src.sync_ios;
    dst.usr_time += src.usr_time;
    dst.sys_time += src.sys_time;
    dst.ctx += src.ctx;
    dst.majf += src.majf;
    dst.minf += src.minf;
    dst.io_u_lat.add(&src.io_u_lat);
    dst.total_run_time += src.total_run_time;
    if dst.error == 0 && src.error != 0 {
        dst.error = src.error;
        dst.verror = src.verror.clone();
    }
    // __show_run_stats: the error count sums, continue_on_error and
    // first_error come from the last member.
    dst.total_err += src.total_err;
    // sum_thread_stats.
    dst.zone_resets += src.zone_resets;
    dst.continue_on_error = src.continue_on_error;
    dst.first_error = src.first_error;
    // __show_run_stats takes these from the last member.
    dst.latency_target = src.latency_target;
    dst.latency_window = src.latency_window;
    dst.latency_percentile = src.latency_percentile;
    dst.latency_depth = src.latency_depth;
    // __show_run_stats: the group's steady-state data is its last job's
    // (steadystate_setup gives it to that job).
    if src.steadystate.is_some() {
        dst.steadystate = src.steadystate.clone();
    }
    dst.stat = src.stat.clone();
    dst.members += 1;
}

/// The reporting entries of a run, in fio's order.
pub fn thread_stats(run: &RunResult) -> Vec<ThreadStat> {
    let mut out: Vec<ThreadStat> = Vec::new();
    let mut last_group: Option<u32> = None;
    for (i, j) in run.jobs.iter().enumerate() {
        let one = clone_stat(j, i);
        // __show_run_stats: a new entry unless this clone reports with its
        // group and follows a clone of the same group.
        let new_entry = out.is_empty() || !j.group_reporting || last_group != Some(j.groupid);
        last_group = Some(j.groupid);
        if new_entry {
            out.push(one);
        } else if let Some(dst) = out.last_mut() {
            sum_into(dst, &one);
        }
    }
    for ts in &mut out {
        ts.iodepth_level = ts.iodepth_level.map(dist_pct);
        ts.iodepth_submit = ts.iodepth_submit.map(dist_pct);
        ts.iodepth_complete = ts.iodepth_complete.map(dist_pct);
    }
    out
}

/// fio's struct group_run_stats, per direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupStats {
    pub groupid: u32,
    /// ms; 0 when no entry of the group did this direction.
    pub min_run: [u64; 3],
    pub max_run: [u64; 3],
    /// B/s.
    pub min_bw: [u64; 3],
    pub max_bw: [u64; 3],
    pub iobytes: [u64; 3],
    /// Aggregate bandwidth, B/s.
    pub agg: [u64; 3],
    /// The entries' unified_rw_reporting ORed (stat.c __show_run_stats:
    /// 1 is mixed, 2 both; a group with both kinds is neither).
    pub unified_rw: u8,
}

impl GroupStats {
    /// show_group_stats names the one direction MIXED.
    pub fn mixed(&self) -> bool {
        self.unified_rw == 1
    }
}

/// One GroupStats per group id from 0 to the highest (fio prints every
/// one, even an empty group).
pub fn group_stats(ts: &[ThreadStat]) -> Vec<GroupStats> {
    let ngroups = ts.iter().map(|t| t.groupid + 1).max().unwrap_or(0);
    let mut gs: Vec<GroupStats> = (0..ngroups)
        .map(|g| GroupStats {
            groupid: g,
            min_bw: [u64::MAX; 3],
            ..Default::default()
        })
        .collect();
    for t in ts {
        let rs = &mut gs[t.groupid as usize];
        rs.unified_rw |= match t.stat.unified_rw {
            UnifiedRw::Split => 0,
            UnifiedRw::Mixed => 1,
            UnifiedRw::Both => 2,
        };
        for (k, d) in t.dirs.iter().enumerate() {
            if d.runtime == 0 {
                continue;
            }
            if d.runtime < rs.min_run[k] || rs.min_run[k] == 0 {
                rs.min_run[k] = d.runtime;
            }
            rs.max_run[k] = rs.max_run[k].max(d.runtime);
            let bw = d.io_bytes * 1000 / d.runtime;
            rs.min_bw[k] = rs.min_bw[k].min(bw);
            rs.max_bw[k] = rs.max_bw[k].max(bw);
            rs.iobytes[k] += d.io_bytes;
        }
    }
    for rs in &mut gs {
        for k in 0..3 {
            if let Some(agg) = (rs.iobytes[k] * 1000).checked_div(rs.max_run[k]) {
                rs.agg[k] = agg;
            }
        }
    }
    gs
}

/// JSON and normal `bw_agg`/`per=` (stat.c convert_agg_kbytes_percent):
/// the mean is truncated to an integer and the aggregate divided by 1024
/// in floating point; capped at 100.
pub fn convert_agg(mean: f64, agg: u64) -> f64 {
    let mut p = 100.0;
    if agg > 1024 {
        p = (mean as i64) as f64 * 100.0 / (agg as f64 / 1024.0);
        if p > 100.0 {
            p = 100.0;
        }
    }
    p
}

/// Terse `bw_agg` (show_ddir_status_terse): full mean over the aggregate
/// divided by 1024 in integer arithmetic; capped at 100.
pub fn bw_agg_terse(mean: f64, agg: u64) -> f64 {
    let mut p = 100.0;
    if agg > 0 {
        p = mean * 100.0 / (agg / 1024) as f64;
        if p > 100.0 || p.is_nan() {
            p = 100.0;
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::{DirResult, JobResult};

    #[test]
    fn bw_agg_rounding_differs_like_fio() {
        // randrw70: read bw_mean 179595.5, group aggregate 184538130 B/s.
        assert_eq!(
            format!("{:.6}", convert_agg(179595.5, 184538130)),
            "99.657063"
        );
        assert_eq!(
            format!("{:.6}", bw_agg_terse(179595.5, 184538130)),
            "99.657350"
        );
    }

    #[test]
    fn sample_stat_pure_sum() {
        let mut a = SampleStat::from_samples(&[10, 20]);
        let b = SampleStat::from_samples(&[30, 50]);
        a.pure_sum(&b);
        assert_eq!((a.min, a.max, a.samples), (40, 70, 4));
        assert_eq!(a.mean, 55.0);
    }

    fn clone(name: &str, group: u32, gr: bool, bytes: u64, rt_ms: u64) -> JobResult {
        let mut j = JobResult {
            name: name.into(),
            groupid: group,
            group_reporting: gr,
            job_runtime: rt_ms * 1_000_000,
            ..Default::default()
        };
        j.dirs[0] = DirResult {
            io_bytes: bytes,
            total_ios: bytes / 4096,
            runtime: rt_ms * 1_000_000,
            bw_samples: vec![100, 200],
            ..Default::default()
        };
        for v in 0..(bytes / 4096) {
            j.dirs[0].clat.record(1000 + v);
        }
        j
    }

    #[test]
    fn group_reporting_sums_clones() {
        let run = RunResult {
            jobs: vec![
                clone("a", 0, true, 4096 * 10, 1000),
                clone("a", 0, true, 4096 * 30, 1500),
                clone("b", 1, false, 4096 * 5, 700),
            ],
            ..Default::default()
        };
        let ts = thread_stats(&run);
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0].members, 2);
        assert_eq!(ts[0].dirs[0].io_bytes, 4096 * 40);
        assert_eq!(ts[0].dirs[0].runtime, 1500);
        assert_eq!(ts[0].total_run_time, 2500);
        assert_eq!(ts[0].dirs[0].clat.samples(), 40);
        assert_eq!(ts[0].dirs[0].bw.samples, 4);
        assert_eq!(ts[0].dirs[0].bw.mean, 300.0);
        let gs = group_stats(&ts);
        assert_eq!(gs.len(), 2);
        assert_eq!(gs[0].agg[0], 4096 * 40 * 1000 / 1500);
        assert_eq!(gs[1].min_run[0], 700);
        let run2 = RunResult {
            jobs: vec![
                clone("a", 0, false, 4096, 10),
                clone("a", 0, false, 4096, 10),
            ],
            ..Default::default()
        };
        assert_eq!(thread_stats(&run2).len(), 2);
    }
}
