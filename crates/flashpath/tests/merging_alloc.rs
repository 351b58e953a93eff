//! The plug and merge paths allocate nothing per I/O (block/merge.rs): a
//! run of twice the I/Os, plugged and merged, makes as many allocations
//! as the shorter one (setup and the report are the same size).

mod common;

use common::counting_alloc::{allocations_in, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations(size_mb: u32, sets: &[&str]) -> u64 {
    let job = format!(
        "[j]\nfilename=/dev/nullb0\nioengine=libaio\ndirect=1\nrw=write\nbs=4k\n\
         size={size_mb}m\niodepth=32\niodepth_batch_submit=32\n\
         iodepth_batch_complete_min=32\n"
    );
    let p = common::profile("nullblk", sets);
    let jobs = common::parse(&job, &p);
    let (out, n) = allocations_in(|| {
        flashpath::run::run_jobs(&jobs, &p, 1, &flashpath::run::fio_source).unwrap()
    });
    assert!(out.result.disks[0].write_merges > 0);
    n
}

#[test]
fn plugging_and_merging_allocate_nothing_per_io() {
    for sets in [
        &[][..],
        &[
            "device.completion_nsec=1000000",
            "block.nr_requests=4",
            "block.scheduler=mq-deadline",
        ][..],
    ] {
        let (short, long) = (allocations(16, sets), allocations(32, sets));
        assert_eq!(short, long, "{sets:?}: {short} vs {long} allocations");
    }
}
