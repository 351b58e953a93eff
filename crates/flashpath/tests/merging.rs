//! Issue 28: request merging and plugging (block/merge.rs). fio's batched
//! submissions (iodepth_batch_submit) go into the kernel in one io_submit
//! under a plug; sequential 4 KiB I/Os merge there into requests up to the
//! queue's limits, and the disk's statistics count the merges as
//! /sys/block/<dev>/stat does.
//!
//! The expected counts are the real kernel's: fio 3.33 on a loop device
//! of this machine (Linux 6.18, scheduler none, max_sectors_kb 1280,
//! max_segments 128), /sys/block/loop0/stat read before and after each
//! job (experiments/merging/README.md). The merge counts of a sequential
//! job do not depend on timing: each commit of a batch of
//! iodepth_batch_complete_min = iodepth_batch_submit I/Os is one plug.

mod common;

use flashpath::run::RunOutput;

const NULLBLK: &str = "nullblk";
/// A device slow enough (1 ms per request) that requests queue in the
/// elevator behind few tags.
const SLOW: &str = "device.completion_nsec=1000000";

/// fio's sequential or random 4 KiB libaio writes of 32 MiB at `depth`,
/// committed and reaped `batch` at a time.
fn job(rw: &str, engine: &str, depth: u32, batch: u32, complete: u32) -> String {
    format!(
        "[j]\nfilename=/dev/nullb0\nioengine={engine}\ndirect=1\nrw={rw}\nbs=4k\nsize=32m\n\
         iodepth={depth}\niodepth_batch_submit={batch}\niodepth_batch_complete_min={complete}\n"
    )
}

fn run(job: &str, sets: &[&str]) -> RunOutput {
    common::run_str(NULLBLK, job, sets, 1)
}

/// (requests, merges) the disk counted for writes, after checking every
/// fio I/O completed once.
fn write_stats(out: &RunOutput) -> (u64, u64) {
    let d = &out.result.disks[0];
    let ios: u64 = out.result.jobs.iter().map(|j| j.dirs[1].total_ios).sum();
    assert_eq!(ios, 8192, "every fio I/O completes once");
    assert_eq!(d.read_ios + d.read_merges, 0);
    (d.write_ios, d.write_merges)
}

#[test]
fn a_batch_of_sequential_writes_merges_into_one_request() {
    // Real kernel: 256 requests, 7936 merges (32 I/Os per io_submit, one
    // 128 KiB request of 32 segments each).
    let out = run(&job("write", "libaio", 32, 32, 32), &[]);
    assert_eq!(write_stats(&out), (256, 7936));
    // io_uring's submit plugs as io_submit does.
    let out = run(&job("write", "io_uring", 32, 32, 32), &[]);
    assert_eq!(write_stats(&out), (256, 7936));
    // Deeper batches, deeper requests: 64 segments (256 KiB) each. Real:
    // 128 requests, 8064 merges; with 16: 512 and 7680.
    let out = run(&job("write", "libaio", 64, 64, 64), &[]);
    assert_eq!(write_stats(&out), (128, 8064));
    let out = run(&job("write", "libaio", 16, 16, 16), &[]);
    assert_eq!(write_stats(&out), (512, 7680));
}

#[test]
fn max_sectors_kb_bounds_a_merged_request() {
    // 64 KiB requests: 16 bios each, 2 per batch of 32. Real: 512, 7680.
    let out = run(
        &job("write", "libaio", 32, 32, 32),
        &["block.max_sectors_kb=64"],
    );
    assert_eq!(write_stats(&out), (512, 7680));
    // max_segments: 8 pages a request.
    let out = run(
        &job("write", "libaio", 32, 32, 32),
        &["block.max_segments=8"],
    );
    assert_eq!(write_stats(&out), (1024, 7168));
}

#[test]
fn nomerges_2_disables_merging() {
    // Real: 8192 requests, 0 merges.
    let out = run(&job("write", "libaio", 32, 32, 32), &["block.nomerges=2"]);
    assert_eq!(write_stats(&out), (8192, 0));
    // nomerges=1 keeps the plug's merges (the real kernel: 7936 again).
    let out = run(&job("write", "libaio", 32, 32, 32), &["block.nomerges=1"]);
    assert_eq!(write_stats(&out), (256, 7936));
}

#[test]
fn no_plug_below_three_iocbs() {
    // io_submit plugs only more than AIO_PLUG_THRESHOLD (2) iocbs; fio's
    // default iodepth_batch_submit=1 submits one at a time. Real: 0 merges
    // for both.
    let out = run(&job("write", "libaio", 32, 2, 2), &[]);
    assert_eq!(write_stats(&out), (8192, 0));
    let out = run(&job("write", "libaio", 32, 1, 1), &[]);
    assert_eq!(write_stats(&out), (8192, 0));
}

#[test]
fn random_writes_rarely_merge() {
    // Two random 4 KiB blocks of 32 MiB are adjacent with probability
    // about 2/8192: a handful of merges at most (real: 44 and 42 of 8192
    // in two runs, fio's random map).
    let out = run(&job("randwrite", "libaio", 32, 32, 32), &[]);
    let (rqs, merges) = write_stats(&out);
    assert_eq!(rqs + merges, 8192);
    assert!(merges < 82, "{merges} merges of 8192 random writes");
}

#[test]
fn each_merged_io_keeps_its_own_latency() {
    // A request carries 32 fio I/Os; each is recorded with its own
    // submission time: fio's slat of the batch's first I/O spans the
    // batch's submission work, its last's none of it, so slat varies
    // while every I/O of a request completes at once.
    let out = run(&job("write", "libaio", 32, 32, 32), &[]);
    let w = &out.result.jobs[0].dirs[1];
    assert_eq!(w.slat.stat.samples, 8192);
    assert!(w.slat.stat.max > 10 * w.slat.stat.min.max(1));
}

#[test]
fn mq_deadline_merges_with_queued_requests() {
    // Four driver tags of a 1 ms device: a sequential writer at depth 32, one I/O per
    // io_submit (no plug), finds its predecessors queued in mq-deadline;
    // each new bio back-merges into the queued request ending where it
    // starts (the elevator hash). Without an elevator nothing merges (no
    // plug, and `none`'s software-queue merge is not reached).
    let j = job("write", "libaio", 32, 1, 1);
    let none = run(&j, &[SLOW, "block.nr_requests=4"]);
    assert_eq!(write_stats(&none), (8192, 0));
    let dl = run(
        &j,
        &[SLOW, "block.nr_requests=4", "block.scheduler=mq-deadline"],
    );
    let (rqs, merges) = write_stats(&dl);
    println!("mq-deadline: {rqs} requests, {merges} merges");
    assert_eq!(rqs + merges, 8192);
    assert!(merges > 4096, "{merges}");
    let off = run(
        &j,
        &[
            SLOW,
            "block.nr_requests=4",
            "block.scheduler=mq-deadline",
            "block.nomerges=2",
        ],
    );
    assert_eq!(write_stats(&off), (8192, 0));
}

#[test]
fn mq_deadline_front_merges_a_descending_writer() {
    // fio's rw=write:-8k (each I/O 4 KiB below the previous one's start)
    // writes downwards: every bio ends where a queued request starts, a
    // front merge. The request it merged into stays `last_merge`, whose
    // one-hit check (elv_merge) takes front merges too, before and
    // whatever front_merges says: turning front_merges off changes
    // nothing for one stream; nomerges=2 stops them all.
    let j = "[j]\nfilename=/dev/nullb0\nioengine=libaio\ndirect=1\nrw=write:-8k\nbs=4k\n\
             offset=64m\nsize=32m\niodepth=32\nnumber_ios=8192\n";
    let sets = [SLOW, "block.nr_requests=4", "block.scheduler=mq-deadline"];
    let on = run(j, &sets);
    let (rqs, merges) = write_stats(&on);
    println!("front merges: {rqs} requests, {merges} merges");
    assert!(merges > 4096, "{merges}");
    let off = run(j, &[&sets[..], &["block.iosched.front_merges=0"]].concat());
    assert_eq!(write_stats(&off), (rqs, merges));
    let none = run(j, &[&sets[..], &["block.nomerges=2"]].concat());
    assert_eq!(write_stats(&none), (8192, 0));
}

#[test]
fn only_full_commits_plug_when_fio_reaps_one_at_a_time() {
    // fio's default iodepth_batch_complete_min=1: the first commit holds
    // 32 I/Os, the later ones what each reap freed. Real kernel: 31
    // merges in all with batch 32, 28 with batch 8 (the first commit's
    // request, or 4 requests of 8; later commits of one or two I/Os are
    // not plugged). The real count holds while the device completes
    // faster than fio refills (a loop device, null_blk): a commit of three
    // or more later I/Os would plug and could merge.
    let out = run(&job("write", "libaio", 32, 32, 1), &[]);
    assert_eq!(write_stats(&out), (8161, 31));
    let out = run(&job("write", "libaio", 32, 8, 1), &[]);
    assert_eq!(write_stats(&out), (8164, 28));
}

/// The nullblk profile with its host's `block.scheduler` line taken out:
/// the kernel's default elevator applies.
fn nullblk_without_scheduler(sets: &[&str]) -> flashpath::profile::Profile {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
    let host = std::fs::read_to_string(root.join("hosts/x86-generic.toml")).unwrap();
    let host: String = host
        .lines()
        .filter(|l| !l.starts_with("scheduler = "))
        .map(|l| format!("{l}\n"))
        .collect();
    let dev = std::fs::read_to_string(root.join("nullblk.toml")).unwrap();
    let dev_path = common::write("nullblk.toml", &dev);
    let dir = dev_path.parent().unwrap();
    std::fs::create_dir_all(dir.join("hosts")).unwrap();
    std::fs::write(dir.join("hosts/x86-generic.toml"), host).unwrap();
    let mut p = flashpath::profile::Profile::load(dev_path.to_str().unwrap()).unwrap();
    for s in sets {
        p.apply_override(s).unwrap();
    }
    p
}

#[test]
fn a_profile_without_a_scheduler_gets_the_kernels_default() {
    // elevator_get_default: mq-deadline for one hardware queue, none for
    // several. Seen through merging: behind 4 tags of a slow device a
    // sequential writer merges in mq-deadline, never in none.
    let j = job("write", "libaio", 32, 1, 1);
    let run_on = |sets: &[&str]| {
        let p = nullblk_without_scheduler(sets);
        let jobs = common::parse(&j, &p);
        flashpath::run::run_jobs(&jobs, &p, 1, &flashpath::run::fio_source).unwrap()
    };
    let one = run_on(&[SLOW, "block.nr_requests=4"]);
    let (_, merges) = write_stats(&one);
    assert!(merges > 4096, "one queue: {merges}");
    let two = run_on(&[SLOW, "block.nr_requests=4", "device.submit_queues=2"]);
    assert_eq!(write_stats(&two), (8192, 0));
    // fio's ioscheduler= still overrides the default.
    let jn = format!("[global]\nioscheduler=none\n{j}");
    let p = nullblk_without_scheduler(&[SLOW, "block.nr_requests=4"]);
    let out = flashpath::run::run_jobs(&common::parse(&jn, &p), &p, 1, &flashpath::run::fio_source)
        .unwrap();
    assert_eq!(write_stats(&out), (8192, 0));
}

#[test]
fn kyber_merges_within_its_software_queue_lists() {
    // kyber_bio_merge: a bio merges with a request still on its CPU's kcq
    // list (blk_bio_list_merge, the last 8 from the tail); once a token
    // lets the list be flushed to the hardware queue's, they are out of
    // reach. Behind 4 tags of a slow device the sequential writer's bios
    // find their predecessors there.
    let j = job("write", "libaio", 32, 1, 1);
    let sets = [SLOW, "block.nr_requests=4", "block.scheduler=kyber"];
    let k = run(&j, &sets);
    let (rqs, merges) = write_stats(&k);
    println!("kyber: {rqs} requests, {merges} merges");
    assert_eq!(rqs + merges, 8192);
    assert!(merges > 4096, "{merges}");
    let off = run(&j, &[&sets[..], &["block.nomerges=2"]].concat());
    assert_eq!(write_stats(&off), (8192, 0));
}
