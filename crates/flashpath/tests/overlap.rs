//! serialize_overlap with io_submit_mode=offload as fio 3.33 runs it
//! (rate-submit.c check_overlap; `machine/overlap.rs`): a submit worker
//! holds back an I/O while it overlaps any I/O in flight of any job of
//! the run that offloads with serialize_overlap, files aside (fio
//! compares offsets alone).
//!
//! The property is checked from the outside with Little's law: while no
//! two I/Os are in flight at once, the I/Os' completion latencies (each
//! inside its I/O's time in flight) add up to no more than the wall time
//! of the run; I/Os in flight together add up to more.

mod common;

use flashpath::run::RunOutput;

/// `jobs` offloaded psync jobs of `ios` 4 KiB writes each on the nullblk
/// disk, whose requests take 200 us (a device far slower than the CPU
/// work, so I/Os in flight together show up as latency overlapping).
fn job(jobs: u32, depth: u32, serialize: u32, extra: &str) -> String {
    format!(
        "[global]\nfilename=/dev/nullb0\nioengine=psync\ndirect=1\nrw=randwrite\nbs=4k\n\
         size=4k\nio_size=200k\nio_submit_mode=offload\niodepth={depth}\n\
         serialize_overlap={serialize}\nnumjobs={jobs}\n{extra}\n[w]\n"
    )
}

const SLOW: [&str; 1] = ["device.completion_nsec=200000"];

/// The sum of every I/O's completion latency over all jobs, and the run's
/// wall time (the jobs start together: the longest job's runtime, plus
/// the start-up spread, bounded by `SPREAD_NS`).
fn busy_and_wall(out: &RunOutput) -> (f64, f64) {
    let mut busy = 0.0;
    let mut wall = 0u64;
    for j in &out.result.jobs {
        for d in &j.dirs {
            busy += d.clat.stat.mean() * d.clat.stat.samples as f64;
            wall = wall.max(d.runtime);
        }
    }
    (busy, wall as f64 + SPREAD_NS)
}

/// How far apart the jobs' starts may be: each thread's start-up on the
/// simulated CPUs takes microseconds; 100 us bounds it with room.
const SPREAD_NS: f64 = 100_000.0;

fn waits(out: &RunOutput) -> u64 {
    out.result.flashpath["offload"]["overlap_waits"]
        .as_u64()
        .expect("overlap counters with serialize_overlap")
}

#[test]
fn overlapping_ios_of_all_jobs_never_fly_together() {
    let out = common::run_str("nullblk", &job(4, 2, 1, ""), &SLOW, 0);
    for j in &out.result.jobs {
        assert_eq!(j.dirs[1].total_ios, 50);
        assert_eq!(j.dirs[1].io_bytes, 50 * 4096);
    }
    let (busy, wall) = busy_and_wall(&out);
    // 200 I/Os one at a time: at least 200 x 200 us, and the latencies
    // never add up to more than the time that passed.
    assert!(busy >= 200.0 * 200_000.0, "{busy}");
    assert!(busy <= wall, "{busy} ns of latency in {wall} ns");
    assert!(waits(&out) > 0);
    assert!(
        out.result.flashpath["offload"]["overlap_spin_ns"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn without_serialize_overlap_they_do() {
    let out = common::run_str("nullblk", &job(4, 2, 0, ""), &SLOW, 0);
    let (busy, wall) = busy_and_wall(&out);
    // 8 workers, each with an I/O on the slow device most of the time.
    assert!(busy > 4.0 * wall, "{busy} ns of latency in {wall} ns");
    assert!(out.result.flashpath["offload"]
        .get("overlap_waits")
        .is_none());
}

#[test]
fn disjoint_ranges_of_the_jobs_fly_together() {
    // Each job 1 MiB past the one before: nothing overlaps across jobs,
    // and at iodepth 1 nothing within one.
    let out = common::run_str("nullblk", &job(4, 1, 1, "offset_increment=1m"), &SLOW, 0);
    let (busy, wall) = busy_and_wall(&out);
    assert!(busy > 3.0 * wall, "{busy} ns of latency in {wall} ns");
    assert_eq!(waits(&out), 0);
    // The same jobs at one offset wait for each other.
    let same = common::run_str("nullblk", &job(4, 1, 1, ""), &SLOW, 0);
    let (busy, wall) = busy_and_wall(&same);
    assert!(busy <= wall, "{busy} ns of latency in {wall} ns");
    assert!(waits(&same) > 0);
}

#[test]
fn a_job_without_serialize_overlap_is_neither_checked_nor_held() {
    // check_overlap skips the jobs without serialize_overlap: the job
    // without it runs beside the others, on the same block.
    let text = "[global]\nfilename=/dev/nullb0\nioengine=psync\ndirect=1\nrw=randwrite\n\
                bs=4k\nsize=4k\nio_size=200k\nio_submit_mode=offload\niodepth=1\n\
                [a]\nserialize_overlap=1\n[b]\nserialize_overlap=1\n[free]\n";
    let out = common::run_str("nullblk", text, &SLOW, 0);
    let lat = |name: &str| {
        let j = out.result.jobs.iter().find(|j| j.name == name).unwrap();
        (j.dirs[1].clat.stat.mean(), j.dirs[1].runtime)
    };
    let (_, ra) = lat("a");
    let (_, rf) = lat("free");
    // a and b take turns (100 I/Os one at a time); free goes at its own
    // pace, about half their time.
    assert!(rf * 10 < ra * 7, "free {rf} ns, a {ra} ns");
    assert!(waits(&out) > 0);
}

#[test]
fn files_do_not_matter_offsets_do() {
    // fio's t0013: null engine jobs, each with its own file, one 4 KiB
    // block each, offloaded: every I/O overlaps every other job's.
    let text = "[test]\nioengine=null\nthread=1\nsize=4K\nblocksize=4K\n\
                io_submit_mode=offload\niodepth=1\nserialize_overlap=1\nnumjobs=8\nloops=100\n";
    let out = common::run_str("nullblk", text, &[], 0);
    assert_eq!(out.result.jobs.len(), 8);
    for j in &out.result.jobs {
        let r = &j.dirs[0];
        assert_eq!((r.total_ios, r.io_bytes), (100, 100 * 4096));
        assert_eq!(r.slat.stat.samples, 0);
        assert_eq!(r.clat.stat.samples, 100);
    }
    let (busy, wall) = busy_and_wall(&out);
    assert!(busy <= wall, "{busy} ns of latency in {wall} ns");
    assert!(waits(&out) > 0);
}

#[test]
fn serialized_runs_are_deterministic() {
    let text = job(4, 4, 1, "size=64k\nrw=randrw");
    let a = common::run_str("nullblk", &text, &SLOW, 3);
    let b = common::run_str("nullblk", &text, &SLOW, 3);
    assert_eq!(
        serde_json::to_string(&a.result.flashpath).unwrap(),
        serde_json::to_string(&b.result.flashpath).unwrap()
    );
    for (x, y) in a.result.jobs.iter().zip(&b.result.jobs) {
        assert_eq!(x.dirs[0].clat.stat, y.dirs[0].clat.stat);
        assert_eq!(x.dirs[1].clat.stat, y.dirs[1].clat.stat);
    }
}

#[test]
fn inline_jobs_keep_serialize_overlap_only_where_fio_does() {
    // init.c fixup_options clears serialize_overlap without offload when
    // the job changes no data or has one I/O out at a time; the check that
    // stays (backend.c io_u_submit, per job) is refused by name.
    use flashpath::run::{fio_source, run_jobs};
    let p = common::profile("nullblk", &[]);
    let spec = |t: &str| common::parse(t, &p).jobs[0].serialize_overlap;
    let base = "[j]\nfilename=/dev/nullb0\nioengine=libaio\ndirect=1\nbs=4k\nsize=64k\n\
                serialize_overlap=1\n";
    assert!(!spec(&format!("{base}rw=randread\niodepth=8\n")));
    assert!(!spec(&format!("{base}rw=randwrite\niodepth=1\n")));
    assert!(spec(&format!(
        "{base}rw=randread\niodepth=8\nio_submit_mode=offload\n"
    )));
    let kept = format!("{base}rw=randwrite\niodepth=8\n");
    assert!(spec(&kept));
    let Err(err) = run_jobs(&common::parse(&kept, &p), &p, 1, &fio_source) else {
        panic!("inline serialize_overlap ran");
    };
    let err = err.to_string();
    assert!(
        err.contains("serialize_overlap=1 without io_submit_mode=offload")
            && err.contains("is not modelled by flashpath")
            && err.contains(":1"),
        "{err}"
    );
    // A cleared one runs as without it.
    let off = |s: u32| {
        let text = format!(
            "[j]\nfilename=/dev/nullb0\nioengine=libaio\ndirect=1\nbs=4k\nsize=64k\n\
             rw=randread\niodepth=8\nserialize_overlap={s}\n"
        );
        let out = common::run_str("nullblk", &text, &[], 5);
        serde_json::to_string(&out.result.flashpath).unwrap()
    };
    assert_eq!(off(1), off(0));
}
