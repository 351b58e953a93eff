//! io_uring's sqthread_poll (IORING_SETUP_SQPOLL) as Linux 6.12
//! (io_uring/sqpoll.c) and fio 3.33 (engines/io_uring.c) run it
//! (`machine/sqpoll.rs`): the SQ thread issues the I/Os on its CPU and
//! polls there for the whole run (fio's sq_thread_idle 0 is one second),
//! fio's commit only writes the SQ ring's tail and its getevents reads the
//! CQ ring in user space, so fio's thread makes no system call unless the
//! SQ thread slept.

mod common;

use common::profile;
use flashpath::run::{fio_source, run_jobs};
use proptest::prelude::*;
use serde_json::Value;

fn job(extra: &str) -> String {
    format!(
        "[j]\nfilename=/dev/nullb0\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\n\
         size=1m\niodepth=8\n{extra}\n"
    )
}

/// The `io_uring_sqpoll` entry of the run's SQ threads' CPU.
fn sq(out: &flashpath::run::RunOutput) -> Value {
    let v = &out.result.flashpath["io_uring_sqpoll"];
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    v[0].clone()
}

/// A core's usr + sys + irq time from the run's counters.
fn busy(out: &flashpath::run::RunOutput, cpu: u64) -> u64 {
    let c = &out.result.flashpath["cpus"][cpu as usize];
    ["usr_ns", "sys_ns", "irq_ns"]
        .iter()
        .map(|k| c[*k].as_u64().unwrap())
        .sum()
}

#[test]
fn the_sq_cpu_is_busy_for_the_run_and_fio_makes_no_system_call() {
    // fio on CPU 0, its SQ thread bound to CPU 1 (IORING_SETUP_SQ_AFF).
    let out = common::run_str(
        "nullblk",
        &job("sqthread_poll=1\nsqthread_poll_cpu=1\ncpus_allowed=0"),
        &[],
        0,
    );
    let j = &out.result.jobs[0];
    assert_eq!(j.dirs[0].total_ios, 256);
    let s = sq(&out);
    assert_eq!(s["cpu"], 1);
    assert_eq!(s["sqes"], 256);
    assert_eq!(s["wakeups"], 0);
    // Never a quiet second: the thread polls from the ring's setup to its
    // close, the job's run, and the CPU does nothing but its work, the
    // completions' interrupts and its spin.
    assert_eq!(s["busy_ns"].as_u64().unwrap(), j.job_runtime);
    assert_eq!(busy(&out, 1), j.job_runtime);
    assert!(s["spin_ns"].as_u64().unwrap() > 0);
    // fio's thread: user time only (it fills SQEs, writes the tail, and
    // spins on the CQ ring), never asleep.
    assert_eq!(j.sys_cpu, 0.0);
    assert_eq!(j.ctx, 0);
    assert!((j.usr_cpu - 100.0).abs() < 1e-9, "{}", j.usr_cpu);
    // Without the SQ thread fio enters the kernel for each submission and
    // sleeps in io_uring_enter for completions.
    let plain = common::run_str("nullblk", &job("cpus_allowed=0"), &[], 0);
    let p = &plain.result.jobs[0];
    assert_eq!(p.dirs[0].total_ios, 256);
    assert!(p.sys_cpu > 0.0);
    assert!(plain.result.flashpath.get("io_uring_sqpoll").is_none());
    // fio 3.33's SQPOLL commit returns before fio_ioring_queued and
    // io_u_mark_submit (as the real fio 3.33 reports it: slat N 0, every
    // submit bucket 0): no issue time, so the clat runs from the clock's
    // origin, the job's start here, and is each I/O's completion time.
    let r = &j.dirs[0];
    assert_eq!(r.slat.stat.samples, 0);
    assert!(
        j.iodepth_submit.iter().all(|&x| x == 0.0),
        "{:?}",
        j.iodepth_submit
    );
    assert_eq!(r.clat.stat.samples, 256);
    assert!(r.clat.stat.min >= r.lat.stat.min);
    assert!(r.clat.stat.max <= j.job_runtime);
    assert_eq!(p.dirs[0].slat.stat.samples, 256);
}

#[test]
fn a_quiet_second_puts_the_sq_thread_to_sleep_and_fio_wakes_it() {
    // thinktime=1.5 s after each of 4 I/Os at iodepth 1: before each of the
    // last three the SQ thread has been idle past sq_thread_idle (1 s), set
    // IORING_SQ_NEED_WAKEUP and slept; fio's commit sees the flag and calls
    // io_uring_enter(IORING_ENTER_SQ_WAKEUP): a system call each time.
    let out = common::run_str(
        "nullblk",
        &job("sqthread_poll=1\nsqthread_poll_cpu=1\ncpus_allowed=0\niodepth=1\nnumber_ios=4\nthinktime=1500000"),
        &[],
        0,
    );
    let j = &out.result.jobs[0];
    assert_eq!(j.dirs[0].total_ios, 4);
    let s = sq(&out);
    assert_eq!(s["wakeups"], 3);
    assert!(j.sys_cpu > 0.0);
    // It slept 0.5 s of each 1.5 s thinktime and a little more: the gap
    // from the completion that restarted its timeout (its task work) to
    // fio's next commit also holds fio's reap, the thinktime timer's
    // wake-up and fio's work for the next I/O, and the thread is up once
    // the wake-up's system call has woken it: tens of µs in the nullblk
    // profile's costs, so at most 100 µs a gap.
    let slept = j.job_runtime - s["busy_ns"].as_u64().unwrap();
    assert!(
        (1_500_000_000..=1_500_300_000).contains(&slept),
        "slept {slept} ns"
    );
    assert_eq!(busy(&out, 1), s["busy_ns"].as_u64().unwrap());
}

#[test]
fn without_sqthread_poll_the_cpu_option_does_nothing() {
    // fio_ioring_sqpoll_cb only records the CPU; SQ_AFF is set only with
    // SQPOLL (fio_ioring_queue_init).
    let out = common::run_str("nullblk", &job("sqthread_poll_cpu=1"), &[], 0);
    assert!(out.result.flashpath.get("io_uring_sqpoll").is_none());
    assert!(out.result.jobs[0].sys_cpu > 0.0);
}

fn refused(text: &str) -> String {
    let p = profile("nullblk", &[]);
    let parsed = flashpath::workload::fio::parse_job_str(
        "t.fio",
        text,
        std::path::Path::new("."),
        &flashpath::run::parse_context(&p).unwrap(),
    );
    match parsed.and_then(|jf| run_jobs(&jf, &p, 0, &fio_source)) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn what_is_not_modelled_or_fails_in_the_kernel_is_refused_by_name() {
    let e = refused(&job("sqthread_poll=1\nsqthread_poll_cpu=2"));
    assert!(e.starts_with("t.fio:1: job 'j'"), "{e}");
    assert!(
        e.contains("sqthread_poll_cpu=2 names no CPU of this 2-CPU host"),
        "{e}"
    );
    let e = refused(&job("sqthread_poll=1\nhipri=1"));
    assert!(e.contains("sqthread_poll with hipri"), "{e}");
    assert!(e.contains("not modelled"), "{e}");
    let e = refused(&job("sqthread_poll=1\ndirect=0\niodepth=1"));
    assert!(e.contains("sqthread_poll with buffered I/O"), "{e}");
    // An io_uring option under another engine: the real fio 3.33 says
    // "Bad option <sqthread_poll=1>" and drops the job (fio --parse-only).
    let e = refused(
        "[j]\nfilename=/dev/nullb0\nioengine=libaio\ndirect=1\nrw=randread\nsize=1m\nsqthread_poll=1\n",
    );
    assert!(e.contains("sqthread_poll"), "{e}");
}

fn run_json(text: &str, seed: u64) -> String {
    let out = common::run_str("nullblk", text, &[], seed);
    let jobs: Vec<Value> = out
        .result
        .jobs
        .iter()
        .map(|j| {
            serde_json::json!([
                j.job_runtime,
                j.usr_cpu,
                j.sys_cpu,
                j.ctx,
                j.dirs
                    .iter()
                    .map(|d| (d.total_ios, d.io_bytes, d.lat.stat.mean()))
                    .collect::<Vec<_>>()
            ])
        })
        .collect();
    serde_json::json!({"jobs": jobs, "flashpath": out.result.flashpath}).to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Over depths, block sizes, directions, batches, the SQ thread's CPU
    /// and the seed: the SQ CPU is busy for exactly the job's run, it
    /// issues every I/O, fio's thread makes no system call (the SQ thread
    /// never sleeps in a run this short) and does less kernel work than
    /// without the SQ thread, the I/O is the same, and the run repeats
    /// byte for byte.
    #[test]
    fn the_sq_cpu_is_busy_for_the_run(
        depth in 1u32..33, bs_kb in prop::sample::select(vec![4u64, 8, 16, 64]),
        write in any::<bool>(), batch in 1u32..5, bound in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let rw = if write { "randwrite" } else { "randread" };
        let base = format!(
            "[j]\nfilename=/dev/nullb0\nioengine=io_uring\ndirect=1\nrw={rw}\nbs={bs_kb}k\n\
             size=512k\niodepth={depth}\niodepth_batch_submit={batch}\ncpus_allowed=0\n"
        );
        let cpu = if bound { "sqthread_poll_cpu=1\n" } else { "" };
        // Unbound, the SQ thread takes the job's allowed CPUs in turn:
        // with cpus_allowed=0 that is CPU 0, the job's own.
        let sq_cpu = u64::from(bound);
        let text = format!("{base}sqthread_poll=1\n{cpu}");
        let out = common::run_str("nullblk", &text, &[], seed);
        let j = &out.result.jobs[0];
        let n = 512 / bs_kb;
        let d = &j.dirs[usize::from(write)];
        prop_assert_eq!(d.total_ios, n);
        let s = sq(&out);
        prop_assert_eq!(s["cpu"].as_u64(), Some(sq_cpu));
        prop_assert_eq!(s["sqes"].as_u64(), Some(n));
        prop_assert_eq!(s["wakeups"].as_u64(), Some(0));
        prop_assert_eq!(s["busy_ns"].as_u64(), Some(j.job_runtime));
        // Never idle while it polls (the 1 ns is the counters' shortest
        // stay of a core idle from the start, which the job's start ends),
        // busy for the whole run, and exactly the run when the thread had
        // time to spin; with none, the CPU's work overran the run (an
        // interrupt preempts: the work it pushes back ends after it).
        let c = &out.result.flashpath["cpus"][sq_cpu as usize];
        prop_assert!(c["idle_ns"].as_u64().unwrap() <= 1, "{}", c);
        if s["spin_ns"].as_u64().unwrap() > 0 {
            prop_assert_eq!(busy(&out, sq_cpu), j.job_runtime);
        } else {
            prop_assert!(busy(&out, sq_cpu) >= j.job_runtime);
        }
        prop_assert_eq!(j.sys_cpu, 0.0);
        let plain = common::run_str("nullblk", &base, &[], seed);
        let p = &plain.result.jobs[0];
        prop_assert_eq!(p.dirs[usize::from(write)].total_ios, n);
        prop_assert!(p.sys_cpu > 0.0);
        prop_assert_eq!(run_json(&text, seed), run_json(&text, seed));
    }
}

#[test]
fn the_cpu_is_fios_unsigned_int() {
    // fio_ioring_sqpoll_cb stores the value in an unsigned int: 2^32 + 1
    // is CPU 1, and -1 is 2^32 - 1, which io_uring_setup refuses.
    let out = common::run_str(
        "nullblk",
        &job("sqthread_poll=1\nsqthread_poll_cpu=4294967297"),
        &[],
        0,
    );
    assert_eq!(sq(&out)["cpu"], 1);
    let e = refused(&job("sqthread_poll=1\nsqthread_poll_cpu=-1"));
    assert!(e.contains("names no CPU of this 2-CPU host"), "{e}");
}
