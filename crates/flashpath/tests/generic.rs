//! The generic queueing device (device.kind = "generic") against closed
//! forms: at QD1 a read waits for the host path plus one service time; at
//! depth the throughput saturates at servers / service time (an M/D/c
//! station's capacity), at the IOPS cap or at the bandwidth cap, whichever
//! is lowest, and the mean latency then follows Little's law.

use flashpath::profile::Profile;
use flashpath::run::{fio_source, parse_context, run_jobs, RunOutput};
use flashpath::workload::fio::parse_job_str;
use std::path::Path;

/// A generic disk on the generic x86 host: `servers` servers, reads of
/// `read_fixed_us` plus 4096 B per us (4.096 GB/s), caps as given.
fn profile(servers: u32, read_fixed_us: u32, iops_cap: u32, bw_cap_mbs: u32) -> Profile {
    profile_with(servers, read_fixed_us, iops_cap, bw_cap_mbs, "shared")
}

fn profile_with(
    servers: u32,
    read_fixed_us: u32,
    iops_cap: u32,
    bw_cap_mbs: u32,
    dispatch: &str,
) -> Profile {
    profile_full(servers, read_fixed_us, iops_cap, bw_cap_mbs, dispatch, "")
}

/// As `profile_with`, with `extra` device lines (the later keys).
fn profile_full(
    servers: u32,
    read_fixed_us: u32,
    iops_cap: u32,
    bw_cap_mbs: u32,
    dispatch: &str,
    extra: &str,
) -> Profile {
    let text = format!(
        r#"
[profile]
name = "generic-test"
include = ["hosts/x86-generic.toml"]
[block]
io_poll = {{ value = 0, unit = "bool", source = "test" }}
io_poll_delay = {{ value = -1, unit = "count", source = "test" }}
nr_requests = {{ value = 256, unit = "count", source = "test" }}
[device]
kind = {{ value = "generic", unit = "name", source = "test" }}
capacity = {{ value = 16, unit = "GiB", source = "test" }}
queue_depth = {{ value = 256, unit = "count", source = "test" }}
hw_queues = {{ value = 1, unit = "count", source = "test" }}
servers = {{ value = {servers}, unit = "count", source = "test" }}
dispatch = {{ value = "{dispatch}", unit = "name", source = "test" }}
service_cv = {{ value = 0, unit = "ratio", source = "test" }}
read_fixed = {{ value = {read_fixed_us}, unit = "us", source = "test" }}
write_fixed = {{ value = 500, unit = "us", source = "test" }}
transfer_rate = {{ value = 4096, unit = "MB/s", source = "test" }}
iops_cap = {{ value = {iops_cap}, unit = "count", source = "test" }}
bandwidth_cap = {{ value = {bw_cap_mbs}, unit = "MB/s", source = "test" }}
{extra}
[driver]
queue_rq = {{ value = 1000, unit = "ns", source = "test" }}
irq_handler = {{ value = 1000, unit = "ns", source = "test" }}
"#
    );
    Profile::from_text("generic-test.toml", &text, None).unwrap()
}

fn run(p: &Profile, rw: &str, bs: u32, qd: u32, ios: u32) -> RunOutput {
    run_opts(p, rw, bs, qd, ios, "")
}

fn run_opts(p: &Profile, rw: &str, bs: u32, qd: u32, ios: u32, more: &str) -> RunOutput {
    let job = format!(
        "[j]\nioengine=libaio\ndirect=1\nrw={rw}\nbs={bs}\niodepth={qd}\nsize=8g\nnumber_ios={ios}\n{more}"
    );
    let jobs = parse_job_str("t.fio", &job, Path::new("."), &parse_context(p).unwrap()).unwrap();
    run_jobs(&jobs, p, 1, &fio_source).unwrap()
}

/// (IOPS, mean completion latency in ns, bytes per second) of the job's
/// reads.
fn figures(out: &RunOutput) -> (f64, f64, f64) {
    let d = &out.result.jobs[0].dirs[0];
    // The group report keeps the runtime in ns.
    let secs = d.runtime as f64 / 1e9;
    (
        d.total_ios as f64 / secs,
        d.clat.stat.mean(),
        d.io_bytes as f64 / secs,
    )
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want
}

#[test]
fn at_qd1_a_read_is_the_host_path_plus_one_fixed_service_time() {
    // The host path is the same whatever the device does: the difference
    // of two devices' QD1 latencies is the difference of their service
    // times, exactly, and every read takes the same time.
    let a = run(&profile(1, 100, 0, 0), "randread", 4096, 1, 500);
    let b = run(&profile(1, 350, 0, 0), "randread", 4096, 1, 500);
    let (sa, sb) = (
        &a.result.jobs[0].dirs[0].clat.stat,
        &b.result.jobs[0].dirs[0].clat.stat,
    );
    assert_eq!(sa.min, sa.max);
    assert_eq!(sb.min, sb.max);
    assert_eq!(sb.min - sa.min, 250_000);
    // The per-byte term: 64 KiB more take 65536 / 4.096 GB/s = 16 us more.
    let c = run(&profile(1, 100, 0, 0), "randread", 4096 + 65536, 1, 500);
    assert_eq!(c.result.jobs[0].dirs[0].clat.stat.min - sa.min, 16_000);
    // And the host path is a few microseconds, not zero.
    assert!(sa.min > 101_000 && sa.min < 120_000, "{}", sa.min);
}

#[test]
fn at_depth_the_servers_saturate_at_servers_over_service_time() {
    // 4 servers of 1 ms (+1 us for 4 KiB): 4 / 1.001 ms = 3996 IOPS, and
    // Little's law gives the mean latency at 32 in flight.
    let out = run(&profile(4, 1000, 0, 0), "randread", 4096, 32, 8000);
    let (iops, clat, _) = figures(&out);
    let want = 4.0 / 1.001e-3;
    assert!(close(iops, want, 0.01), "{iops} vs {want}");
    assert!(close(clat, 32.0 / want * 1e9, 0.02), "{clat}");
    // Below the server count nothing waits: QD2 on 4 servers is QD1's
    // latency.
    let qd1 = figures(&run(&profile(4, 1000, 0, 0), "randread", 4096, 1, 500)).1;
    let qd2 = figures(&run(&profile(4, 1000, 0, 0), "randread", 4096, 2, 1000)).1;
    assert!(close(qd2, qd1, 0.01), "{qd2} vs {qd1}");
}

#[test]
fn the_iops_cap_bounds_throughput_below_the_servers() {
    let out = run(&profile(64, 100, 2000, 0), "randread", 4096, 32, 4000);
    let (iops, _, _) = figures(&out);
    assert!(close(iops, 2000.0, 0.01), "{iops}");
}

#[test]
fn the_bandwidth_cap_bounds_large_transfers() {
    // 1 MiB reads, 16 servers: without the cap they would move far more
    // than 200 MB/s.
    let out = run(&profile(16, 100, 0, 200), "read", 1 << 20, 8, 600);
    let (_, _, bw) = figures(&out);
    assert!(close(bw, 200e6, 0.01), "{bw}");
    let free = run(&profile(16, 100, 0, 0), "read", 1 << 20, 8, 600);
    assert!(figures(&free).2 > 1e9);
}

#[test]
fn by_address_random_reads_collide_before_every_server_is_busy() {
    // Four servers of 1 ms, four reads in flight: a shared queue keeps all
    // four busy; by address, random offsets often land two on one server
    // (with four in flight on four servers, all distinct only 4!/4^4 =
    // 9% of the time), so throughput is lower, yet above one server's.
    let shared = figures(&run(&profile(4, 1000, 0, 0), "randread", 4096, 4, 2000)).0;
    let by_addr = profile_with(4, 1000, 0, 0, "by-address");
    let spread = figures(&run(&by_addr, "randread", 4096, 4, 2000)).0;
    assert!(close(shared, 4.0 / 1.001e-3, 0.01), "{shared}");
    assert!(
        spread < 0.85 * shared && spread > 1.5 / 1.001e-3,
        "{spread}"
    );
    // Deep, a server is rarely without work: nearly the same saturation.
    let deep = figures(&run(&by_addr, "randread", 4096, 64, 8000)).0;
    assert!(close(deep, 4.0 / 1.001e-3, 0.05), "{deep}");
}

/// Summed completion latency (ns) of reads and of writes.
fn clat_sums(out: &RunOutput) -> Vec<f64> {
    out.result.jobs[0]
        .dirs
        .iter()
        .map(|d| d.clat.stat.mean() * d.total_ios as f64)
        .collect()
}

#[test]
fn the_write_back_cache_adds_one_flush_per_cache_full_of_writes() {
    // 64 KiB cache, 4 KiB writes at QD1: every 16th write waits 1 ms for
    // the write-back, so the mean write is 1 ms / 16 = 62.5 us longer,
    // exactly (1600 writes fill the cache 100 times); reads never wait.
    let wb = "writeback_bytes = { value = 64, unit = \"KiB\", source = \"test\" }\n\
              writeback_flush = { value = 1000, unit = \"us\", source = \"test\" }";
    let with = profile_full(1, 100, 0, 0, "shared", wb);
    let without = profile(1, 100, 0, 0);
    let a = run(&with, "randwrite", 4096, 1, 1600);
    let b = run(&without, "randwrite", 4096, 1, 1600);
    let (sa, sb) = (clat_sums(&a)[1], clat_sums(&b)[1]);
    assert!((sa - sb - 100.0 * 1e6).abs() < 1.0, "{sa} - {sb}");
    assert_eq!(a.result.flashpath["driver"]["writebacks"], 100);
    let (ra, rb) = (
        run(&with, "randread", 4096, 1, 500),
        run(&without, "randread", 4096, 1, 500),
    );
    assert_eq!(clat_sums(&ra), clat_sums(&rb));
    // A profile without the keys reports no write-back counter at all.
    assert!(b.result.flashpath["driver"].get("writebacks").is_none());
}

#[test]
fn turnaround_costs_each_switch_of_direction_and_nothing_in_a_pure_job() {
    // One server, a 50/50 random mix at QD1: each I/O whose predecessor
    // went the other way pays 20 us; the mix's summed latency grows by
    // exactly switches x 20 us (the same directions in both runs: the
    // job's seed), and about half the I/Os switch (2 p (1 - p)).
    let turn = "turnaround = { value = 20, unit = \"us\", source = \"test\" }";
    let with = profile_full(1, 100, 0, 0, "shared", turn);
    let without = profile(1, 100, 0, 0);
    let mix = "rwmixread=50\n";
    let a = run_opts(&with, "randrw", 4096, 1, 2000, mix);
    let b = run_opts(&without, "randrw", 4096, 1, 2000, mix);
    let switches = a.result.flashpath["driver"]["turnarounds"]
        .as_u64()
        .unwrap();
    let extra: f64 = clat_sums(&a).iter().sum::<f64>() - clat_sums(&b).iter().sum::<f64>();
    assert!(
        (extra - switches as f64 * 20_000.0).abs() < 1.0,
        "{extra} vs {switches}"
    );
    assert!((800..1200).contains(&switches), "{switches}");
    // A pure job never switches.
    let r = run(&with, "randread", 4096, 1, 500);
    assert_eq!(r.result.flashpath["driver"]["turnarounds"], 0);
    assert_eq!(
        clat_sums(&r),
        clat_sums(&run(&without, "randread", 4096, 1, 500))
    );
}

#[test]
fn a_switch_delay_costs_each_switch_at_qd1_and_nothing_behind_queued_work() {
    // One server (reads 100 us, writes 500 us), a 50/50 random mix. At
    // QD1 the server is idle whenever a command arrives, so each switch
    // of direction adds the whole 30 us delay: the summed latency grows
    // by exactly switches x 30 us, and about half the I/Os switch
    // (2 p (1 - p)). At QD8 each command arrives behind seven queued
    // ones (at least 700 us of service), so the 30 us switch always
    // overlaps them: the same completions as without.
    let delay = "switch_delay = { value = 30, unit = \"us\", source = \"test\" }";
    let with = profile_full(1, 100, 0, 0, "shared", delay);
    let without = profile(1, 100, 0, 0);
    let mix = "rwmixread=50\n";
    let a = run_opts(&with, "randrw", 4096, 1, 2000, mix);
    let b = run_opts(&without, "randrw", 4096, 1, 2000, mix);
    let switches = a.result.flashpath["driver"]["switch_waits"]
        .as_u64()
        .unwrap();
    let extra: f64 = clat_sums(&a).iter().sum::<f64>() - clat_sums(&b).iter().sum::<f64>();
    assert!(
        (extra - switches as f64 * 30_000.0).abs() < 1.0,
        "{extra} vs {switches}"
    );
    assert_eq!(
        a.result.flashpath["driver"]["switch_wait_ns"],
        switches * 30_000
    );
    assert!((800..1200).contains(&switches), "{switches}");
    let deep_a = run_opts(&with, "randrw", 4096, 8, 2000, mix);
    let deep_b = run_opts(&without, "randrw", 4096, 8, 2000, mix);
    assert_eq!(clat_sums(&deep_a), clat_sums(&deep_b));
    assert_eq!(deep_a.result.flashpath["driver"]["switch_waits"], 0);
}

#[test]
fn a_log_normal_tail_moves_p99_and_keeps_the_mean() {
    // Service all variable (cv 1) with σ 1 against the exponential: the
    // same mean service time, but p99 over p50 of the service time is
    // exp(2.326) = 10.2 for the log-normal and ln 100 / ln 2 = 6.6 for
    // the exponential; the host path (a few us against 1 ms) and fio's
    // histogram buckets (~3%) shift both a little.
    let cv = "service_tail = { value = 1.0, unit = \"ratio\", source = \"test\" }";
    let tail = |extra: &str| {
        let p = profile_full(1, 1000, 0, 0, "shared", extra);
        let p = {
            let mut p = p;
            p.apply_override("device.service_cv=1").unwrap();
            p
        };
        run(&p, "randread", 4096, 1, 20_000)
    };
    let (ln, ex) = (tail(cv), tail(""));
    let stat = |o: &RunOutput| {
        let d = &o.result.jobs[0].dirs[0];
        let p = d.clat.percentiles(&[50.0, 99.0]);
        (d.clat.stat.mean(), p[0] as f64, p[1] as f64)
    };
    let (m_ln, p50_ln, p99_ln) = stat(&ln);
    let (m_ex, p50_ex, p99_ex) = stat(&ex);
    assert!(close(m_ln, m_ex, 0.05), "{m_ln} vs {m_ex}");
    let (r_ln, r_ex) = (p99_ln / p50_ln, p99_ex / p50_ex);
    assert!(r_ln > 8.0 && r_ln < 11.0, "{r_ln}");
    assert!(r_ex > 5.5 && r_ex < 7.0, "{r_ex}");
}

#[test]
fn a_device_that_queues_keeps_the_closed_forms() {
    // reads-first keeps the device's queue and starts commands from the
    // driver's events (a server freeing, the throttle letting one in):
    // the closed forms of arrival order hold there too.
    let rf = "queue_policy = { value = \"reads-first\", unit = \"name\", source = \"test\" }";
    // Saturation: 4 servers of 1.001 ms, Little's law at 32 in flight.
    let out = run(
        &profile_full(4, 1000, 0, 0, "shared", rf),
        "randread",
        4096,
        32,
        8000,
    );
    let (iops, clat, _) = figures(&out);
    let want = 4.0 / 1.001e-3;
    assert!(close(iops, want, 0.01), "{iops} vs {want}");
    assert!(close(clat, 32.0 / want * 1e9, 0.02), "{clat}");
    // The IOPS cap: commands let in later than they arrive wait for the
    // throttle's event.
    let out = run(
        &profile_full(64, 100, 2000, 0, "shared", rf),
        "randread",
        4096,
        32,
        4000,
    );
    assert!(close(figures(&out).0, 2000.0, 0.01), "{}", figures(&out).0);
    // QD1: nothing waits, so the order cannot matter: the same latency
    // to the nanosecond as arrival order.
    let a = run(
        &profile_full(1, 100, 0, 0, "shared", rf),
        "randrw",
        4096,
        1,
        500,
    );
    let b = run(&profile(1, 100, 0, 0), "randrw", 4096, 1, 500);
    for d in 0..2 {
        let (sa, sb) = (
            &a.result.jobs[0].dirs[d].clat.stat,
            &b.result.jobs[0].dirs[d].clat.stat,
        );
        assert_eq!((sa.min, sa.max, sa.mean()), (sb.min, sb.max, sb.mean()));
    }
}

#[test]
fn reads_first_over_a_shared_queue_keeps_the_capacity_and_serves_reads_ahead() {
    // Four servers before one queue, a 50/50 mix 32 deep: the priority
    // reorders the queue but is work-conserving, so the device still
    // saturates at servers / mean service time (an M/G/c station's
    // capacity, the mean over the mix's share of reads p: p · 101 us +
    // (1 - p) · 501 us) and Little's law holds over both directions; what
    // moves is who waits: the reads pass the writes.
    let rf = "queue_policy = { value = \"reads-first\", unit = \"name\", source = \"test\" }";
    let per_dir = |out: &RunOutput| -> Vec<(f64, f64)> {
        // Reads and writes (the third direction, trims, did nothing).
        out.result.jobs[0].dirs[..2]
            .iter()
            .map(|d| {
                let secs = d.runtime as f64 / 1e9;
                (d.total_ios as f64 / secs, d.clat.stat.mean())
            })
            .collect()
    };
    let first = per_dir(&run(
        &profile_full(4, 100, 0, 0, "shared", rf),
        "randrw",
        4096,
        32,
        16_000,
    ));
    let fifo = per_dir(&run(
        &profile_full(4, 100, 0, 0, "shared", ""),
        "randrw",
        4096,
        32,
        16_000,
    ));
    for dirs in [&first, &fifo] {
        let total: f64 = dirs.iter().map(|d| d.0).sum();
        let p = dirs[0].0 / total;
        let want = 4.0 / ((p * 101.0 + (1.0 - p) * 501.0) * 1e-6);
        assert!(close(total, want, 0.01), "{total} vs {want}");
        let in_flight: f64 = dirs.iter().map(|d| d.0 * d.1 / 1e9).sum();
        assert!(close(in_flight, 32.0, 0.02), "{in_flight}");
    }
    // Arrival order: reads and writes wait alike, so a write's mean
    // latency exceeds a read's by the difference of their services
    // (400 us). Reads first: a read waits for at most the servers' work
    // in hand plus the reads ahead of it, far less than the queue.
    let (gap_fifo, gap_first) = (fifo[1].1 - fifo[0].1, first[1].1 - first[0].1);
    assert!(close(gap_fifo, 400_000.0, 0.05), "{gap_fifo}");
    assert!(first[0].1 < 0.5 * fifo[0].1, "{first:?} {fifo:?}");
    assert!(gap_first > 2.0 * gap_fifo, "{gap_first}");
}
