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
use crate::workload::fio::IoEngine;

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
    ///
    /// io_uring (Linux 6.12 io_uring/rw.c) tries each call first without
    /// blocking (IOCB_NOWAIT) inside io_uring_enter. A read whose pages are
    /// cached copies them there and completes inline; one that misses
    /// starts readahead, arms the page-unlock callback (io_rw_should_retry:
    /// the block device's file has FOP_BUFFER_RASYNC, block/fops.c) and
    /// io_uring_enter returns; the unlock queues task_work that finishes
    /// the copy in the submitter's context. A write to a block device
    /// cannot go without blocking (blkdev_write_iter returns EOPNOTSUPP
    /// for IOCB_NOWAIT, which io_write turns into EAGAIN): it is punted to
    /// an io-wq worker (`iowq_submit`).
    pub(super) fn buffered_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Option<Ns> {
        let ti = tid as usize;
        if self.threads[ti].fio.engine == IoEngine::IoUring && unit.ddir == Ddir::Write {
            self.iowq_submit(tid, unit, now);
            return None;
        }
        let call = self.cache.as_ref().map_or(0, |c| c.costs.call);
        // The call returns when the copy is done (`buffered_done`).
        let times = self.host.submit_call(tid, now, call, false);
        let (usr_end, end) = (times.user_done, times.end);
        let cpu = self.host.task_cpu(tid);
        let slat_end = if self.threads[ti].fio.sync {
            usr_end
        } else {
            now
        };
        self.open_buffered_op(tid, unit, cpu, now, slat_end, usr_end);
        self.buffered_step(tid, end)
    }

    /// The request standing for a buffered system call of `unit` (its
    /// submission at `now`, slat and user time ending at `slat_end` and
    /// `usr_end`), counted as fio's queued I/O and kept as the thread's
    /// buffered call in progress.
    fn open_buffered_op(
        &mut self,
        tid: u32,
        unit: IoUnit,
        cpu: u32,
        now: Ns,
        slat_end: Ns,
        usr_end: Ns,
    ) {
        let key = self.block.rqs.insert(Request::fio(
            tid, unit, cpu, now, slat_end, usr_end, false, 0,
        ));
        let t = &mut self.threads[tid as usize];
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
            let uring = self.threads[ti].fio.engine == IoEngine::IoUring;
            if uring && self.threads[ti].uring_returned.is_none() {
                // -EIOCBQUEUED: io_uring_enter returns (fio's issue time),
                // and fio waits in io_uring_enter(IORING_ENTER_GETEVENTS)
                // (engines/io_uring.c fio_ioring_getevents).
                let returned = self.host.exit_kernel(tid, at);
                self.block.rqs.get_mut(op.key).issue = returned;
                self.threads[ti].uring_returned = Some(returned);
                if let Some(u) = self.uring_buffered.as_mut() {
                    u.async_reads += 1;
                }
                let entered = self.host.enter_to_wait(tid, returned);
                self.cache_sleep(tid, CacheWait::Page(page), entered);
                return None;
            }
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
        let uring = t.fio.engine == IoEngine::IoUring;
        // A read completed by task_work after io_uring_enter had returned
        // keeps the issue time taken then.
        let returned_early = uring && t.uring_returned.take().is_some();
        if !returned_early && !t.fio.sync {
            // libaio's io_submit returned with the request already done
            // (buffered aio runs in the submit call), as io_uring_enter
            // does with a call that completed inline.
            rq.issue = end;
            if uring {
                if let Some(u) = self.uring_buffered.as_mut() {
                    u.inline += 1;
                }
            }
        }
        self.breakdown.submit_ns += u128::from(end - rq.start);
        if rq.unit.ddir == Ddir::Write {
            t.fio.write_done();
        }
        t.fio.io_completed(op.key);
        end
    }

    /// io_uring's punt of thread `tid`'s buffered write of `unit` to an
    /// io-wq worker (io_uring/io_uring.c io_queue_iowq, io_uring/io-wq.c):
    /// io_uring_enter (fio's work, the entry, the refused IOCB_NOWAIT try,
    /// io_wq_enqueue waking an idle bound worker, the exit) returns at
    /// once, and that is fio's issue time (engines/io_uring.c
    /// fio_ioring_queued). The worker, a thread of fio's process that may
    /// run on any CPU of its cpuset (io_wq_create: cpuset_cpus_allowed,
    /// not the submitter's affinity), is placed on the first idle CPU
    /// other than the submitter's, else on the submitter's (an assumption
    /// in the spirit of select_idle_sibling); it does the blocking write
    /// there (`iowq_step`). A block device's writes are neither hashed nor
    /// unbound (io_prep_async_work), so each has a bound worker of its own
    /// up to io-wq's bound limit (min(SQ entries, 4 * CPUs)), which one
    /// thread at fio's iodepth 1 never reaches. (A worker is created at the
    /// first punt, create_io_worker; its creation is not modelled.)
    fn iowq_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) {
        let ti = tid as usize;
        let costs = self.host.costs();
        let cpu = self.host.task_cpu(tid);
        let worker = (0..self.host.ncpus())
            .find(|&c| c != cpu && self.host.cpu_free(c))
            .unwrap_or(cpu);
        let ipi = if worker == cpu { 0 } else { costs.ipi };
        let times = self.host.submit_call(tid, now, costs.wakeup + ipi, true);
        self.open_buffered_op(tid, unit, cpu, now, times.end, times.user_done);
        let t = &mut self.threads[ti];
        t.fio.count_think();
        t.iowq_cpu = Some(worker);
        self.breakdown.submit_ns += u128::from(times.end - now);
        if let Some(u) = self.uring_buffered.as_mut() {
            u.iowq_punts += 1;
        }
        // The worker wakes: its CPU leaves idle, switches to it.
        self.iowq_resume(tid, worker, times.end);
        // fio goes on (it waits in io_uring_enter once its depth is full).
        self.queue.schedule(times.end, Ev::Submit(tid));
    }

    /// The io-wq worker of thread `tid` on `cpu` is woken at `at` (by the
    /// punt, or by the page or writeback it waited for) and goes on with
    /// the write.
    fn iowq_resume(&mut self, tid: u32, cpu: u32, at: Ns) {
        let exit = self.host.wake_cpu(cpu, at);
        self.host.make_runnable(cpu);
        let switch = self.host.costs().context_switch;
        let resumed = self.host.run_on(cpu, at + exit, 0, switch);
        self.iowq_step(tid, cpu, resumed);
    }

    /// The worker's blocking write (io_write without IOCB_NOWAIT: the
    /// call's copy into the cache and balance_dirty_pages), as
    /// `buffered_step` does it for a thread, on the worker's `cpu` from
    /// `now`. Its CPU time is the process's (an io-wq worker is a thread of
    /// fio's process: getrusage(RUSAGE_SELF) counts it; fio's thread=1
    /// reads RUSAGE_THREAD, which would not).
    fn iowq_step(&mut self, tid: u32, cpu: u32, now: Ns) {
        let ti = tid as usize;
        let op = self.threads[ti].bop.expect("a punted write in progress");
        let ddir = self.block.rqs.get(op.key).unit.ddir;
        let call = if op.pos == self.block.rqs.get(op.key).unit.offset {
            self.cache.as_ref().map_or(0, |c| c.costs.call)
        } else {
            0
        };
        cache_io!(self, cache, ctx);
        let copied = cache.copy(op, ddir, &mut self.threads[ti].ra, now);
        if let Some(at) = copied.dirty_timer {
            ctx.queue.schedule(at, Ev::FlushTimer);
        }
        let (work, pos, wait) = (copied.work, copied.pos, copied.wait);
        let at = ctx.host.run_on(cpu, now, 0, call + work);
        let spent = ctx.host.cpu(cpu).scaled(call + work);
        ctx.host.account_sys(tid, spent);
        if let Some(u) = self.uring_buffered.as_mut() {
            u.iowq_cpu_ns += spent;
        }
        if let Some(b) = self.threads[ti].bop.as_mut() {
            b.pos = pos;
        }
        let at = cache.submit_reads(ctx, cpu, at);
        let wait = match wait {
            Some(page) => Some(CacheWait::Page(page)),
            None => {
                let dirty = cache.cache.nr_dirty() + cache.cache.nr_writeback();
                if cache.limits.over_background(cache.cache.nr_dirty()) {
                    cache.kick_flusher(ctx, cpu, at);
                }
                if cache.limits.throttles(dirty) {
                    cache.throttled += 1;
                    Some(CacheWait::Dirty)
                } else {
                    None
                }
            }
        };
        if let Some(why) = wait {
            // The worker sleeps; its CPU may idle.
            self.threads[ti].cache_wait = Some(why);
            self.host.make_unrunnable(cpu);
            self.cpu_idle(cpu, at);
            return;
        }
        self.queue.schedule(at, Ev::IowqDone(tid));
    }

    /// The worker's write returned at `now`: it posts the CQE (io_req_
    /// complete_post), which wakes fio waiting in io_uring_enter; the
    /// worker goes back to sleep on its wait queue.
    pub(super) fn iowq_done(&mut self, tid: u32, now: Ns) {
        let ti = tid as usize;
        let cpu = self.threads[ti].iowq_cpu.take().expect("a worker's write");
        let op = self.threads[ti].bop.take().expect("a punted write");
        let t = &mut self.threads[ti];
        t.fio.write_done();
        t.fio.io_completed(op.key);
        let wake = self.host.task_state(tid) == TaskState::WaitIo && t.fio.enough_to_wake();
        let mut at = now;
        if wake {
            let woken = self.host.wake_up(tid, cpu, now, now, false);
            self.breakdown.wakeup_ns += u128::from(woken.wakeup);
            if let Some(runs) = woken.runs_at {
                self.queue.schedule(runs, Ev::Run(tid));
            }
            at = woken.waker_done;
        }
        self.host.make_unrunnable(cpu);
        let busy = self.host.busy_until(cpu).max(at);
        self.cpu_idle(cpu, busy);
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
            if let (Some(cpu), Some(CacheWait::Page(p))) = (t.iowq_cpu, t.cache_wait) {
                // An io-wq worker waits for this page, not the thread.
                if !writeback && p >= first && p < first + pages {
                    self.threads[tid].cache_wait = None;
                    self.iowq_resume(tid as u32, cpu, at);
                }
                continue;
            }
            if let (Some(cpu), Some(CacheWait::Dirty)) = (t.iowq_cpu, t.cache_wait) {
                if writeback && done.below_setpoint {
                    self.threads[tid].cache_wait = None;
                    self.iowq_resume(tid as u32, cpu, at);
                }
                continue;
            }
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
