//! fio's `--output-format=json` and `json+` (stat.c show_thread_status_json,
//! add_ddir_status_json, add_ddir_lat_json, json_array_add_disk_util; json.c
//! for the layout), plus one extra top-level key "flashpath".
//!
//! Byte-level choices copied from fio 3.33: two spaces per level,
//! `"key" : value`, integers as `%lld`, floats as `%f`, strings escaped only
//! for `\` and `"` (json.c strdup_escape), and a string option whose value
//! is empty is left out (strdup_escape returns NULL for "", so json.c never
//! adds the pair). Key sets follow the fio 3.33 fixtures, which lack keys
//! newer fio added (job_start, latency_target_ns, read_sectors, ...).

use super::fmt::{cf, ctime};
use super::group::{calc_lat, group_stats, mixed_view, ms_floor, GroupStats, ThreadStat};
use super::model::{RunResult, UnifiedRw};
use crate::sim::hist::LatencyHist;

/// A JSON value that keeps insertion order and fio's number kinds.
#[derive(Clone, Debug)]
pub enum JVal {
    Str(String),
    Int(i128),
    Float(f64),
    /// Already-formatted JSON (the flashpath section).
    Raw(String),
    Obj(Vec<(String, JVal)>),
    Arr(Vec<JVal>),
}

fn escape_fio(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '"' => {
                o.push('\\');
                o.push(c);
            }
            // fio would emit these raw (invalid JSON); we keep the document
            // valid instead.
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// json.c json_print_value at nesting `level`.
pub fn print(v: &JVal, level: usize, out: &mut String) {
    match v {
        JVal::Str(s) => {
            out.push('"');
            out.push_str(&escape_fio(s));
            out.push('"');
        }
        JVal::Int(i) => out.push_str(&i.to_string()),
        JVal::Float(f) => out.push_str(&cf(*f)),
        JVal::Raw(r) => out.push_str(r),
        JVal::Obj(pairs) => {
            out.push_str("{\n");
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                out.push('"');
                out.push_str(&escape_fio(k));
                out.push_str("\" : ");
                print(v, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
        JVal::Arr(vals) => {
            out.push_str("[\n");
            for (i, v) in vals.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                print(v, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
    }
}

/// serde_json::Value -> JVal (numbers and strings as serde_json writes
/// them, so the flashpath section round-trips exactly).
pub fn from_serde(v: &serde_json::Value) -> JVal {
    use serde_json::Value as V;
    match v {
        V::Object(m) => JVal::Obj(m.iter().map(|(k, v)| (k.clone(), from_serde(v))).collect()),
        V::Array(a) => JVal::Arr(a.iter().map(from_serde).collect()),
        other => JVal::Raw(other.to_string()),
    }
}

struct O(Vec<(String, JVal)>);

impl O {
    fn new() -> Self {
        O(Vec::new())
    }
    fn int(&mut self, k: &str, v: impl Into<i128>) -> &mut Self {
        self.0.push((k.into(), JVal::Int(v.into())));
        self
    }
    fn float(&mut self, k: &str, v: f64) -> &mut Self {
        self.0.push((k.into(), JVal::Float(v)));
        self
    }
    fn str(&mut self, k: &str, v: &str) -> &mut Self {
        // json.c: an empty string is never added.
        if !v.is_empty() {
            self.0.push((k.into(), JVal::Str(v.into())));
        }
        self
    }
    fn obj(&mut self, k: &str, v: O) -> &mut Self {
        self.0.push((k.into(), JVal::Obj(v.0)));
        self
    }
    fn done(self) -> JVal {
        JVal::Obj(self.0)
    }
}

/// json_add_job_opts: nothing when the list is empty.
fn add_opts(o: &mut O, name: &str, opts: &[(String, String)]) {
    if opts.is_empty() {
        return;
    }
    let mut m = O::new();
    for (k, v) in opts {
        m.str(k, v);
    }
    o.obj(name, m);
}

/// add_ddir_lat_json: min/max/mean/stddev/N, and with samples the
/// percentile map over the job's percentile_list (and json+ bins) when
/// `percentiles` is on.
fn lat_obj(h: &LatencyHist, list: &[f64], percentiles: bool, plus: bool) -> O {
    let (min, max, mean, dev) = calc_lat(h).unwrap_or((0, 0, 0.0, 0.0));
    let mut o = O::new();
    o.int("min", min)
        .int("max", max)
        .float("mean", mean)
        .float("stddev", dev)
        .int("N", h.samples());
    if percentiles && h.samples() > 0 {
        let vals = h.percentiles(list);
        let mut p = O::new();
        for (pc, v) in list.iter().zip(vals) {
            p.int(&cf(*pc), v);
        }
        o.obj("percentile", p);
        if plus {
            let mut b = O::new();
            for (v, c) in h.bins() {
                b.int(&v.to_string(), c);
            }
            o.obj("bins", b);
        }
    }
    o
}

fn ddir_obj(ts: &ThreadStat, rs: &GroupStats, k: usize, plus: bool) -> O {
    let d = &ts.dirs[k];
    let (mut bw_bytes, mut bw, mut iops) = (0u64, 0u64, 0.0f64);
    if let Some(b) = (1000 * d.io_bytes).checked_div(d.runtime) {
        bw_bytes = b;
        bw = bw_bytes / 1024;
        iops = 1000.0 * d.total_ios as f64 / d.runtime as f64;
    }
    let mut o = O::new();
    o.int("io_bytes", d.io_bytes)
        .int("io_kbytes", d.io_bytes >> 10)
        .int("bw_bytes", bw_bytes)
        .int("bw", bw)
        .float("iops", iops)
        .int("runtime", d.runtime)
        .int("total_ios", d.total_ios)
        .int("short_ios", d.short_ios)
        .int("drop_ios", d.drop_ios);
    let st = &ts.stat;
    let list = &st.percentile_list[..];
    o.obj("slat_ns", lat_obj(&d.slat, list, st.slat_percentiles, plus));
    o.obj("clat_ns", lat_obj(&d.clat, list, st.clat_percentiles, plus));
    o.obj("lat_ns", lat_obj(&d.lat, list, st.lat_percentiles, plus));
    // add_ddir_status_json: per priority, only when two or more have
    // samples (stat.c get_nr_prios_with_samples).
    if d.prios.iter().filter(|(_, h)| h.samples() > 0).count() >= 2 {
        let name = if st.lat_percentiles {
            "lat_ns"
        } else {
            "clat_ns"
        };
        let pct = st.clat_percentiles || st.lat_percentiles;
        let mut arr = Vec::new();
        for (p, h) in d.prios.iter().filter(|(_, h)| h.samples() > 0) {
            let mut e = O::new();
            e.int("prioclass", p >> 13).int("prio", p & 7);
            e.obj(name, lat_obj(h, list, pct, plus));
            arr.push(e.done());
        }
        o.0.push(("prios".into(), JVal::Arr(arr)));
    }
    let (min, max, agg, mean, dev) = match d.bw.calc() {
        Some((mn, mx, mean, dev)) => (
            mn,
            mx,
            super::group::convert_agg(mean, rs.agg[k]),
            mean,
            dev,
        ),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    o.int("bw_min", min)
        .int("bw_max", max)
        .float("bw_agg", agg)
        .float("bw_mean", mean)
        .float("bw_dev", dev)
        .int("bw_samples", d.bw.samples);
    let (min, max, mean, dev) = d.iops.calc().unwrap_or((0, 0, 0.0, 0.0));
    o.int("iops_min", min)
        .int("iops_max", max)
        .float("iops_mean", mean)
        .float("iops_stddev", dev)
        .int("iops_samples", d.iops.samples);
    o
}

fn dist_obj(vals: &[f64; 7], keys: [&str; 7]) -> O {
    let mut o = O::new();
    for (k, v) in keys.iter().zip(vals) {
        o.float(k, *v);
    }
    o
}

const LAT_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

/// show_thread_status_json for one reporting entry.
pub fn job_obj(ts: &ThreadStat, rs: &GroupStats, elapsed: u64, plus: bool) -> JVal {
    let mut o = O::new();
    o.str("jobname", &ts.name)
        .int("groupid", ts.groupid)
        .int("error", ts.error)
        .int("eta", i32::MAX)
        .int("elapsed", elapsed);
    add_opts(&mut o, "job options", &ts.own_options);
    // add_ddir_status_json: with unified_rw_reporting=mixed only the first
    // direction, named "mixed", holding all of them.
    for (k, name) in ["read", "write", "trim"].iter().enumerate() {
        if ts.mixed() {
            if k == 0 {
                o.obj("mixed", ddir_obj(ts, rs, k, plus));
            }
            continue;
        }
        o.obj(name, ddir_obj(ts, rs, k, plus));
    }
    let mut sync = O::new();
    sync.int("total_ios", ts.sync_ios);
    // lat_ns of sync gets percentiles when clat or lat percentiles are on.
    let st = &ts.stat;
    let on = st.clat_percentiles || st.lat_percentiles;
    sync.obj("lat_ns", lat_obj(&ts.sync, &st.percentile_list, on, plus));
    o.obj("sync", sync);
    if st.unified_rw == UnifiedRw::Both {
        // add_mixed_ddir_status_json: the summed directions after sync.
        o.obj("mixed", ddir_obj(&mixed_view(ts), rs, 0, plus));
    }
    o.int("job_runtime", ts.total_run_time)
        .float("usr_cpu", ts.usr_cpu())
        .float("sys_cpu", ts.sys_cpu())
        .int("ctx", ts.ctx)
        .int("majf", ts.majf)
        .int("minf", ts.minf);
    o.obj(
        "iodepth_level",
        dist_obj(&ts.iodepth_level, ["1", "2", "4", "8", "16", "32", ">=64"]),
    );
    let sub_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    o.obj("iodepth_submit", dist_obj(&ts.iodepth_submit, sub_keys));
    o.obj("iodepth_complete", dist_obj(&ts.iodepth_complete, sub_keys));
    let (n, u, m) = ts.lat_dist();
    for (name, vals) in [
        ("latency_ns", &n[..]),
        ("latency_us", &u[..]),
        ("latency_ms", &m[..]),
    ] {
        let mut b = O::new();
        for (k, v) in LAT_KEYS.iter().zip(vals) {
            b.float(k, *v);
        }
        o.obj(name, b);
    }
    // stat.c: only when continue_on_error is set.
    if ts.continue_on_error {
        o.int("total_err", ts.total_err)
            .int("first_error", ts.first_error);
    }
    if ts.latency_depth > 0 {
        o.int("latency_depth", ts.latency_depth)
            .int("latency_target", ts.latency_target)
            .float("latency_percentile", ts.latency_percentile)
            .int("latency_window", ts.latency_window);
    }
    o.str("desc", &ts.description);
    if let Some(ss) = &ts.steadystate {
        o.obj("steadystate", ss_obj(ss));
    }
    o.done()
}

/// show_thread_status_json's "steadystate" object: the criterion as
/// "%f%s" of a float, the data from the window's first sample.
fn ss_obj(ss: &super::model::SsReport) -> O {
    let arr = |v: &[u64]| JVal::Arr(v.iter().map(|x| JVal::Int(i128::from(*x))).collect());
    let mut data = O::new();
    data.int("bw_mean", ss.bw_mean())
        .int("iops_mean", ss.iops_mean());
    data.0.push(("iops".into(), arr(&ss.iops_data)));
    data.0.push(("bw".into(), arr(&ss.bw_data)));
    let mut o = O::new();
    o.str("ss", &ss.label)
        .int("duration", ss.duration)
        .int("attained", i32::from(ss.attained))
        .str(
            "criterion",
            &format!(
                "{:.6}{}",
                ss.criterion as f32,
                if ss.pct { "%" } else { "" }
            ),
        )
        .float("max_deviation", ss.max_deviation)
        .float("slope", ss.slope_value)
        .obj("data", data);
    o
}

/// elapsed: whole seconds since start, rounded up (eta.c:
/// (mtime_since_genesis() + 999) / 1000).
pub fn elapsed_sec(run: &RunResult) -> u64 {
    ms_floor(run.end_time).div_ceil(1000)
}

/// The whole JSON document (with its trailing newline).
pub fn render_json(run: &RunResult, plus: bool) -> String {
    let ts = super::group::thread_stats(run);
    let gs = group_stats(&ts);
    let secs = run.end_time / 1_000_000_000;
    let mut root = O::new();
    root.str("fio version", super::FIO_VERSION)
        .int("timestamp", secs)
        .int("timestamp_ms", run.end_time / 1_000_000)
        .str("time", &ctime(secs));
    if let Some(g) = &run.global_options {
        add_opts(&mut root, "global options", g);
    }
    let elapsed = elapsed_sec(run);
    let jobs: Vec<JVal> = ts
        .iter()
        .map(|t| job_obj(t, &gs[t.groupid as usize], elapsed, plus))
        .collect();
    root.0.push(("jobs".into(), JVal::Arr(jobs)));
    if !run.disks.is_empty() {
        let disks = run
            .disks
            .iter()
            .map(|d| {
                let mut o = O::new();
                o.str("name", &d.name)
                    .int("read_ios", d.read_ios)
                    .int("write_ios", d.write_ios)
                    .int("read_merges", d.read_merges)
                    .int("write_merges", d.write_merges)
                    .int("read_ticks", ms_floor(d.read_ticks))
                    .int("write_ticks", ms_floor(d.write_ticks))
                    .int("in_queue", ms_floor(d.in_queue))
                    .float("util", super::disk_util_pct(d));
                o.done()
            })
            .collect();
        root.0.push(("disk_util".into(), JVal::Arr(disks)));
    }
    // flashpath's own section, always present (null when empty) so readers
    // can rely on it; fio readers ignore unknown keys.
    root.0
        .push(("flashpath".into(), from_serde(&run.flashpath)));
    let mut out = String::new();
    print(&root.done(), 0, &mut out);
    out.push('\n');
    out
}
