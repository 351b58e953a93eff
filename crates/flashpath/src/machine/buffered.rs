//! Buffered I/O (`direct=0`) on the machine: a fio read or write system
//! call copies through the page cache (`mm::buffered`) on the thread's
//! CPU; missing pages are read by readahead requests the thread submits
//! and waits for; written pages are dirty until the flusher (a kworker on
//! another CPU) or an fsync writes them back; a writer over the dirty
//! limit waits (balance_dirty_pages). Readahead and writeback requests go
//! down the same block layer, DMA mapping and driver as direct I/O, mapped
//! on the CPU that submits them.

use super::{Ev, Machine};
use crate::block::{Request, RqKind};
use crate::host::task::TaskState;
use crate::mm::buffered::{BufferedOp, CacheWait};
use crate::mm::readahead::PageRun;
use crate::mm::writeback::next_writeback_run;
use crate::mm::{PAGE_SHIFT, PAGE_SIZE};
use crate::sim::Ns;
use crate::workload::{Ddir, IoUnit};

impl Machine {
    /// fio's buffered read/write of `unit` from `now`: returns when the
    /// call returned, or None if the thread sleeps in it.
    pub(super) fn buffered_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Option<Ns> {
        let costs = self.host.costs;
        let ti = tid as usize;
        let usr_end = self.host.run_task(tid, now, costs.fio_submit, 0);
        let call = self.cache.as_ref().map_or(0, |c| c.costs.call);
        let end = self
            .host
            .run_task(tid, usr_end, 0, costs.syscall_entry + call);
        let t = &mut self.threads[ti];
        let cpu = self.host.tasks[ti].cpu;
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
        let cpu_id = self.host.tasks[ti].cpu;
        let st = self.cache.as_mut().expect("buffered I/O has a page cache");
        let copied = st.copy(op, ddir, &mut self.threads[ti].ra, now);
        if let Some(at) = copied.dirty_timer {
            self.queue.schedule(at, Ev::FlushTimer);
        }
        let (work, pos, wait) = (copied.work, copied.pos, copied.wait);
        let mut at = self.host.run_task(tid, now, 0, work);
        if let Some(b) = self.threads[ti].bop.as_mut() {
            b.pos = pos;
        }
        // The reads this call needs go out from its CPU.
        let runs = std::mem::take(&mut self.cache.as_mut().expect("cache").runs);
        for r in &runs {
            at = self.submit_cache_runs(*r, RqKind::CacheRead, cpu_id, u32::MAX, at);
        }
        self.cache.as_mut().expect("cache").runs = runs;
        if let Some(page) = wait {
            self.cache_sleep(tid, CacheWait::Page(page), at);
            return None;
        }
        if ddir != Ddir::Read {
            // balance_dirty_pages_ratelimited after the copy.
            let st = self.cache.as_mut().expect("cache");
            let dirty = st.cache.nr_dirty() + st.cache.nr_writeback();
            if st.limits.over_background(st.cache.nr_dirty()) {
                self.kick_flusher(cpu_id, at);
            }
            let st = self.cache.as_mut().expect("cache");
            if st.limits.throttles(dirty) {
                st.throttled += 1;
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
            self.host.run_task(tid, at, 0, self.host.costs.syscall_exit)
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

    /// Requests for a run of pages (split at the largest request), sent
    /// from `cpu` at `at`; returns when the CPU is done submitting.
    fn submit_cache_runs(
        &mut self,
        run: PageRun,
        kind: RqKind,
        cpu: u32,
        owner: u32,
        at: Ns,
    ) -> Ns {
        let st = self.cache.as_mut().expect("cache");
        let max = st.max_rq_pages;
        let per_page = if kind == RqKind::Writeback {
            st.costs.page_writeback
        } else {
            0
        };
        let mut at = at;
        let mut first = run.first;
        let end = run.first + run.pages;
        while first < end {
            let pages = (end - first).min(max);
            let st = self.cache.as_mut().expect("cache");
            match kind {
                RqKind::Writeback => st.writeback_rqs += 1,
                _ => st.readahead_rqs += 1,
            }
            let unit = IoUnit {
                ddir: if kind == RqKind::Writeback {
                    Ddir::Write
                } else {
                    Ddir::Read
                },
                offset: first << PAGE_SHIFT,
                len: (pages << PAGE_SHIFT) as u32,
            };
            let cost =
                self.host.costs.blk_submit + self.block.drv_costs().submit + per_page * pages;
            let c = &mut self.host.cpus[cpu as usize];
            let submitted = c.run(at, 0, cost);
            let key = self.block.rqs.insert(Request {
                thread: owner,
                unit,
                start: at,
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
                kind,
            });
            at = self.submit_rq(key, cpu, submitted);
            first += pages;
        }
        at
    }

    /// Wake the flusher's kworker from `from_cpu` at `at` if it is not
    /// already at work: wb_wakeup queues the bdi's work on an unbound
    /// workqueue, whose worker the scheduler places on an idle CPU
    /// (select_idle_sibling), else on the waking one.
    pub(super) fn kick_flusher(&mut self, from_cpu: u32, at: Ns) {
        let ncpus = self.host.ncpus();
        let st = self.cache.as_mut().expect("cache");
        if st.flusher.scheduled || st.flusher.inflight > 0 {
            return;
        }
        st.flusher.scheduled = true;
        let idle = (0..ncpus).map(|i| (from_cpu + 1 + i) % ncpus).find(|&c| {
            c != from_cpu && self.host.cpus[c as usize].runnable == 0 && !self.host.is_held(c)
        });
        let cpu = idle.unwrap_or(from_cpu);
        self.cache.as_mut().expect("cache").flusher.cpu = Some(cpu);
        let woke = self.host.cpus[from_cpu as usize].run(at, 0, self.host.costs.wakeup);
        let exit = self.host.wake_cpu(cpu, woke);
        let c = &mut self.host.cpus[cpu as usize];
        c.runnable += 1;
        let running = c.run(woke + exit, 0, self.host.costs.context_switch);
        self.queue.schedule(running, Ev::Flush);
    }

    /// A thread waits in an fsync for every page to be clean.
    fn fsync_waits(&self) -> bool {
        self.threads
            .iter()
            .any(|t| t.cache_wait == Some(CacheWait::Clean))
    }

    /// Whether the flusher has a reason to write at `now`: a waiting fsync,
    /// dirty pages over the background threshold (wb_over_bg_thresh), or
    /// expired data; none once every job has ended.
    fn writeback_reason(&self, now: Ns, fsync_waits: bool) -> bool {
        let st = self.cache.as_ref().expect("cache");
        self.threads_done < self.threads.len()
            && (fsync_waits || st.expired(now) || st.limits.over_background(st.cache.nr_dirty()))
    }

    /// The flusher's pass (wb_workfn): write dirty pages while it has a
    /// reason (a waiting fsync, over the background threshold, expired
    /// data) and free tags; its kworker sleeps when it has none left.
    pub(super) fn flush_work(&mut self, now: Ns) {
        let depth = self.block.tag_depth;
        let fsync_waits = self.fsync_waits();
        let st = self.cache.as_mut().expect("cache");
        st.flusher.scheduled = false;
        let cpu = st
            .flusher
            .cpu
            .expect("a flusher pass runs on its kworker's CPU");
        let mut at = now;
        loop {
            if !self.writeback_reason(now, fsync_waits) {
                break;
            }
            let st = self.cache.as_mut().expect("cache");
            if st.flusher.inflight >= depth {
                break;
            }
            let max = st.max_rq_pages;
            let cursor = st.flusher.cursor;
            let Some(run) = next_writeback_run(&mut st.cache, cursor, max) else {
                break;
            };
            st.flusher.cursor = run.first + run.pages;
            st.flusher.inflight += 1;
            if st.cache.nr_dirty() == 0 {
                st.flusher.dirtied_when = None;
            }
            at = self.submit_cache_runs(run, RqKind::Writeback, cpu, u32::MAX, at);
        }
        // The kworker sleeps until a completion brings it back; with
        // nothing in flight its pass is over.
        let st = self.cache.as_mut().expect("cache");
        if st.flusher.inflight == 0 {
            st.flusher.cpu = None;
        }
        let c = &mut self.host.cpus[cpu as usize];
        c.runnable = c.runnable.saturating_sub(1);
        self.cpu_idle(cpu, at);
    }

    /// A readahead or writeback request completed; its interrupt ran on
    /// `irq_cpu` until `at`. Pages change state, and threads waiting for
    /// them wake.
    pub(super) fn cache_rq_done(&mut self, key: u32, irq_cpu: u32, at: Ns) {
        let rq = self.block.rqs.remove(key);
        let first = rq.unit.offset >> PAGE_SHIFT;
        let pages = u64::from(rq.unit.len) >> PAGE_SHIFT;
        let st = self.cache.as_mut().expect("cache");
        let writeback = rq.kind == RqKind::Writeback;
        for p in first..first + pages {
            if writeback {
                st.cache.end_writeback(p);
            } else {
                st.cache.end_read(p);
            }
        }
        if writeback {
            st.flusher.inflight -= 1;
        }
        let dirty = st.cache.nr_dirty() + st.cache.nr_writeback();
        let setpoint = st.limits.setpoint();
        let clean = dirty == 0;
        let mut at = at;
        for tid in 0..self.threads.len() {
            let t = &self.threads[tid];
            if self.host.tasks[tid].state != TaskState::WaitIo {
                continue;
            }
            let ready = match t.cache_wait {
                Some(CacheWait::Page(p)) => !writeback && p >= first && p < first + pages,
                Some(CacheWait::Dirty) => writeback && dirty <= setpoint,
                Some(CacheWait::Clean) => writeback && clean,
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
            // The flusher goes on from its kworker if it has pages to write
            // and a reason left; otherwise its pass ends with its last
            // request (it waited on tags, not on completions).
            let more = self.cache.as_ref().expect("cache").cache.nr_dirty() > 0
                && self.writeback_reason(at, self.fsync_waits());
            let st = self.cache.as_mut().expect("cache");
            if !more && st.flusher.inflight == 0 && !st.flusher.scheduled {
                st.flusher.cpu = None;
            }
            if let (Some(cpu), false, true) = (st.flusher.cpu, st.flusher.scheduled, more) {
                st.flusher.scheduled = true;
                let exit = self.host.wake_cpu(cpu, at);
                let c = &mut self.host.cpus[cpu as usize];
                c.runnable += 1;
                let running = c.run(at + exit, 0, self.host.costs.context_switch);
                self.queue.schedule(running, Ev::Flush);
            }
        }
        let busy = self.host.cpus[irq_cpu as usize].busy_until.max(at);
        self.cpu_idle(irq_cpu, busy);
    }

    /// The periodic writeback timer (wb_workfn's kupdate pass, every
    /// dirty_writeback_interval): data dirty for longer than
    /// dirty_expire_interval starts the flusher if it is idle.
    pub(super) fn flush_timer(&mut self, now: Ns) {
        let all_done = self.threads_done == self.threads.len();
        if self.cache.as_ref().expect("cache").expired(now) && !all_done {
            let from = self.host.tasks[0].cpu;
            self.kick_flusher(from, now);
        }
    }

    /// fsync at the job's end (end_fsync / fsync_on_close): write back
    /// everything dirty and wait for it. Returns false if the thread
    /// sleeps.
    pub(super) fn buffered_fsync(&mut self, tid: u32, now: Ns) -> bool {
        let st = self.cache.as_mut().expect("cache");
        if st.cache.nr_dirty() == 0 && st.cache.nr_writeback() == 0 {
            return true;
        }
        let cpu = self.host.tasks[tid as usize].cpu;
        // filemap_write_and_wait_range runs the writeback from the caller.
        let st = self.cache.as_mut().expect("cache");
        if st.flusher.cpu.is_none() {
            st.flusher.cpu = Some(cpu);
            st.flusher.scheduled = true;
            self.host.cpus[cpu as usize].runnable += 1;
            self.queue.schedule(now, Ev::Flush);
        }
        self.cache_sleep(tid, CacheWait::Clean, now);
        false
    }
}
