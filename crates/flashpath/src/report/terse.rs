//! fio's terse output, version 3 (the default terse_version): one
//! `;`-separated line per reporting entry (stat.c
//! show_thread_status_terse_all, show_ddir_status_terse, print_disk_util;
//! field list in the HOWTO's "Terse output"). Latencies are in us
//! (integer division of ns by 1000), bandwidth in KiB/s, and trim is not
//! part of version 3. 130 fields with one disk, 9 more per extra disk,
//! one more when the job has a description.

use super::fmt::cf;
use super::group::{
    bw_agg_terse, calc_lat, group_stats, mixed_view, ms_floor, GroupStats, ThreadStat,
};
use super::model::{RunResult, UnifiedRw};
use std::fmt::Write;

/// fio's FIO_IO_U_LIST_MAX_LEN: terse always prints 20 percentile slots.
const LIST_MAX_LEN: usize = 20;

fn lat4(out: &mut String, v: Option<(u64, u64, f64, f64)>) {
    let (min, max, mean, dev) = v.unwrap_or((0, 0, 0.0, 0.0));
    let _ = write!(
        out,
        ";{};{};{};{}",
        min / 1000,
        max / 1000,
        cf(mean / 1000.0),
        cf(dev / 1000.0)
    );
}

fn ddir(out: &mut String, ts: &ThreadStat, rs: &GroupStats, k: usize) {
    let d = &ts.dirs[k];
    let (mut bw, mut iops) = (0, 0);
    if let Some(b) = (1000 * d.io_bytes).checked_div(d.runtime) {
        bw = b / 1024;
        iops = 1000 * d.total_ios / d.runtime;
    }
    let _ = write!(out, ";{};{};{};{}", d.io_bytes >> 10, bw, iops, d.runtime);
    lat4(out, calc_lat(&d.slat));
    lat4(out, calc_lat(&d.clat));
    // show_ddir_status_terse: lat percentiles if on, else clat ones if on,
    // else none. calc_clat_percentiles fills every slot even without
    // samples (all values are then bucket 0), so the list always prints.
    let st = &ts.stat;
    let list: &[f64] = if st.lat_percentiles || st.clat_percentiles {
        &st.percentile_list
    } else {
        &[]
    };
    let h = if st.lat_percentiles { &d.lat } else { &d.clat };
    let vals = h.percentiles(list);
    for i in 0..LIST_MAX_LEN {
        match (list.get(i), vals.get(i)) {
            (Some(p), Some(v)) => {
                let _ = write!(out, ";{}%={}", cf(*p), v / 1000);
            }
            _ => out.push_str(";0%=0"),
        }
    }
    lat4(out, calc_lat(&d.lat));
    match d.bw.calc() {
        Some((min, max, mean, dev)) => {
            let _ = write!(
                out,
                ";{};{};{}%;{};{}",
                min,
                max,
                cf(bw_agg_terse(mean, rs.agg[k])),
                cf(mean),
                cf(dev)
            );
        }
        None => out.push_str(";0;0;0.000000%;0.000000;0.000000"),
    }
}

/// One terse line (with its newline) for one reporting entry.
pub fn terse_line(ts: &ThreadStat, rs: &GroupStats, run: &RunResult) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "3;{};{};{};{}",
        super::FIO_VERSION,
        ts.name,
        ts.groupid,
        ts.error
    );
    // Read status, or mixed with unified_rw_reporting=mixed and no other.
    ddir(&mut out, ts, rs, 0);
    if !ts.mixed() {
        ddir(&mut out, ts, rs, 1);
    }
    if ts.stat.unified_rw == UnifiedRw::Both {
        // show_mixed_ddir_status_terse: the summed directions after them.
        ddir(&mut out, &mixed_view(ts), rs, 0);
    }
    let _ = write!(
        out,
        ";{}%;{}%;{};{};{}",
        cf(ts.usr_cpu()),
        cf(ts.sys_cpu()),
        ts.ctx,
        ts.majf,
        ts.minf
    );
    for v in ts.iodepth_level {
        let _ = write!(out, ";{:.1}%", v);
    }
    // stat_calc_lat_nu: the ns buckets are folded into the first us bucket
    // so version 3 keeps its field count.
    let (_, mut u, m) = ts.lat_dist();
    let total = ts.total_ios();
    if total > 0 {
        let ntotal: u64 = ts.io_u_lat.n.iter().sum();
        u[0] += 100.0 * ntotal as f64 / total as f64;
    }
    for v in u.iter().chain(m.iter()) {
        let _ = write!(out, ";{:.2}%", v);
    }
    for d in &run.disks {
        let _ = write!(
            out,
            ";{};{};{};{};{};{};{};{};{:.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            ms_floor(d.read_ticks),
            ms_floor(d.write_ticks),
            ms_floor(d.in_queue),
            super::disk_util_pct(d)
        );
    }
    // stat.c: the error count and first error when continue_on_error is
    // set.
    if ts.continue_on_error {
        let _ = write!(out, ";{};{}", ts.total_err, ts.first_error);
    }
    if !ts.description.is_empty() {
        out.push(';');
        out.push_str(&ts.description);
    }
    out.push('\n');
    out
}

/// All terse lines of a run.
pub fn render_terse(run: &RunResult) -> String {
    let ts = super::group::thread_stats(run);
    let gs = group_stats(&ts);
    ts.iter()
        .map(|t| terse_line(t, &gs[t.groupid as usize], run))
        .collect()
}
