//! Buffered I/O (`direct=0`) on the machine: a fio read or write system
//! call copies through the page cache (`mm::buffered`) on the thread's
//! CPU; missing pages are read by readahead requests the thread submits
//! and waits for; written pages are dirty until the flusher (a kworker on
//! another CPU) or an fsync writes them back; a writer over the dirty
//! limit waits (balance_dirty_pages). The cache's own I/O (its requests,
//! the flusher, what a completion changes) is `mm::io`'s, reached through
//! `CacheCtx`, which this file implements over the machine's parts; here
//! remain the thread's side of a call (fio's request, sleeping in the
//! cache, waking) and the wiring.

use super::{Ev, Machine};
use crate::block::{BlkCtx, BlockLayer, Breakdown, Request, RqKind};
use crate::dma::bounce::SwiotlbPath;
use crate::driver::Driver;
use crate::host::task::{Host, TaskState};
use crate::mm::buffered::{BufferedOp, CacheWait};
use crate::mm::io::CacheCtx;
use crate::mm::PAGE_SIZE;
use crate::sim::queue::EventQueue;
use crate::sim::Ns;
use crate::types::{Ddir, IoUnit};

/// The page cache's context over the machine's parts (the host, the block
/// layer with its context, the event queue), borrowed beside the cache.
pub(super) struct CacheIo<'a> {
    host: &'a mut Host,
    block: &'a mut BlockLayer,
    queue: &'a mut EventQueue<Ev>,
    dma: Option<&'a mut SwiotlbPath>,
    driver: &'a mut dyn Driver<Ev>,
    breakdown: &'a mut Breakdown,
}

impl CacheCtx for CacheIo<'_> {
    fn host(&mut self) -> &mut Host {
        self.host
    }

    fn submit_work(&self) -> Ns {
        self.block.submit_work(self.host)
    }

    fn tag_depth(&self) -> u32 {
        self.block.tag_depth
    }

    fn submit(&mut self, unit: IoUnit, writeback: bool, cpu: u32, start: Ns, submitted: Ns) -> Ns {
        let key = self.block.rqs.insert(Request {
            // The cache's own request: no fio thread owns it.
            thread: u32::MAX,
            unit,
            bio: unit,
            next_bio: crate::block::merge::NO_BIO,
            tail_bio: crate::block::merge::NO_BIO,
            nr_segs: 0,
            nomerge: false,
            plugged: false,
            start,
            issue: submitted,
            blk_start: submitted,
            hctx: 0,
            polled: false,
            cpu,
            // Order-0 page-cache pages.
            contiguous: PAGE_SIZE,
            mapped: false,
            error: 0,
            fua: false,
            // The flusher's and readahead's default priority
            // (IOPRIO_CLASS_NONE: mq-deadline's BE).
            ioprio: 0,
            passthrough: false,
            write_op: crate::types::Op::Write,
            hint: crate::types::Hint::None,
            kind: if writeback {
                RqKind::Writeback
            } else {
                RqKind::CacheRead
            },
        });
        self.block.map_and_dispatch(
            key,
            cpu,
            submitted,
            &mut BlkCtx {
                host: &mut *self.host,
                queue: &mut *self.queue,
                dma: self.dma.as_deref_mut(),
                driver: &mut *self.driver,
                breakdown: &mut *self.breakdown,
            },
        )
    }

    fn schedule_flush(&mut self, at: Ns) {
        self.queue.schedule(at, Ev::Flush);
    }

    fn cpu_idle(&mut self, cpu: u32, at: Ns) {
        self.host.cpu_idle(cpu, at, &*self.driver);
    }
}

/// The page cache and its context, borrowed side by side from the
/// machine. Buffered I/O runs only on a machine built with a page cache
/// (`MachineParts::cache` is set when a job has `direct=0`): this is the
/// one place that holds to it.
macro_rules! cache_io {
    ($m:expr, $cache:ident) => {
        let Some($cache) = $m.cache.as_mut() else {
            unreachable!("buffered I/O on a machine without a page cache")
        };
    };
    ($m:expr, $cache:ident, $ctx:ident) => {
        cache_io!($m, $cache);
        let $ctx = &mut CacheIo {
            host: &mut $m.host,
            block: &mut $m.block,
            queue: &mut $m.queue,
            dma: $m.dma.as_mut(),
            driver: &mut *$m.driver,
            breakdown: &mut $m.breakdown,
        };
    };
}

impl Machine {
    /// fio's buffered read/write of `unit` from `now`: returns when the
    /// call returned, or None if the thread sleeps in it.
    pub(super) fn buffered_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Option<Ns> {
        let ti = tid as usize;
        let call = self.cache.as_ref().map_or(0, |c| c.costs.call);
        // The call returns when the copy is done (`buffered_done`).
        let times = self.host.submit_call(tid, now, call, false);
        let (usr_end, end) = (times.user_done, times.end);
        let t = &mut self.threads[ti];
        let cpu = self.host.task_cpu(tid);
        let key = self.block.rqs.insert(Request::fio(
            tid,
            unit,
            cpu,
            now,
            if t.fio.sync { usr_end } else { now },
            usr_end,
            false,
            0,
        ));
        // The system call's priority, for fio's per-priority statistics
        // (the page cache's own requests keep the default).
        self.block.rqs.get_mut(key).ioprio = t.fio.ioprio_for(unit.ddir, unit.len);
        t.fio.queued();
        self.submitted_ios += 1;
        t.bop = Some(BufferedOp {
            key,
            pos: unit.offset,
            end: unit.offset + u64::from(unit.len),
            woken: false,
        });
        self.buffered_step(tid, end)
    }

    /// Go on with the thread's buffered call at `now`.
    pub(super) fn buffered_step(&mut self, tid: u32, now: Ns) -> Option<Ns> {
        let ti = tid as usize;
        let op = self.threads[ti].bop.expect("a buffered call in progress");
        let ddir = self.block.rqs.get(op.key).unit.ddir;
        let cpu_id = self.host.task_cpu(tid);
        cache_io!(self, cache, ctx);
        let copied = cache.copy(op, ddir, &mut self.threads[ti].ra, now);
        if let Some(at) = copied.dirty_timer {
            ctx.queue.schedule(at, Ev::FlushTimer);
        }
        let (work, pos, wait) = (copied.work, copied.pos, copied.wait);
        let at = ctx.host.run_task(tid, now, 0, work);
        if let Some(b) = self.threads[ti].bop.as_mut() {
            b.pos = pos;
        }
        // The reads this call needs go out from its CPU.
        let at = cache.submit_reads(ctx, cpu_id, at);
        if let Some(page) = wait {
            self.cache_sleep(tid, CacheWait::Page(page), at);
            return None;
        }
        if ddir != Ddir::Read {
            // balance_dirty_pages_ratelimited after the copy.
            let dirty = cache.cache.nr_dirty() + cache.cache.nr_writeback();
            if cache.limits.over_background(cache.cache.nr_dirty()) {
                cache.kick_flusher(ctx, cpu_id, at);
            }
            if cache.limits.throttles(dirty) {
                cache.throttled += 1;
                self.cache_sleep(tid, CacheWait::Dirty, at);
                return None;
            }
        }
        Some(self.buffered_done(tid, at))
    }

    /// The call returns at `at`: fio's request is complete.
    fn buffered_done(&mut self, tid: u32, at: Ns) -> Ns {
        let ti = tid as usize;
        let op = self.threads[ti].bop.take().expect("a buffered call");
        let end = if op.woken {
            at
        } else {
            self.host.exit_kernel(tid, at)
        };
        let t = &mut self.threads[ti];
        let rq = self.block.rqs.get_mut(op.key);
        if !t.fio.sync {
            // libaio's io_submit returned with the request already done
            // (buffered aio runs in the submit call).
            rq.issue = end;
        }
        self.breakdown.submit_ns += u128::from(end - rq.start);
        if rq.unit.ddir == Ddir::Write {
            t.fio.write_done();
        }
        t.fio.io_completed(op.key);
        end
    }

    /// The thread sleeps in its buffered call until `why` is over.
    fn cache_sleep(&mut self, tid: u32, why: CacheWait, at: Ns) {
        self.threads[tid as usize].cache_wait = Some(why);
        self.host.block_on_io(tid, at, &*self.driver);
    }

    /// A thread waits in an fsync for every page to be clean.
    fn fsync_waits(&self) -> bool {
        self.threads
            .iter()
            .any(|t| t.cache_wait == Some(CacheWait::Clean))
    }

    /// Whether a job still runs (the flusher has no reason to write once
    /// every job has ended).
    fn jobs_running(&self) -> bool {
        self.threads_done < self.threads.len()
    }

    /// The flusher's pass (`Ev::Flush`).
    pub(super) fn flush_work(&mut self, now: Ns) {
        let (fsync_waits, running) = (self.fsync_waits(), self.jobs_running());
        cache_io!(self, cache, ctx);
        cache.flush_work(ctx, now, fsync_waits, running);
    }

    /// A readahead or writeback request completed; its interrupt ran on
    /// `irq_cpu` until `at`. Pages change state, and threads waiting for
    /// them wake.
    pub(super) fn cache_rq_done(&mut self, key: u32, irq_cpu: u32, at: Ns) {
        let rq = self.block.rqs.remove(key);
        let writeback = rq.kind == RqKind::Writeback;
        cache_io!(self, cache);
        let done = cache.rq_done(rq.unit, writeback);
        let (first, pages) = (done.first, done.pages);
        let mut at = at;
        for tid in 0..self.threads.len() {
            let t = &self.threads[tid];
            if self.host.task_state(tid as u32) != TaskState::WaitIo {
                continue;
            }
            let ready = match t.cache_wait {
                Some(CacheWait::Page(p)) => !writeback && p >= first && p < first + pages,
                Some(CacheWait::Dirty) => writeback && done.below_setpoint,
                Some(CacheWait::Clean) => writeback && done.clean,
                None => false,
            };
            if ready {
                self.threads[tid].cache_wait = None;
                if let Some(b) = self.threads[tid].bop.as_mut() {
                    b.woken = true;
                }
                at = self.wake_thread(tid as u32, irq_cpu, at);
            }
        }
        if writeback {
            let (fsync_waits, running) = (self.fsync_waits(), self.jobs_running());
            cache_io!(self, cache, ctx);
            cache.writeback_done(ctx, at, fsync_waits, running);
        }
        let busy = self.host.busy_until(irq_cpu).max(at);
        self.cpu_idle(irq_cpu, busy);
    }

    /// The periodic writeback timer (`Ev::FlushTimer`).
    pub(super) fn flush_timer(&mut self, now: Ns) {
        let running = self.jobs_running();
        let from = self.host.task_cpu(0);
        cache_io!(self, cache, ctx);
        cache.flush_timer(ctx, now, from, running);
    }

    /// fsync at the job's end (end_fsync / fsync_on_close) or fsync=N:
    /// write back everything dirty and wait for it. Returns false if the
    /// thread sleeps.
    pub(super) fn buffered_fsync(&mut self, tid: u32, now: Ns) -> bool {
        let cpu = self.host.task_cpu(tid);
        cache_io!(self, cache, ctx);
        if cache.fsync(ctx, cpu, now) {
            return true;
        }
        self.cache_sleep(tid, CacheWait::Clean, now);
        false
    }
}
