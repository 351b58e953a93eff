//! Closed forms the machine must reproduce exactly or within a confidence
//! interval, on null_blk, whose device time is known.

mod common;

use flashpath::profile::Profile;
use flashpath::run::{run_jobs, RunOutput};
use flashpath::workload::fio::{IoEngine, JobFile, JobSpec, RateProcess, RwKind};
use flashpath::workload::{Ddir, IoSource, IoUnit};

/// Sequential fixed-size reads over the region, `count` of them.
struct Seq {
    next: u64,
    start: u64,
    len: u64,
    bs: u64,
    left: u64,
}

impl IoSource for Seq {
    fn next_io(&mut self) -> Option<IoUnit> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let off = self.start + self.next;
        self.next = (self.next + self.bs) % (self.len - self.len % self.bs);
        Some(IoUnit {
            ddir: Ddir::Read,
            offset: off,
            len: self.bs as u32,
        })
    }
}

fn job(engine: IoEngine, iodepth: u32) -> JobSpec {
    JobSpec {
        name: "t".into(),
        rw: RwKind::Read,
        ioengine: engine,
        iodepth,
        direct: true,
        size: Some(1 << 30),
        ..JobSpec::default()
    }
}

fn run(spec: JobSpec, count: u64, overrides: &[&str]) -> RunOutput {
    let profile = common::profile("nullblk", overrides);
    let file = JobFile {
        path: "t.fio".into(),
        jobs: vec![spec],
        ..JobFile::default()
    };
    run_jobs(&file, &profile, 1, &|_s, start, len, _seed, _c| {
        Box::new(Seq {
            next: 0,
            start,
            len,
            bs: 4096,
            left: count,
        })
    })
    .unwrap()
}

fn p(profile: &Profile, key: &str) -> u64 {
    profile.ns(key, flashpath::profile::limits::COST).unwrap()
}

#[test]
fn qd1_interrupt_latency_is_device_plus_host_path_exactly() {
    let out = run(job(IoEngine::Psync, 1), 1000, &[]);
    let pr = Profile::load("nullblk").unwrap();
    let expect = p(&pr, "host.cost.syscall_entry")
        + p(&pr, "host.cost.blk_submit")
        + p(&pr, "driver.queue_rq")
        + p(&pr, "device.completion_nsec")
        + p(&pr, "host.cost.irq_entry")
        + p(&pr, "driver.irq_handler")
        + p(&pr, "host.cost.blk_complete")
        + p(&pr, "host.cost.wakeup")
        + p(&pr, "host.cost.context_switch")
        + p(&pr, "host.cost.syscall_exit");
    let clat = &out.result.jobs[0].dirs[0].clat.stat;
    assert_eq!(clat.samples, 1000);
    assert_eq!((clat.min, clat.max), (expect, expect));
    let lat = &out.result.jobs[0].dirs[0].lat.stat;
    assert_eq!(lat.min, expect + p(&pr, "host.cost.fio_submit"));
}

#[test]
fn every_submitted_io_completes_once_and_bytes_match() {
    for depth in [1, 4, 32, 128] {
        let out = run(job(IoEngine::Libaio, depth), 5000, &[]);
        assert_eq!(out.submitted_ios, 5000);
        assert_eq!(out.completed_ios, 5000);
        let d = &out.result.jobs[0].dirs[0];
        assert_eq!(d.total_ios, 5000);
        assert_eq!(d.io_bytes, 5000 * 4096);
        assert_eq!(d.clat.samples(), 5000);
    }
}

const ALL_HOST_COSTS: [&str; 13] = [
    "host.cost.fio_submit",
    "host.cost.fio_complete",
    "host.cost.syscall_entry",
    "host.cost.syscall_exit",
    "host.cost.blk_submit",
    "host.cost.blk_complete",
    "host.cost.irq_entry",
    "host.cost.wakeup",
    "host.cost.context_switch",
    "host.cost.ipi",
    // A timed sleep's lateness is host overhead too (rate sleeps).
    "host.timer_slack",
    "driver.queue_rq",
    "driver.irq_handler",
];

fn zero_costs() -> Vec<String> {
    ALL_HOST_COSTS.iter().map(|k| format!("{k}=0")).collect()
}

#[test]
fn cpu_bound_submission_never_fills_the_tags() {
    // With ~1.35 us of CPU per submission and a 10 us device, at most
    // ~8 requests can be at the device: the 64 tags never run out.
    let out = run(job(IoEngine::Libaio, 128), 20_000, &[]);
    assert_eq!(
        out.result.flashpath["block"]["tag_waits"].as_u64().unwrap(),
        0
    );
}

#[test]
fn deeper_queue_than_tags_waits_for_tags() {
    // Free host path, 128 in flight against 64 tags: throughput is bounded
    // by 64 completions per completion_nsec window and requests wait.
    let zero = zero_costs();
    let ov: Vec<&str> = zero.iter().map(String::as_str).collect();
    let out = run(job(IoEngine::Libaio, 128), 20_000, &ov);
    let rt = out.result.jobs[0].job_runtime as f64;
    let iops = 20_000.0 / (rt / 1e9);
    let bound = 64.0 / 10e-6;
    assert!(iops <= bound * 1.001, "{iops} > {bound}");
    assert!(out.result.flashpath["block"]["tag_waits"].as_u64().unwrap() > 0);
}

#[test]
fn same_seed_same_result() {
    let a = run(job(IoEngine::Libaio, 8), 3000, &[]);
    let b = run(job(IoEngine::Libaio, 8), 3000, &[]);
    assert_eq!(a.result.end_time, b.result.end_time);
    assert_eq!(a.events, b.events);
    assert_eq!(
        a.result.jobs[0].dirs[0].clat.stat,
        b.result.jobs[0].dirs[0].clat.stat
    );
}

/// Poisson arrivals at a single-tag null_blk: an M/D/1 queue. With zero
/// host costs, the sojourn from each I/O's scheduled arrival (fio's rate
/// lateness, plus clat) has the M/D/1 mean: D + rho * D / (2 (1 - rho)).
#[test]
fn poisson_arrivals_on_one_tag_give_md1_mean_wait() {
    let d_ns: f64 = 10_000.0;
    let rho: f64 = 0.6;
    let iops = (rho / (d_ns * 1e-9)).round() as u64;
    let zero = zero_costs();
    let mut ov: Vec<&str> = zero.iter().map(String::as_str).collect();
    ov.push("device.hw_queue_depth=1");
    let mut spec = job(IoEngine::Libaio, 64);
    spec.rate_iops = [iops, 0, 0];
    spec.rate_process = RateProcess::Poisson;
    let n = 100_000u64;
    let out = run(spec, n, &ov);
    let clat_mean = out.result.jobs[0].dirs[0].clat.stat.mean();
    let late = out.result.flashpath["jobs"][0]["rate_lateness_mean_ns"]
        .as_f64()
        .unwrap();
    let sojourn = clat_mean + late;
    let expect = d_ns + rho * d_ns / (2.0 * (1.0 - rho));
    // Batch-means style tolerance: the M/D/1 sojourn's relative standard
    // error at rho=0.6 over 100k customers is well under 1%; allow 3%.
    assert!(
        (sojourn - expect).abs() / expect < 0.03,
        "sojourn {sojourn} vs M/D/1 {expect}"
    );
}

#[test]
fn offset_increment_clones_each_do_their_share() {
    let mut spec = job(IoEngine::Psync, 1);
    spec.size = Some(4 << 20);
    spec.numjobs = 3;
    spec.offset_increment = 4 << 20;
    let profile = Profile::load("nullblk").unwrap();
    let file = JobFile {
        path: "t.fio".into(),
        jobs: vec![spec],
        ..JobFile::default()
    };
    let out = run_jobs(&file, &profile, 1, &flashpath::run::fio_source).unwrap();
    assert_eq!(out.result.jobs.len(), 3);
    for j in &out.result.jobs {
        assert_eq!(j.dirs[0].io_bytes, 4 << 20, "clone {}", j.clone_index);
    }
}
