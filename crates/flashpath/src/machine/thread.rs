//! A fio thread on the host: the machine carries out each step of fio's
//! loop (`FioThread::next`) as its task on its core (user and system CPU
//! time, the block layer's submit path, sleeping, spinning), and hands a
//! completed request back to the thread that waits for it (wake-up, or
//! the poller finding it).

use super::{blk_ctx, Ev, Machine};
use crate::block::complete::Completion;
use crate::block::flush::flush_policy;
use crate::block::merge::NO_BIO;
use crate::block::{BlockEvent, Request, RqKind};
use crate::driver::{BlkStatus, CompletionSignal};
use crate::host::task::TaskState;
use crate::sim::Ns;
use crate::types::{Ddir, IoUnit};
use crate::workload::fio::{ExitWhat, IoEngine, Step};

impl Machine {
    pub(super) fn start_wave(&mut self, wave: u32, now: Ns) {
        self.current_wave = wave;
        self.start_ready(now);
    }

    /// Schedules the start of every thread of the current wave that has
    /// not started and waits for no running job (backend.c run_threads:
    /// a job whose `wait_for` waitee has not exited is passed over and
    /// started once it has).
    fn start_ready(&mut self, now: Ns) {
        for i in 0..self.threads.len() {
            let t = &self.threads[i];
            if t.fio.wave != self.current_wave
                || t.start_scheduled
                || self.host.task_state(i as u32) != TaskState::NotStarted
                || self.waitee_running(i)
            {
                continue;
            }
            self.threads[i].start_scheduled = true;
            self.queue
                .schedule(now + self.threads[i].fio.startdelay, Ev::Start(i as u32));
        }
    }

    /// backend.c waitee_running: a clone of the job this thread's job
    /// waits for has not exited.
    fn waitee_running(&self, i: usize) -> bool {
        let Some(waitee) = self.threads[i].fio.wait_for.as_deref() else {
            return false;
        };
        self.threads
            .iter()
            .enumerate()
            .any(|(j, t)| t.fio.name == waitee && self.host.task_state(j as u32) != TaskState::Done)
    }

    /// fio_terminate_threads after the thread `tid` exits under `exitall`:
    /// by its `exit_what`, the jobs of its group, the running jobs, or all.
    /// A running job stops at its next pass through fio's loop (it issues
    /// no more I/O and reaps what is in flight); one not started never
    /// starts (run_threads skips a terminated job).
    fn terminate_others(&mut self, tid: u32) {
        let (what, group) = {
            let f = &self.threads[tid as usize].fio;
            (f.exit_what, f.groupid)
        };
        for i in 0..self.threads.len() {
            let state = self.host.task_state(i as u32);
            if state == TaskState::Done {
                continue;
            }
            let started = state != TaskState::NotStarted;
            let hit = match what {
                ExitWhat::Group => self.threads[i].fio.groupid == group,
                ExitWhat::Stonewall => started,
                ExitWhat::All => true,
            };
            if !hit {
                continue;
            }
            self.threads[i].fio.terminate();
            if !started {
                self.threads[i].start_scheduled = true;
                self.host.cancel_task(i as u32);
                self.threads_done += 1;
            }
        }
    }

    /// steadystate.c steadystate_setup: with group_reporting, only the
    /// last job of each run of same-group jobs keeps the group's samples.
    pub(super) fn steadystate_setup(&mut self) {
        let mut prev: Option<(usize, u32)> = None;
        for i in 0..self.threads.len() {
            let f = &self.threads[i].fio;
            if f.ss.is_none() {
                continue;
            }
            let (gr, gid) = (f.group_reporting(), f.groupid);
            if let Some((p, pg)) = prev {
                if gr && pg == gid {
                    if let Some(ss) = self.threads[p].fio.ss.as_mut() {
                        ss.set_holds_data(false);
                    }
                }
            }
            prev = gr.then_some((i, gid));
        }
    }

    /// fio's helper thread at `now` (steadystate.c steadystate_check):
    /// each running job's IOPS and bandwidth over the last second, summed
    /// over its group with group_reporting, into the data holder's window;
    /// a job (or group) whose criterion falls below its limit is attained
    /// and terminated (fio_mark_td_terminate: it issues nothing more and
    /// reaps what is in flight).
    pub(super) fn steady_tick(&mut self, now: Ns) {
        let (mut group_bw, mut group_iops, mut group_over) = (0u64, 0u64, 0u32);
        let mut prev_group: Option<u32> = None;
        for i in 0..self.threads.len() {
            let state = self.host.task_state(i as u32);
            let f = &mut self.threads[i].fio;
            let skip = match f.ss.as_ref() {
                None => true,
                Some(ss) => ss.attained,
            };
            if skip || matches!(state, TaskState::NotStarted | TaskState::Done) {
                continue;
            }
            let gr = f.group_reporting();
            if !gr || prev_group != Some(f.groupid) {
                (group_bw, group_iops, group_over) = (0, 0, 0);
            }
            prev_group = Some(f.groupid);
            if let Some((bw, iops)) = f.ss_rates(now) {
                group_bw += bw;
                group_iops += iops;
                group_over += 1;
            }
            let Some(ss) = f.ss.as_mut() else { continue };
            // Only the holder checks; not before one job of the group is
            // past its ramp.
            if !ss.holds_data || group_over == 0 {
                continue;
            }
            if !ss.add_sample(group_iops, group_bw) {
                continue;
            }
            let gid = f.groupid;
            if gr {
                for t in self.threads.iter_mut().filter(|t| t.fio.groupid == gid) {
                    if let Some(ss) = t.fio.ss.as_mut() {
                        ss.attained = true;
                    }
                    t.fio.terminate();
                }
            } else {
                ss.attained = true;
                f.terminate();
            }
        }
        if self.threads_done < self.threads.len() {
            self.queue.schedule(
                now + crate::workload::fio::steadystate::SS_TICK,
                Ev::SteadyTick,
            );
        }
    }

    pub(super) fn thread_start(&mut self, tid: u32, now: Ns) {
        if self.host.task_state(tid) == TaskState::Done {
            // Terminated before it started (exitall).
            return;
        }
        self.host.set_running(tid);
        let fio = &mut self.threads[tid as usize].fio;
        fio.start(now);
        if fio.buffered && fio.invalidate {
            // fio's file_invalidate_cache at open: BLKFLSBUF on a block
            // device drops its clean cached pages.
            if let Some(c) = self.cache.as_mut() {
                c.cache.invalidate_clean();
            }
        }
        self.host.start_task(tid, now);
        self.sq_start(tid, now);
        self.thread_run(tid, now, true);
    }

    /// The thread runs fio's loop from `now` (after reaping what is ready
    /// when `reap_first`), carrying out each step on its core until it
    /// sleeps, spins, or hands the next submission to a later event. (Every
    /// caller calls it last in the handler of the event it runs from: see
    /// `thread_pass`.)
    pub(super) fn thread_run(&mut self, tid: u32, now: Ns, reap_first: bool) {
        let mut next = self.thread_pass(tid, now, reap_first);
        while let Some(at) = next {
            next = self.thread_pass(tid, at, false);
        }
    }

    /// One pass of the thread's loop, as the handler of a `Run` or `Submit`
    /// event. After an asynchronous submission the block layer's dispatch
    /// and the thread's next pass (`Submit`) are due at the same time, in
    /// that order; when nothing else is due by then they would be the next
    /// two events popped, so they take their turns at once instead
    /// (`EventQueue::turn_now`: the same sequence numbers, clock and event
    /// count as scheduled and popped): the dispatch runs here and the next
    /// pass's time is returned. The handler that called `thread_run` does
    /// nothing after it, so nothing runs between them either way.
    fn thread_pass(&mut self, tid: u32, now: Ns, reap_first: bool) -> Option<Ns> {
        let ti = tid as usize;
        if self.host.task_state(tid) == TaskState::Done {
            return None;
        }
        if self.host.held_by_other(self.host.task_cpu(tid), tid) {
            // Another thread spins on this core: wait until it lets go.
            self.host.defer(tid, 0, None);
            return None;
        }
        self.host.set_running(tid);
        let mut now = now;
        if reap_first && !self.threads[ti].fio.done.is_empty() {
            now = self.reap(tid, now, false);
        }
        if std::mem::take(&mut self.threads[ti].flush_after_writeback)
            && !self.device_flush(tid, now)
        {
            // Back from an fsync's writeback: its device flush sleeps.
            return None;
        }
        // Back from an fsync=N sync it slept in.
        self.threads[ti].fio.sync_returned(now);
        // Back from a zone reset it slept in.
        if let Some(err) = self.threads[ti].zone_reset_done.take() {
            self.threads[ti].fio.zone_reset_returned(now, err);
        }
        if self.threads[ti].bop.is_some() && self.threads[ti].iowq_cpu.is_none() {
            // Back in a buffered call it slept in (an io-wq worker runs
            // an io_uring write: the thread goes on with fio's loop).
            if let Some(end) = self.buffered_step(tid, now) {
                self.queue.schedule(end, Ev::Submit(tid));
            }
            return None;
        }
        let mut last_unit: Option<IoUnit> = None;
        let stop = loop {
            let fio = &mut self.threads[ti].fio;
            let step = fio.next(now);
            if !matches!(step, Step::Submit(_)) {
                // fio commits what it queued before it waits, reaps or
                // sleeps (td_io_getevents calls the engine's commit).
                now = self.commit_batch(tid, now);
            }
            let fio = &mut self.threads[ti].fio;
            match step {
                Step::Think { spin, sleep } => {
                    let spun = self.host.spin_task(tid, now, now + spin);
                    self.host.account_sys(tid, spin);
                    if sleep > 0 {
                        self.sleep_timer(tid, spun, spun + sleep);
                        return None;
                    }
                    now = spun;
                }
                Step::Sync if fio.engine == IoEngine::Null => {
                    // A replayed sync on the null engine: null_queue
                    // completes any io_u in user space, no kernel.
                    let end = self.host.user_io(tid, now);
                    let fio = &mut self.threads[ti].fio;
                    fio.sync_started(now);
                    fio.sync_returned(end);
                    now = end;
                }
                Step::Sync => match self.fsync_call(tid, now) {
                    Some(end) => now = end,
                    None => return None,
                },
                Step::ZoneReset {
                    offset,
                    device: true,
                    ..
                } => {
                    self.zone_reset_call(tid, now, offset);
                    return None;
                }
                Step::ZoneReset { device: false, .. } => {
                    // Emulated zones: fio's own work for the I/O, as the
                    // null engine's, and the trim is done.
                    let end = self.host.user_io(tid, now);
                    self.threads[ti].fio.zone_reset_returned(end, 0);
                    now = end;
                }
                Step::SleepUntil(at) => {
                    self.sleep_timer(tid, now, at);
                    return None;
                }
                Step::ReapUntil(at) => {
                    if fio.inflight == 0 {
                        // Nothing can complete: iolog_delay's loop spins
                        // on the core until the time.
                        let spun = self.host.spin_task(tid, now, at);
                        self.host.account_sys(tid, spun - now);
                        now = spun;
                        continue;
                    }
                    self.pace_spin(tid, now, at);
                    return None;
                }
                Step::Submit(unit) => {
                    if fio.offload {
                        now = self.offload_submit(tid, unit, now);
                        continue;
                    }
                    if fio.buffered {
                        fio.count_think();
                        if let Some(end) = self.buffered_submit(tid, unit, now) {
                            // One call per event keeps the cache's changes
                            // in time order.
                            self.queue.schedule(end, Ev::Submit(tid));
                        }
                        return None;
                    }
                    if fio.engine == IoEngine::Null {
                        now = self.null_submit(tid, unit, now);
                        continue;
                    }
                    if fio.engine == IoEngine::E4defrag {
                        now = self.defrag_submit(tid, unit, now);
                        continue;
                    }
                    if fio.engine.syscall_only() {
                        now = self.syscall_submit(tid, unit, now);
                        continue;
                    }
                    let (end, undispatched) = self.direct_submit(tid, unit, now);
                    now = end;
                    last_unit = Some(unit);
                    let fio = &mut self.threads[ti].fio;
                    if !fio.sync {
                        if let Some(key) = undispatched {
                            if self.queue.turn_now(now) {
                                // The dispatch's turn, then the next pass's
                                // (its sequence number before any event the
                                // dispatch schedules).
                                let next = self.queue.turn_now(now);
                                debug_assert!(next, "nothing became due");
                                self.block.dispatch(key, now, blk_ctx!(self));
                                return Some(now);
                            }
                            self.queue
                                .schedule(now, Ev::Block(BlockEvent::Dispatch(key)));
                        }
                        self.queue.schedule(now, Ev::Submit(tid));
                        return None;
                    }
                    break fio.stop();
                }
                stop @ (Step::Reap | Step::Wait | Step::Done { .. }) => break stop,
            }
        };
        self.thread_stop(tid, now, stop, last_unit);
        None
    }

    /// fio's fsync=N sync from `now`: the call and the page cache's
    /// writeback on the thread's core. Returns when it returned, or None if
    /// the thread sleeps in it.
    fn fsync_call(&mut self, tid: u32, now: Ns) -> Option<Ns> {
        let entered = self.host.enter_kernel(tid, now);
        self.threads[tid as usize].fio.sync_started(now);
        if !self.fsync_wait(tid, entered) {
            return None;
        }
        let end = self.host.exit_kernel(tid, entered);
        self.threads[tid as usize].fio.sync_returned(end);
        Some(end)
    }

    /// fsync from `now` in the kernel, as blkdev_fsync (block/fops.c)
    /// does it: file_write_and_wait_range writes back a buffered job's
    /// dirty pages and waits for them (a direct job's block device has
    /// nothing cached in the host), then blkdev_issue_flush flushes the
    /// device's write cache. Returns false if the thread sleeps; a thread
    /// that sleeps in the writeback sends the flush when it is woken
    /// (`flush_after_writeback`, in `thread_run`).
    fn fsync_wait(&mut self, tid: u32, now: Ns) -> bool {
        if self.threads[tid as usize].fio.buffered && !self.buffered_fsync(tid, now) {
            self.threads[tid as usize].flush_after_writeback = true;
            return false;
        }
        self.device_flush(tid, now)
    }

    /// blkdev_issue_flush from `now`: an empty REQ_PREFLUSH bio. A queue
    /// without a volatile write cache ends it in blk_insert_flush (no
    /// flush policy: blk_mq_end_request) before any driver sees it; one
    /// with it sends the driver a flush request (REQ_OP_FLUSH), and the
    /// thread sleeps until it completes (submit_bio_wait). Returns false
    /// if the thread sleeps.
    fn device_flush(&mut self, tid: u32, now: Ns) -> bool {
        if flush_policy(self.block.write_cache, false, true, false).is_empty() {
            return true;
        }
        let end = self
            .host
            .run_task(tid, now, 0, self.block.submit_work(&self.host));
        let cpu = self.host.task_cpu(tid);
        let key = self.block.rqs.insert(Request::flush(tid, cpu, end));
        let mapped = self.submit_rq(key, cpu, end);
        self.host.account_sys(tid, mapped - end);
        self.host.block_on_io(tid, mapped, &*self.driver);
        false
    }

    /// fio's zbd_reset_wp from `now`: the BLKRESETZONE ioctl
    /// (blkdev_zone_mgmt, block/blk-zoned.c) submits a REQ_OP_ZONE_RESET
    /// for the zone at `offset` and sleeps until it completes
    /// (submit_bio_wait); `device_completed` wakes the thread.
    fn zone_reset_call(&mut self, tid: u32, now: Ns, offset: u64) {
        let entered = self.host.enter_kernel(tid, now);
        let end = self
            .host
            .run_task(tid, entered, 0, self.block.submit_work(&self.host));
        let cpu = self.host.task_cpu(tid);
        let key = self
            .block
            .rqs
            .insert(Request::zone_reset(tid, cpu, end, offset));
        let mapped = self.submit_rq(key, cpu, end);
        self.host.account_sys(tid, mapped - end);
        self.host.block_on_io(tid, mapped, &*self.driver);
    }

    /// fio's null engine: the I/O completes in user space, no kernel.
    /// Returns when fio is done with it.
    fn null_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Ns {
        let end = self.host.user_io(tid, now);
        let cpu = self.host.task_cpu(tid);
        let key = self
            .block
            .rqs
            .insert(Request::fio(tid, unit, cpu, now, end, end, false, 0));
        // io_u.c fill_io_u: every io_u carries td->ioprio, whatever the
        // engine (log_prio prints it).
        let fio = &mut self.threads[tid as usize].fio;
        self.block.rqs.get_mut(key).ioprio = fio.ioprio_for(unit.ddir, unit.len);
        self.threads[tid as usize].fio.completed_inline(key);
        self.submitted_ios += 1;
        end
    }

    /// fio's falloc and ftruncate engines: fio's work and one system call
    /// (fallocate(2), ftruncate(2)) that returns with the I/O done, no
    /// request (engines/falloc.c fio_fallocate_queue, engines/ftruncate.c
    /// fio_ftruncate_queue: FIO_Q_COMPLETED). The file system's extent work
    /// inside the call is not modelled (an assumption: on a file whose
    /// blocks are allocated, fallocate's is a lookup; punching a hole or
    /// truncating frees blocks, which costs more on a real file system).
    /// Returns when the call has returned.
    fn syscall_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Ns {
        let call = self.host.submit_call(tid, now, 0, true);
        let cpu = self.host.task_cpu(tid);
        // A synchronous engine's issue time is taken before the call
        // (ioengines.c td_io_queue), so clat covers the call.
        let key = self.block.rqs.insert(Request::fio(
            tid,
            unit,
            cpu,
            now,
            call.user_done,
            call.user_done,
            false,
            0,
        ));
        let fio = &mut self.threads[tid as usize].fio;
        self.block.rqs.get_mut(key).ioprio = fio.ioprio_for(unit.ddir, unit.len);
        self.threads[tid as usize].fio.completed_inline(key);
        self.submitted_ios += 1;
        call.end
    }

    /// An I/O the kernel fails before it reaches a queue (a discard on a
    /// disk that cannot discard: blk_ioctl_discard returns EOPNOTSUPP):
    /// fio's work and the system call, no request, and the I/O is done
    /// with its error when the call returns (fio's trim runs
    /// synchronously in every engine, do_io_u_trim).
    fn failed_submit(&mut self, tid: u32, unit: IoUnit, status: BlkStatus, now: Ns) -> Ns {
        let end = self.host.submit_call(tid, now, 0, true).end;
        let err = crate::block::complete::blk_status_to_errno(status);
        self.threads[tid as usize].fio.submit_failed(end, unit, err);
        self.submitted_ios += 1;
        end
    }

    /// A direct I/O from `now`: fio's user-space work, then the system
    /// call into the block layer and the driver's queue_rq on the thread's
    /// core. Returns when the submitter is done, and, for an asynchronous
    /// call that goes in by itself, the request whose dispatch is due then:
    /// the caller dispatches it (by an event, scheduled before anything
    /// else, or at once: `thread_pass`); every other request's dispatch is
    /// scheduled here.
    fn direct_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> (Ns, Option<u32>) {
        if let Some(status) = self.block.fails_at_submit(unit.ddir) {
            return (self.failed_submit(tid, unit, status, now), None);
        }
        let sq_cpu = self.threads[tid as usize].sq_cpu;
        // With iodepth_batch_submit the submission is counted per commit.
        let batched = self.threads[tid as usize].batch_submit > 0;
        let fio = &mut self.threads[tid as usize].fio;
        let sync = fio.sync;
        // A synchronous call sleeps in the kernel and returns through the
        // wake-up; an asynchronous one returns at once. With an SQ thread
        // (sqpoll.rs) fio only fills the SQE: the SQ thread enters the
        // block layer, on its CPU, which is the request's submitting CPU.
        let (usr_end, end) = if sq_cpu.is_some() {
            let u = self.host.user_io(tid, now);
            (u, u)
        } else {
            let call = self
                .host
                .submit_call(tid, now, self.block.submit_work(&self.host), !sync);
            (call.user_done, call.end)
        };
        let issue = if sync { usr_end } else { end };
        let cpu = sq_cpu.unwrap_or_else(|| self.host.task_cpu(tid));
        let key = self.block.rqs.insert(Request::fio(
            tid,
            unit,
            cpu,
            now,
            issue,
            usr_end,
            fio.polled,
            fio.buf_contiguous,
        ));
        if fio.fua_writes && unit.ddir == Ddir::Write {
            self.block.rqs.get_mut(key).fua = true;
        }
        self.block.rqs.get_mut(key).ioprio = fio.ioprio_for(unit.ddir, unit.len);
        self.block.rqs.get_mut(key).passthrough = fio.engine.passthrough();
        self.block.rqs.get_mut(key).write_op = fio.write_op;
        self.block.rqs.get_mut(key).hint = fio.placement_for(unit.ddir);
        if batched {
            fio.queued_in_batch();
        } else {
            fio.queued();
        }
        if unit.ddir == Ddir::Write {
            // fsync=N counts issued writes (io_u.c: io_issues[DDIR_WRITE]).
            fio.write_done();
        }
        self.submitted_ios += 1;
        fio.count_think();
        let t = &mut self.threads[tid as usize];
        if t.batch_submit > 0 {
            // Queued in fio's batch (libaio's iocbs, io_uring's SQ ring):
            // the kernel sees it at the commit, once iodepth_batch_submit
            // are queued or the loop stops submitting.
            t.batch.push(key);
            let end = if t.batch.len() >= t.batch_submit {
                self.commit_batch(tid, end)
            } else {
                end
            };
            self.breakdown.submit_ns += u128::from(end - now);
            return (end, None);
        }
        if sq_cpu.is_some() {
            // fio's commit right away (iodepth_batch_submit 1): the tail,
            // a wake-up if the SQ thread slept, then the SQ thread's issue.
            let (fio_end, sq_done) = self.sq_commit(tid, 1, end);
            self.block.rqs.get_mut(key).issue = fio_end;
            let mapped = self.submit_rq(key, cpu, sq_done);
            self.sq_touched(tid, mapped);
            self.breakdown.submit_ns += u128::from(mapped - now);
            return (fio_end, None);
        }
        // dma_map_sg in the driver's queue_rq, inline on the thread's core
        // at the event's time (the thread holds its core, so the allocator
        // is called in time order) when the request will get a tag at once.
        // One that will wait for a tag is mapped when it is dispatched, by
        // the run that hands it the tag (`restart_dispatch`).
        let (mapped, undispatched) = if sync {
            (self.submit_rq(key, cpu, end), None)
        } else {
            let mapped = self.block.map_for_dispatch(key, cpu, end, blk_ctx!(self));
            (mapped, Some(key))
        };
        self.host.account_sys(tid, mapped - end);
        self.breakdown.submit_ns += u128::from(mapped - now);
        (mapped, undispatched)
    }

    /// fio's td_io_commit at `now` (ioengines.c): the I/Os thread `tid`
    /// queued since its last commit go into the kernel in one call
    /// (io_submit, io_uring_enter), plugged when there are more than two
    /// (block/merge.rs); fio's issue time of each is when the call
    /// returned (engines/libaio.c fio_libaio_queued, engines/io_uring.c
    /// fio_ioring_queued). (The call's own CPU time is still booked per
    /// I/O by `direct_submit`.) With an SQ thread (sqpoll.rs) fio only
    /// writes the tail (and wakes the thread if it slept), and the SQ
    /// thread issues the batch on its CPU. Returns when fio goes on.
    fn commit_batch(&mut self, tid: u32, now: Ns) -> Ns {
        let ti = tid as usize;
        if self.threads[ti].batch.is_empty() {
            return now;
        }
        let n = self.threads[ti].batch.len() as u64;
        self.threads[ti].fio.committed(n);
        let (fio_end, at) = self.sq_commit(tid, n, now);
        for &k in &self.threads[ti].batch {
            self.block.rqs.get_mut(k).issue = fio_end;
        }
        self.block
            .submit_batch(tid, &self.threads[ti].batch, at, blk_ctx!(self));
        self.threads[ti].batch.clear();
        fio_end
    }

    /// fio's loop stopped submitting at `now`: reap what is ready, wait for
    /// the I/O in flight (asleep in the kernel, polling, or hybrid polling:
    /// `last_unit`, a synchronous call's I/O, picks the sleep), or end.
    fn thread_stop(&mut self, tid: u32, now: Ns, stop: Step, last_unit: Option<IoUnit>) {
        let fio = &self.threads[tid as usize].fio;
        match stop {
            Step::Reap => {
                // Completions are ready: fio's getevents returns at once
                // (the null engine reaps in user space, without a system
                // call). (A sync engine's buffered call already returned to
                // user space: nothing more to reap by system call.)
                // With an SQ thread fio reads the CQ ring in user space.
                let syscall = fio.engine != IoEngine::Null
                    && !fio.sync
                    && self.threads[tid as usize].sq_cpu.is_none();
                let end = self.reap(tid, now, syscall);
                self.queue.schedule(end, Ev::Submit(tid));
            }
            Step::Wait if self.threads[tid as usize].sq_cpu.is_some() => {
                // fio_ioring_getevents with SQPOLL: a user-space loop on
                // the CQ ring, no io_uring_enter.
                self.sq_cq_spin(tid, now);
            }
            Step::Wait if fio.polled => {
                // Hybrid polling (io_poll_delay >= 0): sleep first, once
                // per request, then spin (blk_mq_poll_hybrid_sleep).
                let sleep = self.block.hybrid_sleep(now, last_unit);
                if sleep > 0 {
                    self.host.set_timer(tid, Some(now + sleep));
                    self.host
                        .block(tid, TaskState::HybridSleep, now, &*self.driver);
                    self.queue.schedule(now + sleep, Ev::HybridWake(tid));
                } else {
                    self.host.hold(tid, now);
                }
            }
            Step::Wait => {
                if !fio.sync {
                    // io_getevents: enter the kernel, then sleep in it.
                    self.host.enter_to_wait(tid, now);
                }
                self.host.block_on_io(tid, now, &*self.driver);
            }
            Step::Done { end_fsync } => {
                if end_fsync && !self.fsync_wait(tid, now) {
                    return;
                }
                self.finish(tid, now);
            }
            _ => unreachable!("a stopped loop reaps, waits or ends"),
        }
    }

    /// The hybrid poller's hrtimer fires: the core leaves idle, the thread
    /// is switched back in and spins (or finds the completion that was
    /// posted while it slept at its first poll).
    pub(super) fn hybrid_wake(&mut self, tid: u32, now: Ns) {
        let ti = tid as usize;
        let cpu_id = self.host.task_cpu(tid);
        self.host.set_timer(tid, None);
        let exit = self.host.wake_cpu_by(cpu_id, now, true);
        self.host.make_runnable(cpu_id);
        let switch = self.host.costs().context_switch;
        let resumed = self.host.run_on(cpu_id, now + exit, 0, switch);
        self.host.account_sys(tid, resumed - now - exit);
        self.host.hold(tid, resumed);
        if let Some((key, posted)) = self.threads[ti].hybrid_ready.take() {
            self.poll_complete(tid, key, posted, resumed);
        }
    }

    /// The polling thread `tid` (spinning since `since`) finds request
    /// `key`, posted at `posted`; it lets go of its core: threads that
    /// became runnable meanwhile are switched in first, then it continues.
    fn poll_complete(&mut self, tid: u32, key: u32, posted: Ns, since: Ns) {
        let done = self
            .block
            .poll_complete(tid, key, posted, since, blk_ctx!(self));
        self.threads[tid as usize].fio.io_completed(key);
        self.host.set_running(tid);
        let cpu = self.host.task_cpu(tid);
        let (queue, breakdown) = (&mut self.queue, &mut self.breakdown);
        let next = self.host.release(cpu, done, |other, resumed, ready| {
            if let Some(ready) = ready {
                breakdown.wakeup_ns += u128::from(resumed - ready);
            }
            queue.schedule(resumed, Ev::Run(other));
        });
        self.queue.schedule(next, Ev::Run(tid));
    }

    /// fio 3.36's iolog_delay from `now`: the thread spins on its core,
    /// calling getevents without waiting, until `at` or until one of its
    /// I/Os completes (`device_completed` ends the spin then).
    fn pace_spin(&mut self, tid: u32, now: Ns, at: Ns) {
        let t = &mut self.threads[tid as usize];
        t.pace_spin = Some(at);
        if t.pace_timer != Some(at) {
            t.pace_timer = Some(at);
            self.queue.schedule(at, Ev::PaceWake(tid));
        }
        self.host.hold(tid, now);
    }

    /// The replay's wait ends at `now` (its time came, or a completion):
    /// the spin since it began is system time on the core; threads that
    /// became runnable there meanwhile run first, then the loop goes on
    /// (it reaps what completed, or issues the I/O that was due).
    fn pace_end(&mut self, tid: u32, now: Ns) {
        let ti = tid as usize;
        self.threads[ti].pace_spin = None;
        let since = match self.host.task_state(tid) {
            TaskState::Polling(since) => since,
            _ => now,
        };
        let cpu = self.host.task_cpu(tid);
        let spun = self.host.spin_task(tid, since, now);
        self.host.account_sys(tid, now.saturating_sub(since));
        self.host.set_running(tid);
        let (queue, breakdown) = (&mut self.queue, &mut self.breakdown);
        let next = self.host.release(cpu, spun, |other, resumed, ready| {
            if let Some(ready) = ready {
                breakdown.wakeup_ns += u128::from(resumed - ready);
            }
            queue.schedule(resumed, Ev::Run(other));
        });
        self.queue.schedule(next, Ev::Submit(tid));
    }

    /// The wake-up a replay's wait scheduled: ends the wait if the thread
    /// still spins in it (a completion may have ended it already, and the
    /// thread gone on).
    pub(super) fn pace_wake(&mut self, tid: u32, now: Ns) {
        let t = &mut self.threads[tid as usize];
        if t.pace_timer == Some(now) {
            t.pace_timer = None;
        }
        // (A wake-up of an earlier wait that a completion ended finds the
        // thread in a later one, or none.)
        if t.pace_spin == Some(now) {
            self.pace_end(tid, now);
        }
    }

    /// The thread sleeps on a timer from `now` until `wake` (fio's
    /// usec_sleep); back from it, fio goes on submitting: nothing is reaped
    /// before the queue is full (a rate or thinktime sleep came after a
    /// quiesce, so only a paced replay has completions waiting).
    fn sleep_timer(&mut self, tid: u32, now: Ns, wake: Ns) {
        let fire = self.host.timer_sleep(tid, now, wake, &*self.driver);
        self.queue.schedule(fire, Ev::TimerWake(tid));
    }

    /// The sleep timer of thread `tid` fires at `now`: it runs again once
    /// its core has switched back to it.
    pub(super) fn timer_wake(&mut self, tid: u32, now: Ns) {
        let resumed = self.host.timer_fired(tid, now);
        self.queue.schedule(resumed, Ev::Submit(tid));
    }

    /// The device posted request `key`'s completion at `now`, ended with
    /// `status`: the block layer completes it; its thread (or the page
    /// cache) hears of it.
    pub(super) fn device_completed(&mut self, key: u32, status: BlkStatus, now: Ns) {
        match self.block.complete(key, status, now, blk_ctx!(self)) {
            Completion::Polled { thread } => match self.host.task_state(thread) {
                // A replay's reaping wait polls too: the poller finds it.
                TaskState::Polling(since) if self.threads[thread as usize].pace_spin.is_some() => {
                    self.threads[thread as usize].pace_spin = None;
                    self.poll_complete(thread, key, now, since)
                }
                TaskState::Polling(since) => self.poll_complete(thread, key, now, since),
                _ => self.threads[thread as usize].hybrid_ready = Some((key, now)),
            },
            Completion::Signalled {
                kind: RqKind::Fio,
                thread,
                cpu,
                start,
                at,
            } => {
                // Every fio I/O the request carries completes with it
                // (block/merge.rs); the threads of those merged in from
                // other threads hear of it before the request's own.
                // An offloaded I/O wakes its submit worker instead
                // (`offload.rs`), which reaps it later.
                let mut k = key;
                while k != NO_BIO {
                    let t = self.block.rqs.get(k).thread;
                    let next = self.block.next_bio(k);
                    if self.threads[t as usize].fio.offload {
                        self.offload_wake(k, cpu, at);
                    } else {
                        self.threads[t as usize].fio.io_completed(k);
                    }
                    k = next;
                }
                let mut k = self.block.next_bio(key);
                while k != NO_BIO {
                    let t = self.block.rqs.get(k).thread;
                    if t != thread
                        && !self.threads[t as usize].fio.offload
                        && self.first_in_chain(key, k, t)
                    {
                        self.fio_completion(t, cpu, start, at, false);
                    }
                    k = self.block.next_bio(k);
                }
                if self.threads[thread as usize].fio.offload {
                    let busy = self.host.busy_until(cpu).max(at);
                    self.cpu_idle(cpu, busy);
                } else {
                    self.fio_completion(thread, cpu, start, at, true);
                }
            }
            Completion::Signalled {
                kind: kind @ (RqKind::Flush | RqKind::ZoneReset),
                thread,
                cpu,
                start,
                at,
            } => {
                // submit_bio_wait returns: the fsync or the ioctl goes on.
                let rq = self.block.rqs.remove(key);
                if kind == RqKind::ZoneReset {
                    self.threads[thread as usize].zone_reset_done = Some(rq.error);
                }
                let woken = self.wake_thread_from(thread, cpu, start, at);
                if woken.waker_may_idle {
                    let busy = self.host.cpu(cpu).busy_until;
                    self.cpu_idle(cpu, busy);
                }
            }
            Completion::Signalled { cpu, at, .. } => self.cache_rq_done(key, cpu, at),
            // The write is on the device; its post-flush is on the way.
            Completion::PostFlush => {}
        }
    }

    /// Whether `k` is the first fio I/O of thread `t` in the chain of
    /// request `head` (each thread hears of a completion once).
    fn first_in_chain(&self, head: u32, k: u32, t: u32) -> bool {
        let mut j = head;
        while j != k {
            if self.block.rqs.get(j).thread == t {
                return false;
            }
            j = self.block.next_bio(j);
        }
        true
    }

    /// Thread `thread` has completed I/O, from the completion work on
    /// `cpu` (begun at `start`, done at `at`): a replay's wait ends, or
    /// its getevents wakes if enough are in. The CPU may go idle after
    /// the `last` thread it serves.
    fn fio_completion(&mut self, thread: u32, cpu: u32, start: Ns, at: Ns, last: bool) {
        if self.threads[thread as usize].pace_spin.is_some() {
            // A replay waiting for its next I/O's time reaps it at
            // once (fio 3.36 iolog_delay): its getevents sees the
            // event as the interrupt's work ends.
            self.pace_end(thread, at);
            if last {
                self.cpu_idle(cpu, at);
            }
            return;
        }
        self.sq_touched(thread, at);
        if self.threads[thread as usize].cq_spin {
            // fio spins on the CQ ring (SQPOLL): it sees the CQE as the
            // completion work ends, and goes on once enough are in.
            if self.threads[thread as usize].fio.enough_to_wake() {
                self.sq_cq_found(thread, at);
            }
            if last {
                self.cpu_idle(cpu, at);
            }
            return;
        }
        let fio = &self.threads[thread as usize].fio;
        // A thread asleep in a zone reset's ioctl (a zbd trim sent with
        // other I/O in flight: zbd_do_io_u_trim calls BLKRESETZONE from
        // td_io_queue) sleeps on until the reset returns; woken by a
        // completion it would go on as if the reset had returned, and
        // a second reset would lose the first one's zone lock.
        let wake_needed = self.host.task_state(thread) == TaskState::WaitIo
            && fio.enough_to_wake()
            && !fio.in_zone_reset();
        if !wake_needed {
            if last {
                self.cpu_idle(cpu, at);
            }
            return;
        }
        let woken = self.wake_thread_from(thread, cpu, start, at);
        if woken.waker_may_idle && last {
            let busy = self.host.busy_until(cpu);
            self.cpu_idle(cpu, busy);
        }
    }

    /// Wake thread `tid` (asleep in the kernel) from `irq_cpu` at `at`:
    /// returns when the interrupt's CPU is done with it.
    pub(super) fn wake_thread(&mut self, tid: u32, irq_cpu: u32, at: Ns) -> Ns {
        self.wake_thread_from(tid, irq_cpu, at, at).waker_done
    }

    /// (`irq_start`: when the interrupt's work began.)
    fn wake_thread_from(
        &mut self,
        tid: u32,
        irq_cpu: u32,
        irq_start: Ns,
        at: Ns,
    ) -> crate::host::task::Woken {
        let from_irq = self.block.signal() == CompletionSignal::Interrupt;
        let woken = self.host.wake_up(tid, irq_cpu, irq_start, at, from_irq);
        self.breakdown.cstate_exit_ns += u128::from(woken.cstate_exit);
        self.breakdown.wakeup_ns += u128::from(woken.wakeup);
        if let Some(runs) = woken.runs_at {
            self.queue.schedule(runs, Ev::Run(tid));
        }
        woken
    }

    /// fio reaps the thread's completed I/Os at `now` (one getevents
    /// call's worth; its entry and exit when `syscall`): fio's completion
    /// work on the thread's core, then each I/O's latencies and bytes.
    fn reap(&mut self, tid: u32, now: Ns, syscall: bool) -> Ns {
        let fio = &mut self.threads[tid as usize].fio;
        let n = fio.reap_batch();
        let end = self.host.reap_call(tid, now, n, syscall);
        for _ in 0..n {
            let Some(key) = fio.done.pop_front() else {
                break;
            };
            let rq = self.block.rqs.remove(key);
            self.completed_ios += 1;
            self.breakdown.ios += 1;
            if rq.error == 0 {
                fio.record_io(now, rq.bio, rq.start, rq.issue, rq.ioprio);
            } else {
                // SG_IO returns 0 and flags a failed command in the
                // header's info (SG_INFO_CHECK), which fio's sg engine
                // turns into EIO whatever the sense said (engines/sg.c
                // fio_sgio_ioctl_doio); libzbc's failed zbc_pread /
                // zbc_pwrite is EIO too (engines/libzbc.c libzbc_rw).
                let err = if matches!(fio.engine, IoEngine::Sg | IoEngine::Libzbc) {
                    crate::workload::fio::errors::EIO
                } else {
                    rq.error
                };
                fio.io_failed(now, rq.bio, Some(rq.issue - rq.start), err);
            }
        }
        fio.sample_bw(now);
        end
    }

    /// The thread's job ends at `now`; the last one of a stonewall wave
    /// starts the next wave.
    fn finish(&mut self, tid: u32, now: Ns) {
        self.threads[tid as usize].fio.end = now;
        let cpu = self.host.exit_task(tid);
        self.sq_stop(tid, now);
        self.threads_done += 1;
        self.cpu_idle(cpu, now);
        if self.exitall {
            self.terminate_others(tid);
        }
        // A job waiting for this one may start now.
        self.start_ready(now);
        let wave = self.current_wave;
        let wave_done =
            self.threads.iter().enumerate().all(|(i, t)| {
                t.fio.wave != wave || self.host.task_state(i as u32) == TaskState::Done
            });
        if wave_done {
            if let Some(next) = self
                .threads
                .iter()
                .filter(|t| t.fio.wave > wave)
                .map(|t| t.fio.wave)
                .min()
            {
                self.start_wave(next, now);
            }
        }
    }
}
