//! fio's io_submit_mode=offload on the machine (fio 3.33 rate-submit.c,
//! workqueue.c, backend.c do_io): the job's thread takes an io_u (it
//! waits on free_cond when all iodepth are out), fills it and hands it to
//! a submit worker (workqueue_enqueue: the worker's list, then
//! pthread_cond_signal, a FUTEX_WAKE of the idle worker). A worker is a
//! thread of its own whose engine runs at iodepth 1
//! (io_workqueue_init_worker_fn): it queues the I/O (td_io_queue), waits
//! for it (io_u_queued_complete with one event), accounts it, and puts the
//! io_u back (put_io_u: a signal of the job's free_cond, which wakes the
//! job's thread if it waits), then sleeps on its own condition again.
//!
//! A worker is not a task of the host model: its work is booked on the CPU
//! it runs on (`Host::run_on`), not in the job's rusage: fio 3.33 reads
//! that with getrusage(RUSAGE_THREAD) in the job's thread (lib/getrusage.c;
//! on this project's machine the real fio's job at iodepth 1 reports
//! 1.3 s of CPU where its process used 2.8 s). Each I/O's worker runs
//! on the first idle CPU of the job's affinity other than the job
//! thread's (workers inherit it: rate_submit_init runs after the job set
//! it), else on the job thread's CPU: an assumption in the spirit of
//! select_idle_sibling. An I/O's request records that CPU (`Request::cpu`).
//!
//! fio 3.33's own offload can hang before any I/O: start_worker
//! (workqueue.c) sets `sw->flags = SW_F_IDLE` after pthread_create,
//! overwriting the SW_F_RUNNING that a worker quick to start has already
//! set, and workqueue_init then waits forever for every worker to run
//! (seen with gdb on this project's 2-CPU machine: the job thread in
//! workqueue_init's pthread_cond_wait, every worker idle on its own
//! condition; in most runs at iodepth 16, some at 4, none seen at 1). That
//! is a race of fio's thread start-up, not a property of the I/O path:
//! flashpath runs the workers as fio means them to run.

use super::overlap::Admit;
use super::{Ev, Machine};
use crate::block::Request;
use crate::host::task::TaskState;
use crate::sim::Ns;
use crate::types::{Ddir, IoUnit};
use crate::workload::fio::IoEngine;

impl Machine {
    /// The job's thread `tid` hands `unit` to a submit worker from `now`:
    /// fio's work for the io_u (get_io_u, fill_io_u: its start time is
    /// `now`) and the FUTEX_WAKE of an idle worker (entry, try_to_wake_up,
    /// an IPI to another CPU, exit). Returns when the thread goes on.
    pub(super) fn offload_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Ns {
        let ti = tid as usize;
        let costs = self.host.costs();
        let cpu = self.host.task_cpu(tid);
        let allowed = self.host.task_allowed(tid);
        let worker = (0..self.host.ncpus())
            .filter(|c| allowed.is_empty() || allowed.contains(c))
            .find(|&c| c != cpu && self.host.cpu_free(c))
            .unwrap_or(cpu);
        let ipi = if worker == cpu { 0 } else { costs.ipi };
        let call = self.host.submit_call(tid, now, costs.wakeup + ipi, true);
        let fio = &mut self.threads[ti].fio;
        // The issue time is the worker's (`offload_run`).
        let key = self.block.rqs.insert(Request::fio(
            tid,
            unit,
            worker,
            now,
            call.end,
            call.user_done,
            false,
            fio.buf_contiguous,
        ));
        let rq = self.block.rqs.get_mut(key);
        rq.fua = fio.fua_writes && unit.ddir == Ddir::Write;
        rq.ioprio = fio.ioprio_for(unit.ddir, unit.len);
        rq.hint = fio.placement_for(unit.ddir);
        if fio.serialize_overlap {
            let start = fio.file_offset(&unit);
            if let Some(ov) = self.overlap.as_mut() {
                ov.handed(key, tid, start, start + u64::from(unit.len));
            }
        }
        let fio = &mut self.threads[ti].fio;
        fio.offload_queued();
        if unit.ddir == Ddir::Write {
            fio.write_done();
        }
        fio.count_think();
        self.submitted_ios += 1;
        self.breakdown.submit_ns += u128::from(call.end - now);
        // The worker leaves its sleep: its CPU may leave idle first.
        let exit = self.host.wake_cpu(worker, call.end);
        self.breakdown.cstate_exit_ns += u128::from(exit);
        self.host.make_runnable(worker);
        let resumed = self
            .host
            .run_on(worker, call.end + exit, 0, costs.context_switch);
        self.account_worker(worker, 0, costs.context_switch);
        self.breakdown.wakeup_ns += u128::from(resumed - call.end);
        self.queue.schedule(resumed, Ev::OffloadRun(key));
        call.end
    }

    /// The worker of request `key` runs its engine at `now`
    /// (io_workqueue_fn -> td_io_queue): the null engine completes it in
    /// user space (FIO_SYNCIO at iodepth 1); a synchronous engine's call
    /// takes its issue time before the call and sleeps in it; libaio's
    /// io_submit returns with the issue time (FIO_ASYNCIO_SETS_ISSUE_TIME)
    /// and the worker sleeps in io_getevents.
    pub(super) fn offload_run(&mut self, key: u32, now: Ns) {
        let costs = self.host.costs();
        let (tid, worker) = {
            let rq = self.block.rqs.get(key);
            (rq.thread, rq.cpu)
        };
        // check_overlap, before td_io_queue (rate-submit.c
        // io_workqueue_fn; `overlap.rs`).
        let now = if self.threads[tid as usize].fio.serialize_overlap {
            match self.overlap_admit(key, worker, now) {
                Admit::Go(at) => at,
                Admit::Wait => return,
            }
        } else {
            now
        };
        let engine = self.threads[tid as usize].fio.engine;
        let usr = self.host.run_on(worker, now, costs.fio_submit, 0);
        self.account_worker(worker, costs.fio_submit, 0);
        if engine == IoEngine::Null {
            self.block.rqs.get_mut(key).issue = now;
            self.queue.schedule(usr, Ev::OffloadReap(key));
            return;
        }
        let submit = self.block.submit_work(&self.host);
        let aio = engine == IoEngine::Libaio;
        let sys = costs.syscall_entry + submit + if aio { costs.syscall_exit } else { 0 };
        let end = self.host.run_on(worker, usr, 0, sys);
        self.account_worker(worker, 0, sys);
        self.block.rqs.get_mut(key).issue = if aio { end } else { usr };
        let mapped = self.submit_rq(key, worker, end);
        let asleep = if aio {
            let entry = costs.syscall_entry;
            self.account_worker(worker, 0, entry);
            self.host.run_on(worker, mapped, 0, entry)
        } else {
            mapped
        };
        self.host.make_unrunnable(worker);
        self.cpu_idle(worker, asleep);
    }

    /// Request `key`'s completion work ended on `irq_cpu` at `at`: it wakes
    /// the worker asleep in its call (the wake-up on the interrupt's CPU,
    /// an IPI, the worker's CPU leaving idle, the switch and the return to
    /// user space), which then reaps it.
    pub(super) fn offload_wake(&mut self, key: u32, irq_cpu: u32, at: Ns) {
        let costs = self.host.costs();
        let worker = self.block.rqs.get(key).cpu;
        let mut t = self.host.run_irq(irq_cpu, at, costs.wakeup);
        if worker != irq_cpu {
            t += self.host.cpu(worker).scaled(costs.ipi);
        }
        let exit = self.host.wake_cpu(worker, t);
        self.breakdown.cstate_exit_ns += u128::from(exit);
        self.host.make_runnable(worker);
        let switch = costs.context_switch + costs.syscall_exit;
        let resumed = self.host.run_on(worker, t + exit, 0, switch);
        self.account_worker(worker, 0, switch);
        self.breakdown.wakeup_ns += u128::from(resumed - at);
        self.queue.schedule(resumed, Ev::OffloadReap(key));
    }

    /// The worker reaps request `key` at `now`: the I/O's latencies and
    /// bytes, fio's completion work, then put_io_u, whose free_cond signal
    /// wakes the job's thread if it sleeps (for an io_u, or at the end for
    /// the last ones: workqueue_flush); the worker sleeps again.
    pub(super) fn offload_reap(&mut self, key: u32, now: Ns) {
        let costs = self.host.costs();
        let rq = self.block.rqs.remove(key);
        let (tid, worker) = (rq.thread, rq.cpu);
        if self.threads[tid as usize].fio.serialize_overlap {
            // io_completed clears IO_U_F_FLIGHT first.
            self.overlap_reaped(key, now);
        }
        let fio = &mut self.threads[tid as usize].fio;
        fio.offload_reaped();
        if rq.error == 0 {
            fio.record_io(now, rq.bio, rq.start, rq.issue, rq.ioprio);
        } else {
            fio.io_failed(now, rq.bio, Some(rq.issue - rq.start), rq.error);
        }
        fio.sample_bw(now);
        self.completed_ios += 1;
        self.breakdown.ios += 1;
        let mut end = self.host.run_on(worker, now, costs.fio_complete, 0);
        self.account_worker(worker, costs.fio_complete, 0);
        if self.host.task_state(tid) == TaskState::WaitIo {
            let woken = self.host.wake_up(tid, worker, end, end, false);
            self.breakdown.wakeup_ns += u128::from(woken.wakeup);
            if let Some(runs) = woken.runs_at {
                self.queue.schedule(runs, Ev::Run(tid));
            }
            end = woken.waker_done.max(end);
        }
        // Back to pthread_cond_wait: FUTEX_WAIT.
        let asleep = self.host.run_on(worker, end, 0, costs.syscall_entry);
        self.account_worker(worker, 0, costs.syscall_entry);
        self.host.make_unrunnable(worker);
        self.cpu_idle(worker, asleep);
    }

    /// A worker's `usr` and `sys` reference-ns on `cpu`, in the `offload`
    /// counters. Not in the job's rusage: fio 3.33 reads it with
    /// getrusage(RUSAGE_THREAD) in the job's thread (lib/getrusage.c,
    /// CONFIG_RUSAGE_THREAD on Linux), and a worker's own statistics,
    /// which sum_thread_stats adds to the job's at its exit
    /// (rate-submit.c io_workqueue_exit_worker_fn), never read its rusage
    /// (no update_rusage_stat in the worker).
    pub(super) fn account_worker(&mut self, cpu: u32, usr: Ns, sys: Ns) {
        let c = self.host.cpu(cpu);
        self.offload_worker_ns += c.scaled(usr) + c.scaled(sys);
    }
}
