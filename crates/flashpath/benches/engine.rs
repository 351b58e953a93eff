//! Criterion benches: the event queue alone, and one end-to-end run of
//! 4 KiB random reads at QD32 on null_blk (the foundation's speed goal).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashpath::profile::Profile;
use flashpath::run::{fio_source, run_jobs};
use flashpath::sim::queue::EventQueue;
use flashpath::sim::rng::RngStream;
use flashpath::workload::fio::{IoEngine, JobFile, JobSpec, RwKind};
use std::hint::black_box;

fn event_queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue");
    const N: u64 = 100_000;
    g.throughput(Throughput::Elements(N));
    g.bench_function("hold_64_pending", |b| {
        let mut rng = RngStream::new(1, "bench");
        b.iter(|| {
            let mut q = EventQueue::with_capacity(128);
            for i in 0..64u64 {
                q.schedule(rng.below(10_000), i);
            }
            for _ in 0..N {
                let (_, e) = q.pop().unwrap();
                q.schedule_in(rng.below(10_000), black_box(e));
            }
        })
    });
    g.finish();
}

fn end_to_end(c: &mut Criterion) {
    let mut g = c.benchmark_group("end_to_end");
    g.sample_size(10);
    const IOS: u64 = 200_000;
    g.throughput(Throughput::Elements(IOS));
    let profile = Profile::load("nullblk").unwrap();
    let spec = JobSpec {
        name: "bench".into(),
        rw: RwKind::RandRead,
        ioengine: IoEngine::Libaio,
        iodepth: 32,
        direct: true,
        norandommap: true,
        number_ios: Some(IOS),
        filename: Some("/dev/nullb0".into()),
        ..JobSpec::default()
    };
    let file = JobFile {
        path: "bench.fio".into(),
        jobs: vec![spec],
        ..JobFile::default()
    };
    g.bench_function("nullblk_randread_4k_qd32", |b| {
        b.iter(|| {
            black_box(
                run_jobs(&file, &profile, 1, &fio_source)
                    .unwrap()
                    .completed_ios,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, event_queue, end_to_end);
criterion_main!(benches);
