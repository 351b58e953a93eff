//! Replays that must not mislead: what a replay's clat means while it
//! waits for the next I/O's time (fio 3.36's reaping wait, fio 3.33's
//! sleep), timestamps that go backwards, unaligned O_DIRECT I/O, and the
//! messages for inputs that are not traces.

use flashpath::run;
use flashpath::workload::trace::replay::{ReplayDelay, TraceOptions};
use flashpath::workload::trace::Format;
use std::path::{Path, PathBuf};

/// A scratch file of `text` under the test's own folder.
fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flashpath-trace-robust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn job(path: &Path, extra: &str) -> String {
    format!(
        "[replay]\nioengine=libaio\ndirect=1\niodepth=1024\nread_iolog={}\n{extra}",
        path.display()
    )
}

/// Simulated lat of each replayed I/O, in trace order (from --lat-csv).
fn per_io_lat(path: &Path, format: Format, delay: ReplayDelay) -> Vec<u64> {
    let opts = TraceOptions {
        format: Some(format),
        absolute: true,
        lat_csv: Some("lat.csv".into()),
        delay,
        // As flashpath replay sets it: every replayed I/O is reaped, for
        // the per-I/O comparison.
        count_tail: true,
        ..TraceOptions::default()
    };
    let out = run::run_trace_text(
        &job(path, ""),
        "t",
        Path::new("."),
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
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head.iter().position(|c| *c == "simulated_lat_ns").unwrap();
    lines
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect()
}

/// Three 4 KiB reads one second apart (MQSim: time_ns device lba sectors
/// type, 1 = read).
const THREE_READS: &str = "0 0 0 8 1\n1000000000 0 8 8 1\n2000000000 0 16 8 1\n";

/// fio 3.36 reaps while it waits for the next I/O's time: each read's
/// latency is the device's (nullblk's, tens of us), not the gap.
#[test]
fn a_paced_replay_reports_device_latency() {
    let p = scratch("three.mqsim", THREE_READS);
    let lat = per_io_lat(&p, Format::Mqsim, ReplayDelay::Reap);
    assert_eq!(lat.len(), 3);
    for l in &lat {
        assert!(*l < 100_000, "{lat:?}");
    }
}

/// fio 3.33's sleep reaps nothing until the queue is full or the log ends:
/// the first read is reaped after the last one, 2 s later, the second 1 s
/// later, the third at once (the numbers flashpath printed before).
#[test]
fn the_fio_333_delay_reproduces_the_sleep_in_clat() {
    let p = scratch("three-sleep.mqsim", THREE_READS);
    let lat = per_io_lat(&p, Format::Mqsim, ReplayDelay::Sleep);
    assert_eq!(lat.len(), 3);
    assert!((2_000_000_000..2_001_000_000).contains(&lat[0]), "{lat:?}");
    assert!((1_000_000_000..1_001_000_000).contains(&lat[1]), "{lat:?}");
    assert!(lat[2] < 100_000, "{lat:?}");
}

/// The JSON says which wait the replay used.
#[test]
fn the_json_names_the_replay_delay() {
    let p = scratch("three-json.mqsim", THREE_READS);
    for (delay, word) in [(ReplayDelay::Reap, "reap"), (ReplayDelay::Sleep, "sleep")] {
        let opts = TraceOptions {
            format: Some(Format::Mqsim),
            delay,
            ..TraceOptions::default()
        };
        let out = run::run_trace_text(&job(&p, ""), "t", Path::new("."), "nullblk", &[], 0, &opts)
            .unwrap();
        let v = out.result.flashpath["replay_delay"].as_str().unwrap();
        assert!(v.starts_with(word), "{v}");
    }
}

/// A job file's read_iolog runs as fio 3.33 runs it (the fio flashpath
/// follows, and what tests/test_iolog_replay.py compares with): it sleeps
/// without reaping, so at iodepth 1024 all three reads are still unreaped
/// when the log ends, and fio never reaps them (td->done): the real fio
/// 3.33 reports 3 reads issued, 0 bytes, no latency, a 2 s runtime
/// (tests/test_trace_fio.py runs it with a depth that lets two be reaped).
#[test]
fn a_job_file_replays_as_fio_333() {
    let p = scratch("three-job.mqsim", THREE_READS);
    let out = run::run_text(&job(&p, ""), "t", Path::new("."), "nullblk", &[], 0).unwrap();
    let v = out.result.flashpath["replay_delay"].as_str().unwrap();
    assert!(v.starts_with("sleep"), "{v}");
    let j = &out.result.jobs[0];
    assert_eq!((j.dirs[0].total_ios, j.dirs[0].io_bytes), (3, 0));
    assert!(
        (2_000_000_000..2_001_000_000).contains(&j.job_runtime),
        "{}",
        j.job_runtime
    );
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/traces")
        .join(rel)
}

fn read_all(path: &Path, format: &Format) -> flashpath::Result<Vec<trace::TraceRecord>> {
    let mut r = trace::open(path, format)?;
    let mut v = Vec::new();
    while let Some(x) = r.next_record()? {
        v.push(x);
    }
    Ok(v)
}

use flashpath::workload::trace;

/// The binary sample with its records in reverse order (each record
/// whole: 48 bytes and its little-endian pdu_len's payload) is the same
/// I/O stream: the reorder window sorts it as blkparse sorts a stream.
#[test]
fn a_reversed_blktrace_stream_replays_as_recorded() {
    let path = fixture("blktrace_bin/blktrace_viewer_sample.blktrace.0");
    let bytes = std::fs::read(&path).unwrap();
    let mut recs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let pdu = u16::from_le_bytes([bytes[i + 46], bytes[i + 47]]) as usize;
        recs.push(&bytes[i..i + 48 + pdu]);
        i += 48 + pdu;
    }
    assert!(recs.len() > 1000 && recs.len() < trace::blktrace::REORDER_WINDOW);
    let reversed: Vec<u8> = recs.iter().rev().flat_map(|r| r.iter().copied()).collect();
    let p = scratch("reversed.bin", "");
    std::fs::write(&p, reversed).unwrap();
    let a = read_all(&path, &Format::Blktrace).unwrap();
    let b = read_all(&p, &Format::Blktrace).unwrap();
    assert_eq!(a.len(), b.len());
    let key = |r: &trace::TraceRecord| (r.time_ns, r.offset, r.len, r.op, r.completion_ns);
    assert!(a.iter().zip(&b).all(|(x, y)| key(x) == key(y)));
    assert!(b.iter().all(|r| r.latency_ns().unwrap() > 0));
}

/// The text formats are one stream each: a line that goes back in time is
/// refused, naming the file and the line.
#[test]
fn text_traces_whose_time_goes_back_are_refused_with_the_line() {
    let cases: [(&str, &str, Format, &str); 4] = [
        (
            "back.mqsim",
            "0 0 0 8 1\n2000 0 8 8 1\n1000 0 16 8 1\n",
            Format::Mqsim,
            "back.mqsim:3: column 0: time goes backwards, 1000 ns before line 2's",
        ),
        (
            "back.msr",
            "128166385295514663,hm,0,Write,0,4096,10\n\
             128166385295514600,hm,0,Write,4096,4096,10\n",
            Format::Msr,
            "back.msr:2: column 0: time goes backwards, 6300 ns before line 1's",
        ),
        (
            "back.csv",
            "5,R,0,4096\n4,R,4096,4096\n",
            Format::from_name("csv", Some("time=0:us,op=1:R/W,offset=2:bytes,len=3:bytes"))
                .unwrap(),
            "back.csv:2: column 0: time goes backwards, 1000 ns before line 1's",
        ),
        (
            "back.blkparse",
            "259,0    3        1     0.000000300  1867  Q   W 763360912 + 8 [fio]\n\
             259,0    3        2     0.000000299  1867  C   W 763360912 + 8 [0]\n",
            Format::Blkparse,
            "back.blkparse:2: time 0.000000299 s is before line 1's 0.000000300 s",
        ),
    ];
    for (name, text, format, needle) in cases {
        let p = scratch(name, text);
        let e = read_all(&p, &format).unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
}

/// A fio iolog keeps fio's rule (an entry stamped before the previous one
/// is issued at once, iolog.c delay_since_ttime), with a warning naming
/// its line, not silently.
#[test]
fn an_iolog_going_back_in_time_is_warned_of() {
    let p = scratch(
        "back.iolog",
        "fio version 3 iolog\n0 /dev/nullb0 add\n0 /dev/nullb0 open\n\
         100 /dev/nullb0 read 0 4096\n50 /dev/nullb0 read 4096 4096\n\
         40 /dev/nullb0 read 8192 4096\n200 /dev/nullb0 close\n",
    );
    let out = run::run_text(&job(&p, ""), "t", Path::new("."), "nullblk", &[], 0).unwrap();
    let w = out
        .notes
        .iter()
        .find(|n| n.contains("goes backwards"))
        .expect("a warning");
    assert!(w.contains("back.iolog:5: warning:"), "{w}");
    assert!(w.contains("2 such entries"), "{w}");
    assert_eq!(out.result.jobs[0].dirs[0].total_ios, 3);
}

/// O_DIRECT I/O that is not whole sectors is refused as a job's unaligned
/// bs is (Linux's EINVAL), naming the record; replay_scale can make it
/// (offsets 4096 / 3 = 1365); replay_align=512 rounds offsets down, as
/// fio's does, and then the trace replays.
#[test]
fn unaligned_direct_io_from_a_trace_is_refused_with_the_record() {
    let run_with = |name: &str, text: &str, extra: &str| {
        let p = scratch(name, text);
        let opts = TraceOptions {
            format: Some(Format::Mqsim),
            ..TraceOptions::default()
        };
        run::run_trace_text(
            &job(&p, extra),
            "t",
            Path::new("."),
            "nullblk",
            &[],
            0,
            &opts,
        )
        .map_err(|e| e.to_string())
    };
    // (MQSim counts sectors; a CSV mapping in bytes gives a 100-byte
    // write at offset 7.)
    let p = scratch("odd.csv", "0,W,7,100\n");
    let opts = TraceOptions {
        format: Some(
            Format::from_name("csv", Some("time=0:us,op=1:R/W,offset=2:bytes,len=3:bytes"))
                .unwrap(),
        ),
        ..TraceOptions::default()
    };
    let e = run::run_trace_text(&job(&p, ""), "t", Path::new("."), "nullblk", &[], 0, &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("odd.csv:1: a write of 100 bytes at offset 7"),
        "{e}"
    );
    assert!(
        e.contains("EINVAL") && e.contains("512-byte sectors"),
        "{e}"
    );
    let e = run_with(
        "scaled.mqsim",
        "0 0 0 8 1\n10 0 8 8 1\n",
        "replay_scale=3\n",
    )
    .err()
    .unwrap();
    assert!(
        e.contains("scaled.mqsim:2: a read of 4096 bytes at offset 1365 (after replay_scale"),
        "{e}"
    );
    assert!(e.contains("--replay-align 512"), "{e}");
    let out = run_with(
        "aligned.mqsim",
        "0 0 0 8 1\n10 0 8 8 1\n",
        "replay_scale=3\nreplay_align=512\n",
    )
    .unwrap();
    assert_eq!(out.result.jobs[0].dirs[0].total_ios, 2);
}

/// A fio iolog's unaligned entry is refused the same way, with its line.
#[test]
fn unaligned_direct_io_from_an_iolog_is_refused_with_the_line() {
    let p = scratch(
        "odd.iolog",
        "fio version 3 iolog\n0 /dev/nullb0 add\n0 /dev/nullb0 open\n\
         1 /dev/nullb0 read 0 4096\n2 /dev/nullb0 write 7 100\n3 /dev/nullb0 close\n",
    );
    let e = run::run_text(&job(&p, ""), "t", Path::new("."), "nullblk", &[], 0)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("odd.iolog:5: a write of 100 bytes at offset 7"),
        "{e}"
    );
    assert!(e.contains("EINVAL"), "{e}");
}
