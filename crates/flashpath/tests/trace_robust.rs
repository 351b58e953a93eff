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
/// follows, and what tests/test_iolog_replay.py compares with): it sleeps.
#[test]
fn a_job_file_replays_as_fio_333() {
    let p = scratch("three-job.mqsim", THREE_READS);
    let out = run::run_text(&job(&p, ""), "t", Path::new("."), "nullblk", &[], 0).unwrap();
    let v = out.result.flashpath["replay_delay"].as_str().unwrap();
    assert!(v.starts_with("sleep"), "{v}");
    let max = out.result.jobs[0].dirs[0].lat.stat.max;
    // The first read waited 2 s to be reaped.
    assert!(max >= 2_000_000_000, "{max}");
}
