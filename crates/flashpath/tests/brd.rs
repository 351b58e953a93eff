//! brd, the RAM disk: its copy runs on the submitting CPU (the driver
//! context's host work), so a synchronous read's latency is the host path
//! plus the copy exactly, and the copy follows the core's clock.

mod common;

use flashpath::profile::limits::COST;
use flashpath::profile::Profile;
use flashpath::run::RunOutput;

fn psync_reads(bs: u32, overrides: &[&str]) -> RunOutput {
    let job =
        format!("[r]\nioengine=psync\ndirect=1\nrw=randread\nbs={bs}\nsize=4g\nnumber_ios=2000\n");
    common::run_str("brd", &job, overrides, 1)
}

fn ns(p: &Profile, key: &str) -> u64 {
    p.ns(key, COST).unwrap()
}

/// The copy of `bs` bytes at `device.copy_rate`, as the device rounds it.
fn copy_ns(p: &Profile, bs: u32) -> u64 {
    let rate = p
        .rate("device.copy_rate", flashpath::profile::limits::RATE)
        .unwrap();
    (f64::from(bs) / (rate / 1e9)).ceil() as u64
}

/// What a psync read waits for at the reference clock: syscall entry, the
/// block layer's submit, brd_submit_bio, a page lookup per 4 KiB and the
/// copy on the same core, then the inline completion wakes the task
/// (wake-up, context switch) and the syscall returns.
fn expected_clat(p: &Profile, bs: u32) -> u64 {
    ns(p, "host.cost.syscall_entry")
        + ns(p, "host.cost.blk_submit")
        + ns(p, "driver.submit_bio")
        + u64::from(bs).div_ceil(4096) * ns(p, "device.page_lookup")
        + copy_ns(p, bs)
        + ns(p, "host.cost.wakeup")
        + ns(p, "host.cost.context_switch")
        + ns(p, "host.cost.syscall_exit")
}

#[test]
fn a_sync_read_is_the_host_path_plus_the_copy_on_the_submitting_core() {
    let p = common::profile("brd", &[]);
    for bs in [4096, 65536, 1 << 20] {
        let out = psync_reads(bs, &[]);
        let clat = &out.result.jobs[0].dirs[0].clat.stat;
        assert_eq!(clat.samples, 2000);
        let want = expected_clat(&p, bs);
        assert_eq!((clat.min, clat.max), (want, want), "bs {bs}");
    }
}

#[test]
fn the_copy_is_cpu_time_and_follows_the_core_clock() {
    // Halving the clock doubles every host cost, the copy included: the
    // latency doubles (to the rounding of each scaled cost).
    let bs = 1 << 20;
    let p = common::profile("brd", &[]);
    let at_ref = psync_reads(bs, &[]).result.jobs[0].dirs[0].clat.stat.mean();
    let at_half = psync_reads(bs, &["host.freq=1500MHz"]).result.jobs[0].dirs[0]
        .clat
        .stat
        .mean();
    let want = expected_clat(&p, bs) as f64;
    assert!((at_ref - want).abs() < 1.0, "{at_ref} vs {want}");
    assert!(
        (at_half - 2.0 * want).abs() < 10.0,
        "{at_half} vs {}",
        2.0 * want
    );

    // The copy is booked as the core's system time: a faster copy takes
    // exactly the difference off the CPUs' busy time.
    let busy = |out: &RunOutput| -> u64 {
        out.result.flashpath["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["sys_ns"].as_u64().unwrap())
            .sum()
    };
    let slow = psync_reads(bs, &[]);
    let fast = psync_reads(bs, &["device.copy_rate=23GB/s"]);
    let p_fast = common::profile("brd", &["device.copy_rate=23GB/s"]);
    let saved = 2000 * (copy_ns(&p, bs) - copy_ns(&p_fast, bs));
    assert_eq!(busy(&slow) - busy(&fast), saved);
}
