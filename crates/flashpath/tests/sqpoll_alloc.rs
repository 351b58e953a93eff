//! io_uring's SQPOLL path (`machine/sqpoll.rs`) allocates nothing per I/O:
//! a run of twice the I/Os makes as many allocations as the shorter one
//! (setup and the report are the same size).

mod common;

use common::counting_alloc::{allocations_in, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations(size_mb: u32, extra: &str) -> u64 {
    let job = format!(
        "[j]\nfilename=/dev/nullb0\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\n\
         size={size_mb}m\niodepth=16\nsqthread_poll=1\n{extra}\n"
    );
    let p = common::profile("nullblk", &[]);
    let jobs = common::parse(&job, &p);
    let (out, n) = allocations_in(|| {
        flashpath::run::run_jobs(&jobs, &p, 1, &flashpath::run::fio_source).unwrap()
    });
    let sq = &out.result.flashpath["io_uring_sqpoll"][0];
    assert_eq!(sq["sqes"].as_u64(), Some(u64::from(size_mb) * 256));
    n
}

#[test]
fn the_sq_thread_path_allocates_nothing_per_io() {
    for extra in [
        "",
        "sqthread_poll_cpu=1\ncpus_allowed=0\niodepth_batch_submit=8",
    ] {
        let (short, long) = (allocations(8, extra), allocations(16, extra));
        assert_eq!(short, long, "{extra:?}: {short} vs {long} allocations");
    }
}
