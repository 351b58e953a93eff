//! The eMMC card's volatile cache as drivers/mmc/core/block.c drives it:
//! REQ_OP_FLUSH is CMD6 SWITCH FLUSH_CACHE with R1b busy until the cache
//! is on NAND (mmc_blk_issue_flush -> mmc_flush_cache); REQ_FUA on a card
//! with reliable writes is a reliable write (CMD23 bit 31, mmc_blk_rw_rq_prep),
//! and on a cache without them the block layer follows the write with a
//! flush (blk-flush.c's post-flush); without a cache nothing is flushed.

mod common;

use flashpath::device::FlashParams;
use flashpath::run::RunOutput;

const P: &str = "emmc51-intel";

fn job(extra: &str) -> String {
    format!(
        "[j]\nfilename=/dev/mmcblk0\nioengine=psync\ndirect=1\nrw=write\nbs=4k\n\
         size=256k\n{extra}\n"
    )
}

fn t_prog() -> u64 {
    FlashParams::from_profile(&common::profile(P, &[]))
        .unwrap()
        .timing
        .t_prog
}

fn min_clat(o: &RunOutput) -> u64 {
    o.result.jobs[0].dirs[1].clat.stat.min
}

#[test]
fn fsync_is_a_cache_flush_that_waits_for_the_program() {
    let out = common::run_str(P, &job("fsync=4"), &[], 0);
    let j = &out.result.jobs[0];
    // 64 writes, a sync after every 4th but the last (as the real fio).
    assert_eq!(j.sync_lat.stat.samples, 15);
    let drv = &out.result.flashpath["driver"];
    assert_eq!(drv["flushes"], 15, "{drv}");
    assert_eq!(drv["card_cache_flushes"], 15, "{drv}");
    // Four 4 KiB writes sit in the card's buffer, less than a page row:
    // each flush programs them and waits.
    let prog = t_prog();
    assert!(
        j.sync_lat.stat.min >= prog,
        "sync {} < tPROG {prog}",
        j.sync_lat.stat.min
    );
    // A flush is one more command (CMD6) per sync.
    let plain = common::run_str(P, &job(""), &[], 0);
    let cmds = |o: &RunOutput| o.result.flashpath["driver"]["commands"].as_u64().unwrap();
    assert_eq!(cmds(&out), cmds(&plain) + 15);
    assert!(plain.result.flashpath["driver"].get("flushes").is_none());
}

#[test]
fn without_a_cache_no_flush_reaches_the_card() {
    let out = common::run_str(
        P,
        &job("fsync=4"),
        &["mmc.card.cache=false", "mmc.card.reliable_write=false"],
        0,
    );
    let j = &out.result.jobs[0];
    assert_eq!(j.sync_lat.stat.samples, 15);
    assert!(
        out.result.flashpath["driver"].get("flushes").is_none(),
        "the block layer ends flushes without a volatile cache"
    );
    assert!(j.sync_lat.stat.max < t_prog());
}

#[test]
fn o_sync_writes_are_reliable_writes_or_post_flushed() {
    let prog = t_prog();
    let plain = common::run_str(P, &job(""), &[], 0);
    assert!(min_clat(&plain) < prog, "plain {}", min_clat(&plain));

    let rel = common::run_str(P, &job("sync=1"), &[], 0);
    let drv = &rel.result.flashpath["driver"];
    assert_eq!(drv["reliable_writes"], 64, "{drv}");
    assert_eq!(drv["flushes"], 0, "{drv}");
    assert!(min_clat(&rel) >= prog, "reliable {}", min_clat(&rel));

    // A cache without reliable writes: the block layer sends each FUA
    // write as a plain write and then a flush, and the write completes
    // with the flush.
    let post = common::run_str(P, &job("sync=1"), &["mmc.card.reliable_write=false"], 0);
    let drv = &post.result.flashpath["driver"];
    assert_eq!(drv["reliable_writes"], 0, "{drv}");
    assert_eq!(drv["flushes"], 64, "{drv}");
    assert_eq!(drv["card_cache_flushes"], 64, "{drv}");
    assert!(min_clat(&post) >= prog, "post-flushed {}", min_clat(&post));
    assert_eq!(post.result.disks[0].write_ios, 64);

    // Reliable writes need CMD23 (MMC_BLK_REL_WR): open-ended writes on
    // a cache get the post-flush instead.
    let open = common::run_str(P, &job("sync=1"), &["mmc.host.cmd23=false"], 0);
    let drv = &open.result.flashpath["driver"];
    assert_eq!(drv["reliable_writes"], 0, "{drv}");
    assert_eq!(drv["flushes"], 64, "{drv}");
}

#[test]
fn sw_cmdq_flushes_with_the_queue_empty_and_writes_reliably() {
    let out = common::run_str(P, &job("fsync=4"), &["mmc.swcmdq=true"], 0);
    let j = &out.result.jobs[0];
    assert_eq!(j.sync_lat.stat.samples, 15);
    let drv = &out.result.flashpath["driver"];
    assert_eq!(drv["card_cache_flushes"], 15, "{drv}");
    assert!(j.sync_lat.stat.min >= t_prog());
    let rel = common::run_str(P, &job("sync=1"), &["mmc.swcmdq=true"], 0);
    assert_eq!(rel.result.flashpath["driver"]["reliable_writes"], 64);
    assert!(min_clat(&rel) >= t_prog());
}
