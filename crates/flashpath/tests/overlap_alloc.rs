//! serialize_overlap across offloaded jobs (`machine/overlap.rs`)
//! allocates nothing per I/O: its in-flight set and its waiters are
//! reserved at the jobs' iodepths, so a run of twice the I/Os makes as many
//! allocations as the shorter one.

mod common;

use common::counting_alloc::{allocations_in, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations(io_kb: u32) -> u64 {
    // 4 jobs at iodepth 4 on one 16 KiB range: most I/Os wait.
    let job = format!(
        "[global]\nfilename=/dev/nullb0\nioengine=psync\ndirect=1\nrw=randwrite\nbs=4k\n\
         size=16k\nio_size={io_kb}k\nio_submit_mode=offload\niodepth=4\n\
         serialize_overlap=1\nnumjobs=4\n[w]\n"
    );
    let p = common::profile("nullblk", &[]);
    let jobs = common::parse(&job, &p);
    let (out, n) = allocations_in(|| {
        flashpath::run::run_jobs(&jobs, &p, 1, &flashpath::run::fio_source).unwrap()
    });
    assert!(
        out.result.flashpath["offload"]["overlap_waits"]
            .as_u64()
            .unwrap()
            > 0
    );
    n
}

#[test]
fn the_overlap_check_allocates_nothing_per_io() {
    let (short, long) = (allocations(2048), allocations(4096));
    assert_eq!(short, long, "{short} vs {long} allocations");
}
