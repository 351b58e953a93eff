//! Buffered I/O through the page cache on null_blk: what reaches the disk
//! (readahead windows, writeback of each dirty page once, nothing for
//! cached re-reads or writes under the background threshold), the cost of
//! a cached read in closed form, and the dirty limit throttling a writer.

mod common;

use flashpath::run::{fio_source, run_iozone, run_jobs, RunOutput};

/// `job` on null_blk with `overrides`, seed 1.
fn run(job: &str, overrides: &[&str]) -> RunOutput {
    common::run_str("nullblk", job, overrides, 1)
}

fn counter(out: &RunOutput, key: &str) -> u64 {
    out.result.flashpath["page_cache"][key].as_u64().unwrap()
}

fn ns(key: &str) -> u64 {
    common::ns("nullblk", key)
}

const JOB: &str = "filename=/dev/nullb0\nioengine=psync\nbs=4k\ncpus_allowed=0\n";

#[test]
fn every_buffered_io_completes_once_with_the_bytes_asked() {
    for rw in ["read", "write", "randread", "randwrite", "rw"] {
        let out = run(&format!("[j]\n{JOB}rw={rw}\nsize=8m\n"), &[]);
        assert_eq!(out.completed_ios, out.submitted_ios, "{rw}");
        assert_eq!(out.completed_ios, 2048, "{rw}");
        let job = &out.result.jobs[0];
        let bytes: u64 = job.dirs.iter().map(|d| d.io_bytes).sum();
        assert_eq!(bytes, 8 << 20, "{rw}");
    }
}

/// A sequential 4 KiB reader with fio's default fadvise (SEQUENTIAL: the
/// 128 KiB window doubled): readahead windows of 4, 8, 16, 32 pages, then
/// 64 pages each, so the disk sees one request per window and every page of
/// the file is read once.
#[test]
fn a_sequential_reader_reads_each_page_once_in_ramping_windows() {
    let out = run(&format!("[j]\n{JOB}rw=read\nsize=64m\n"), &[]);
    let pages = 16384u64;
    let disk = &out.result.disks[0];
    let ramp = 4 + 8 + 16 + 32;
    let full = (pages - ramp).div_ceil(64);
    // The last window ahead of the reader may or may not have started
    // when the job ends.
    assert!(
        disk.read_ios >= 4 + full && disk.read_ios <= 4 + full + 1,
        "{} reads",
        disk.read_ios
    );
    assert!(counter(&out, "pages_read") >= pages);
    assert!(counter(&out, "pages_read") <= pages + 2 * 64);
}

/// A read of a cached page: the system call, the buffered call's fixed
/// part, one page lookup and the copy of 4 KiB; the disk is not touched.
#[test]
fn a_cached_reread_costs_the_syscall_the_lookup_and_the_copy() {
    let first = run(&format!("[a]\n{JOB}rw=read\nsize=8m\n"), &[]);
    let both = run(
        &format!(
            "[a]\n{JOB}rw=read\nsize=8m\n[b]\nstonewall\ninvalidate=0\n{JOB}rw=read\nsize=8m\n"
        ),
        &[],
    );
    assert_eq!(
        both.result.disks[0].read_ios,
        first.result.disks[0].read_ios
    );
    let clat = &both.result.jobs[1].dirs[0].clat.stat;
    let p = common::profile("nullblk", &[]);
    let copy = (4096.0
        / (p.rate("host.cost.copy_user", flashpath::profile::limits::RATE)
            .unwrap()
            / 1e9))
        .round() as u64;
    let expect = ns("host.cost.syscall_entry")
        + ns("host.cost.buffered_call")
        + ns("host.cost.page_cache_lookup")
        + copy
        + ns("host.cost.syscall_exit");
    assert_eq!((clat.min, clat.max), (expect, expect));
}

#[test]
fn invalidate_at_open_makes_the_second_pass_read_the_disk_again() {
    let first = run(&format!("[a]\n{JOB}rw=read\nsize=8m\n"), &[]);
    let both = run(
        &format!("[a]\n{JOB}rw=read\nsize=8m\n[b]\nstonewall\n{JOB}rw=read\nsize=8m\n"),
        &[],
    );
    // All but the window read ahead of the first job's end, still on its
    // way when the second opens (a locked page survives the invalidate,
    // as in invalidate_mapping_pages).
    let once = first.result.disks[0].read_ios;
    let twice = both.result.disks[0].read_ios;
    assert!(
        twice >= 2 * once - 1 && twice <= 2 * once,
        "{twice} vs {once}"
    );
}

/// fadvise_hint=1 gives random jobs POSIX_FADV_RANDOM: no readahead, one
/// page read per page asked (fio's random map never repeats a block).
#[test]
fn random_buffered_reads_read_only_the_pages_asked() {
    let out = run(
        &format!("[j]\n{JOB}rw=randread\nsize=1g\nnumber_ios=1000\n"),
        &[],
    );
    assert_eq!(out.result.disks[0].read_ios, 1000);
    assert_eq!(counter(&out, "pages_read"), 1000);
    assert_eq!(counter(&out, "readahead_pages"), 0);
}

/// Under the background threshold nothing is written until the job's
/// fsync, which writes each dirty page once, in requests of max_sectors_kb.
#[test]
fn dirty_pages_reach_the_disk_at_fsync_each_once() {
    let lazy = run(&format!("[j]\n{JOB}rw=write\nsize=16m\n"), &[]);
    assert_eq!(lazy.result.disks[0].write_ios, 0);
    assert_eq!(counter(&lazy, "dirty_at_end"), 4096);
    let synced = run(&format!("[j]\n{JOB}rw=write\nsize=16m\nend_fsync=1\n"), &[]);
    assert_eq!(counter(&synced, "pages_written"), 4096);
    assert_eq!(counter(&synced, "dirty_at_end"), 0);
    assert_eq!(
        synced.result.disks[0].write_ios,
        (16u64 << 10).div_ceil(1280)
    );
    // The fsync is part of the job's run time.
    assert!(synced.result.jobs[0].job_runtime > lazy.result.jobs[0].job_runtime);
}

/// A write of part of a page that is not cached reads the page first
/// (block_write_begin).
#[test]
fn partial_page_writes_read_the_page_first() {
    let out = run(
        "[j]\nfilename=/dev/nullb0\nioengine=psync\nbs=512\nrw=write\nsize=64k\ncpus_allowed=0\n",
        &[],
    );
    assert_eq!(out.result.disks[0].read_ios, 16);
    assert_eq!(counter(&out, "pages_dirtied"), 128);
}

/// A writer that dirties more than the limit allows (64 MiB of memory:
/// limit 20%, background 10%) onto a slow disk (one tag, 5 ms per request)
/// is throttled while the flusher writes back.
#[test]
fn a_writer_over_the_dirty_limit_waits_for_writeback() {
    let out = run(
        &format!("[j]\n{JOB}rw=write\nsize=128m\n"),
        &[
            "host.memory=0.0625",
            "block.nr_requests=1",
            "device.completion_nsec=5000000",
        ],
    );
    assert!(counter(&out, "throttled_writes") > 0);
    let thresh = counter(&out, "dirty_thresh_pages");
    assert_eq!(thresh, 16384 * 20 / 100);
    let written = counter(&out, "pages_written");
    assert!(written >= 32768 - thresh, "{written} written");
    assert!(counter(&out, "dirty_at_end") <= thresh);
    assert!(out.result.disks[0].write_ios > 0);
}

#[test]
fn a_buffered_run_is_deterministic() {
    let job = format!("[j]\n{JOB}rw=randrw\nsize=32m\n");
    let a = run(&job, &["host.memory=0.0625"]);
    let b = run(&job, &["host.memory=0.0625"]);
    assert_eq!(a.result.flashpath, b.result.flashpath);
    assert_eq!(a.events, b.events);
}

/// iozone without -I: the readers find what the writers left in the page
/// cache (nothing is read from the disk), and -e puts the fsync of the
/// written data into the writers' time.
#[test]
fn buffered_iozone_reads_hit_the_cache_and_fsync_slows_the_writers() {
    let args = |line: &str| {
        line.split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let lazy = run_iozone(&args("-s 8m -r 4k -i 0 -i 1 -t 1 -F f1"), "nullblk", &[], 1).unwrap();
    let cache = &lazy.json["flashpath"]["page_cache"];
    assert_eq!(cache["pages_read"].as_u64(), Some(0));
    assert_eq!(cache["read_hit_pages"].as_u64(), Some(2 * 2048));
    let synced = run_iozone(
        &args("-s 8m -r 4k -i 0 -i 1 -e -t 1 -F f1"),
        "nullblk",
        &[],
        1,
    )
    .unwrap();
    let kbps = |o: &flashpath::run::IozoneOutput, test: &str| {
        o.json["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["test"] == test)
            .unwrap()["children_kBps"]
            .as_f64()
            .unwrap()
    };
    assert!(kbps(&synced, "initial writers") < kbps(&lazy, "initial writers"));
    assert_eq!(
        synced.json["flashpath"]["page_cache"]["pages_written"].as_u64(),
        Some(2 * 2048)
    );
}

/// With swiotlb bouncing every DMA, requests are capped at the largest
/// mapping (IO_TLB_SEGSIZE slots, 256 KiB), and readahead is mapped on the
/// reader's CPU while writeback is mapped on the flusher's.
#[test]
fn swiotlb_maps_readahead_on_the_reader_and_writeback_on_the_flusher() {
    let job = "[j]\nfilename=/dev/vda\nioengine=psync\nrw=rw\nbs=64k\nsize=256m\ncpus_allowed=0\n";
    let out = common::run_str("virtio-ramdisk", job, &["host.memory=0.5"], 1);
    let cache = &out.result.flashpath["page_cache"];
    let wb = cache["writeback_requests"].as_u64().unwrap();
    let ra = cache["readahead_requests"].as_u64().unwrap();
    assert!(wb > 0 && ra > 0);
    let by_cpu = common::maps_by_cpu(&out);
    // One mapping per page-cache page (order-0 pages are separate
    // scatterlist segments) plus virtio-blk's header, status and indirect
    // table per request.
    let read = cache["pages_read"].as_u64().unwrap();
    let written = cache["pages_written"].as_u64().unwrap();
    assert_eq!(by_cpu[0], read + 3 * ra);
    assert_eq!(by_cpu.iter().sum::<u64>(), read + written + 3 * (ra + wb));
    // Every written page went out in requests of at most 64 pages.
    assert!(written <= 64 * wb && written > 0);
}

/// fsync=4: a sync before every write that follows four writes (the real
/// fio 3.33 on a 1 MiB file: 256 writes, 63 syncs); each sync writes back
/// the four dirty pages in one request and waits for it.
#[test]
fn fsync_every_n_writes_syncs_before_the_next_write() {
    let out = run(&format!("[j]\n{JOB}rw=write\nsize=1m\nfsync=4\n"), &[]);
    let job = &out.result.jobs[0];
    assert_eq!(job.dirs[1].total_ios, 256);
    assert_eq!(job.sync_lat.stat.samples, 63);
    assert_eq!(out.result.disks[0].write_ios, 63);
    assert_eq!(counter(&out, "dirty_at_end"), 4);
    assert!(job.sync_lat.stat.min >= ns("device.completion_nsec"));
    // direct=1: the same 63 syncs (the real fio 3.33, direct=1 on a 1 MiB
    // ext4 file: 256 writes, 63 syncs), each only blkdev_issue_flush;
    // null_blk has no volatile write cache, so blk-flush ends each flush
    // at once and the disk sees the 256 writes alone.
    let out = run(
        &format!("[j]\n{JOB}rw=write\nsize=1m\nfsync=4\ndirect=1\n"),
        &[],
    );
    let job = &out.result.jobs[0];
    assert_eq!(job.dirs[1].total_ios, 256);
    assert_eq!(job.sync_lat.stat.samples, 63);
    assert_eq!(out.result.disks[0].write_ios, 256);
    // The null engine opens no file to sync: refused by name.
    let p = common::profile("nullblk", &[]);
    let jobs = common::parse(
        "[j]\nioengine=null\nbs=4k\nrw=write\nsize=1m\nfsync=4\n",
        &p,
    );
    match run_jobs(&jobs, &p, 1, &fio_source) {
        Err(err) => assert!(err.to_string().contains("fsync=N"), "{err}"),
        Ok(_) => panic!("fsync=N with ioengine=null ran"),
    }
}
