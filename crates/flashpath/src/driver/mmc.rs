//! SDHCI host controller + the mmc block driver, with the eMMC card behind
//! it (the shared NAND/FTL back end behind an eMMC front end).
//!
//! Two driver modes (`mmc.swcmdq`):
//!
//! * **Legacy** (seed 0's base): at most two requests on the go; the next
//!   is prepared (`mmc.host.prep`: request prep, DMA map, ADMA table) while
//!   the current one transfers; its commands (CMD23 + CMD18/CMD25, or
//!   CMD18/CMD25 + CMD12 open-ended, `mmc.host.cmd23`) go out when the
//!   current transfer (with its R1b busy) has ended. The card sees one data
//!   command at a time; a read of at least `mmc.card.ra_min` bytes makes it
//!   read the following `mmc.card.ra_bytes` into its cache (sequential
//!   read-ahead, a card property: KERNEL-NOTES 1(e) 4) once the CMD line
//!   has been idle `mmc.card.ra_idle` after the read's data phase. A
//!   command before then cancels the read-ahead (the card gives host
//!   commands priority); one after finds it started, and its NAND reads
//!   run to completion (a random read waits for them).
//! * **Software command queuing**: per request CMD44 + CMD45 (the CMD line
//!   is free during data transfers); the card starts NAND reads of a queued
//!   read task at once; a read task is ready in the QSR when its data is in
//!   the card cache, a write task `mmc.card.wr_task_ready` after it was
//!   queued (buffer room). Between transfers the host reads the QSR (CMD13
//!   with bit 15) until the task is ready: busy polling for
//!   `mmc.qsr.poll_budget`, then sleeping `mmc.qsr.poll_sleep` between
//!   polls; then CMD46/CMD47 and the data phase. Task ids are bounded by the
//!   card queue depth (`mmc.card.cmdq_depth` <= 32).
//!
//! Every command costs the host `mmc.host.cmd_sw` (sdhci_send_command to the
//! command-complete interrupt and its tasklet) on the host's single mmc
//! context, plus its CMD-line round trip.
//!
//! Legacy mode is a booking model: like the UFS driver, a request books
//! host, CMD line, card and DAT line when it arrives (the two requests on
//! the go execute in arrival order).
//!
//! SW-CQ mode is event driven: one mmc context (the queue thread and the
//! controller it drives; [`CqThread`]) takes one action at a time, in event
//! order, and is never idle while it has something to do (work
//! conserving). When it becomes free it picks, in this order (the order of
//! the loop of a shipping software-CQ implementation, MediaTek's
//! `mmc_run_queue_thread`, `drivers/mmc/core/core.c` under
//! `CONFIG_MTK_EMMC_CQ_SUPPORT`, code search id 10199022224):
//!
//! 1. DAT idle and a task seen ready in the last QSR read: CMD46/CMD47,
//!    then the data phase (with `mmc.qsr.sync_data` the context waits for
//!    it);
//! 2. a finished data phase: its completion work (`mmc.host.done`);
//! 3. a newly arrived request and a free task id: `mmc.host.prep`, then
//!    CMD44 and CMD45 (the card starts the task's NAND reads);
//! 4. queued tasks, none known ready, DAT idle: one QSR read (CMD13 with
//!    bit 15); after `mmc.qsr.poll_budget` of unsuccessful polling it
//!    sleeps `mmc.qsr.poll_sleep` after each unsuccessful poll;
//! 5. otherwise it sleeps until a request arrives or a data phase ends.
//!
//! The context waits for CMD44 + CMD45 (one request, CMD44 as its `sbc`)
//! and for each QSR read by sleeping (`mmc_wait_for_req` ->
//! `wait_for_completion`): after the response it pays a wake-up and a
//! context switch (`host.cost.wakeup` + `host.cost.context_switch`) before
//! it goes on. The card has the task from CMD45's response, so at QD1 that
//! wake-up overlaps the NAND read; with several tasks queued it is on the
//! context's cycle.
//!
//! A QSR read names every ready task; the host executes the oldest of them
//! and reads the QSR again before the next transfer (seed 0: "the need to
//! read the Queue Status register between each transfer"). Limits: no RPMB
//! partition switch (queue disable/enable), no CQHCI, no error paths.

use super::{DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverEvent, DriverRq};
use crate::device::nand::Timeline;
use crate::device::{FlashDevice, FlashParams};
use crate::error::Result;
use crate::link::emmc::{EmmcBus, EmmcBusParams};
use crate::profile::limits::{COST, DELAY};
use crate::profile::{range, Profile};
use crate::sim::Ns;
use crate::workload::Ddir;
use std::collections::VecDeque;

const BLOCK: u64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmcMode {
    Legacy,
    SwCmdq,
}

/// The host side: driver software costs and policies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MmcHostParams {
    pub mode: MmcMode,
    /// Software cost of one command on the host (submit to response IRQ
    /// handled), excluding the CMD line time.
    pub cmd_sw: Ns,
    /// Per-request preparation before its first command.
    pub prep: Ns,
    /// Per-request completion work after the data phase.
    pub done: Ns,
    /// Legacy: closed-ended CMD23 + CMD18/25 (true) or open-ended with CMD12.
    pub cmd23: bool,
    /// SW-CQ: busy-poll the QSR for this long, then sleep between polls.
    pub poll_budget: Ns,
    pub poll_sleep: Ns,
    /// SW-CQ: the host context that issued CMD46/47 waits for the data
    /// phase to end before it prepares or queues anything else.
    pub cq_sync_data: bool,
    /// SW-CQ: the mmc context waits for a synchronous request (CMD44 +
    /// CMD45, a QSR read) by sleeping; after the response has been handled
    /// it is woken (try_to_wake_up) and switched in before it goes on.
    pub cq_sync_wake: Ns,
}

/// The card's front end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CardParams {
    /// Card firmware from a command's response to NAND work.
    pub fw_cmd: Ns,
    /// Queue depth (tasks), 3..=32.
    pub cmdq_depth: u32,
    /// Legacy sequential read-ahead: bytes read after a read, 0 = off.
    pub ra_bytes: u64,
    /// Smallest read that triggers read-ahead.
    pub ra_min: u64,
    /// The read-ahead starts only after the card has seen no command for
    /// this long after the read's data phase; a command arriving earlier
    /// cancels it, and once started it runs to completion.
    pub ra_idle: Ns,
    /// A queued write task is ready this long after CMD45 (and not before
    /// the card's write engine has room).
    pub wr_task_ready: Ns,
    /// Card firmware per write command before its data is committed
    /// (the commit then moves the data over a NAND channel).
    pub wr_fw: Ns,
}

/// Wait of a software QSR poll loop started at `t0` (host free, DAT idle)
/// for a task that becomes ready at `ready`. Each poll is a round trip of
/// `poll` ns and sees the bit if it was set when the poll was issued; after
/// `budget` of busy polling every unsuccessful poll is followed by a sleep
/// of `sleep`. Returns (time the ready bit has been read, polls).
///
/// Closed form while busy polling: polls = ceil((ready - t0) / poll) + 1,
/// seen = t0 + polls * poll.
pub fn qsr_wait(t0: Ns, ready: Ns, poll: Ns, budget: Ns, sleep: Ns) -> (Ns, u64) {
    let poll = poll.max(1);
    if ready <= t0 {
        return (t0 + poll, 1);
    }
    let k = (ready - t0).div_ceil(poll);
    if k * poll <= budget {
        return (t0 + (k + 1) * poll, k + 1);
    }
    // Busy polls while inside the budget, then poll + sleep rounds.
    let busy = budget.div_ceil(poll);
    let mut s = t0 + busy * poll;
    let mut polls = busy;
    while s < ready {
        s += poll + sleep;
        polls += 1;
    }
    (s + poll, polls + 1)
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    reads: u64,
    writes: u64,
    commands: u64,
    qsr_polls: u64,
    queued_at_xfer: u64,
    xfers: u64,
    ra_hits: u64,
    ra_reads: u64,
    ra_cancelled: u64,
}

/// Task ids of the card queue (EXT_CSD_CMDQ_DEPTH + 1 <= 32).
const MAX_TASKS: usize = 32;

/// Driver event kinds (SW-CQ mode).
const EV_THREAD: u32 = 1;

/// A task queued on the card (CMD44 + CMD45 done).
#[derive(Clone, Copy, Debug)]
struct Task {
    tag: u32,
    lpn: u64,
    n: u32,
    len: u64,
    write: bool,
    /// A read: its data is in the card cache at; a write: the card has
    /// room for it from (and not before the card's write engine is free).
    ready: Ns,
    /// CMD45's response (the card holds the task from then).
    queued: Ns,
    /// Queue order, to execute the oldest ready task.
    seq: u64,
}

/// What the mmc context was doing (logged in tests: never two at once).
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activity {
    /// prep + CMD44 + CMD45 of the request `tag`.
    Queue(u32),
    /// One QSR read (CMD13 with bit 15).
    Poll,
    /// Sleep after an unsuccessful poll past the busy-poll budget.
    PollSleep,
    /// CMD46/47 for `tag` (and its data phase with sync_data).
    Execute(u32),
    /// Completion work for `tag`.
    Done(u32),
    /// A discard (CMD35/36/38) for `tag`, queue empty.
    Trim(u32),
}

/// The SW-CQ mmc context: one thread of control, its card queue and the
/// requests it has not queued yet. Fixed capacity: nothing allocates per
/// request once warm (the block layer hands at most `cmdq_depth`
/// requests).
struct CqThread {
    slots: [Option<Task>; MAX_TASKS],
    /// Arrived requests not yet queued on the card, in arrival order.
    pending: VecDeque<DriverRq>,
    /// Tasks whose data phase has ended (or ends at), awaiting completion
    /// work: (tag, data end).
    finished: VecDeque<(u32, Ns)>,
    /// Bit i: task i was ready in the last QSR read and is not executed.
    known_ready: u32,
    /// The context is busy until.
    free_at: Ns,
    /// End of the data phase in progress (DAT idle from then).
    dat_free: Ns,
    /// Start of the current run of unsuccessful QSR polls.
    poll_streak: Option<Ns>,
    /// The one wake-up event that counts (older ones are stale).
    wake_gen: u32,
    wake_at: Option<Ns>,
    seq: u64,
    /// Time the context spent busy (prep, commands, data with sync_data,
    /// completion work, poll sleeps excluded).
    busy_ns: u64,
    #[cfg(test)]
    log: Vec<(Ns, Ns, Activity)>,
}

impl CqThread {
    fn new() -> CqThread {
        CqThread {
            slots: [None; MAX_TASKS],
            pending: VecDeque::with_capacity(MAX_TASKS),
            finished: VecDeque::with_capacity(MAX_TASKS),
            known_ready: 0,
            free_at: 0,
            dat_free: 0,
            poll_streak: None,
            wake_gen: 0,
            wake_at: None,
            seq: 0,
            busy_ns: 0,
            #[cfg(test)]
            log: Vec::new(),
        }
    }

    fn queued(&self) -> usize {
        self.slots.iter().filter(|t| t.is_some()).count()
    }

    #[inline]
    fn record(&mut self, start: Ns, end: Ns, what: Activity) {
        if what != Activity::PollSleep {
            self.busy_ns += end - start;
        }
        #[cfg(test)]
        self.log.push((start, end, what));
        #[cfg(not(test))]
        let _ = what;
    }
}

pub struct Mmc {
    name: String,
    capacity: u64,
    cpu: DriverCpuCosts,
    pub h: MmcHostParams,
    pub card: CardParams,
    pub bus: EmmcBus,
    /// The host's mmc context (one request-processing thread + controller).
    host: Timeline,
    pub dev: FlashDevice,
    /// End of the last booked data phase (with its busy).
    last_data_end: Ns,
    /// Read-ahead window in the card cache: [start, end) LPN, ready at.
    ra: Option<(u64, u64, Ns)>,
    /// Read-ahead the card will start if it stays idle: (first LPN,
    /// units, start time). Settled by the next command.
    ra_plan: Option<(u64, u32, Ns)>,
    /// The card's write engine (commit of received write data) is free at.
    wr_free: Ns,
    /// The SW-CQ mmc context.
    cq: CqThread,
    c: Counters,
}

impl Mmc {
    pub fn new(
        h: MmcHostParams,
        card: CardParams,
        bus: EmmcBusParams,
        dev: FlashDevice,
        cpu: DriverCpuCosts,
    ) -> Mmc {
        Mmc {
            name: "mmcblk0".into(),
            capacity: dev.user_lpns() * BLOCK,
            cpu,
            h,
            card,
            bus: EmmcBus::new(bus),
            host: Timeline::new(),
            dev,
            last_data_end: 0,
            ra: None,
            ra_plan: None,
            wr_free: 0,
            cq: CqThread::new(),
            c: Counters::default(),
        }
    }

    pub fn from_profile(p: &Profile, seed: u64) -> Result<Mmc> {
        let fp = FlashParams::from_profile(p)?;
        let dev = FlashDevice::new(&fp, seed)?;
        let bp = EmmcBusParams {
            clock_hz: p.hz(
                "mmc.bus.clock",
                range(
                    1.0,
                    200e6,
                    "the eMMC bus clock, at most HS200/HS400's 200 MHz (JESD84-B51)",
                ),
            )?,
            width: p.count_u32("mmc.bus.width", range(1.0, 8.0, "eMMC data lines"))?,
            ddr: p.choice("mmc.bus.timing", &["hs200", "hs400"])? == "hs400",
            ncr: p.count_u32(
                "mmc.bus.ncr",
                range(
                    2.0,
                    64.0,
                    "NCR, clocks from command to response (JESD84-B51)",
                ),
            )?,
            block_overhead: p.count_u32(
                "mmc.bus.block_overhead",
                range(
                    0.0,
                    4096.0,
                    "bus clocks of framing per data block (start bit, CRC, end bit, busy)",
                ),
            )?,
        };
        bp.validate(&p.file_of("mmc.bus.width"))?;
        let h = MmcHostParams {
            mode: if p.flag("mmc.swcmdq")? {
                MmcMode::SwCmdq
            } else {
                MmcMode::Legacy
            },
            cmd_sw: p.ns("mmc.host.cmd_sw", COST)?,
            prep: p.ns("mmc.host.prep", COST)?,
            done: p.ns("mmc.host.done", COST)?,
            cmd23: p.flag("mmc.host.cmd23")?,
            poll_budget: p.ns("mmc.qsr.poll_budget", DELAY)?,
            poll_sleep: p.ns("mmc.qsr.poll_sleep", DELAY)?,
            cq_sync_data: p.flag("mmc.qsr.sync_data")?,
            cq_sync_wake: p.ns("host.cost.wakeup", COST)?
                + p.ns("host.cost.context_switch", COST)?,
        };
        let ra = range(
            0.0,
            f64::from(1u32 << 20),
            "a card read-ahead size, at most 1 MiB",
        );
        let card = CardParams {
            fw_cmd: p.ns("mmc.card.fw_cmd", COST)?,
            cmdq_depth: p.count_u32(
                "mmc.card.cmdq_depth",
                range(
                    3.0,
                    32.0,
                    "EXT_CSD_CMDQ_DEPTH + 1: at most 32 tasks, and the mmc core refuses \
                     depths of 2 or less",
                ),
            )?,
            ra_bytes: p.bytes("mmc.card.ra_bytes", ra)?,
            ra_min: p.bytes("mmc.card.ra_min", ra)?,
            ra_idle: p.ns("mmc.card.ra_idle", COST)?,
            wr_task_ready: p.ns("mmc.card.wr_task_ready", COST)?,
            wr_fw: p.ns("mmc.card.wr_fw", COST)?,
        };
        let cpu = DriverCpuCosts {
            submit: p.ns("driver.queue_rq", COST)?,
            irq_handler: p.ns("driver.irq_handler", COST)?,
            poll_iteration: 0,
        };
        Ok(Mmc::new(h, card, bp, dev, cpu))
    }

    /// One command: host software, then the CMD line; returns when the
    /// response has been handled.
    fn command(&mut self, at: Ns) -> Ns {
        self.c.commands += 1;
        let s = self.host.reserve(at, self.h.cmd_sw);
        let r = self.bus.command(s + self.h.cmd_sw);
        let wait = r - (s + self.h.cmd_sw);
        self.host.reserve(s + self.h.cmd_sw, wait);
        r
    }

    /// A command reaches the card at `at`: a pending read-ahead that has
    /// not started by then is cancelled (the card was not idle long enough);
    /// one that has started is booked on the NAND and runs to completion.
    fn settle_ra(&mut self, at: Ns) {
        if let Some((lpn, n, start)) = self.ra_plan.take() {
            if start <= at {
                self.c.ra_reads += 1;
                let r = self.dev.read(start, lpn, n);
                self.ra = Some((lpn, lpn + u64::from(n), r));
            } else {
                self.c.ra_cancelled += 1;
            }
        }
    }

    /// A write or trim of [lpn, lpn + n) makes cached read-ahead data stale.
    fn invalidate_ra(&mut self, lpn: u64, n: u32) {
        let end = lpn + u64::from(n);
        if let Some((s, e, _)) = self.ra {
            if lpn < e && s < end {
                self.ra = None;
            }
        }
    }

    /// After a legacy read of [lpn, lpn + n) whose data phase ended at
    /// `data_end`, plan the read-ahead of the following `ra_bytes`.
    fn plan_ra(&mut self, data_end: Ns, lpn: u64, n: u32) {
        if self.card.ra_bytes == 0 || u64::from(n) * BLOCK < self.card.ra_min {
            return;
        }
        let end = lpn + u64::from(n);
        let ra_n = self.card.ra_bytes.div_ceil(BLOCK);
        if end + ra_n <= self.dev.user_lpns() {
            self.ra_plan = Some((end, ra_n as u32, data_end + self.card.ra_idle));
        }
    }

    /// The card commits `n` units of write data received at `at`: firmware,
    /// then the data over a NAND channel into the FTL's write buffer.
    /// Returns when the card can signal the write done (end of R1b busy).
    fn commit_write(&mut self, at: Ns, lpn: u64, n: u32) -> Ns {
        let start = at.max(self.wr_free);
        let xfer = self.dev.nand().xfer_ns(u64::from(n) * BLOCK);
        let buffered = self.dev.write(start + self.card.wr_fw, lpn, n);
        let end = buffered.max(start + self.card.wr_fw + xfer);
        self.wr_free = end;
        end
    }

    /// Legacy read on the card: read-ahead cache, then NAND.
    fn legacy_read(&mut self, t: Ns, lpn: u64, n: u32) -> Ns {
        let end = lpn + u64::from(n);
        match self.ra {
            Some((s, e, rdy)) if lpn >= s && end <= e => {
                self.c.ra_hits += 1;
                t.max(rdy)
            }
            _ => self.dev.read(t, lpn, n),
        }
    }

    /// Legacy mode: book request `rq` arriving at `now`; returns when it
    /// is complete.
    pub fn execute(&mut self, now: Ns, rq: &DriverRq) -> Ns {
        self.host.prune(now);
        self.bus.prune(now);
        let lpn = rq.offset / BLOCK;
        let n = u64::from(rq.len).div_ceil(BLOCK) as u32;
        let len = u64::from(rq.len);
        let write = match rq.ddir {
            Ddir::Read => {
                self.c.reads += 1;
                false
            }
            Ddir::Write => {
                self.c.writes += 1;
                true
            }
            Ddir::Trim => {
                // CMD35/36/38 erase group: three commands, then the FTL.
                let t = self.host.reserve(now, self.h.prep) + self.h.prep;
                let t = self.command(t.max(self.last_data_end));
                self.settle_ra(t);
                self.invalidate_ra(lpn, n);
                let t = self.command(t);
                let t = self.command(t);
                let d = self.dev.trim(t, lpn, n);
                let end = self.bus.busy(t, d);
                self.last_data_end = end;
                return self.host.reserve(end, self.h.done) + self.h.done;
            }
        };
        let prep_end = self.host.reserve(now, self.h.prep) + self.h.prep;
        let data_end = match self.h.mode {
            MmcMode::Legacy => {
                let mut t = prep_end.max(self.last_data_end);
                // The first command (CMD23, or CMD18/25 open-ended) tells
                // the card it is no longer idle.
                t = self.command(t);
                self.settle_ra(t);
                if self.h.cmd23 {
                    t = self.command(t);
                }
                let card_t = t + self.card.fw_cmd;
                let (de, busy_to) = if write {
                    self.invalidate_ra(lpn, n);
                    let (_, de) = self.bus.data(t, len);
                    (de, self.commit_write(de, lpn, n))
                } else {
                    let ready = self.legacy_read(card_t, lpn, n);
                    let (_, de) = self.bus.data(ready, len);
                    self.plan_ra(de, lpn, n);
                    (de, de)
                };
                let mut end = self.bus.busy(de, busy_to);
                if !self.h.cmd23 {
                    end = end.max(self.command(de));
                }
                end
            }
            MmcMode::SwCmdq => {
                unreachable!("SW-CQ requests go through the mmc context (cq_arrive)")
            }
        };
        self.last_data_end = data_end;
        self.host.reserve(data_end, self.h.done) + self.h.done
    }

    /// SW CQ: one command from the mmc context at `at` (host software,
    /// then the CMD line, which only this context uses); returns when its
    /// response has been handled.
    fn cq_command(&mut self, at: Ns) -> Ns {
        self.c.commands += 1;
        self.bus.command(at + self.h.cmd_sw)
    }

    /// SW CQ: request `rq` arrives at `now`.
    fn cq_arrive<E>(&mut self, now: Ns, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        match rq.ddir {
            Ddir::Read => self.c.reads += 1,
            Ddir::Write => self.c.writes += 1,
            Ddir::Trim => {}
        }
        self.cq.pending.push_back(rq);
        self.cq_run(now, ctx);
    }

    /// Wake the mmc context at `at` (one live wake-up at a time).
    fn cq_wake<E>(&mut self, at: Ns, ctx: &mut DriverCtx<'_, E>) {
        if self.cq.wake_at == Some(at) {
            return;
        }
        self.cq.wake_gen = self.cq.wake_gen.wrapping_add(1);
        self.cq.wake_at = Some(at);
        ctx.schedule(
            at,
            DriverEvent {
                kind: EV_THREAD,
                id: self.cq.wake_gen,
            },
        );
    }

    /// The mmc context at `now`: if it is free, it takes actions until one
    /// keeps it busy past `now`, or it has nothing to do; then it sleeps
    /// until its next wake-up.
    fn cq_run<E>(&mut self, now: Ns, ctx: &mut DriverCtx<'_, E>) {
        self.bus.prune(now);
        loop {
            if self.cq.free_at > now {
                let at = self.cq.free_at;
                self.cq_wake(at, ctx);
                return;
            }
            if !self.cq_step(now, ctx) {
                break;
            }
        }
        // Idle. A data phase in progress (without sync_data) ends with an
        // interrupt: completion work, and DAT is free for the next task.
        let mut wake = self.cq.finished.front().map(|&(_, end)| end);
        if self.cq.dat_free > now && (self.cq.known_ready != 0 || self.cq.queued() > 0) {
            wake = Some(wake.map_or(self.cq.dat_free, |w| w.min(self.cq.dat_free)));
        }
        match wake {
            Some(at) if at > now => self.cq_wake(at, ctx),
            _ => self.cq.wake_at = None,
        }
    }

    /// One action of the mmc context, free at `t`; false if it has
    /// nothing to do now.
    fn cq_step<E>(&mut self, t: Ns, ctx: &mut DriverCtx<'_, E>) -> bool {
        let poll = self.h.cmd_sw + self.bus.p.cmd_ns() + self.h.cq_sync_wake;
        // 1. Execute the oldest task seen ready, once DAT is idle.
        if self.cq.known_ready != 0 && self.cq.dat_free <= t {
            let slot = (0..MAX_TASKS)
                .filter(|&i| self.cq.known_ready & (1 << i) != 0)
                .filter_map(|i| self.cq.slots[i].map(|task| (task.seq, i)))
                .min()
                .map(|(_, i)| i)
                .expect("a ready bit names a queued task");
            // The QSR is read again before the next transfer (seed 0).
            self.cq.known_ready = 0;
            let task = self.cq.slots[slot].take().expect("queued");
            let go = self.cq_command(t); // CMD46 / CMD47
            let (ds, de) = self.bus.data(go, task.len);
            self.c.xfers += 1;
            self.c.queued_at_xfer += self
                .cq
                .slots
                .iter()
                .flatten()
                .filter(|q| q.queued <= ds)
                .count() as u64;
            if task.write {
                // The card commits the data in the background and reports
                // the next write task ready when the commit made room.
                self.commit_write(de, task.lpn, task.n);
            }
            self.cq.dat_free = de;
            self.cq.finished.push_back((task.tag, de));
            let end = if self.h.cq_sync_data { de } else { go };
            self.cq.record(t, end, Activity::Execute(task.tag));
            self.cq.free_at = end;
            self.cq.poll_streak = None;
            return true;
        }
        // 2. Completion work of a finished data phase.
        if let Some(&(tag, de)) = self.cq.finished.front() {
            if de <= t {
                self.cq.finished.pop_front();
                let end = t + self.h.done;
                ctx.complete(end, tag);
                self.cq.record(t, end, Activity::Done(tag));
                self.cq.free_at = end;
                return true;
            }
        }
        // 3. Queue a new request on the card.
        if let Some(&rq) = self.cq.pending.front() {
            let lpn = rq.offset / BLOCK;
            let n = u64::from(rq.len).div_ceil(BLOCK) as u32;
            if rq.ddir == Ddir::Trim {
                // A discard (CMD35/36/38) needs the card queue empty.
                if self.cq.queued() == 0 && self.cq.dat_free <= t && self.cq.finished.is_empty() {
                    self.cq.pending.pop_front();
                    let mut c = self.cq_command(t + self.h.prep);
                    c = self.cq_command(c);
                    c = self.cq_command(c);
                    let d = self.dev.trim(c, lpn, n);
                    let end = self.bus.busy(c, d);
                    self.cq.dat_free = end;
                    self.cq.finished.push_back((rq.tag, end));
                    self.cq.record(t, end, Activity::Trim(rq.tag));
                    self.cq.free_at = end;
                    return true;
                }
            } else if let Some(slot) =
                (0..self.card.cmdq_depth as usize).find(|&i| self.cq.slots[i].is_none())
            {
                self.cq.pending.pop_front();
                let write = rq.ddir == Ddir::Write;
                let c44 = self.cq_command(t + self.h.prep);
                let queued = self.cq_command(c44); // CMD45
                let card_t = queued + self.card.fw_cmd;
                let ready = if write {
                    self.invalidate_ra(lpn, n);
                    card_t + self.card.wr_task_ready
                } else {
                    // The card starts the task's NAND reads at once.
                    self.dev.read(card_t, lpn, n)
                };
                self.cq.seq += 1;
                self.cq.slots[slot] = Some(Task {
                    tag: rq.tag,
                    lpn,
                    n,
                    len: u64::from(rq.len),
                    write,
                    ready,
                    queued,
                    seq: self.cq.seq,
                });
                // The card holds the task from CMD45's response; the
                // context goes on once it has been woken.
                let end = queued + self.h.cq_sync_wake;
                self.cq.record(t, end, Activity::Queue(rq.tag));
                self.cq.free_at = end;
                return true;
            }
        }
        // 4. Read the QSR while tasks wait and DAT is idle.
        if self.cq.known_ready == 0 && self.cq.dat_free <= t && self.cq.queued() > 0 {
            let end = self.cq_command(t) + self.h.cq_sync_wake;
            self.c.qsr_polls += 1;
            // A bit is set if the task was ready when the poll was issued.
            let wr_free = self.wr_free;
            let mut mask = 0u32;
            for (i, task) in self.cq.slots.iter().enumerate() {
                if let Some(task) = task {
                    let ready = if task.write {
                        task.ready.max(wr_free)
                    } else {
                        task.ready
                    };
                    if ready <= t {
                        mask |= 1 << i;
                    }
                }
            }
            self.cq.record(t, end, Activity::Poll);
            self.cq.free_at = end;
            if mask != 0 {
                self.cq.known_ready = mask;
                self.cq.poll_streak = None;
            } else {
                let streak = *self.cq.poll_streak.get_or_insert(t);
                // Busy polling for the budget (whole polls), then a sleep
                // after every unsuccessful poll (as `qsr_wait`).
                if t - streak >= self.h.poll_budget.div_ceil(poll) * poll {
                    let wake = end + self.h.poll_sleep;
                    self.cq.record(end, wake, Activity::PollSleep);
                    self.cq.free_at = wake;
                }
            }
            return true;
        }
        false
    }
}

impl<E> Driver<E> for Mmc {
    fn info(&self) -> DiskInfo {
        let depth = match self.h.mode {
            MmcMode::Legacy => 2,
            MmcMode::SwCmdq => self.card.cmdq_depth,
        };
        DiskInfo::single_queue(&self.name, self.capacity, depth, self.cpu)
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        match self.h.mode {
            MmcMode::Legacy => {
                let at = self.execute(ctx.now(), &rq);
                ctx.complete(at, rq.tag);
            }
            MmcMode::SwCmdq => self.cq_arrive(ctx.now(), rq, ctx),
        }
    }
    fn on_event(&mut self, ev: DriverEvent, ctx: &mut DriverCtx<'_, E>) {
        debug_assert_eq!(ev.kind, EV_THREAD);
        // Only the latest wake-up counts; earlier ones were superseded.
        if ev.id == self.cq.wake_gen && self.cq.wake_at.is_some() {
            self.cq.wake_at = None;
            self.cq_run(ctx.now(), ctx);
        }
    }
    fn counters(&self) -> serde_json::Value {
        let ios = (self.c.reads + self.c.writes).max(1) as f64;
        serde_json::json!({
            "driver": "mmc",
            "mode": match self.h.mode { MmcMode::Legacy => "legacy", MmcMode::SwCmdq => "swcmdq" },
            "reads": self.c.reads,
            "writes": self.c.writes,
            "commands": self.c.commands,
            "qsr_polls": self.c.qsr_polls,
            "qsr_polls_per_io": self.c.qsr_polls as f64 / ios,
            "tasks_queued_at_xfer": if self.c.xfers > 0 { self.c.queued_at_xfer as f64 / self.c.xfers as f64 } else { 0.0 },
            "card_cache_hits": self.c.ra_hits,
            "card_readahead_reads": self.c.ra_reads,
            "card_readahead_cancelled": self.c.ra_cancelled,
            "mmc_context_busy_ns": self.cq.busy_ns,
            "bus_commands": self.bus.commands,
            "bus_data_bytes": self.bus.data_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::FlashParams;
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
        Mmc::new(host(mode), card(), bus(), dev, DriverCpuCosts::default())
    }

    const T0: Ns = 1_000_000;

    fn rq(tag: u32, lpn: u64) -> DriverRq {
        DriverRq {
            tag,
            ddir: Ddir::Read,
            offset: lpn * BLOCK,
            len: 4096,
            polled: false,
            cpu: 0,
        }
    }

    #[test]
    fn legacy_4k_read_on_idle_card_is_commands_plus_tr_plus_transfer() {
        let mut m = mmc(MmcMode::Legacy);
        let b = bus();
        let nand_read =
            m.dev.nand().timing.t_read + m.dev.nand().chan.cmd_ns + m.dev.nand().xfer_ns(4096);
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
            let mut ctx = DriverCtx {
                queue: &mut q,
                wrap: TestEv::Dev,
            };
            match ev {
                TestEv::Arrive(i) => m.queue_rq(arrivals[i].1, &mut ctx),
                TestEv::Dev(DeviceSignal::Driver(e)) => m.on_event(e, &mut ctx),
                TestEv::Dev(DeviceSignal::Completed { tag }) => {
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
        let n = q.dev.nand();
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
            ddir,
            offset: lpn * BLOCK,
            len: 32768,
            polled: false,
            cpu: 0,
        }
    }

    /// Legacy card with a 32 KiB read-ahead that starts after 20 us idle.
    fn ra_mmc(ra_bytes: u64) -> Mmc {
        let mut m = mmc(MmcMode::Legacy);
        m.card.ra_bytes = ra_bytes;
        m.card.ra_idle = 20_000;
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
            (b, m.c)
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
        assert_eq!((m.c.ra_reads, m.c.ra_hits, m.c.ra_cancelled), (0, 0, 1));
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
            (r, m.c)
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
        assert_eq!((m.c.ra_reads, m.c.ra_hits), (1, 0));
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
            let nand =
                m.dev.nand().timing.t_read + m.dev.nand().chan.cmd_ns + m.dev.nand().xfer_ns(4096);
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
            let n = m.dev.nand();
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
}
