//! The host half of the I/O path on null_blk, whose device time is fixed:
//! polled and interrupt-driven completion, idle-state exit latency, hybrid
//! polling, and a spinning poller sharing a core.

mod common;

use flashpath::run::{fio_source, run_jobs, RunOutput};

/// `job` on null_blk with `overrides`, seed 1.
fn run(job: &str, overrides: &[&str]) -> RunOutput {
    common::run_str("nullblk", job, overrides, 1)
}

fn ns(key: &str) -> u64 {
    common::ns("nullblk", key)
}

const READER: &str = "[r]\nfilename=/dev/nullb0\nioengine=pvsync2\nhipri\nrw=read\nbs=4k\ndirect=1\nnumber_ios=2000\nsize=64M\ncpus_allowed=0\n";

/// syscall entry, block submit, driver submit, device, block completion,
/// syscall exit: the path both completion modes share.
fn shared_path() -> u64 {
    ns("host.cost.syscall_entry")
        + ns("host.cost.blk_submit")
        + ns("driver.queue_rq")
        + ns("device.completion_nsec")
        + ns("host.cost.blk_complete")
        + ns("host.cost.syscall_exit")
}

#[test]
fn polled_latency_is_device_plus_submit_path_plus_at_most_one_poll() {
    let out = run(READER, &["block.io_poll=1"]);
    let clat = &out.result.jobs[0].dirs[0].clat.stat;
    assert_eq!(clat.samples, 2000);
    let base = shared_path();
    assert!(clat.min >= base, "{} vs {base}", clat.min);
    assert!(
        clat.max <= base + ns("driver.poll"),
        "{} vs {base}",
        clat.max
    );
    // The poller holds its core: fio shows (almost) all system time, and
    // the core never idles while the job runs.
    assert!(
        out.result.jobs[0].sys_cpu > 90.0,
        "{}",
        out.result.jobs[0].sys_cpu
    );
    assert_eq!(out.result.jobs[0].ctx, 0);
}

/// Interrupt latency = shared path + exit latency of the state the
/// governor chose + IRQ entry and handler + wake-up + context switch.
fn irq_case(overrides: &[&str], expect_exit_max: u64) {
    let out = run(&READER.replace("hipri\n", ""), overrides);
    let d = &out.result.jobs[0].dirs[0];
    let clat = &d.clat.stat;
    let base = shared_path()
        + ns("host.cost.irq_entry")
        + ns("driver.irq_handler")
        + ns("host.cost.wakeup")
        + ns("host.cost.context_switch");
    let b = &out.result.flashpath["breakdown_ns_per_io"];
    let exit_per_io = b["cstate_exit"].as_f64().unwrap();
    let ios = out.completed_ios as f64;
    // Every I/O pays exactly its state's exit latency on top of the path:
    // the mean is the path plus the mean exit paid, to rounding.
    let mean = clat.mean();
    assert!(
        (mean - (base as f64 + exit_per_io)).abs() < 1e-6 * base as f64,
        "mean {mean} vs {base} + {exit_per_io}"
    );
    assert!(clat.min >= base);
    assert_eq!(clat.max, base + expect_exit_max);
    assert!(ios >= 2000.0);
}

#[test]
fn interrupt_latency_adds_exactly_the_chosen_states_exit() {
    // No cpuidle driver: nothing to exit.
    irq_case(&[], 0);
    // Haswell table, v4.4 menu: the waiter's CPU has an I/O waiter, so
    // the multiplier keeps it in C1 (2 us exit) or POLL.
    irq_case(
        &["host.idle.table=hsw", "host.idle.governor=menu-v4.4"],
        2_000,
    );
    // With C1E auto-promotion the same choice costs C1E's 10 us.
    irq_case(
        &[
            "host.idle.table=hsw",
            "host.idle.governor=menu-v4.4",
            "host.idle.c1e_auto_promotion=1",
        ],
        10_000,
    );
}

#[test]
fn hybrid_poll_sleeps_half_the_bucket_mean() {
    // 40,000 reads of ~12 us: several 100 ms statistics windows.
    let job = READER
        .replace("number_ios=2000", "number_ios=40000")
        .replace("size=64M", "size=1G");
    let out = run(&job, &["block.io_poll=1", "block.io_poll_delay=0"]);
    let blk = &out.result.flashpath["block"];
    let sleeps = blk["hybrid_sleeps"].as_u64().unwrap();
    let slept = blk["hybrid_sleep_ns"].as_u64().unwrap();
    // No sleep in the first window (no statistics yet), one per request
    // after it.
    assert!(sleeps > 30_000 && sleeps < 40_000, "{sleeps}");
    // The completion time the statistics see is the device's 10 us plus
    // at most one poll iteration, and (the hybrid sleep being shorter than
    // the device) no more: half of it, rounded up.
    let dev = ns("device.completion_nsec");
    let per = slept as f64 / sleeps as f64;
    assert!(
        per >= (dev / 2) as f64 && per <= (dev + ns("driver.poll")).div_ceil(2) as f64,
        "{per}"
    );
    // A fixed delay sleeps that long once per request.
    let out = run(READER, &["block.io_poll=1", "block.io_poll_delay=4"]);
    let blk = &out.result.flashpath["block"];
    assert_eq!(blk["hybrid_sleeps"].as_u64().unwrap(), 2000);
    assert_eq!(blk["hybrid_sleep_ns"].as_u64().unwrap(), 2000 * 4_000);
}

#[test]
fn hybrid_sleep_longer_than_the_device_adds_timer_wake_and_switch() {
    let out = run(READER, &["block.io_poll=1", "block.io_poll_delay=20"]);
    let clat = &out.result.jobs[0].dirs[0].clat.stat;
    // Completion found by the first poll after the timer wake-up and the
    // switch back in (no idle states on this host).
    let expect = ns("host.cost.syscall_entry")
        + ns("host.cost.blk_submit")
        + ns("driver.queue_rq")
        + 20_000
        + ns("host.cost.context_switch")
        + ns("driver.poll")
        + ns("host.cost.blk_complete")
        + ns("host.cost.syscall_exit");
    assert_eq!((clat.min, clat.max), (expect, expect));
}

#[test]
fn spinning_poller_on_a_shared_core_delays_the_other_job_by_its_spin() {
    let other = "[b]\nfilename=/dev/nullb0\nioengine=psync\nrw=read\nbs=4k\ndirect=1\nnumber_ios=2000\nsize=64M\ncpus_allowed=0\n";
    let alone = run(other, &["block.io_poll=1"]);
    let base = alone.result.jobs[0].dirs[0].clat.stat.mean();
    assert_eq!(alone.result.flashpath["core_wait_ns"].as_u64().unwrap(), 0);
    let both = run(&format!("{READER}{other}"), &["block.io_poll=1"]);
    let b = both.result.jobs.iter().find(|j| j.name == "b").unwrap();
    let with = b.dirs[0].clat.stat.mean();
    let waited = both.result.flashpath["core_wait_ns"].as_u64().unwrap() as f64;
    let n = b.dirs[0].clat.stat.samples as f64;
    // The job that sleeps for its interrupt waits for the core while the
    // poller spins (the two fall into step, so the wait is short but
    // never zero): its latency grows by exactly the time it waited.
    assert!(waited / n > 100.0, "{}", waited / n);
    assert!(with > base);
    assert!(
        (with - (base + waited / n)).abs() < 1.0,
        "{with} vs {base} + {}",
        waited / n
    );
}

/// hipri on a queue without polling: a kernel with the poll-queue check
/// (the nullblk host's recent kernel) fails the I/O with EOPNOTSUPP, so the
/// job is refused by name and line; a kernel without it clears REQ_POLLED
/// and the reads complete by interrupt, exactly as reads without hipri.
#[test]
fn hipri_without_a_poll_queue_fails_or_falls_back_as_the_kernel_does() {
    let p = common::profile("nullblk", &["block.io_poll=0"]);
    let jobs = common::parse(READER, &p);
    let err = match run_jobs(&jobs, &p, 1, &fio_source) {
        Ok(_) => panic!("hipri on io_poll=0 ran on a kernel that fails it"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("t.fio") && err.contains("job 'r'"), "{err}");
    assert!(
        err.contains("EOPNOTSUPP") && err.contains("io_poll=0"),
        "{err}"
    );
    let old_kernel = [
        "block.io_poll=0",
        "block.polled_without_poll_queue=interrupt",
    ];
    let with_hipri = run(READER, &old_kernel);
    let without = run(&READER.replace("hipri\n", ""), &old_kernel);
    let (a, b) = (&with_hipri.result.jobs[0], &without.result.jobs[0]);
    assert_eq!(a.dirs[0].clat.stat.samples, 2000);
    assert_eq!(a.dirs[0].clat.stat.mean(), b.dirs[0].clat.stat.mean());
    assert!(
        a.ctx > 0,
        "interrupt completion sleeps and wakes: {}",
        a.ctx
    );
}

/// A version-3 iolog of reads 1 ms apart, replayed at QD1 with psync: each
/// read is issued 1 ms after the previous one was issued (fio's
/// iolog_delay counts from the last issue), so every read meets an idle
/// device and takes the closed-form QD1 latency, and the job lasts the
/// log's span plus one read.
#[test]
fn iolog_replay_issues_each_io_its_gap_after_the_previous() {
    let n = 50u64;
    let mut log = String::from("fio version 3 iolog\n0 /dev/nullb0 add\n0 /dev/nullb0 open\n");
    for i in 0..n {
        log.push_str(&format!(
            "{} /dev/nullb0 read {} 4096\n",
            1000 + i * 1000,
            i * 8192
        ));
    }
    let path = std::env::temp_dir().join(format!("flashpath-qd1-{}.iolog", std::process::id()));
    std::fs::write(&path, log).unwrap();
    let job = format!(
        "[r]\nioengine=psync\ndirect=1\nread_iolog={}\ncpus_allowed=0\n",
        path.display()
    );
    let out = run(&job, &["block.io_poll=0"]);
    std::fs::remove_file(&path).unwrap();
    let j = &out.result.jobs[0];
    let clat = &j.dirs[0].clat.stat;
    assert_eq!(clat.samples, n);
    assert_eq!(j.dirs[0].io_bytes, n * 4096);
    // Identical reads on an idle path: one latency, no spread.
    assert_eq!(clat.min, clat.max);
    let lat = j.dirs[0].lat.stat.max;
    // The entries before the first read are stamped 0, and fio counts no
    // delay while the last stamp is 0 (delay_since_ttime), so the first
    // read goes at once and each next one 1000 us after the last issue.
    // Each paced sleep wakes its timer slack late and ends with the switch
    // back into fio, which the next gap does not absorb (fio counts from
    // the issue), so they add up.
    let span = (n - 1) * 1_000_000;
    let late = ns("host.timer_slack") + ns("host.cost.context_switch");
    let low = span + (n - 1) * late;
    let high = low + lat + (n - 1) * ns("host.cost.fio_submit");
    assert!(
        (low..=high).contains(&j.job_runtime),
        "{} not in {low}..={high}",
        j.job_runtime
    );
}
