use super::cq::Activity;
use super::*;
use crate::device::emmc::EmmcCard;
use crate::device::{FlashDevice, FlashParams, Op};
use crate::driver::DeviceSignal;
use crate::sim::queue::EventQueue;

fn bus() -> EmmcBusParams {
    crate::link::emmc::tests::hs400()
}

fn host(mode: MmcMode) -> MmcHostParams {
    MmcHostParams {
        mode,
        cmd_sw: 3000,
        prep: 20_000,
        done: 10_000,
        cmd23: true,
        poll_budget: 1_000_000,
        poll_sleep: 3_000_000,
        cq_sync_data: false,
        cq_sync_wake: 0,
    }
}

fn card() -> CardParams {
    CardParams {
        fw_cmd: 5000,
        cmdq_depth: 32,
        ra_bytes: 0,
        ra_min: 16384,
        ra_idle: 0,
        wr_task_ready: 10_000,
        wr_fw: 30_000,
        cache: false,
        reliable_write: false,
    }
}

/// Two dies on two channels, 4 KiB pages: LPN 0 and 1 are on different
/// dies (prefilled layout stripes over dies).
fn mmc(mode: MmcMode) -> Mmc {
    let fp = FlashParams::small(2, 1, 64, 64);
    let mut dev = FlashDevice::new(&fp, 1).unwrap();
    // Warm the card's map cache (one map page covers these LPNs), so
    // the reads below cost tR + channel only; the dies are idle by T0.
    dev.read(0, 0, 2);
    Mmc::new(
        host(mode),
        EmmcCard::new(card(), Box::new(dev)),
        bus(),
        DriverCpuCosts::default(),
    )
}

const T0: Ns = 1_000_000;

fn rq(tag: u32, lpn: u64) -> DriverRq {
    DriverRq {
        tag,
        op: Op::Read,
        fua: false,
        ddir: Ddir::Read,
        offset: lpn * BLOCK,
        len: 4096,
        polled: false,
        ioprio: 0,
        cpu: 0,
        hint: crate::device::Hint::None,
    }
}

#[test]
fn legacy_4k_read_on_idle_card_is_commands_plus_tr_plus_transfer() {
    let mut m = mmc(MmcMode::Legacy);
    let b = bus();
    let nand_read = m.card.layer().nand().timing.t_read
        + m.card.layer().nand().chan.cmd_ns
        + m.card.layer().nand().xfer_ns(4096);
    let done = m.execute(T0, &rq(0, 0)) - T0;
    // prep, CMD23 and CMD18 (software + CMD line each), card firmware,
    // NAND (tR + channel), DAT transfer, completion work.
    let want = 20_000 + 2 * (3000 + b.cmd_ns()) + 5000 + nand_read + b.data_ns(4096) + 10_000;
    assert_eq!(done, want);
    assert_eq!(m.c.commands, 2);
}

enum TestEv {
    Arrive(usize),
    Dev(DeviceSignal),
}

/// Run requests arriving at the given times through the SW-CQ mmc
/// context with a private event loop; returns each request's
/// completion time (indexed like `arrivals`; tags must be 0..n).
fn run_cq(m: &mut Mmc, arrivals: &[(Ns, DriverRq)]) -> Vec<Ns> {
    let mut q: EventQueue<TestEv> = EventQueue::with_capacity(64);
    for (i, &(at, _)) in arrivals.iter().enumerate() {
        q.schedule(at, TestEv::Arrive(i));
    }
    let mut done = vec![0; arrivals.len()];
    while let Some((_, ev)) = q.pop() {
        let mut ctx = DriverCtx::new(&mut q, TestEv::Dev, None);
        match ev {
            TestEv::Arrive(i) => m.queue_rq(arrivals[i].1, &mut ctx),
            TestEv::Dev(DeviceSignal::Driver(e)) => m.on_event(e, &mut ctx),
            TestEv::Dev(DeviceSignal::Completed { tag, .. }) => {
                assert_eq!(done[tag as usize], 0, "completed twice: {tag}");
                done[tag as usize] = ctx.now();
            }
        }
    }
    done
}

#[test]
fn queued_reads_on_two_dies_overlap_tr_with_one_transfer() {
    // Queued: both NAND reads run while the first task transfers.
    let mut q = mmc(MmcMode::SwCmdq);
    let t = run_cq(&mut q, &[(T0, rq(0, 0)), (T0, rq(1, 1))]);
    let (a, b) = (t[0], t[1]);
    // Legacy: the second read's tR starts after the first transfer.
    let mut l = mmc(MmcMode::Legacy);
    let la = l.execute(T0, &rq(0, 0));
    let lb = l.execute(T0, &rq(1, 1));
    let n = q.card.layer().nand();
    let nand = n.timing.t_read + n.chan.cmd_ns + n.xfer_ns(4096);
    let poll = 3000 + bus().cmd_ns();
    assert!(a > la, "the first queued read pays the QSR polls");
    // The second queued read's tR ran during the first transfer: the
    // queued pair finishes ahead of the legacy pair by its whole NAND
    // time, less the extra command round trips.
    assert!(
        lb - b + 2 * poll >= nand,
        "queued {b} legacy {lb} nand {nand}"
    );
    // Legacy: the second read's NAND time is on its critical path.
    assert!(lb - la >= nand, "legacy gap {} < nand {nand}", lb - la);
    // The second task was ready when DAT freed up: a single poll.
    let first_polls = q.c.qsr_polls - 1;
    assert!(first_polls > 1);
}

fn rq32(tag: u32, lpn: u64, ddir: Ddir) -> DriverRq {
    DriverRq {
        tag,
        op: Op::of_ddir(ddir),
        fua: false,
        ddir,
        offset: lpn * BLOCK,
        len: 32768,
        polled: false,
        ioprio: 0,
        cpu: 0,
        hint: crate::device::Hint::None,
    }
}

/// Legacy card with a 32 KiB read-ahead that starts after 20 us idle.
fn ra_mmc(ra_bytes: u64) -> Mmc {
    let mut m = mmc(MmcMode::Legacy);
    m.card.p.ra_bytes = ra_bytes;
    m.card.p.ra_idle = 20_000;
    m
}

#[test]
fn read_ahead_after_idle_serves_the_next_sequential_read() {
    // The next read arrives 50 us after the first completes: its first
    // command reaches the card after prep (20 us) + one command, long
    // past the 20 us idle, so the read-ahead ran and the read hits.
    let lat = |ra: u64| {
        let mut m = ra_mmc(ra);
        let a = m.execute(T0, &rq32(0, 0, Ddir::Read));
        let b = m.execute(a + 50_000, &rq32(1, 8, Ddir::Read)) - (a + 50_000);
        (b, m.card.stats)
    };
    let (with_ra, c) = lat(32768);
    let (without, c0) = lat(0);
    assert_eq!((c.ra_reads, c.ra_hits, c.ra_cancelled), (1, 1, 0));
    assert_eq!((c0.ra_reads, c0.ra_hits), (0, 0));
    assert!(with_ra < without, "hit {with_ra} fresh {without}");
}

#[test]
fn a_command_before_the_idle_time_cancels_the_read_ahead() {
    // Two requests on the go: the second's CMD23 follows the first
    // transfer after the completion work (10 us) and one command, inside
    // the 20 us idle window, so the card never starts the read-ahead.
    let mut m = ra_mmc(32768);
    let a = m.execute(T0, &rq32(0, 0, Ddir::Read));
    let b = m.execute(T0, &rq32(1, 8, Ddir::Read));
    assert!(b > a);
    assert_eq!(
        (
            m.card.stats.ra_reads,
            m.card.stats.ra_hits,
            m.card.stats.ra_cancelled
        ),
        (0, 0, 1)
    );
    // No read-ahead at all gives the same times.
    let mut n = ra_mmc(0);
    assert_eq!(n.execute(T0, &rq32(0, 0, Ddir::Read)), a);
    assert_eq!(n.execute(T0, &rq32(1, 8, Ddir::Read)), b);
}

#[test]
fn a_started_read_ahead_runs_to_completion_and_delays_a_random_read() {
    // A random read arriving once the read-ahead has started waits for
    // the read-ahead's NAND work (it is not aborted).
    let lat = |ra: u64| {
        let mut m = ra_mmc(ra);
        let a = m.execute(T0, &rq32(0, 0, Ddir::Read));
        let at = a + 15_000;
        let r = m.execute(at, &rq32(1, 40, Ddir::Read)) - at;
        (r, m.card.stats)
    };
    let (with_ra, c) = lat(32768);
    let (without, _) = lat(0);
    assert_eq!((c.ra_reads, c.ra_hits), (1, 0));
    assert!(
        with_ra > without,
        "after read-ahead {with_ra} idle card {without}"
    );
}

#[test]
fn a_write_into_the_read_ahead_window_invalidates_it() {
    let mut m = ra_mmc(32768);
    let a = m.execute(T0, &rq32(0, 0, Ddir::Read));
    let w = m.execute(a + 50_000, &rq32(1, 8, Ddir::Write));
    m.execute(w + 50_000, &rq32(2, 8, Ddir::Read));
    assert_eq!((m.card.stats.ra_reads, m.card.stats.ra_hits), (1, 0));
}

#[test]
fn qsr_poll_wait_closed_form() {
    // Busy polling: polls = ceil(d / p) + 1 and the wait is polls * p, so
    // the quantization overshoot grows with the poll interval.
    let d = 100_000;
    let mut prev = 0;
    for p in [1_000u64, 3_000, 7_000, 25_000, 60_000] {
        let (seen, polls) = qsr_wait(0, d, p, u64::MAX, 0);
        assert_eq!(polls, d.div_ceil(p) + 1);
        assert_eq!(seen, (d.div_ceil(p) + 1) * p);
        let overshoot = seen - d;
        assert!(overshoot >= p && overshoot < 2 * p);
        assert!(seen >= prev || p < 3_000);
        prev = seen;
    }
    // Already ready: one poll.
    assert_eq!(qsr_wait(500, 100, 3000, 0, 0), (3500, 1));
    // Past the budget the loop sleeps between polls.
    let (seen, polls) = qsr_wait(0, 5_000_000, 10_000, 1_000_000, 2_000_000);
    // 100 busy polls to 1 ms, then poll+sleep rounds of 2.01 ms: 3.01, 5.02 ms.
    assert_eq!(polls, 100 + 2 + 1);
    assert_eq!(seen, 1_000_000 + 2 * 2_010_000 + 10_000);
}

#[test]
fn qsr_polling_through_the_driver_grows_with_the_poll_cost() {
    // Synthetic card: a 4k read whose task is ready tR + channel after
    // CMD45; the driver's wait after CMD45 is the closed form above.
    let mut prev = 0;
    for cmd_sw in [1_000u64, 5_000, 20_000] {
        let mut m = mmc(MmcMode::SwCmdq);
        m.h.cmd_sw = cmd_sw;
        let done = run_cq(&mut m, &[(T0, rq(0, 0))])[0] - T0;
        let b = bus();
        let poll = cmd_sw + b.cmd_ns();
        let queued = 20_000 + 2 * poll;
        let nand = m.card.layer().nand().timing.t_read
            + m.card.layer().nand().chan.cmd_ns
            + m.card.layer().nand().xfer_ns(4096);
        let ready = queued + 5000 + nand;
        let (seen, polls) = qsr_wait(queued, ready, poll, 1_000_000, 3_000_000);
        assert_eq!(m.c.qsr_polls, polls);
        assert_eq!(done, seen + poll + b.data_ns(4096) + 10_000);
        assert!(done > prev);
        prev = done;
    }
}

#[test]
fn qd1_with_synchronous_wake_ups_closed_form() {
    // One read on an idle card. The context sleeps in CMD44+CMD45 and in
    // every QSR read and is woken `w` after the response: the card has
    // the task at CMD45's response, the polls run every cmd + w, and
    // CMD46 + data + completion follow the poll that saw the bit.
    for w in [0u64, 1_900, 7_000] {
        let mut m = mmc(MmcMode::SwCmdq);
        m.h.cq_sync_wake = w;
        m.h.cq_sync_data = true;
        let done = run_cq(&mut m, &[(T0, rq(0, 0))])[0] - T0;
        let cmd = 3000 + bus().cmd_ns();
        let n = m.card.layer().nand();
        let nand = n.timing.t_read + n.chan.cmd_ns + n.xfer_ns(4096);
        let queued = 20_000 + 2 * cmd;
        let ready = queued + 5000 + nand;
        let (seen, polls) = qsr_wait(queued + w, ready, cmd + w, 1_000_000, 3_000_000);
        assert_eq!(m.c.qsr_polls, polls, "w {w}");
        assert_eq!(done, seen + cmd + bus().data_ns(4096) + 10_000, "w {w}");
        assert_eq!(m.c.commands, 3 + polls);
    }
}

/// Four readers' worth of requests: 24 reads and 8 writes spread over
/// the dies, arriving in bursts while the context is busy.
fn busy_arrivals() -> Vec<(Ns, DriverRq)> {
    (0..32u32)
        .map(|i| {
            let ddir = if i % 4 == 3 { Ddir::Write } else { Ddir::Read };
            let at = T0 + u64::from(i / 4) * 40_000;
            let mut r = rq32(i, u64::from(i) * 8 % 120, ddir);
            if i % 2 == 0 {
                r.len = 4096;
            }
            (at, r)
        })
        .collect()
}

#[test]
fn the_mmc_context_never_runs_two_things_at_once() {
    for sync in [false, true] {
        let mut m = mmc(MmcMode::SwCmdq);
        m.h.cq_sync_data = sync;
        m.h.cq_sync_wake = 1_900;
        run_cq(&mut m, &busy_arrivals());
        let log = &m.cq.log;
        assert!(log.len() > 32 * 3);
        for w in log.windows(2) {
            let ((_, end, a), (start, _, b)) = (w[0], w[1]);
            assert!(end <= start, "{a:?} ends at {end}, {b:?} starts at {start}");
        }
        // Its busy time is the sum of its activities (poll sleeps
        // excluded).
        let busy: u64 = log
            .iter()
            .filter(|e| e.2 != Activity::PollSleep)
            .map(|e| e.1 - e.0)
            .sum();
        assert_eq!(busy, m.cq.busy_ns);
    }
}

#[test]
fn every_queued_task_is_executed_and_completed_exactly_once() {
    let arrivals = busy_arrivals();
    let mut m = mmc(MmcMode::SwCmdq);
    m.h.cq_sync_wake = 1_900;
    let done = run_cq(&mut m, &arrivals);
    // run_cq already fails on a second completion of a tag.
    for (i, &(at, _)) in arrivals.iter().enumerate() {
        assert!(done[i] > at, "request {i} never completed");
    }
    let count = |f: fn(&Activity) -> Option<u32>| {
        let mut seen = [0u32; 32];
        for e in &m.cq.log {
            if let Some(tag) = f(&e.2) {
                seen[tag as usize] += 1;
            }
        }
        seen
    };
    assert_eq!(
        count(|a| match a {
            Activity::Queue(t) => Some(*t),
            _ => None,
        }),
        [1; 32]
    );
    assert_eq!(
        count(|a| match a {
            Activity::Execute(t) => Some(*t),
            _ => None,
        }),
        [1; 32]
    );
    assert_eq!(
        count(|a| match a {
            Activity::Done(t) => Some(*t),
            _ => None,
        }),
        [1; 32]
    );
    // Each task's data phase starts after it was queued and after a QSR
    // read that began once it was ready.
    assert_eq!(m.c.xfers, 32);
    assert!(m.c.qsr_polls >= 32);
    assert!(m.cq.slots.iter().all(Option::is_none));
    assert!(m.cq.pending.is_empty() && m.cq.finished.is_empty());
}

#[test]
fn the_mmc_context_is_work_conserving() {
    // All requests queued at once, sync_data: from its first action to
    // its last the context always has something to do (queue, poll,
    // execute, complete), so its activities leave no gap; a request's
    // preparation never waits behind work that is not there.
    let mut m = mmc(MmcMode::SwCmdq);
    m.h.cq_sync_data = true;
    m.h.cq_sync_wake = 1_900;
    let arrivals: Vec<_> = (0..8u32)
        .map(|i| (T0, rq32(i, u64::from(i) * 8, Ddir::Read)))
        .collect();
    run_cq(&mut m, &arrivals);
    let log = &m.cq.log;
    assert_eq!(log[0].0, T0);
    for w in log.windows(2) {
        assert_eq!(w[0].1, w[1].0, "gap between {:?} and {:?}", w[0], w[1]);
    }
    // Queued in arrival order, before any data phase (no request waits
    // for a free task id), one QSR read at least per transfer.
    let queued: Vec<u32> = log
        .iter()
        .filter_map(|e| match e.2 {
            Activity::Queue(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(queued, (0..8).collect::<Vec<_>>());
    let first_exec = log
        .iter()
        .position(|e| matches!(e.2, Activity::Execute(_)))
        .unwrap();
    assert!(log[..first_exec]
        .iter()
        .all(|e| matches!(e.2, Activity::Queue(_) | Activity::Poll)));
}

#[test]
fn saturated_cycle_is_one_qsr_read_one_execute_and_completion() {
    // Eight 4k reads at once, sync_data: once every task is ready, the
    // context's cycle per I/O is one QSR read (cmd + wake-up), CMD46 +
    // the data phase and the completion work, so consecutive transfers
    // start exactly that far apart, and the wake-up adds once per I/O
    // here (twice with the CMD44/45 of a newly queued task).
    for w in [0u64, 1_900] {
        let mut m = mmc(MmcMode::SwCmdq);
        m.h.cq_sync_data = true;
        m.h.cq_sync_wake = w;
        let arrivals: Vec<_> = (0..8u32).map(|i| (T0, rq(i, u64::from(i)))).collect();
        run_cq(&mut m, &arrivals);
        let starts: Vec<Ns> =
            m.cq.log
                .iter()
                .filter(|e| matches!(e.2, Activity::Execute(_)))
                .map(|e| e.0)
                .collect();
        let cmd = 3000 + bus().cmd_ns();
        let cycle = (cmd + w) + cmd + bus().data_ns(4096) + 10_000;
        let last = &starts[starts.len() - 3..];
        assert_eq!(last[1] - last[0], cycle, "w {w}");
        assert_eq!(last[2] - last[1], cycle, "w {w}");
    }
}
