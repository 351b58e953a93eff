//! Software command queuing: the mmc context (see the parent module for
//! the protocol).
//!
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

use super::{Mmc, BLOCK};
use crate::driver::{BlkStatus, DriverCtx, DriverRq};
use crate::sim::queue::Timer;
use crate::sim::Ns;
use crate::types::{Ddir, Op};
use std::collections::VecDeque;

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

/// Task ids of the card queue (EXT_CSD_CMDQ_DEPTH + 1 <= 32).
const MAX_TASKS: usize = 32;

/// The mmc driver's events (SW-CQ mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The mmc context wakes up: a busy stretch or a sleep ended, or a data
    /// phase's interrupt came.
    Wake,
}

/// A task queued on the card (CMD44 + CMD45 done).
#[derive(Clone, Copy, Debug)]
pub(super) struct Task {
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
    /// How it will end (`device.badblocks`).
    status: BlkStatus,
    /// A reliable write (REQ_FUA; CMD44's reliable-write bit).
    reliable: bool,
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
    /// A flush (CMD6 FLUSH_CACHE) for `tag`, queue empty.
    Flush(u32),
}

/// The SW-CQ mmc context: one thread of control, its card queue and the
/// requests it has not queued yet. Fixed capacity: nothing allocates per
/// request once warm (the block layer hands at most `cmdq_depth`
/// requests).
pub(super) struct CqThread {
    pub(super) slots: [Option<Task>; MAX_TASKS],
    /// Arrived requests not yet queued on the card, in arrival order.
    pub(super) pending: VecDeque<DriverRq>,
    /// Tasks whose data phase has ended (or ends at), awaiting completion
    /// work: (tag, data end, how it ended).
    pub(super) finished: VecDeque<(u32, Ns, BlkStatus)>,
    /// Bit i: task i was ready in the last QSR read and is not executed.
    known_ready: u32,
    /// The context is busy until.
    free_at: Ns,
    /// End of the data phase in progress (DAT idle from then).
    dat_free: Ns,
    /// Start of the current run of unsuccessful QSR polls.
    poll_streak: Option<Ns>,
    /// Its next wake-up (one at a time: a new one replaces it).
    wake: Timer,
    seq: u64,
    /// Time the context spent busy (prep, commands, data with sync_data,
    /// completion work, poll sleeps excluded).
    pub(super) busy_ns: u64,
    #[cfg(test)]
    pub(super) log: Vec<(Ns, Ns, Activity)>,
}

impl CqThread {
    pub(super) fn new() -> CqThread {
        CqThread {
            slots: [None; MAX_TASKS],
            pending: VecDeque::with_capacity(MAX_TASKS),
            finished: VecDeque::with_capacity(MAX_TASKS),
            known_ready: 0,
            free_at: 0,
            dat_free: 0,
            poll_streak: None,
            wake: Timer::default(),
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

impl Mmc {
    /// SW CQ: one command from the mmc context at `at` (host software,
    /// then the CMD line, which only this context uses); returns when its
    /// response has been handled.
    fn cq_command(&mut self, at: Ns) -> Ns {
        self.c.commands += 1;
        self.bus.command(at + self.h.cmd_sw)
    }

    /// SW CQ: request `rq` arrives at `now`.
    pub(super) fn cq_arrive<E>(&mut self, now: Ns, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        match rq.ddir {
            _ if rq.op == Op::Flush => {}
            Ddir::Read => self.c.reads += 1,
            Ddir::Write => self.c.writes += 1,
            Ddir::Trim => {}
        }
        self.cq.pending.push_back(rq);
        self.cq_run(now, ctx);
    }

    /// Wake the mmc context at `at` (one live wake-up at a time).
    fn cq_wake<E>(&mut self, at: Ns, ctx: &mut DriverCtx<'_, E>) {
        if ctx.expires(&self.cq.wake) != Some(at) {
            ctx.arm(&mut self.cq.wake, at, Event::Wake);
        }
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
        let mut wake = self.cq.finished.front().map(|&(_, end, _)| end);
        if self.cq.dat_free > now && (self.cq.known_ready != 0 || self.cq.queued() > 0) {
            wake = Some(wake.map_or(self.cq.dat_free, |w| w.min(self.cq.dat_free)));
        }
        match wake {
            Some(at) if at > now => self.cq_wake(at, ctx),
            _ => ctx.cancel(&self.cq.wake),
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
            let mut ends = de;
            if task.write {
                // The card commits the data in the background and reports
                // the next write task ready when the commit made room.
                let committed = self.card.commit_write(de, task.lpn, task.n);
                if task.reliable {
                    // A reliable write's task is done once on NAND.
                    ends = ends.max(self.card.reliable_commit(committed));
                }
            }
            self.cq.dat_free = de;
            self.cq.finished.push_back((task.tag, ends, task.status));
            let end = if self.h.cq_sync_data { de } else { go };
            self.cq.record(t, end, Activity::Execute(task.tag));
            self.cq.free_at = end;
            self.cq.poll_streak = None;
            return true;
        }
        // 2. Completion work of a finished data phase.
        if let Some(&(tag, de, status)) = self.cq.finished.front() {
            if de <= t {
                self.cq.finished.pop_front();
                let end = t + self.h.done;
                ctx.complete(end, tag, status);
                self.cq.record(t, end, Activity::Done(tag));
                self.cq.free_at = end;
                return true;
            }
        }
        // 3. Queue a new request on the card.
        if let Some(&rq) = self.cq.pending.front() {
            let lpn = rq.offset / BLOCK;
            let n = u64::from(rq.len).div_ceil(BLOCK) as u32;
            if rq.op == Op::Flush {
                // A flush is no task: the mmc core sends it with the card
                // queue empty, as a discard.
                if self.cq.queued() == 0 && self.cq.dat_free <= t && self.cq.finished.is_empty() {
                    self.cq.pending.pop_front();
                    let end = self.flush(t);
                    self.cq.dat_free = end;
                    self.cq.finished.push_back((rq.tag, end, BlkStatus::Ok));
                    self.cq.record(t, end, Activity::Flush(rq.tag));
                    self.cq.free_at = end;
                    return true;
                }
            } else if rq.ddir == Ddir::Trim {
                // A discard (CMD35/36/38) needs the card queue empty.
                if self.cq.queued() == 0 && self.cq.dat_free <= t && self.cq.finished.is_empty() {
                    self.cq.pending.pop_front();
                    let mut c = self.cq_command(t + self.h.prep);
                    c = self.cq_command(c);
                    c = self.cq_command(c);
                    let d = self.card.trim(c, lpn, n);
                    let end = self.bus.busy(c, d);
                    self.cq.dat_free = end;
                    let status = self.status_of(&rq);
                    self.cq.finished.push_back((rq.tag, end, status));
                    self.cq.record(t, end, Activity::Trim(rq.tag));
                    self.cq.free_at = end;
                    return true;
                }
            } else if let Some(slot) =
                (0..self.card.p.cmdq_depth as usize).find(|&i| self.cq.slots[i].is_none())
            {
                self.cq.pending.pop_front();
                let write = rq.ddir == Ddir::Write;
                let c44 = self.cq_command(t + self.h.prep);
                let queued = self.cq_command(c44); // CMD45
                let card_t = self.card.decoded(queued);
                let ready = if write {
                    self.card.queue_write(card_t, lpn, n)
                } else {
                    self.card.queue_read(card_t, lpn, n)
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
                    status: self.status_of(&rq),
                    reliable: self.reliable(&rq),
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
            let mut mask = 0u32;
            for (i, task) in self.cq.slots.iter().enumerate() {
                if let Some(task) = task {
                    if self.card.task_ready(task.write, task.ready) <= t {
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

    /// The context's wake-up fired (the latest one armed: the queue drops
    /// those it replaced).
    pub(super) fn cq_event<E>(&mut self, ev: Event, ctx: &mut DriverCtx<'_, E>) {
        match ev {
            Event::Wake => self.cq_run(ctx.now(), ctx),
        }
    }
}
