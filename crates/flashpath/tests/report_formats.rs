//! The report formatters against real fio 3.33 output
//! (`tests/fixtures/fio/real-runs`).
//!
//! Each test rebuilds a `RunResult` from fio's own json+ document (I/O
//! counts, runtimes, the clat histogram from `bins`, CPU, depths, latency
//! bucket counts, disks, the report time), renders it, and compares with
//! what fio printed for the same numbers. Numbers fio derives from data
//! the json+ file does not carry (slat/lat and bandwidth samples, exact
//! clat mean/stddev) are left out of the comparisons.

mod common;

use flashpath::report::fmt::cf;
use flashpath::report::group::{convert_agg, group_stats, thread_stats};
use flashpath::report::{
    render, render_all, DirResult, DiskUtil, IoULat, JobResult, LatencyTarget, OutputFormat,
    RunResult,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    common::fio_fixtures().join("real-runs")
}

fn run_dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixture directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("out.jsonplus.json").exists())
        .collect();
    v.sort();
    assert!(v.len() >= 10, "expected the 10 real-runs, got {}", v.len());
    v
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The JSON document inside out.all-formats.txt (from a line "{" to "}").
fn all_formats_json(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let a = lines.iter().position(|l| *l == "{").unwrap();
    let b = lines.iter().position(|l| *l == "}").unwrap();
    lines[a..=b].join("\n")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn opts(v: &Value) -> Vec<(String, String)> {
    // serde_json's map is sorted, so take the order from the raw text
    // instead when it matters (see key_sequence); here order is cosmetic.
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Options in the order they appear in the text of `obj_key`'s object of
/// job number `job` (or the top-level object when job is None).
fn ordered_opts(text: &str, key: &str, nth: usize) -> Vec<(String, String)> {
    let needle = format!("\"{key}\" : {{");
    let mut pos = 0;
    for _ in 0..=nth {
        match text[pos..].find(&needle) {
            Some(i) => pos += i + needle.len(),
            None => return Vec::new(),
        }
    }
    let end = pos + text[pos..].find('}').unwrap();
    text[pos..end]
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',');
            let (k, v) = l.split_once(" : ")?;
            Some((
                k.trim_matches('"').to_string(),
                v.trim_matches('"').to_string(),
            ))
        })
        .collect()
}

/// fio size strings as written in the fixtures' job options ("4k", "64k").
fn parse_bs(s: &str) -> u64 {
    let s = s.to_ascii_lowercase();
    let (num, mult) = match s.chars().last() {
        Some('k') => (&s[..s.len() - 1], 1024),
        Some('m') => (&s[..s.len() - 1], 1024 * 1024),
        _ => (&s[..], 1),
    };
    num.parse::<u64>().unwrap() * mult
}

/// Latency bucket counts back from fio's percentages (count/total*100).
/// fio prints 0.01 for any non-empty bucket below 0.01 % (stat_calc_lat),
/// so that value maps back to one I/O, the likeliest count of a rare
/// bucket.
fn counts(v: &Value, keys: &[&str], total: u64) -> Vec<u64> {
    keys.iter()
        .map(|k| {
            let p = v[*k].as_f64().unwrap();
            if p == 0.01 {
                1
            } else {
                (p * total as f64 / 100.0).round() as u64
            }
        })
        .collect()
}

const LAT_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

/// A RunResult from fio's json(+) text. `exact_lat` takes the latency
/// buckets from fio's percentages; otherwise they are derived from the
/// clat histogram.
fn load(text: &str, exact_lat: bool) -> RunResult {
    let doc: Value = serde_json::from_str(text).unwrap();
    let mut run = RunResult {
        end_time: u(&doc["timestamp_ms"]) * 1_000_000,
        global_options: doc
            .get("global options")
            .map(|_| ordered_opts(text, "global options", 0)),
        flashpath: serde_json::json!({"source": "fio fixture"}),
        ..Default::default()
    };
    let global = doc.get("global options").map(opts).unwrap_or_default();
    for (ji, j) in doc["jobs"].as_array().unwrap().iter().enumerate() {
        let own = ordered_opts(text, "job options", ji);
        let opt = |k: &str| {
            own.iter()
                .chain(global.iter())
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        let bs = parse_bs(&opt("bs").unwrap_or_else(|| "4k".into()));
        let mut job = JobResult {
            name: j["jobname"].as_str().unwrap().into(),
            description: j.get("desc").map(|d| d.as_str().unwrap().into()),
            groupid: u(&j["groupid"]) as u32,
            own_options: own.clone(),
            rw: opt("rw").unwrap_or_else(|| "read".into()),
            ioengine: opt("ioengine").unwrap_or_else(|| "psync".into()),
            iodepth: opt("iodepth").map(|s| s.parse().unwrap()).unwrap_or(1),
            bs_range: [(bs, bs); 3],
            job_runtime: u(&j["job_runtime"]) * 1_000_000,
            usr_cpu: j["usr_cpu"].as_f64().unwrap(),
            sys_cpu: j["sys_cpu"].as_f64().unwrap(),
            ctx: u(&j["ctx"]),
            majf: u(&j["majf"]),
            minf: u(&j["minf"]),
            error: j["error"].as_i64().unwrap() as i32,
            ..Default::default()
        };
        let dist = |key: &str, keys: [&str; 7]| -> [f64; 7] {
            keys.map(|k| j[key][k].as_f64().unwrap() / 100.0)
        };
        job.iodepth_level = dist("iodepth_level", ["1", "2", "4", "8", "16", "32", ">=64"]);
        let sub = ["0", "4", "8", "16", "32", "64", ">=64"];
        job.iodepth_submit = dist("iodepth_submit", sub);
        job.iodepth_complete = dist("iodepth_complete", sub);
        let mut total = 0;
        for (k, name) in ["read", "write", "trim"].iter().enumerate() {
            let d = &j[*name];
            let mut dr = DirResult {
                io_bytes: u(&d["io_bytes"]),
                total_ios: u(&d["total_ios"]),
                short_ios: u(&d["short_ios"]),
                drop_ios: u(&d["drop_ios"]),
                runtime: u(&d["runtime"]) * 1_000_000,
                ..Default::default()
            };
            total += dr.total_ios;
            if let Some(bins) = d["clat_ns"]["bins"].as_object() {
                for (v, c) in bins {
                    let v: u64 = v.parse().unwrap();
                    for _ in 0..u(c) {
                        dr.clat.record(v);
                    }
                }
            }
            job.dirs[k] = dr;
        }
        if exact_lat {
            let mut l = IoULat::default();
            l.n.copy_from_slice(&counts(&j["latency_ns"], &LAT_KEYS[..10], total));
            l.u.copy_from_slice(&counts(&j["latency_us"], &LAT_KEYS[..10], total));
            l.m.copy_from_slice(&counts(&j["latency_ms"], &LAT_KEYS, total));
            job.io_u_lat = Some(l);
        }
        if let Some(depth) = j.get("latency_depth") {
            job.latency_target = Some(LatencyTarget {
                target: u(&j["latency_target"]),
                window: u(&j["latency_window"]),
                percentile: j["latency_percentile"].as_f64().unwrap(),
                depth: u(depth) as u32,
            });
        }
        run.jobs.push(job);
    }
    for d in doc["disk_util"].as_array().unwrap() {
        // util = 100 * busy / total with both in ms: a total of 1e8 ms
        // carries fio's six decimals.
        let util = d["util"].as_f64().unwrap();
        run.disks.push(DiskUtil {
            name: d["name"].as_str().unwrap().into(),
            read_ios: u(&d["read_ios"]),
            write_ios: u(&d["write_ios"]),
            read_merges: u(&d["read_merges"]),
            write_merges: u(&d["write_merges"]),
            read_ticks: u(&d["read_ticks"]) * 1_000_000,
            write_ticks: u(&d["write_ticks"]) * 1_000_000,
            in_queue: u(&d["in_queue"]) * 1_000_000,
            busy: (util * 1e6).round() as u64 * 1_000_000,
            total: 100_000_000 * 1_000_000,
        });
    }
    run
}

/// Every `"key" :` of a fio-style JSON text, in order, with its nesting
/// path, so order and structure are compared, not just key sets.
fn key_sequence(text: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('}') || t.starts_with(']') {
            stack.pop();
            continue;
        }
        if let Some(rest) = t.strip_prefix('"') {
            if let Some((k, v)) = rest.split_once("\" : ") {
                let path = format!("{}/{}", stack.join("/"), k);
                out.push(path);
                if v.starts_with('{') || v.starts_with('[') {
                    stack.push(k.to_string());
                }
            }
        } else if t == "{" && !stack.is_empty() {
            stack.push("#".into());
        }
    }
    out
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every path of `fio` exists in `ours` with the same JSON type.
fn same_types(fio: &Value, ours: &Value, path: &str, errs: &mut Vec<String>) {
    match (fio, ours) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) => same_types(va, vb, &format!("{path}/{k}"), errs),
                    None => errs.push(format!("missing {path}/{k}")),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                errs.push(format!("{path}: {} entries, ours {}", a.len(), b.len()));
            }
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                same_types(va, vb, &format!("{path}[{i}]"), errs);
            }
        }
        _ if json_type(fio) != json_type(ours) => errs.push(format!(
            "{path}: fio {} ours {}",
            json_type(fio),
            json_type(ours)
        )),
        _ => {}
    }
}

#[test]
fn json_and_json_plus_have_fio_keys_types_and_order() {
    for dir in run_dirs() {
        let plus_text = read(&dir.join("out.jsonplus.json"));
        let run = load(&plus_text, false);
        for (file, fmt) in [
            ("out.jsonplus.json", OutputFormat::JsonPlus),
            ("out.json", OutputFormat::Json),
        ] {
            let fio_text = read(&dir.join(file));
            let ours_text = render(&run, fmt);
            let fio: Value = serde_json::from_str(&fio_text).unwrap();
            let ours: Value = serde_json::from_str(&ours_text)
                .unwrap_or_else(|e| panic!("{}: our JSON does not parse: {e}", dir.display()));
            let mut errs = Vec::new();
            same_types(&fio, &ours, "", &mut errs);
            assert!(errs.is_empty(), "{} {file}: {errs:#?}", dir.display());
            // Same keys in the same order; ours only adds "flashpath".
            let mut ks = key_sequence(&ours_text);
            let fp = ks.iter().position(|k| k == "/flashpath").unwrap();
            ks.truncate(fp);
            assert_eq!(key_sequence(&fio_text), ks, "{} {file}", dir.display());
            assert_eq!(ours["flashpath"]["source"], "fio fixture");
        }
    }
}

#[test]
fn json_style_is_byte_identical_for_fio_numbers() {
    // Lines whose values we reproduce exactly (not slat/lat, bandwidth
    // samples or clat mean/stddev) must be byte-identical to fio's, so
    // indentation, `"key" : value` spacing and number formats match.
    for dir in run_dirs() {
        let fio_text = read(&dir.join("out.jsonplus.json"));
        let ours = render(&load(&fio_text, true), OutputFormat::JsonPlus);
        let keep = |l: &&str| {
            let t = l.trim_start();
            [
                "\"fio version\"",
                "\"timestamp",
                "\"time\"",
                "\"io_",
                "\"bw\" ",
                "\"bw_bytes\"",
                "\"iops\" ",
                "\"runtime\"",
                "\"total_ios\"",
                "\"short_ios\"",
                "\"drop_ios\"",
                "\"job_runtime\"",
                "\"ctx\"",
                "\"majf\"",
                "\"minf\"",
                "\"latency_depth\"",
                "\"latency_target\"",
                "\"latency_percentile\"",
                "\"latency_window\"",
                "\"desc\"",
                "\"name\"",
                "\"read_",
                "\"write_",
                "\"in_queue\"",
                "\"util\"",
            ]
            .iter()
            .any(|p| t.starts_with(p))
                // percentile, bins, depth and latency-bucket entries
                || t[1..].starts_with(|c: char| c.is_ascii_digit() || c == '>')
                || t.starts_with("\"usr_cpu\"")
                || t.starts_with("\"sys_cpu\"")
                || t.starts_with('{')
                || t.starts_with('}')
                || t.starts_with(']')
        };
        let ours = strip_flashpath(&ours);
        let a: Vec<&str> = fio_text.lines().filter(keep).collect();
        let b: Vec<&str> = ours.lines().filter(keep).collect();
        assert_eq!(a, b, "{}", dir.display());
    }
}

/// Our document without its last key "flashpath": what fio would print.
fn strip_flashpath(text: &str) -> String {
    let i = text.find(",\n  \"flashpath\" : ").expect("flashpath key");
    format!("{}\n}}\n", &text[..i])
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn derived_numbers_agree_with_fio() {
    for dir in run_dirs() {
        let text = read(&dir.join("out.jsonplus.json"));
        let fio: Value = serde_json::from_str(&text).unwrap();
        let run = load(&text, false);
        let ours: Value = serde_json::from_str(&render(&run, OutputFormat::JsonPlus)).unwrap();
        let ts = thread_stats(&run);
        let gs = group_stats(&ts);
        for (ji, (fj, oj)) in fio["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(ours["jobs"].as_array().unwrap())
            .enumerate()
        {
            let ctx = format!("{} job {ji}", dir.display());
            for (k, d) in ["read", "write", "trim"].iter().enumerate() {
                let (f, o) = (&fj[*d], &oj[*d]);
                for key in ["io_kbytes", "bw_bytes", "bw", "total_ios", "runtime"] {
                    assert_eq!(f[key], o[key], "{ctx} {d} {key}");
                }
                assert_eq!(
                    cf(f["iops"].as_f64().unwrap()),
                    cf(o["iops"].as_f64().unwrap()),
                    "{ctx} {d} iops"
                );
                // Percentiles come from the same buckets: exact.
                assert_eq!(
                    f["clat_ns"]["percentile"], o["clat_ns"]["percentile"],
                    "{ctx} {d} percentiles"
                );
                assert_eq!(f["clat_ns"]["bins"], o["clat_ns"]["bins"], "{ctx} {d} bins");
                assert_eq!(f["clat_ns"]["N"], o["clat_ns"]["N"], "{ctx} {d} N");
                // clat min/max from bucket values: within fio's bucket error.
                for key in ["min", "max", "mean"] {
                    let (a, b) = (
                        f["clat_ns"][key].as_f64().unwrap(),
                        o["clat_ns"][key].as_f64().unwrap(),
                    );
                    assert!(
                        close(a, b, a / 64.0 + 1.0),
                        "{ctx} {d} clat {key}: {a} vs {b}"
                    );
                }
                // bw_agg from fio's own bw_mean and our group aggregate.
                if f["bw_samples"].as_u64().unwrap() > 0 {
                    let agg = gs[ts[ji].groupid as usize].agg[k];
                    let p = convert_agg(f["bw_mean"].as_f64().unwrap(), agg);
                    assert_eq!(cf(p), cf(f["bw_agg"].as_f64().unwrap()), "{ctx} {d} bw_agg");
                }
            }
            for key in ["job_runtime", "ctx", "majf", "minf", "error", "groupid"] {
                assert_eq!(fj[key], oj[key], "{ctx} {key}");
            }
            for key in ["usr_cpu", "sys_cpu"] {
                assert_eq!(
                    cf(fj[key].as_f64().unwrap()),
                    cf(oj[key].as_f64().unwrap()),
                    "{ctx} {key}"
                );
            }
            for key in ["iodepth_level", "iodepth_submit", "iodepth_complete"] {
                for (k, v) in fj[key].as_object().unwrap() {
                    assert!(
                        close(v.as_f64().unwrap(), oj[key][k].as_f64().unwrap(), 1e-5),
                        "{ctx} {key} {k}"
                    );
                }
            }
            // Latency shares derived from the clat buckets: a bucket that
            // straddles a decimal edge (250 us, 500 us, ...) goes wholly to
            // one side, so allow a few percent of movement between
            // neighbours, and the totals must agree.
            for key in ["latency_ns", "latency_us", "latency_ms"] {
                for (k, v) in fj[key].as_object().unwrap() {
                    let (a, b) = (v.as_f64().unwrap(), oj[key][k].as_f64().unwrap());
                    assert!(close(a, b, 3.0), "{ctx} {key} {k}: fio {a} ours {b}");
                }
            }
        }
        assert_eq!(fio["timestamp"], ours["timestamp"]);
        assert_eq!(fio["timestamp_ms"], ours["timestamp_ms"]);
        assert_eq!(fio["time"], ours["time"]);
        assert_eq!(fio["disk_util"], ours["disk_util"], "{}", dir.display());
        assert_eq!(fio.get("global options"), ours.get("global options"));
    }
}

/// One run in three formats: out.all-formats.txt.
fn all_formats(dir: &Path) -> (String, RunResult) {
    let text = read(&dir.join("out.all-formats.txt"));
    let run = load(&all_formats_json(&text), true);
    (text, run)
}

#[test]
fn terse_fields_match_fio() {
    for dir in run_dirs() {
        let (text, run) = all_formats(&dir);
        let fio_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("3;")).collect();
        let ours = render(&run, OutputFormat::Terse);
        let our_lines: Vec<&str> = ours.lines().collect();
        assert_eq!(fio_lines.len(), our_lines.len(), "{}", dir.display());
        for (f, o) in fio_lines.iter().zip(&our_lines) {
            let f: Vec<&str> = f.split(';').collect();
            let o: Vec<&str> = o.split(';').collect();
            assert_eq!(f.len(), o.len(), "{} field count", dir.display());
            assert!(f.len() == 130 || f.len() == 131);
            // Fields from numbers the json+ file carries exactly: header,
            // io/bw/iops/runtime and the 20 percentile slots per direction,
            // cpu, depths, latency buckets, disk, description. (slat, lat
            // and bw-sample fields need data json+ does not keep; clat
            // min/max/mean/dev come from bucket values.)
            let mut idx: Vec<usize> = (0..5).collect();
            for base in [5, 46] {
                idx.extend(base..base + 4);
                idx.extend(base + 12..base + 32);
            }
            idx.extend(87..f.len());
            for i in idx {
                assert_eq!(f[i], o[i], "{} terse field {i}", dir.display());
            }
        }
    }
}

fn normal_part(text: &str) -> Vec<String> {
    // The normal results follow the JSON document's closing brace.
    let lines: Vec<&str> = text.lines().collect();
    let end = lines.iter().position(|l| *l == "}").unwrap();
    lines[end + 1..].iter().map(|s| s.to_string()).collect()
}

fn comparable(l: &str) -> bool {
    [
        "  read: ",
        "  write: ",
        "  trim: ",
        "    clat percentiles",
        "     |",
        "  lat (",
        "  Description",
        "  cpu ",
        "  IO depths",
        "     submit",
        "     complete",
        "     issued",
        "     latency",
        "Run status",
        "   READ:",
        "  WRITE:",
        "   TRIM:",
        "Disk stats",
        "  vda:",
    ]
    .iter()
    .any(|p| l.starts_with(p))
}

#[test]
fn normal_output_matches_fio_lines() {
    for dir in run_dirs() {
        let (text, run) = all_formats(&dir);
        let fio: Vec<String> = normal_part(&text)
            .into_iter()
            .filter(|l| comparable(l))
            .collect();
        let ours_text = render(&run, OutputFormat::Normal);
        let ours: Vec<&str> = ours_text.lines().filter(|l| comparable(l)).collect();
        assert_eq!(fio, ours, "{}", dir.display());
        // Header: the job lines, fio-3.33, Starting N process(es). Our
        // reconstruction has one clone per JSON entry, so only check the
        // single-clone runs' header lines exactly.
        let lines: Vec<&str> = text.lines().collect();
        let start = lines
            .iter()
            .position(|l| l.starts_with("Starting"))
            .unwrap();
        if !lines[..start].contains(&"...") {
            let head: Vec<&str> = ours_text.lines().take(start + 1).collect();
            assert_eq!(lines[..=start].to_vec(), head, "{}", dir.display());
        }
    }
}

#[test]
fn combined_formats_in_fio_order() {
    let dir = fixtures().join("randrw70-4jobs-grouped");
    let (text, run) = all_formats(&dir);
    let formats = OutputFormat::from_fio_name("normal,json+,terse").unwrap();
    let ours = render_all(&run, &formats);
    let kind = |l: &str| {
        if l.starts_with("3;") {
            "terse"
        } else if l == "{" {
            "json"
        } else if l.starts_with("Run status") {
            "normal"
        } else if l.starts_with("fio-3.33") {
            "header"
        } else {
            ""
        }
    };
    let order =
        |t: &str| -> Vec<&'static str> { t.lines().map(kind).filter(|k| !k.is_empty()).collect() };
    assert_eq!(order(&text), order(&ours));
    // And the JSON part is a valid document on its own.
    let j = all_formats_json(&ours);
    let v: Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["fio version"], "fio-3.33");
}

#[test]
fn latency_shares_exact_when_counted() {
    // With exact bucket counts the JSON percentages are fio's to the
    // printed digit (apart from fio's 0.01 floor, which maps back to a
    // count that prints as 0.01 again only in the normal/terse outputs).
    for dir in run_dirs() {
        let text = read(&dir.join("out.jsonplus.json"));
        let fio: Value = serde_json::from_str(&text).unwrap();
        let ours: Value =
            serde_json::from_str(&render(&load(&text, true), OutputFormat::Json)).unwrap();
        for (fj, oj) in fio["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(ours["jobs"].as_array().unwrap())
        {
            for key in ["latency_ns", "latency_us", "latency_ms"] {
                for (k, v) in fj[key].as_object().unwrap() {
                    let (a, b) = (v.as_f64().unwrap(), oj[key][k].as_f64().unwrap());
                    if a == 0.01 {
                        assert!((0.01..0.02).contains(&b), "{} {key} {k}", dir.display());
                    } else {
                        assert_eq!(cf(a), cf(b), "{} {key} {k}", dir.display());
                    }
                }
            }
        }
    }
}

/// Bandwidth/IOPS sample statistics set from fio's own numbers (json+ has
/// no samples): the bw/iops lines of normal output, terse's bw fields and
/// JSON's bw_* / iops_* lines must then be fio's, byte for byte.
#[test]
fn bw_and_iops_sample_stats_print_like_fio() {
    use flashpath::report::group::SampleStat;
    use flashpath::report::{json, normal, terse};
    for dir in run_dirs() {
        let (text, run) = all_formats(&dir);
        let doc: Value = serde_json::from_str(&all_formats_json(&text)).unwrap();
        let mut ts = thread_stats(&run);
        let gs = group_stats(&ts);
        let stat = |d: &Value, p: &str, dev: &str, mean: &str| {
            let n = u(&d[format!("{p}_samples")]);
            let sd = d[dev].as_f64().unwrap();
            SampleStat {
                min: u(&d[format!("{p}_min")]),
                max: u(&d[format!("{p}_max")]),
                samples: n,
                mean: d[mean].as_f64().unwrap(),
                s: sd * sd * n.saturating_sub(1) as f64,
            }
        };
        for (t, j) in ts.iter_mut().zip(doc["jobs"].as_array().unwrap()) {
            for (k, name) in ["read", "write", "trim"].iter().enumerate() {
                t.dirs[k].bw = stat(&j[*name], "bw", "bw_dev", "bw_mean");
                t.dirs[k].iops = stat(&j[*name], "iops", "iops_stddev", "iops_mean");
            }
        }
        let time = flashpath::report::fmt::ctime(run.end_time / 1_000_000_000);
        let mut ours_normal = String::new();
        let mut ours_json = String::new();
        let mut ours_terse = Vec::new();
        for t in &ts {
            let rs = &gs[t.groupid as usize];
            ours_normal.push_str(&normal::job_block(t, rs, &time));
            json::print(&json::job_obj(t, rs, 0, true), 2, &mut ours_json);
            ours_json.push('\n');
            ours_terse.push(terse::terse_line(t, rs, &run));
        }
        let pick = |l: &&str| l.starts_with("   bw (") || l.starts_with("   iops ");
        let fio_n: Vec<&str> = text.lines().filter(pick).collect();
        let our_n: Vec<&str> = ours_normal.lines().filter(pick).collect();
        assert_eq!(fio_n, our_n, "{}", dir.display());
        let pickj = |l: &&str| {
            let t = l.trim_start();
            t.starts_with("\"bw_") || t.starts_with("\"iops_")
        };
        let fio_j: Vec<&str> = text.lines().filter(pickj).collect();
        let our_j: Vec<&str> = ours_json.lines().filter(pickj).collect();
        assert_eq!(fio_j, our_j, "{}", dir.display());
        let fio_t: Vec<&str> = text.lines().filter(|l| l.starts_with("3;")).collect();
        for (f, o) in fio_t.iter().zip(&ours_terse) {
            let f: Vec<&str> = f.split(';').collect();
            let o: Vec<&str> = o.trim_end().split(';').collect();
            for base in [5, 46] {
                assert_eq!(
                    f[base + 36..base + 41],
                    o[base + 36..base + 41],
                    "{}",
                    dir.display()
                );
            }
        }
    }
}
