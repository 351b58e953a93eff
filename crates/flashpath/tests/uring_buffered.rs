//! io_uring on buffered I/O (direct=0) as Linux 6.12 runs it on a block
//! device (io_uring/rw.c, io_uring/io-wq.c, block/fops.c): each call is
//! tried without blocking inside io_uring_enter; a read of cached pages
//! completes there, a read that misses returns at once and is finished by
//! task_work when its pages are unlocked, and a write (blkdev_write_iter
//! refuses IOCB_NOWAIT) is punted to an io-wq worker thread.

mod common;

use flashpath::run::{fio_source, run_jobs};

fn job(engine: &str, rw: &str, extra: &str) -> String {
    format!(
        "[j]\nfilename=/dev/nullb0\nioengine={engine}\ndirect=0\nrw={rw}\nbs=4k\n\
         size=64k\n{extra}\n"
    )
}

fn uring(out: &flashpath::run::RunOutput) -> &serde_json::Value {
    &out.result.flashpath["io_uring_buffered"]
}

#[test]
fn every_write_goes_to_an_io_wq_worker_on_the_idle_cpu() {
    // fio on CPU 0: the worker may run on any CPU of the cpuset
    // (io_wq_create), and CPU 1 is idle.
    let out = common::run_str(
        "nullblk",
        &job("io_uring", "write", "cpus_allowed=0"),
        &[],
        0,
    );
    let u = uring(&out);
    assert_eq!(u["iowq_punts"], 16, "{u}");
    assert_eq!(u["inline"], 0, "{u}");
    let w = &out.result.jobs[0].dirs[1];
    assert_eq!((w.total_ios, w.io_bytes), (16, 65536));
    // The copies ran on CPU 1, as system time there.
    let cpus = &out.result.flashpath["cpus"];
    let worker_ns = u["iowq_cpu_ns"].as_u64().unwrap();
    assert!(worker_ns > 0);
    assert!(
        cpus[1]["sys_ns"].as_u64().unwrap() >= worker_ns,
        "{cpus} {worker_ns}"
    );
    // io_uring_enter returns once the write is queued to the worker: the
    // submission latency holds no copy, so it is below libaio's, whose
    // io_submit copies the page itself (buffered aio is synchronous).
    let aio = common::run_str("nullblk", &job("libaio", "write", "cpus_allowed=0"), &[], 0);
    let (slat_u, slat_a) = (&w.slat.stat, &aio.result.jobs[0].dirs[1].slat.stat);
    assert!(slat_u.max < slat_a.min, "{} >= {}", slat_u.max, slat_a.min);
    // The hand-off and the worker's wake-up of fio make each write's
    // completion later than the submission's end.
    assert!(w.clat.stat.min > 0);
    assert!(aio.result.flashpath.get("io_uring_buffered").is_none());
}

#[test]
fn a_cold_read_returns_at_once_and_finishes_in_task_work() {
    let out = common::run_str("nullblk", &job("io_uring", "read", ""), &[], 0);
    let u = uring(&out);
    // A read whose page is not cached yet (the first one's sync
    // readahead, or a later one reaching pages the async readahead still
    // reads) returns (-EIOCBQUEUED), and the page-unlock callback's
    // task_work copies it; the others find their pages cached.
    let (retries, inline) = (
        u["async_read_retries"].as_u64().unwrap(),
        u["inline"].as_u64().unwrap(),
    );
    assert!(retries >= 1, "{u}");
    assert_eq!(retries + inline, 16, "{u}");
    assert_eq!(u["iowq_punts"], 0, "{u}");
    let r = &out.result.jobs[0].dirs[0];
    assert_eq!((r.total_ios, r.io_bytes), (16, 65536));
    // null_blk completes after 10 us: a read that waits has its wait in
    // its completion latency (io_uring), where libaio, whose io_submit
    // sleeps for the page, has it in its submission latency; the calls'
    // own work (readahead submitted inline, the copies) is the same. The
    // first read waits for its sync readahead's whole 10 us (a later one
    // may find the async readahead's request already on its way).
    let device = 10_000.0;
    let aio = common::run_str("nullblk", &job("libaio", "read", ""), &[], 0);
    let a = &aio.result.jobs[0].dirs[0];
    let slat_sum =
        |d: &flashpath::report::DirResult| d.slat.stat.mean() * d.slat.stat.samples as f64;
    assert!(
        slat_sum(a) - slat_sum(r) >= device,
        "libaio {} io_uring {}",
        slat_sum(a),
        slat_sum(r)
    );
    assert!(r.clat.stat.max as f64 >= device, "{}", r.clat.stat.max);
    // Where the wait happens changes, not what the cache does: the same
    // readahead, hits and misses.
    assert_eq!(
        out.result.flashpath["page_cache"],
        aio.result.flashpath["page_cache"]
    );
}

#[test]
fn a_mixed_job_punts_exactly_its_writes_and_is_deterministic() {
    let text = job(
        "io_uring",
        "randrw",
        "size=256k\nnumber_ios=400\ntime_based=1\nruntime=1s",
    );
    let a = common::run_str("nullblk", &text, &[], 3);
    let b = common::run_str("nullblk", &text, &[], 3);
    let (r, w) = (&a.result.jobs[0].dirs[0], &a.result.jobs[0].dirs[1]);
    let u = uring(&a);
    assert_eq!(u["iowq_punts"].as_u64().unwrap(), w.total_ios, "{u}");
    assert_eq!(
        u["inline"].as_u64().unwrap() + u["async_read_retries"].as_u64().unwrap(),
        r.total_ios,
        "{u}"
    );
    assert!(r.total_ios > 0 && w.total_ios > 0);
    assert_eq!(
        serde_json::to_string(&a.result.flashpath).unwrap(),
        serde_json::to_string(&b.result.flashpath).unwrap()
    );
}

#[test]
fn several_buffered_calls_in_flight_are_refused_by_name() {
    let p = common::profile("nullblk", &[]);
    let jf = common::parse(&job("io_uring", "randread", "iodepth=4"), &p);
    let Err(err) = run_jobs(&jf, &p, 1, &fio_source) else {
        panic!("several io_uring buffered calls in flight ran");
    };
    let err = err.to_string();
    assert!(err.contains("io_uring with buffered I/O"), "{err}");
    assert!(err.contains("iodepth > 1"), "{err}");
    assert!(err.contains("job 'j'"), "{err}");
}
