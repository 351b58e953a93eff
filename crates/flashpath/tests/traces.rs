//! The trace readers on the real samples in tests/fixtures/traces (their
//! SOURCES.md says where each came from): record counts and byte totals
//! against what blkparse says (its summary, or blkparse run here when it
//! is installed) or, for the CSV and ASCII formats, against a plain
//! reading of the columns their documentation gives.

use flashpath::workload::trace::{self, Format, Op, TraceRecord};
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/traces")
        .join(rel)
}

fn read_all(path: &Path, format: &Format) -> Vec<TraceRecord> {
    let mut r = trace::open(path, format).unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record().unwrap() {
        v.push(x);
    }
    v
}

fn count(v: &[TraceRecord], op: Op) -> (usize, u64) {
    let s: Vec<&TraceRecord> = v.iter().filter(|r| r.op == op).collect();
    (s.len(), s.iter().map(|r| r.len).sum())
}

/// blkparse's "Reads Queued: N, XKiB  Writes Queued: N, XKiB" line of the
/// block named `block` (e.g. "Total (" or "CPU1 ("): (reads, KiB, writes,
/// KiB).
fn queued_summary(text: &str, block: &str) -> (u64, u64, u64, u64) {
    let mut in_block = false;
    for l in text.lines() {
        if l.starts_with(block) {
            in_block = true;
        } else if in_block && l.trim_start().starts_with("Reads Queued:") {
            let nums: Vec<u64> = l
                .replace(',', "")
                .replace("KiB", " ")
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            return (nums[0], nums[1], nums[2], nums[3]);
        }
    }
    panic!("no {block} summary");
}

const BIN: &str = "blktrace_bin/blktrace_viewer_sample.blktrace.0";
const BIN_TEXT: &str = "blkparse/regen_blktrace_viewer_sample.pipe-mode.blkparse.txt";

#[test]
fn blktrace_binary_queues_what_blkparse_counts() {
    let path = fixture(BIN);
    assert_eq!(trace::detect(&path).unwrap(), Format::Blktrace);
    let v = read_all(&path, &Format::Blktrace);
    // blkparse's summary of this file (made from it, SOURCES.md #8).
    let text = std::fs::read_to_string(fixture(BIN_TEXT)).unwrap();
    let (r, rk, w, wk) = queued_summary(&text, "CPU1 (");
    assert_eq!(count(&v, Op::Read), (r as usize, rk * 1024));
    assert_eq!(count(&v, Op::Write), (w as usize, wk * 1024));
    assert!(v.iter().all(|x| x.completion_ns.is_some()));
    assert!(v.windows(2).all(|p| p[0].time_ns <= p[1].time_ns));
    // The real blkparse, when installed, says the same of the binary.
    match std::process::Command::new("blkparse")
        .args(["-i", "-"])
        .stdin(std::fs::File::open(&path).unwrap())
        .output()
    {
        Ok(out) if out.status.success() => {
            let t = String::from_utf8_lossy(&out.stdout);
            let (r2, rk2, w2, wk2) = queued_summary(&t, "CPU1 (");
            assert_eq!((r2, rk2, w2, wk2), (r, rk, w, wk));
            // And its event lines, read back, are the binary's I/Os.
            let mut rd = trace::open_text(
                "blkparse stdout",
                Box::new(std::io::Cursor::new(out.stdout.clone())),
                &Format::Blkparse,
            )
            .unwrap();
            let mut n = 0;
            while let Some(x) = rd.next_record().unwrap() {
                assert_eq!((x.offset, x.len, x.op), (v[n].offset, v[n].len, v[n].op));
                assert_eq!(x.latency_ns(), v[n].latency_ns());
                n += 1;
            }
            assert_eq!(n, v.len());
        }
        _ => eprintln!("blkparse not installed: its run is skipped"),
    }
}

#[test]
fn blktrace_binary_and_its_blkparse_text_are_the_same_stream() {
    let bin = read_all(&fixture(BIN), &Format::Blktrace);
    let path = fixture(BIN_TEXT);
    assert_eq!(trace::detect(&path).unwrap(), Format::Blkparse);
    let text = read_all(&path, &Format::Blkparse);
    assert_eq!(bin.len(), text.len());
    // blkparse prints time from the first event; the binary has the
    // kernel's clock: compare gaps and latencies.
    let t0b = bin[0].time_ns;
    let t0t = text[0].time_ns;
    for (b, t) in bin.iter().zip(&text) {
        assert_eq!(
            (b.op, b.offset, b.len, b.device),
            (t.op, t.offset, t.len, t.device)
        );
        assert_eq!(b.time_ns - t0b, t.time_ns - t0t);
        assert_eq!(b.latency_ns(), t.latency_ns());
    }
}

#[test]
fn blkparse_text_with_merges_remaps_and_flushes() {
    let path = fixture("blkparse/blktrace_merge_nvme0n1.blktrace.txt");
    assert_eq!(trace::detect(&path).unwrap(), Format::Blkparse);
    let v = read_all(&path, &Format::Blkparse);
    let text = std::fs::read_to_string(&path).unwrap();
    let (r, rk, w, wk) = queued_summary(&text, "Total (");
    // blkparse counts a flush's Q (no data, `Q FWFS [jbd2...]`) as a
    // write queued with 0 bytes.
    let (wn, wb) = count(&v, Op::Write);
    let (fl, fb) = count(&v, Op::Flush);
    assert_eq!((count(&v, Op::Read).0 as u64, rk), (r, 0));
    assert_eq!(((wn + fl) as u64, (wb + fb) / 1024), (w, wk));
    assert_eq!(fb, 0);
    let queued_flushes = text
        .lines()
        .filter(|l| l.contains(" Q ") && l.trim_end().ends_with(']') && !l.contains(" + "))
        .count();
    assert_eq!(fl, queued_flushes);
    // Merged writes complete with their request: every Q has its C here.
    assert!(v.iter().all(|x| x.completion_ns.is_some()));
}

/// A plain reading of a CSV/ASCII file: fields of each non-empty line.
fn rows(rel: &str, sep: &dyn Fn(&str) -> Vec<String>) -> Vec<Vec<String>> {
    std::fs::read_to_string(fixture(rel))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(sep)
        .collect()
}

fn comma(l: &str) -> Vec<String> {
    l.split(',').map(|s| s.trim().to_string()).collect()
}

fn blanks(l: &str) -> Vec<String> {
    l.split_whitespace().map(str::to_string).collect()
}

#[test]
fn msr_cambridge_counts_and_response_times() {
    let rel = "msr_csv/msr-cambridge1-sample.csv";
    let path = fixture(rel);
    assert_eq!(trace::detect(&path).unwrap(), Format::Msr);
    let v = read_all(&path, &Format::Msr);
    // SOURCES.md: 1,000 records, 508 Read / 492 Write.
    assert_eq!(v.len(), 1000);
    assert_eq!(count(&v, Op::Read).0, 508);
    assert_eq!(count(&v, Op::Write).0, 492);
    let rows = rows(rel, &comma);
    let bytes = |t: &str| -> u64 {
        rows.iter()
            .filter(|r| r[3] == t)
            .map(|r| r[5].parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(count(&v, Op::Read).1, bytes("Read"));
    assert_eq!(count(&v, Op::Write).1, bytes("Write"));
    // FILETIME: 2007-02-22 17:22:09 UTC for the first (SOURCES.md).
    let unix_s = (v[0].time_ns / 100 - trace::delimited::FILETIME_UNIX_OFFSET) / 10_000_000;
    assert_eq!(unix_s, 1_172_164_929);
    assert_eq!(v[0].latency_ns(), Some(2833 * 100));
}

#[test]
fn mqsim_ascii_counts() {
    let rel = "mqsim_ascii/mqsim_tpcc-small.trace";
    let path = fixture(rel);
    assert_eq!(trace::detect(&path).unwrap(), Format::Mqsim);
    let v = read_all(&path, &Format::Mqsim);
    // SOURCES.md: 6,999 requests on 16 devices, 4,381 R / 2,618 W.
    assert_eq!(v.len(), 6999);
    assert_eq!(count(&v, Op::Read).0, 4381);
    assert_eq!(count(&v, Op::Write).0, 2618);
    let devices: std::collections::BTreeSet<u32> = v.iter().map(|r| r.device).collect();
    assert_eq!(devices.len(), 16);
    let rows = rows(rel, &blanks);
    let sectors: u64 = rows.iter().map(|r| r[3].parse::<u64>().unwrap()).sum();
    assert_eq!(v.iter().map(|r| r.len).sum::<u64>(), sectors * 512);
}

#[test]
fn disksim_ascii_counts() {
    let rel = "disksim_ascii/disksim_valid_ascii.first50000.trace";
    let path = fixture(rel);
    assert_eq!(trace::detect(&path).unwrap(), Format::Disksim);
    let v = read_all(&path, &Format::Disksim);
    assert_eq!(v.len(), 50_000);
    let rows = rows(rel, &blanks);
    let reads = rows
        .iter()
        .filter(|r| r[4].parse::<u64>().unwrap() & 1 == 1)
        .count();
    assert_eq!(count(&v, Op::Read).0, reads);
    let blocks: u64 = rows.iter().map(|r| r[3].parse::<u64>().unwrap()).sum();
    assert_eq!(v.iter().map(|r| r.len).sum::<u64>(), blocks * 512);
    assert_eq!(v[1].time_ns, 17_829_285);
}

#[test]
fn blkreplay_load_counts() {
    let path = fixture("blkreplay_load/windows-shared-server.load");
    assert_eq!(trace::detect(&path).unwrap(), Format::Blkreplay);
    let v = read_all(&path, &Format::Blkreplay);
    // SOURCES.md: 1,371 I/Os, all writes.
    assert_eq!(v.len(), 1371);
    assert_eq!(count(&v, Op::Write).0, 1371);
    let text = std::fs::read_to_string(&path).unwrap();
    let sectors: u64 = text
        .lines()
        .skip_while(|l| !l.starts_with("start"))
        .skip(1)
        .map(|l| l.split(';').nth(2).unwrap().trim().parse::<u64>().unwrap())
        .sum();
    assert_eq!(count(&v, Op::Write).1, sectors * 512);
}

#[test]
fn alibaba_and_tencent_excerpts() {
    for (rel, fmt, n) in [
        (
            "quoted_excerpts/alibaba_io_traces.first7.libCacheSim_comment.csv",
            Format::Alibaba,
            7,
        ),
        (
            "quoted_excerpts/alibaba_io_traces.6lines.TDS_article.csv",
            Format::Alibaba,
            6,
        ),
        (
            "quoted_excerpts/tencent_cbs.9lines.TDS_article.csv",
            Format::Tencent,
            9,
        ),
    ] {
        let path = fixture(rel);
        assert_eq!(trace::detect(&path).unwrap(), fmt, "{rel}");
        let v = read_all(&path, &fmt);
        assert_eq!(v.len(), n, "{rel}");
        let rows = rows(rel, &comma);
        let bytes: u64 = match fmt {
            Format::Alibaba => rows.iter().map(|r| r[3].parse::<u64>().unwrap()).sum(),
            _ => rows
                .iter()
                .map(|r| r[2].parse::<u64>().unwrap() * 512)
                .sum(),
        };
        assert_eq!(v.iter().map(|r| r.len).sum::<u64>(), bytes, "{rel}");
    }
    // The Alibaba README's example line.
    let v = read_all(
        &fixture("quoted_excerpts/alibaba_io_traces.first7.libCacheSim_comment.csv"),
        &Format::Alibaba,
    );
    let r = v[5];
    assert_eq!(
        (r.device, r.op, r.offset, r.len),
        (0, Op::Read, 126_703_644_672, 4096)
    );
    assert_eq!(r.time_ns, 1_577_808_000_000_626_000);
}

#[test]
fn fio_iologs_are_named_for_their_own_reader() {
    for rel in [
        "fio_iolog/gen_fio333_randrw_psync.v3.iolog",
        "fio_iolog/fio_t0038.iolog",
        "fio-iolog-randrw/trace.iolog",
    ] {
        assert_eq!(
            trace::detect(&fixture(rel)).unwrap(),
            Format::Iolog,
            "{rel}"
        );
    }
}

mod replay {
    use super::fixture;
    use flashpath::run;
    use flashpath::workload::trace::replay::{Remap, TraceOptions};

    fn job(path: &std::path::Path, extra: &str) -> String {
        format!(
            "[replay]\nioengine=libaio\ndirect=1\niodepth=32\nread_iolog={}\n{extra}",
            path.display()
        )
    }

    /// Every sample replays on a simulated machine (wrapped onto it: the
    /// traces address devices larger than the profile's), and the run
    /// does every I/O the trace holds.
    #[test]
    fn every_sample_replays() {
        for (rel, ios) in [
            (super::BIN, 963u64),
            (super::BIN_TEXT, 963),
            ("blkparse/blktrace_merge_nvme0n1.blktrace.txt", 0),
            ("msr_csv/msr-cambridge1-sample.csv", 1000),
            ("mqsim_ascii/mqsim_tpcc-small.trace", 6999),
            ("disksim_ascii/disksim_valid_ascii.first50000.trace", 50_000),
            ("blkreplay_load/windows-shared-server.load", 1371),
            ("quoted_excerpts/tencent_cbs.9lines.TDS_article.csv", 9),
            (
                "quoted_excerpts/alibaba_io_traces.6lines.TDS_article.csv",
                6,
            ),
        ] {
            // The reads and writes with data the reader gives.
            let path = fixture(rel);
            let fmt = flashpath::workload::trace::detect(&path).unwrap();
            let data = super::read_all(&path, &fmt)
                .iter()
                .filter(|r| r.len > 0 && matches!(r.op, super::Op::Read | super::Op::Write))
                .count() as u64;
            if ios > 0 {
                assert_eq!(data, ios, "{rel}");
            }
            let ios = data;
            let opts = TraceOptions {
                remap: Remap::Wrap,
                ..TraceOptions::default()
            };
            let out = run::run_trace_text(
                &job(&fixture(rel), "replay_no_stall=1\n"),
                "t",
                std::path::Path::new("."),
                "nullblk",
                &[],
                0,
                &opts,
            )
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
            let done: u64 = out.result.jobs[0].dirs.iter().map(|d| d.total_ios).sum();
            assert_eq!(done, ios, "{rel}");
            let t = &out.result.flashpath["trace"][0];
            assert_eq!(
                t["ios"]["read"].as_u64().unwrap() + t["ios"]["write"].as_u64().unwrap(),
                ios
            );
        }
    }

    #[test]
    fn an_address_past_the_device_names_the_record() {
        let e = run::run_trace_text(
            &job(&fixture(super::BIN), ""),
            "t",
            std::path::Path::new("."),
            "nullblk",
            &[],
            0,
            &TraceOptions::default(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("blktrace_viewer_sample.blktrace.0: record "),
            "{e}"
        );
        assert!(e.contains("reaches past the end of the device"), "{e}");
        assert!(e.contains("--remap"), "{e}");
    }

    /// Recorded completions come back beside the simulated latencies.
    #[test]
    fn recorded_and_simulated_latency_side_by_side() {
        let opts = TraceOptions {
            remap: Remap::Wrap,
            absolute: true,
            ..TraceOptions::default()
        };
        let out = run::run_trace_text(
            &job(&fixture(super::BIN), ""),
            "t",
            std::path::Path::new("."),
            "nullblk",
            &[],
            0,
            &opts,
        )
        .unwrap();
        let t = &out.result.flashpath["trace"][0];
        assert_eq!(t["recorded_ios_with_completion"], 963);
        // One read at a time, as blkparse's summary says ("Read depth: 1").
        assert_eq!(t["recorded_max_depth"], 1);
        let rec = t["recorded_lat_ns_percentiles"]["50.000000"]
            .as_u64()
            .unwrap();
        // The NVMe device took about 55 us per 4 KiB read (C - Q).
        assert!((40_000..80_000).contains(&rec), "{rec}");
        assert!(
            t["simulated_lat_ns_percentiles"]["50.000000"]
                .as_u64()
                .unwrap()
                > 0
        );
        assert!(out.notes.iter().any(|n| n.contains("recorded   simulated")));
    }

    /// Closed loop at the recorded depth: the merged-write trace had
    /// several queued I/Os in flight; the job keeps that many at most.
    #[test]
    fn closed_loop_at_the_recorded_depth() {
        let path = fixture("blkparse/blktrace_merge_nvme0n1.blktrace.txt");
        let opts = TraceOptions {
            remap: Remap::Wrap,
            recorded_depth: true,
            ..TraceOptions::default()
        };
        let out = run::run_trace_text(
            &job(&path, "replay_no_stall=1\n"),
            "t",
            std::path::Path::new("."),
            "nullblk",
            &[],
            0,
            &opts,
        )
        .unwrap();
        let t = &out.result.flashpath["trace"][0];
        let depth = t["recorded_max_depth"].as_u64().unwrap();
        // Queued writes outrun their completions: blkparse's driver depth
        // (7, D to C) is a floor for the depth from Q to C.
        assert!(depth >= 7, "{depth}");
        // No I/O was issued deeper than that (fio's depth buckets).
        let levels = &out.result.jobs[0].iodepth_level;
        let bucket = |d: u64| match d {
            0..=1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        assert!(
            levels[bucket(depth) + 1..].iter().all(|x| *x == 0.0),
            "{levels:?}"
        );
        // A trace without completions has no recorded depth.
        let e = run::run_trace_text(
            &job(
                &fixture("mqsim_ascii/mqsim_tpcc-small.trace"),
                "replay_no_stall=1\n",
            ),
            "t",
            std::path::Path::new("."),
            "nullblk",
            &[],
            0,
            &opts,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("records no completions"), "{e}");
    }

    /// The per-I/O CSV: one row per queued I/O, its recorded latency the
    /// trace's C - Q, every I/O matched to a simulated completion.
    #[test]
    fn per_io_csv_pairs_each_record_with_its_simulation() {
        let opts = TraceOptions {
            remap: Remap::Wrap,
            lat_csv: Some("lat.csv".into()),
            // As flashpath replay sets it: the I/Os in flight at the end
            // are reaped too, so every row has its simulation.
            count_tail: true,
            ..TraceOptions::default()
        };
        let out = run::run_trace_text(
            &job(&fixture(super::BIN), ""),
            "t",
            std::path::Path::new("."),
            "nullblk",
            &[],
            0,
            &opts,
        )
        .unwrap();
        let csv = &out
            .files
            .iter()
            .find(|f| f.name == "lat.csv")
            .unwrap()
            .contents;
        let trace = super::read_all(&fixture(super::BIN), &super::Format::Blktrace);
        let rows: Vec<Vec<&str>> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect())
            .collect();
        assert_eq!(rows.len(), trace.len());
        for (r, t) in rows.iter().zip(&trace) {
            assert_eq!(r[0], t.at.to_string());
            assert_eq!(r[5], t.latency_ns().unwrap().to_string());
            assert!(r[6].parse::<u64>().unwrap() > 0, "{r:?}");
        }
    }
}

/// The sample's records: (header, payload) as stored (little-endian).
fn bin_records() -> Vec<(Vec<u8>, Vec<u8>)> {
    let data = std::fs::read(fixture(BIN)).unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        let pdu = u16::from_le_bytes([data[i + 46], data[i + 47]]) as usize;
        out.push((
            data[i..i + 48].to_vec(),
            data[i + 48..i + 48 + pdu].to_vec(),
        ));
        i += 48 + pdu;
    }
    out
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fp-traces-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn per_cpu_files_merge_in_time_order() {
    // The sample's records dealt to two CPU files, every third to CPU 1:
    // read from either name (or the stem), the merge is the original.
    let d = scratch("merge");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, (h, p)) in bin_records().into_iter().enumerate() {
        let to = if i % 3 == 2 { &mut b } else { &mut a };
        to.extend(h);
        to.extend(p);
    }
    std::fs::write(d.join("sdb.blktrace.0"), a).unwrap();
    std::fs::write(d.join("sdb.blktrace.1"), b).unwrap();
    let whole = read_all(&fixture(BIN), &Format::Blktrace);
    for name in ["sdb.blktrace.0", "sdb.blktrace.1", "sdb"] {
        let merged = read_all(&d.join(name), &Format::Blktrace);
        assert_eq!(merged.len(), whole.len(), "{name}");
        for (m, w) in merged.iter().zip(&whole) {
            assert_eq!(
                (m.time_ns, m.offset, m.len, m.op),
                (w.time_ns, w.offset, w.len, w.op)
            );
            assert_eq!(m.completion_ns, w.completion_ns);
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_big_endian_trace_reads_the_same() {
    // Each header field byte-swapped, as a big-endian machine writes it;
    // payloads kept (they are opaque here).
    let d = scratch("be");
    let mut out = Vec::new();
    for (h, p) in bin_records() {
        for (at, size) in [
            (0, 4),
            (4, 4),
            (8, 8),
            (16, 8),
            (24, 4),
            (28, 4),
            (32, 4),
            (36, 4),
            (40, 4),
            (44, 2),
            (46, 2),
        ] {
            out.extend(h[at..at + size].iter().rev());
        }
        out.extend(p);
    }
    let path = d.join("be.blktrace");
    std::fs::write(&path, out).unwrap();
    assert_eq!(trace::detect(&path).unwrap(), Format::Blktrace);
    assert_eq!(
        read_all(&path, &Format::Blktrace),
        read_all(&fixture(BIN), &Format::Blktrace)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn umass_spc_lines_as_the_specification_gives_them() {
    // No SPC file could be redistributed (SOURCES.md); these lines follow
    // the SPC trace format specification 1.0.1 (ASU,LBA,Size,Opcode,
    // Timestamp; the first is the one quoted in SOURCES.md).
    let text = "0,303567,3584,w,0.000000\n1,1051,512,R,0.008197\n0,303574,3072,W,0.027212,extra\n";
    assert_eq!(
        trace::detect_bytes("t.spc", text.as_bytes()).unwrap(),
        Format::Spc
    );
    let mut r = trace::open_text(
        "t.spc",
        Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        &Format::Spc,
    )
    .unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record().unwrap() {
        v.push(x);
    }
    assert_eq!(v.len(), 3);
    assert_eq!(
        (v[0].device, v[0].offset, v[0].len, v[0].op),
        (0, 303_567 * 512, 3584, Op::Write)
    );
    assert_eq!(
        (v[1].device, v[1].op, v[1].time_ns),
        (1, Op::Read, 8_197_000)
    );
    assert_eq!(v.iter().map(|x| x.len).sum::<u64>(), 3584 + 512 + 3072);
}
