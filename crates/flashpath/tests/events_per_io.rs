//! Events per I/O: the events a request costs end to end (those popped,
//! and those that take their turn at once, `EventQueue::turn_now`: the
//! queue counts both alike), on the four workloads of
//! bench/mqsim/compare.py. The device books its NAND
//! work on timelines and computes its completion time (device/nand.rs), so
//! a request's events are those of the host side: docs/performance.md
//! measured 4.0 per I/O on every workload (the JSON's `"events"`), and a
//! change that adds one per I/O (or one per page of a 128 KiB read) shows
//! up here before it shows up in the wall time.

mod common;

/// I/Os per run: enough that start-up events are a rounding error.
const IOS: u64 = 4_000;

fn events_per_io(rw: &str, bs: &str) -> f64 {
    let job = format!(
        "[w]\nioengine=libaio\ndirect=1\n{rw}\nbs={bs}\niodepth=32\n\
         filename=/dev/nvme0n1\nnorandommap\nnumber_ios={IOS}\n"
    );
    let out = common::run_str("mqsim-default", &job, &[], 1);
    assert_eq!(out.completed_ios, IOS, "{rw} {bs}: every I/O completed");
    out.events as f64 / IOS as f64
}

#[test]
fn every_workload_costs_at_most_four_events_per_io() {
    for (rw, bs) in [
        ("rw=randread", "4k"),
        ("rw=randwrite", "4k"),
        ("rw=read", "128k"),
        ("rw=randrw\nrwmixread=70", "4k"),
    ] {
        let e = events_per_io(rw, bs);
        // The run's own start (the thread's first wake-up) is one event
        // more than the I/Os' share.
        assert!(
            e <= 4.0 + 1.0 / IOS as f64,
            "{rw} bs={bs}: {e} events per I/O, more than the 4 measured"
        );
        assert!(
            e >= 3.0,
            "{rw} bs={bs}: {e} events per I/O: I/Os not simulated?"
        );
    }
}
