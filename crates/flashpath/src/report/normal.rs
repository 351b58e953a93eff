//! fio's normal (human-readable) output: the start-up header (init.c
//! add_job, fio.c) and the results (stat.c show_thread_status_normal,
//! show_ddir_status, display_lat, show_clat_percentiles, show_latencies,
//! show_group_stats, print_disk_util), with fio 3.33's defaults:
//! kb_base=1024, unit_base=bytes, sig_figs=4, percentile_precision=2.

use super::fmt::{cfp, ctime, num2str, strerror, N2sUnit};
use super::group::{
    calc_lat, convert_agg, group_stats, mixed_view, ms_floor, GroupStats, ThreadStat,
};
use super::model::{RunResult, UnifiedRw};
use crate::sim::hist::LatencyHist;
use std::fmt::Write;

const SIG_FIGS: usize = 4;
const KB_BASE: u64 = 1024;

/// The lines fio prints when jobs start: one `name: (g=N): rw=...` line per
/// job section (and `...` once for its clones), `fio-3.33`, and
/// `Starting N process(es)`. fio's `Laying out IO file` lines are not
/// produced: a simulated device has no files to lay out.
pub fn render_header(run: &RunResult) -> String {
    let mut out = String::new();
    for j in &run.jobs {
        match j.clone_index {
            0 => {
                let bs = |k: usize| {
                    let (lo, hi) = j.bs_range[k];
                    format!(
                        "{}-{}",
                        num2str(lo, SIG_FIGS, 1, true, N2sUnit::Byte),
                        num2str(hi, SIG_FIGS, 1, true, N2sUnit::Byte)
                    )
                };
                let _ = writeln!(
                    out,
                    "{}: (g={}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
                    j.name,
                    j.groupid,
                    j.rw,
                    bs(0),
                    bs(1),
                    bs(2),
                    j.ioengine,
                    j.iodepth
                );
            }
            1 => out.push_str("...\n"),
            _ => {}
        }
    }
    let _ = writeln!(out, "{}", super::FIO_VERSION);
    let n = run.jobs.len();
    let _ = writeln!(
        out,
        "Starting {} process{}",
        n,
        if n == 1 { "" } else { "es" }
    );
    for line in error_exit_lines(run) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The line fio prints on its standard output when a job ends on an error
/// (backend.c thread_main: `fio: pid=%d, err=%d/%s`), one per such job
/// clone, with the pid stand-in of the job's report line.
pub fn error_exit_lines(run: &RunResult) -> Vec<String> {
    run.jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.failed)
        .map(|(i, j)| {
            format!(
                "fio: pid={}, err={}/{}",
                j.pid.unwrap_or(i as u32 + 1),
                j.error,
                j.error_msg
            )
        })
        .collect()
}

/// stat.h nsec_to_msec / nsec_to_usec and display_lat.
fn display_lat(out: &mut String, name: &str, v: (u64, u64, f64, f64)) {
    let (mut min, mut max, mut mean, mut dev) = v;
    let base = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        "(msec)"
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        "(usec)"
    } else {
        "(nsec)"
    };
    let _ = writeln!(
        out,
        "    {} {}: min={}, max={}, avg={:5.2}, stdev={:5.2}",
        name,
        base,
        num2str(min, 6, 1, false, N2sUnit::None),
        num2str(max, 6, 1, false, N2sUnit::None),
        mean,
        dev
    );
}

/// show_clat_percentiles: unit chosen from the smallest and largest
/// percentile value, values rounded up to that unit, columns sized to the
/// widest value; `list` is the job's percentile_list (already cut at its
/// first 0 and sorted) printed with `precision` digits after the point.
pub fn clat_percentiles(
    out: &mut String,
    h: &LatencyHist,
    list: &[f64],
    precision: usize,
    pre: &str,
) {
    if list.is_empty() {
        return;
    }
    let mut vals = h.percentiles(list);
    let minv = vals.iter().copied().min().unwrap_or(0);
    let maxv = vals.iter().copied().max().unwrap_or(0);
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000u64, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {} percentiles ({}):\n     |", pre, unit);
    let scaled = maxv / divisor;
    let digits = if scaled == 0 {
        // log10(0) is -inf in C; (int)(-inf + 1) ends below 5 anyway.
        0
    } else {
        ((scaled as f64).log10() + 1.0) as usize
    };
    let time_width = digits.max(5);
    let per_line = (80 - 7) / (precision + 10 + time_width);
    for (j, p) in list.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let is_last = j == list.len() - 1;
        for _ in 0..scale_down {
            vals[j] = vals[j].div_ceil(1000);
        }
        let _ = write!(
            out,
            " {:>w$.prec$}th=[{:>tw$}]{}",
            p,
            vals[j],
            if is_last { '\n' } else { ',' },
            w = precision + 3,
            prec = precision,
            tw = time_width
        );
        if is_last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

fn ddir_status(out: &mut String, ts: &ThreadStat, rs: &GroupStats, k: usize) {
    let d = &ts.dirs[k];
    if d.runtime == 0 {
        return;
    }
    let runt = d.runtime;
    let bw = 1000 * d.io_bytes / runt;
    let iops = 1000 * d.total_ios / runt;
    // fio 3.33 appends the zone reset count (zonemode=zbd's, else 0) to
    // every write line (zbd_write_status).
    let post = if k == 1 {
        format!("; {} zone resets", ts.zone_resets)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {}: IOPS={}, BW={} ({})({}/{}msec){}",
        if ts.mixed() {
            "mixed"
        } else {
            ["read", "write", "trim"][k]
        },
        num2str(iops, SIG_FIGS, 1, false, N2sUnit::None),
        num2str(bw, SIG_FIGS, 1, true, N2sUnit::BytePerSec),
        num2str(bw, SIG_FIGS, 1, false, N2sUnit::BytePerSec),
        num2str(d.io_bytes, SIG_FIGS, 1, true, N2sUnit::Byte),
        runt,
        post
    );
    if let Some(v) = calc_lat(&d.slat) {
        display_lat(out, "slat", v);
    }
    if let Some(v) = calc_lat(&d.clat) {
        display_lat(out, "clat", v);
    }
    if let Some(v) = calc_lat(&d.lat) {
        display_lat(out, " lat", v);
    }
    let st = &ts.stat;
    // Per priority, only when two or more have samples (stat.c
    // get_nr_prios_with_samples); "lat" with lat_percentiles.
    let clat_type = if st.lat_percentiles { "lat" } else { "clat" };
    let prios_shown = d.prios.iter().filter(|(_, h)| h.samples() > 0).count() >= 2;
    if prios_shown {
        for (p, h) in &d.prios {
            if let Some(v) = calc_lat(h) {
                display_lat(out, &format!("{clat_type} prio {}/{}", p >> 13, p & 7), v);
            }
        }
    }
    // show_ddir_status: each kind's table when its option is on.
    let (list, prec) = (&st.percentile_list[..], st.percentile_precision);
    if st.slat_percentiles && d.slat.samples() > 0 {
        clat_percentiles(out, &d.slat, list, prec, "slat");
    }
    if st.clat_percentiles && d.clat.samples() > 0 {
        clat_percentiles(out, &d.clat, list, prec, "clat");
    }
    if st.lat_percentiles && d.lat.samples() > 0 {
        clat_percentiles(out, &d.lat, list, prec, "lat");
    }
    if (st.clat_percentiles || st.lat_percentiles) && prios_shown {
        let samples = if st.lat_percentiles {
            d.lat.samples()
        } else {
            d.clat.samples()
        };
        for (p, h) in d.prios.iter().filter(|(_, h)| h.samples() > 0) {
            let name = format!(
                "{clat_type} prio {}/{} ({:.2}% of IOs)",
                p >> 13,
                p & 7,
                100.0 * h.samples() as f64 / samples as f64
            );
            clat_percentiles(out, h, list, prec, &name);
        }
    }
    if let Some((min, max, mean, dev)) = d.bw.calc() {
        let p_of_agg = convert_agg(mean, rs.agg[k]);
        let fkb = KB_BASE as f64;
        let (mut min, mut max, mut mean, mut dev, mut unit) = (min, max, mean, dev, "KiB");
        if mean > fkb * fkb {
            // fio divides the integer min/max as doubles and stores them
            // back into integers (truncation).
            min = (min as f64 / fkb) as u64;
            max = (max as f64 / fkb) as u64;
            mean /= fkb;
            dev /= fkb;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({:>5}/s): min={:5}, max={:5}, per={:3.2}%, avg={:5.2}, stdev={:5.2}, samples={}",
            unit, min, max, p_of_agg, mean, dev, d.bw.samples
        );
    }
    if let Some((min, max, mean, dev)) = d.iops.calc() {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            min, max, mean, dev, d.iops.samples
        );
    }
}

/// show_lat: non-empty buckets only, five per line.
fn show_lat(out: &mut String, vals: &[f64], msg: &str) {
    const RANGES: [&str; 12] = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=",
        ">=2000=",
    ];
    let mut line = 0;
    let mut new_line = true;
    let mut shown = false;
    for (i, v) in vals.iter().enumerate() {
        if *v <= 0.0 {
            continue;
        }
        shown = true;
        if new_line {
            if line > 0 {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({})   : ", msg);
            new_line = false;
            line = 0;
        }
        if line > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}{:3.2}%", RANGES[i], v);
        line += 1;
        if line == 5 {
            new_line = true;
        }
    }
    if shown {
        out.push('\n');
    }
}

fn dist_line(out: &mut String, lead: &str, keys: [&str; 7], vals: &[f64; 7]) {
    out.push_str(lead);
    for (i, (k, v)) in keys.iter().zip(vals).enumerate() {
        let _ = write!(out, "{}{}={:3.1}%", if i > 0 { ", " } else { "" }, k, v);
    }
    out.push('\n');
}

/// show_thread_status_normal for one entry; empty when the entry did no
/// I/O at all (fio skips it).
pub fn job_block(ts: &ThreadStat, rs: &GroupStats, time: &str) -> String {
    let mut out = String::new();
    if ts.dirs.iter().all(|d| d.io_bytes == 0) && ts.total_ios() == 0 {
        return out;
    }
    if ts.error == 0 {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {}",
            ts.name, ts.groupid, ts.members, ts.error, ts.pid, time
        );
    } else {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2} ({}): pid={}: {}",
            ts.name, ts.groupid, ts.members, ts.error, ts.verror, ts.pid, time
        );
    }
    if !ts.description.is_empty() {
        let _ = writeln!(out, "  Description  : [{}]", ts.description);
    }
    for k in 0..3 {
        if ts.dirs[k].io_bytes > 0 {
            ddir_status(&mut out, ts, rs, k);
        }
    }
    if ts.stat.unified_rw == UnifiedRw::Both {
        // show_mixed_ddir_status: the directions summed, after them.
        ddir_status(&mut out, &mixed_view(ts), rs, 0);
    }
    let (n, u, m) = ts.lat_dist();
    show_lat(&mut out, &n, "nsec");
    show_lat(&mut out, &u, "usec");
    show_lat(&mut out, &m, "msec");
    if let Some(v) = calc_lat(&ts.sync) {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat(&mut out, "sync", v);
        let st = &ts.stat;
        clat_percentiles(
            &mut out,
            &ts.sync,
            &st.percentile_list,
            st.percentile_precision,
            "sync",
        );
    }
    let _ = writeln!(
        out,
        "  cpu          : usr={}%, sys={}%, ctx={}, majf={}, minf={}",
        cfp(ts.usr_cpu(), 2),
        cfp(ts.sys_cpu(), 2),
        ts.ctx,
        ts.majf,
        ts.minf
    );
    dist_line(
        &mut out,
        "  IO depths    : ",
        ["1", "2", "4", "8", "16", "32", ">=64"],
        &ts.iodepth_level,
    );
    let sub = ["0", "4", "8", "16", "32", "64", ">=64"];
    dist_line(&mut out, "     submit    : ", sub, &ts.iodepth_submit);
    dist_line(&mut out, "     complete  : ", sub, &ts.iodepth_complete);
    let d = &ts.dirs;
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        d[0].total_ios,
        d[1].total_ios,
        d[2].total_ios,
        ts.sync_ios,
        d[0].short_ios,
        d[1].short_ios,
        d[2].short_ios,
        d[0].drop_ios,
        d[1].drop_ios,
        d[2].drop_ios
    );
    if ts.continue_on_error {
        let _ = writeln!(
            out,
            "     errors    : total={}, first_error={}/<{}>",
            ts.total_err,
            ts.first_error,
            strerror(ts.first_error)
        );
    }
    if ts.latency_depth > 0 {
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            ts.latency_target, ts.latency_window, ts.latency_percentile, ts.latency_depth
        );
    }
    if let Some(ss) = &ts.steadystate {
        // stat.c show_ss_normal: the means in KiB/s (kb_base 1024) with
        // both prefixes, and the criterion with its unit.
        let bw = ss.bw_mean() / 1024;
        let _ = writeln!(
            out,
            "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
            if ss.attained { "yes" } else { "no" },
            num2str(bw, SIG_FIGS, 1024, true, N2sUnit::BytePerSec),
            num2str(bw, SIG_FIGS, 1024, false, N2sUnit::BytePerSec),
            num2str(ss.iops_mean(), SIG_FIGS, 1, false, N2sUnit::None),
            if ss.iops { "iops" } else { "bw" },
            if ss.slope { " slope" } else { " mean dev" },
            ss.criterion,
            if ss.pct { "%" } else { "" }
        );
    }
    out
}

/// show_group_stats.
pub fn group_block(rs: &GroupStats) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nRun status group {} (all jobs):", rs.groupid);
    for k in 0..3 {
        if rs.max_run[k] == 0 {
            continue;
        }
        let b = |v: u64, pow2: bool| num2str(v, SIG_FIGS, 1, pow2, N2sUnit::BytePerSec);
        let _ = writeln!(
            out,
            "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            if rs.mixed() {
                "  MIXED"
            } else {
                ["   READ", "  WRITE", "   TRIM"][k]
            },
            b(rs.agg[k], true),
            b(rs.agg[k], false),
            b(rs.min_bw[k], true),
            b(rs.max_bw[k], true),
            b(rs.min_bw[k], false),
            b(rs.max_bw[k], false),
            num2str(rs.iobytes[k], SIG_FIGS, 1, true, N2sUnit::Byte),
            num2str(rs.iobytes[k], SIG_FIGS, 1, false, N2sUnit::Byte),
            rs.min_run[k],
            rs.max_run[k]
        );
    }
    if rs.unified_rw == 2 {
        // show_mixed_group_stats: the directions' sums, smallest and
        // largest.
        let (mut io, mut agg, mut min_bw, mut max_bw) = (0u64, 0u64, u64::MAX, 0u64);
        let (mut min_run, mut max_run) = (u64::MAX, 0u64);
        for k in (0..3).filter(|k| rs.max_run[*k] > 0) {
            io += rs.iobytes[k];
            agg += rs.agg[k];
            min_bw = min_bw.min(rs.min_bw[k]);
            max_bw = max_bw.max(rs.max_bw[k]);
            min_run = min_run.min(rs.min_run[k]);
            max_run = max_run.max(rs.max_run[k]);
        }
        let b = |v: u64, pow2: bool| num2str(v, SIG_FIGS, 1, pow2, N2sUnit::BytePerSec);
        let _ = writeln!(
            out,
            "  MIXED: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            b(agg, true),
            b(agg, false),
            b(min_bw, true),
            b(max_bw, true),
            b(min_bw, false),
            b(max_bw, false),
            num2str(io, SIG_FIGS, 1, true, N2sUnit::Byte),
            num2str(io, SIG_FIGS, 1, false, N2sUnit::Byte),
            min_run,
            max_run
        );
    }
    out
}

/// The results part of the normal output (what fio prints after the jobs
/// finish): a blank line, the job blocks, the group lines, disk stats.
pub fn render_results(run: &RunResult) -> String {
    let ts = super::group::thread_stats(run);
    let gs = group_stats(&ts);
    let time = ctime(run.end_time / 1_000_000_000);
    let mut out = String::from("\n");
    for t in &ts {
        out.push_str(&job_block(t, &gs[t.groupid as usize], &time));
    }
    for g in &gs {
        out.push_str(&group_block(g));
    }
    if !run.disks.is_empty() {
        out.push_str("\nDisk stats (read/write):\n");
        for d in &run.disks {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
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
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::hist::FIO_DEFAULT_PERCENTILES;

    #[test]
    fn display_lat_picks_units_like_fio() {
        // real-runs/randrw70-4jobs-grouped and randread-4k-qd1 (fio 3.33).
        let mut out = String::new();
        display_lat(&mut out, "slat", (1556, 2361626, 4608.895368, 15087.206829));
        display_lat(
            &mut out,
            "clat",
            (6365, 4123734, 473513.031915, 176424.927502),
        );
        display_lat(&mut out, "clat", (468, 7255234, 25624.02, 103489.82));
        assert_eq!(
            out,
            "    slat (nsec): min=1556, max=2361.6k, avg=4608.90, stdev=15087.21\n\
             \x20   clat (usec): min=6, max=4123, avg=473.51, stdev=176.42\n\
             \x20   clat (nsec): min=468, max=7255.2k, avg=25624.02, stdev=103489.82\n"
        );
    }

    #[test]
    fn percentile_table_in_nsec_has_three_columns() {
        let mut h = LatencyHist::default();
        for v in [498u64, 524, 620, 700, 5_000_000] {
            h.record(v);
        }
        let mut out = String::new();
        clat_percentiles(&mut out, &h, &FIO_DEFAULT_PERCENTILES, 2, "clat");
        let first = out.lines().nth(1).unwrap();
        assert_eq!(first.matches("th=[").count(), 3, "{out}");
        assert!(out.starts_with("    clat percentiles (nsec):\n     |  1.00th=[    498],"));
    }
}
