//! A UFS 3.1 device with WriteBooster (`ufs31-wb-512g`: Samsung's 512 GB
//! eUFS 3.1) against its published sequential write: 1,200 MB/s inside
//! the WriteBooster buffer, and past it the 410 MB/s of the same capacity
//! without WriteBooster (512 GB eUFS 3.0), the profile's stated rate past
//! the buffer. The buffer is the FTL core's SLC cache in preserve-user-
//! space mode (a dynamic region in unwritten user space), flushed to TLC
//! in hibern8 after the auto-hibern8 idle time.

mod common;

use flashpath::run::RunOutput;

const P: &str = "ufs31-wb-512g";

fn seq_write(size: &str, sets: &[&str]) -> RunOutput {
    let job = format!(
        "[w]\nfilename=/dev/sda\nioengine=libaio\ndirect=1\nrw=write\nbs=1m\niodepth=32\n\
         size={size}\n"
    );
    common::run_str(P, &job, sets, 0)
}

/// The job's write rate in MB/s (fio's bw_bytes / 1e6).
fn mbps(o: &RunOutput) -> f64 {
    let w = &o.result.jobs[0].dirs[1];
    w.io_bytes as f64 / (w.runtime as f64 / 1e9) / 1e6
}

fn slc(o: &RunOutput) -> serde_json::Value {
    o.result.flashpath["driver"]["ftl"]["slc"].clone()
}

#[test]
fn sequential_writes_run_at_the_published_rate_inside_the_buffer() {
    let out = seq_write("2g", &[]);
    let rate = mbps(&out);
    // Samsung: 1,200 MB/s with WriteBooster (newsroom, 2020-03-17).
    assert!((rate - 1200.0).abs() / 1200.0 < 0.10, "{rate:.0} MB/s");
    let s = slc(&out);
    assert_eq!(s["direct_rows"], 0, "{s}");
    assert!(s["slc_rows"].as_u64().unwrap() > 0, "{s}");
}

#[test]
fn past_the_buffer_writes_go_to_tlc_at_the_predecessors_rate() {
    // A buffer of 64 MiB fills in the first 64 MiB of the write; the rest
    // goes to the normal storage (TLC).
    let out = seq_write("2g", &["device.flash.slc_dynamic=64MiB"]);
    let rate = mbps(&out);
    let s = slc(&out);
    assert!(s["direct_rows"].as_u64().unwrap() > 0, "{s}");
    // 410 MB/s: the 512 GB eUFS 3.0 (the stated rate past the buffer).
    assert!((rate - 410.0).abs() / 410.0 < 0.10, "{rate:.0} MB/s");
    // Without WriteBooster (no buffer at all) the device writes at the
    // same TLC rate from the start.
    let none = seq_write("1g", &["device.flash.slc_dynamic=0"]);
    let r0 = mbps(&none);
    assert!((r0 - 410.0).abs() / 410.0 < 0.10, "{r0:.0} MB/s");
}

#[test]
fn the_buffer_is_flushed_in_hibern8_after_the_auto_hibern8_idle_time() {
    // 256 MiB written, then after 100 ms idle (less than AHIT's 150 ms) a
    // read: nothing flushed; after 3 s idle (the 8,192 rows take about
    // 0.7 s of folds on each die), the buffer is empty.
    let job = |gap_ms: u32| {
        format!(
            "[w]\nfilename=/dev/sda\nioengine=libaio\ndirect=1\nrw=write\nbs=1m\n\
             iodepth=8\nsize=256m\n\
             [r]\nstonewall\nstartdelay={gap_ms}ms\nfilename=/dev/sda\nioengine=psync\n\
             direct=1\nrw=read\nbs=4k\nsize=4k\n"
        )
    };
    let short = common::run_str(P, &job(100), &[], 0);
    let s = slc(&short);
    assert_eq!(s["folded_idle_rows"], 0, "{s}");
    assert!(s["resident_rows"].as_u64().unwrap() > 0, "{s}");
    let long = common::run_str(P, &job(3000), &[], 0);
    let s = slc(&long);
    assert!(s["folded_idle_rows"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["resident_rows"], 0, "{s}");
}
