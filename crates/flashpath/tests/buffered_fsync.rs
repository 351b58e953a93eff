//! fsync of a buffered job as blkdev_fsync (block/fops.c) does it:
//! file_write_and_wait_range writes the dirty pages back and waits for
//! them, then blkdev_issue_flush sends REQ_OP_FLUSH to a device with a
//! volatile write cache and waits until the device's cache has drained;
//! on a drive without one (power-loss protected: VWC = 0) the block layer
//! ends the flush before the driver (block/blk-flush.c).

mod common;

use flashpath::device::ftl::FlashDevice;
use flashpath::device::nvme_flash::NvmeFlashSsd;

fn job(extra: &str) -> String {
    format!(
        "[j]\nfilename=/dev/nvme0n1\nioengine=psync\ndirect=0\nrw=write\nbs=4k\n\
         size=1m\n{extra}\n"
    )
}

/// The program time of a host row while the SLC cache has room (it has,
/// in these short runs), else the NAND's tPROG.
fn row_prog(profile: &str) -> u64 {
    let d = NvmeFlashSsd::from_profile(&common::profile(profile, &[]), 0).unwrap();
    let ftl = d.layer_as::<FlashDevice>().expect("the page FTL");
    ftl.params()
        .slc
        .map_or(ftl.nand().timing.t_prog, |s| s.t_prog)
}

#[test]
fn a_buffered_fsync_writes_back_then_flushes_a_volatile_cache() {
    let out = common::run_str("nvme-970evoplus-1tb", &job("fsync=4"), &[], 0);
    let j = &out.result.jobs[0];
    // The real fio 3.33 on a /tmp file (direct=0, fsync=4, 256 writes):
    // 63 syncs, one after every 4th write but the last.
    assert_eq!(j.dirs[1].total_ios, 256);
    assert_eq!(j.sync_lat.stat.samples, 63);
    let dev = &out.result.flashpath["driver"]["device"];
    assert_eq!(dev["front_end"]["flushes"], 63, "{dev}");
    // Every sync wrote its four pages back (the device's cache takes them
    // at once), then waited for the flush, which waits for their program.
    let prog = row_prog("nvme-970evoplus-1tb");
    assert!(
        j.sync_lat.stat.min >= prog,
        "sync {} < program {prog}",
        j.sync_lat.stat.min
    );
    // The pages of the last four writes have no sync after them.
    let cache = &out.result.flashpath["page_cache"];
    assert_eq!(cache["pages_written"], 252, "{cache}");
    assert_eq!(cache["dirty_at_end"], 4, "{cache}");
}

#[test]
fn a_buffered_fsync_on_a_power_loss_protected_drive_sends_no_flush() {
    let out = common::run_str("nvme-d7p5510-3t84", &job("fsync=4"), &[], 0);
    let j = &out.result.jobs[0];
    assert_eq!(j.sync_lat.stat.samples, 63);
    let dev = &out.result.flashpath["driver"]["device"];
    assert_eq!(dev["front_end"]["flushes"], 0, "{dev}");
    // The writeback is still waited for: the pages reach the device.
    assert_eq!(out.result.flashpath["page_cache"]["pages_written"], 252);
}

#[test]
fn a_buffered_end_fsync_is_one_flush_after_the_writeback() {
    let out = common::run_str("nvme-970evoplus-1tb", &job("size=64k\nend_fsync=1"), &[], 0);
    let dev = &out.result.flashpath["driver"]["device"];
    assert_eq!(dev["front_end"]["flushes"], 1, "{dev}");
    // As the real fio 3.33: end_fsync is not in the sync latencies.
    assert_eq!(out.result.jobs[0].sync_lat.stat.samples, 0);
    // Nothing dirty is left, and the flush came after the pages were on
    // the device: the job ends after its last write's program.
    assert_eq!(out.result.flashpath["page_cache"]["pages_written"], 16);
    let without = common::run_str("nvme-970evoplus-1tb", &job("size=64k"), &[], 0);
    assert_eq!(
        without.result.flashpath["driver"]["device"]["front_end"]["flushes"],
        0
    );
}

#[test]
fn a_buffered_fsync_on_ufs_is_synchronize_cache() {
    let job = "[j]\nfilename=/dev/sda\nioengine=psync\ndirect=0\nrw=write\nbs=4k\n\
               size=1m\nfsync=4\n";
    let out = common::run_str("ufs21-64g", job, &[], 0);
    assert_eq!(out.result.jobs[0].sync_lat.stat.samples, 63);
    assert_eq!(out.result.flashpath["driver"]["flushes"], 63);
}
