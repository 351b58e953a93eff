//! io_submit_mode=offload as fio 3.33 runs it (rate-submit.c,
//! workqueue.c; `machine/offload.rs`): the job's thread hands each I/O to
//! one of iodepth submit workers, threads whose engine runs at iodepth 1,
//! which queue it, wait for it and reap it.

mod common;

use flashpath::run::{fio_source, run_jobs};

fn job(engine: &str, depth: u32, extra: &str) -> String {
    format!(
        "[j]\nfilename=/dev/nullb0\nioengine={engine}\ndirect=1\nrw=randread\nbs=4k\n\
         size=1m\niodepth={depth}\nio_submit_mode=offload\n{extra}\n"
    )
}

#[test]
fn the_null_engine_reports_as_the_real_fio() {
    // The real fio 3.33 (fio --name=t --ioengine=null --size=1m --bs=4k
    // --io_submit_mode=offload --iodepth=D, D = 1, 2, 3): 256 reads of
    // 1 MiB, no submission latency (the worker's null engine is
    // FIO_SYNCIO), every I/O at depth 1, no submit or complete buckets.
    for depth in 1..=3 {
        let out = common::run_str("nullblk", &job("null", depth, ""), &[], 0);
        let j = &out.result.jobs[0];
        let r = &j.dirs[0];
        assert_eq!((r.total_ios, r.io_bytes), (256, 1 << 20));
        assert_eq!(r.slat.stat.samples, 0);
        assert_eq!(r.clat.stat.samples, 256);
        assert_eq!(j.iodepth_level[0], 1.0, "{:?}", j.iodepth_level);
        assert!(j.iodepth_submit.iter().all(|&x| x == 0.0));
        assert!(j.iodepth_complete.iter().all(|&x| x == 0.0));
        assert!(
            out.result.flashpath["offload"]["worker_cpu_ns"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
}

#[test]
fn a_sync_engine_keeps_iodepth_in_flight_through_its_workers() {
    // psync is synchronous: inline, one I/O at a time; offloaded, each of
    // the 8 workers waits for its own, so several are in flight together.
    // By Little's law the mean number in flight is the sum of the I/Os'
    // latencies over the run time: at most 1 inline, more offloaded (the
    // workers' CPU work, on the 2 CPUs, bounds it below 8).
    let off = common::run_str("nullblk", &job("psync", 8, ""), &[], 0);
    let inline = common::run_str("nullblk", &job("psync", 8, "io_submit_mode=inline"), &[], 0);
    let (o, i) = (&off.result.jobs[0], &inline.result.jobs[0]);
    assert_eq!(o.dirs[0].total_ios, 256);
    let in_flight = |d: &flashpath::report::DirResult| {
        d.lat.stat.mean() * d.lat.stat.samples as f64 / d.runtime as f64
    };
    assert!(in_flight(&i.dirs[0]) <= 1.0, "{}", in_flight(&i.dirs[0]));
    assert!(in_flight(&o.dirs[0]) >= 2.0, "{}", in_flight(&o.dirs[0]));
    assert!(o.dirs[0].runtime < i.dirs[0].runtime);
    // As the real fio 3.33 with psync (on a loop device): no submission
    // latency, depth 1 and one I/O per submit and complete call.
    assert_eq!(o.dirs[0].slat.stat.samples, 0);
    assert_eq!(o.iodepth_level[0], 1.0, "{:?}", o.iodepth_level);
    assert_eq!(o.iodepth_submit[1], 1.0, "{:?}", o.iodepth_submit);
    assert_eq!(o.iodepth_complete[1], 1.0, "{:?}", o.iodepth_complete);
    // The hand-off to a worker is in the total latency, not in the
    // completion latency, which the worker's call starts.
    let c = &o.dirs[0];
    assert!(c.lat.stat.min > c.clat.stat.min);
}

#[test]
fn libaio_workers_record_submission_latency_with_the_hand_off() {
    let out = common::run_str("nullblk", &job("libaio", 4, ""), &[], 0);
    let r = &out.result.jobs[0].dirs[0];
    assert_eq!(r.total_ios, 256);
    assert_eq!(r.slat.stat.samples, 256);
    // slat runs from the job thread's get_io_u to the worker's io_submit
    // return: it holds the worker's wake-up (a context switch at least).
    let inline = common::run_str(
        "nullblk",
        &job("libaio", 4, "io_submit_mode=inline"),
        &[],
        0,
    );
    assert!(r.slat.stat.min > inline.result.jobs[0].dirs[0].slat.stat.min);
}

#[test]
fn a_rate_limited_job_submits_at_a_fixed_rate_whatever_the_device_takes() {
    // fixed-rate-submission.fio's point: in inline mode fio's rate_ddir
    // quiesces (waits for what is in flight) before it sleeps to the next
    // I/O's time, so on a device slower than the rate's interval fio waits
    // out each completion and then issues the overdue I/Os back to back;
    // offloaded, it does not quiesce (io_u.c rate_ddir) and the workers
    // absorb the completions: one I/O every 1 ms. 1000 IOPS, 200 I/Os, a
    // device that takes 5 ms. The issue times are
    // write_iolog's (its version 3 times).
    let slow = ["device.completion_nsec=5000000"];
    let text = |mode: &str| {
        job(
            "libaio",
            32,
            &format!("rate_iops=1000\nnumber_ios=200\nwrite_iolog=x.log\nio_submit_mode={mode}"),
        )
    };
    let gaps = |mode: &str| {
        let out = common::run_str("nullblk", &text(mode), &slow, 0);
        let j = &out.result.jobs[0];
        assert_eq!(j.dirs[0].total_ios, 200);
        // fio's iolog version 3: "<time> <file> read <offset> <len>".
        let at: Vec<u64> = out.files[0]
            .contents
            .lines()
            .filter(|l| l.contains(" read "))
            .map(|l| l.split(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(at.len(), 200);
        let gaps: Vec<u64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        (j.dirs[0].runtime / 1_000_000, gaps)
    };
    let (ms, off) = gaps("offload");
    assert!((199..=206).contains(&ms), "{ms} ms");
    // Each I/O 1 ms after the one before, give or take the first sleep's
    // timer slack (50 us) and the hand-off's CPU work.
    assert!(off.iter().all(|&g| (1000..=1100).contains(&g)), "{off:?}");
    let (_, inline) = gaps("inline");
    assert!(
        inline.iter().filter(|&&g| g < 100).count() >= 100,
        "{inline:?}"
    );
}

#[test]
fn fio_refuses_io_uring_with_offload_and_so_does_flashpath() {
    // ioengines.c check_engine_ops: FIO_NO_OFFLOAD (the real fio 3.33
    // prints this line, then "fio: failed to load engine").
    let p = common::profile("nullblk", &[]);
    let jf = common::parse(&job("io_uring", 4, ""), &p);
    let Err(err) = run_jobs(&jf, &p, 1, &fio_source) else {
        panic!("io_uring with offload ran");
    };
    let err = err.to_string();
    assert!(
        err.contains("io_uring: can't be used with offloaded submit. Use a sync engine"),
        "{err}"
    );
}

#[test]
fn offloaded_runs_are_deterministic() {
    let text = job("libaio", 8, "rw=randrw\nnumber_ios=500");
    let a = common::run_str("nullblk", &text, &[], 7);
    let b = common::run_str("nullblk", &text, &[], 7);
    assert_eq!(
        serde_json::to_string(&a.result.flashpath).unwrap(),
        serde_json::to_string(&b.result.flashpath).unwrap()
    );
    assert_eq!(
        a.result.jobs[0].dirs[1].clat.stat,
        b.result.jobs[0].dirs[1].clat.stat
    );
}

#[test]
fn the_workers_cpu_time_is_not_in_the_jobs_rusage() {
    // fio 3.33 reads a job's usr_cpu/sys_cpu with getrusage(RUSAGE_THREAD)
    // in the job's thread (lib/getrusage.c): the workers' time is not in
    // it. The CPUs' booked time holds the job thread's and the workers'
    // apart: their sum cannot pass it (the null engine has no interrupt
    // work to hide a double count in).
    for depth in [1, 4] {
        let out = common::run_str("nullblk", &job("null", depth, "size=4m"), &[], 0);
        let j = &out.result.jobs[0];
        let rt = j.job_runtime as f64;
        let job_ns = (j.usr_cpu + j.sys_cpu) / 100.0 * rt;
        let workers = out.result.flashpath["offload"]["worker_cpu_ns"]
            .as_u64()
            .unwrap() as f64;
        let cpus: f64 = out.result.flashpath["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                ["usr_ns", "sys_ns", "irq_ns"]
                    .iter()
                    .map(|k| c[*k].as_u64().unwrap() as f64)
                    .sum::<f64>()
            })
            .sum();
        assert!(job_ns > 0.0 && workers > 0.0);
        assert!(
            job_ns + workers <= cpus * 1.001,
            "job {job_ns} + workers {workers} > CPUs {cpus}"
        );
    }
}
