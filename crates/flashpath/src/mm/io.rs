//! The page cache's own I/O: the readahead reads a buffered call starts,
//! the flusher's writeback (wb_workfn on an unbound kworker,
//! fs/fs-writeback.c) and its periodic pass, and what a completed request
//! changes in the cache. The cache reaches the host's cores, the block
//! layer's submit path and the event queue only through `CacheCtx`, as the
//! block layer reaches the host and the driver through `BlkCtx`; the
//! machine implements it over its parts.

use super::buffered::CacheState;
use super::readahead::PageRun;
use super::writeback::next_writeback_run;
use super::PAGE_SHIFT;
use crate::host::task::Host;
use crate::sim::Ns;
use crate::types::{Ddir, IoUnit};

/// What the page cache reaches outside itself.
pub trait CacheCtx {
    /// The host's cores.
    fn host(&mut self) -> &mut Host;
    /// The submit path's CPU work for one request on the submitting core
    /// (reference ns: blk-mq's and the driver's queue_rq).
    fn submit_work(&self) -> Ns;
    /// Tags per hardware queue: the writeback requests the flusher keeps
    /// in flight before it waits.
    fn tag_depth(&self) -> u32;
    /// A request for `unit` (a readahead read, or a writeback write) made
    /// on `cpu` from `start`, its submit work done at `submitted`, goes
    /// down the block layer: returns when `cpu` is done with it (its DMA
    /// mapping).
    fn submit(&mut self, unit: IoUnit, writeback: bool, cpu: u32, start: Ns, submitted: Ns) -> Ns;
    /// The flusher's kworker runs a pass at `at`.
    fn schedule_flush(&mut self, at: Ns);
    /// Core `cpu` has nothing runnable from `at`: it may go idle.
    fn cpu_idle(&mut self, cpu: u32, at: Ns);
}

/// What a completed readahead or writeback request changed, for the
/// threads that wait in the cache.
#[derive(Clone, Copy, Debug)]
pub struct RqDone {
    pub writeback: bool,
    /// Its pages.
    pub first: u64,
    pub pages: u64,
    /// Dirty and under-writeback pages are back under the setpoint
    /// (balance_dirty_pages lets a throttled writer go).
    pub below_setpoint: bool,
    /// No page is dirty or under writeback (an fsync is over).
    pub clean: bool,
}

impl CacheState {
    /// Requests for a run of pages (split at the largest request), sent
    /// from `cpu` at `at`; returns when the CPU is done submitting.
    pub fn submit_run<C: CacheCtx>(
        &mut self,
        ctx: &mut C,
        run: PageRun,
        writeback: bool,
        cpu: u32,
        at: Ns,
    ) -> Ns {
        let max = self.max_rq_pages;
        let per_page = if writeback {
            self.costs.page_writeback
        } else {
            0
        };
        let mut at = at;
        let mut first = run.first;
        let end = run.first + run.pages;
        while first < end {
            let pages = (end - first).min(max);
            if writeback {
                self.writeback_rqs += 1;
            } else {
                self.readahead_rqs += 1;
            }
            let unit = IoUnit {
                ddir: if writeback { Ddir::Write } else { Ddir::Read },
                offset: first << PAGE_SHIFT,
                len: (pages << PAGE_SHIFT) as u32,
            };
            let cost = ctx.submit_work() + per_page * pages;
            let submitted = ctx.host().run_on(cpu, at, 0, cost);
            at = ctx.submit(unit, writeback, cpu, at, submitted);
            first += pages;
        }
        at
    }

    /// The reads the last `copy` started go out from `cpu` at `at`;
    /// returns when the CPU is done submitting.
    pub fn submit_reads<C: CacheCtx>(&mut self, ctx: &mut C, cpu: u32, at: Ns) -> Ns {
        let mut at = at;
        for i in 0..self.runs.len() {
            let run = self.runs[i];
            at = self.submit_run(ctx, run, false, cpu, at);
        }
        at
    }

    /// Wake the flusher's kworker from `from_cpu` at `at` if it is not
    /// already at work: wb_wakeup queues the bdi's work on an unbound
    /// workqueue, whose worker the scheduler places on an idle CPU
    /// (select_idle_sibling), else on the waking one.
    pub fn kick_flusher<C: CacheCtx>(&mut self, ctx: &mut C, from_cpu: u32, at: Ns) {
        if self.flusher.scheduled || self.flusher.inflight > 0 {
            return;
        }
        self.flusher.scheduled = true;
        let host = ctx.host();
        let ncpus = host.ncpus();
        let idle = (0..ncpus)
            .map(|i| (from_cpu + 1 + i) % ncpus)
            .find(|&c| c != from_cpu && host.cpu_free(c));
        let cpu = idle.unwrap_or(from_cpu);
        self.flusher.cpu = Some(cpu);
        let costs = host.costs();
        let woke = host.run_on(from_cpu, at, 0, costs.wakeup);
        let exit = host.wake_cpu(cpu, woke);
        host.make_runnable(cpu);
        let running = host.run_on(cpu, woke + exit, 0, costs.context_switch);
        ctx.schedule_flush(running);
    }

    /// Whether the flusher has a reason to write at `now`: a waiting fsync,
    /// dirty pages over the background threshold (wb_over_bg_thresh), or
    /// expired data; none once every job has ended (`jobs_running` false).
    pub fn writeback_reason(&self, now: Ns, fsync_waits: bool, jobs_running: bool) -> bool {
        jobs_running
            && (fsync_waits
                || self.expired(now)
                || self.limits.over_background(self.cache.nr_dirty()))
    }

    /// The flusher's pass (wb_workfn): write dirty pages while it has a
    /// reason (a waiting fsync, over the background threshold, expired
    /// data) and free tags; its kworker sleeps when it has none left.
    pub fn flush_work<C: CacheCtx>(
        &mut self,
        ctx: &mut C,
        now: Ns,
        fsync_waits: bool,
        jobs_running: bool,
    ) {
        let depth = ctx.tag_depth();
        self.flusher.scheduled = false;
        let cpu = self
            .flusher
            .cpu
            .expect("a flusher pass runs on its kworker's CPU");
        let mut at = now;
        loop {
            if !self.writeback_reason(now, fsync_waits, jobs_running) {
                break;
            }
            if self.flusher.inflight >= depth {
                break;
            }
            let max = self.max_rq_pages;
            let cursor = self.flusher.cursor;
            let Some(run) = next_writeback_run(&mut self.cache, cursor, max) else {
                break;
            };
            self.flusher.cursor = run.first + run.pages;
            self.flusher.inflight += 1;
            if self.cache.nr_dirty() == 0 {
                self.flusher.dirtied_when = None;
            }
            at = self.submit_run(ctx, run, true, cpu, at);
        }
        // The kworker sleeps until a completion brings it back; with
        // nothing in flight its pass is over.
        if self.flusher.inflight == 0 {
            self.flusher.cpu = None;
        }
        ctx.host().make_unrunnable(cpu);
        ctx.cpu_idle(cpu, at);
    }

    /// A readahead or writeback request for `unit` completed: its pages
    /// change state. Returns what the threads waiting in the cache need.
    pub fn rq_done(&mut self, unit: IoUnit, writeback: bool) -> RqDone {
        let first = unit.offset >> PAGE_SHIFT;
        let pages = u64::from(unit.len) >> PAGE_SHIFT;
        for p in first..first + pages {
            if writeback {
                self.cache.end_writeback(p);
            } else {
                self.cache.end_read(p);
            }
        }
        if writeback {
            self.flusher.inflight -= 1;
        }
        let dirty = self.cache.nr_dirty() + self.cache.nr_writeback();
        RqDone {
            writeback,
            first,
            pages,
            below_setpoint: dirty <= self.limits.setpoint(),
            clean: dirty == 0,
        }
    }

    /// After a writeback request's waiters woke (at `at`): the flusher
    /// goes on from its kworker if it has pages to write and a reason
    /// left; otherwise its pass ends with its last request (it waited on
    /// tags, not on completions).
    pub fn writeback_done<C: CacheCtx>(
        &mut self,
        ctx: &mut C,
        at: Ns,
        fsync_waits: bool,
        jobs_running: bool,
    ) {
        let more =
            self.cache.nr_dirty() > 0 && self.writeback_reason(at, fsync_waits, jobs_running);
        if !more && self.flusher.inflight == 0 && !self.flusher.scheduled {
            self.flusher.cpu = None;
        }
        if let (Some(cpu), false, true) = (self.flusher.cpu, self.flusher.scheduled, more) {
            self.flusher.scheduled = true;
            let host = ctx.host();
            let exit = host.wake_cpu(cpu, at);
            host.make_runnable(cpu);
            let switch = host.costs().context_switch;
            let running = host.run_on(cpu, at + exit, 0, switch);
            ctx.schedule_flush(running);
        }
    }

    /// The periodic writeback timer (wb_workfn's kupdate pass, every
    /// dirty_writeback_interval) at `now`: data dirty for longer than
    /// dirty_expire_interval starts the flusher from `from_cpu` if it is
    /// idle.
    pub fn flush_timer<C: CacheCtx>(
        &mut self,
        ctx: &mut C,
        now: Ns,
        from_cpu: u32,
        jobs_running: bool,
    ) {
        if self.expired(now) && jobs_running {
            self.kick_flusher(ctx, from_cpu, now);
        }
    }

    /// fsync from `cpu` at `now` (end_fsync, fsync_on_close, fsync=N):
    /// returns true if nothing is dirty or under writeback. Otherwise
    /// filemap_write_and_wait_range runs the writeback from the caller's
    /// CPU (unless the flusher is at work) and the caller waits.
    pub fn fsync<C: CacheCtx>(&mut self, ctx: &mut C, cpu: u32, now: Ns) -> bool {
        if self.cache.nr_dirty() == 0 && self.cache.nr_writeback() == 0 {
            return true;
        }
        if self.flusher.cpu.is_none() {
            self.flusher.cpu = Some(cpu);
            self.flusher.scheduled = true;
            ctx.host().make_runnable(cpu);
            ctx.schedule_flush(now);
        }
        false
    }
}
