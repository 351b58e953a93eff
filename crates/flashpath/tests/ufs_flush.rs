//! The UFS device's write cache as Linux's sd driver sees it (WCE on,
//! FUA taken): a direct job's fsync reaches the device as SYNCHRONIZE
//! CACHE and waits for the buffered writes' programs, and an O_SYNC write
//! is a WRITE(10) with FUA that completes once on NAND.

mod common;

use flashpath::device::FlashParams;
use flashpath::run::RunOutput;

fn job(extra: &str) -> String {
    format!("[j]\nfilename=/dev/sda\nioengine=psync\ndirect=1\nrw=write\nbs=4k\nsize=1m\n{extra}\n")
}

fn min_clat(o: &RunOutput) -> u64 {
    o.result.jobs[0].dirs[1].clat.stat.min
}

#[test]
fn fsync_and_o_sync_reach_the_ufs_device_as_synchronize_cache_and_fua() {
    let p = "ufs21-64g";
    let t_prog = FlashParams::from_profile(&common::profile(p, &[]))
        .unwrap()
        .timing
        .t_prog;

    let synced = common::run_str(p, &job("fsync=4"), &[], 0);
    let j = &synced.result.jobs[0];
    // The real fio 3.33's count for 256 writes with fsync=4.
    assert_eq!(j.sync_lat.stat.samples, 63);
    let drv = &synced.result.flashpath["driver"];
    assert_eq!(drv["flushes"], 63, "{drv}");
    // Four 4 KiB writes are less than a page row: each flush programs
    // them (padded) and waits for it.
    assert!(
        j.sync_lat.stat.min >= t_prog,
        "sync {} < tPROG {t_prog}",
        j.sync_lat.stat.min
    );

    let plain = common::run_str(p, &job(""), &[], 0);
    assert!(
        plain.result.flashpath["driver"].get("flushes").is_none(),
        "a run that flushed nothing shows no flush counters"
    );
    let fua = common::run_str(p, &job("sync=1"), &[], 0);
    assert_eq!(fua.result.flashpath["driver"]["fua_writes"], 256);
    assert!(
        min_clat(&fua) >= t_prog && min_clat(&plain) < t_prog,
        "FUA {} plain {} tPROG {t_prog}",
        min_clat(&fua),
        min_clat(&plain)
    );
}
