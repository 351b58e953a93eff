//! iozone's stonewalling in throughput mode (iozone.c 3.414: the first
//! child to finish its records sets `*stop_flag`; every other child leaves
//! its loop at the next record and does not count the record that was in
//! flight when the flag was set; `-x` turns it off).

use flashpath::profile::Profile;
use flashpath::run::{fio_source, run_iozone, run_jobs};
use flashpath::workload::iozone::{build_jobs, parse_args, summarize};

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

const MIXED4: &str = "-s 1024k -r 4k -i 8 -I -t 4 -F f1 f2 f3 f4";

/// In the mixed workload (even children random readers, odd children
/// random writers) on the eMMC card the children run at different rates:
/// with the stonewall exactly one child per phase does its whole file,
/// every other one was stopped with a whole number of records counted,
/// short of the file, and fio's own count of it is the same or one record
/// more (the record in flight when it was stopped, which iozone drops).
#[test]
fn the_first_child_to_finish_stops_the_others_and_their_last_record_is_not_counted() {
    let a = parse_args(&args(MIXED4)).unwrap();
    assert!(a.stonewall);
    let (phases, jobs) = build_jobs(&a);
    let profile = Profile::load("emmc51-intel").unwrap();
    let out = run_jobs(&jobs, &profile, 0, &fio_source).unwrap();
    let size = 1024 << 10;
    let rec = 4 << 10;
    let ran_out: Vec<_> = out
        .result
        .jobs
        .iter()
        .filter(|j| j.stopped_bytes.is_none())
        .collect();
    assert_eq!(ran_out.len(), 1, "one child finishes its file");
    let full: u64 = ran_out[0].dirs.iter().map(|d| d.io_bytes).sum();
    assert_eq!(full, size);
    for j in out.result.jobs.iter().filter(|j| j.stopped_bytes.is_some()) {
        let counted = j.stopped_bytes.unwrap();
        let fio_bytes: u64 = j.dirs.iter().map(|d| d.io_bytes).sum();
        assert!(counted < size, "{}: {counted}", j.name);
        assert_eq!(counted % rec, 0);
        assert!(
            fio_bytes == counted || fio_bytes == counted + rec,
            "{}: fio {fio_bytes}, counted {counted}",
            j.name
        );
    }
    let rs = summarize(&phases, &out.result);
    assert_eq!(rs.len(), 1);
    assert!(rs[0].min_xfer_kb < (size >> 10) as f64);
}

/// `-x`: no child stops another; every child does its whole file (Min
/// xfer is the file size), and the children's sum is each child's file
/// over its own time.
#[test]
fn without_stonewalling_every_child_does_its_whole_file() {
    let a = parse_args(&args(&format!("{MIXED4} -x"))).unwrap();
    assert!(!a.stonewall);
    let (phases, jobs) = build_jobs(&a);
    let profile = Profile::load("emmc51-intel").unwrap();
    let out = run_jobs(&jobs, &profile, 0, &fio_source).unwrap();
    assert!(out.result.jobs.iter().all(|j| j.stopped_bytes.is_none()));
    let rs = summarize(&phases, &out.result);
    assert_eq!(rs[0].min_xfer_kb, 1024.0);
    let sum: f64 = out
        .result
        .jobs
        .iter()
        .map(|j| 1024.0 / (j.job_runtime as f64 / 1e9))
        .sum();
    assert!((rs[0].children_kbps - sum).abs() < 1e-6 * sum);
}

/// Children that run at the same rate (four sequential readers of their
/// own files on a null device) end together: the stonewall changes their
/// sum by at most the one record each stopped child drops.
#[test]
fn equal_children_give_the_same_throughput_with_and_without_the_stonewall() {
    let line = "-s 1024k -r 4k -i 1 -I -t 4 -F f1 f2 f3 f4";
    let kbps = |extra: &str| {
        let o = run_iozone(&args(&format!("{line}{extra}")), "nullblk", &[], 0).unwrap();
        o.json["tests"][0]["children_kBps"].as_f64().unwrap()
    };
    let (on, off) = (kbps(""), kbps(" -x"));
    // 3 stopped children drop at most one 4 KiB record of 256 each.
    assert!(on <= off * (1.0 + 1e-9), "{on} vs {off}");
    assert!(
        on >= off * (1.0 - 3.0 / 256.0 / 4.0) - 1e-6,
        "{on} vs {off}"
    );
}
