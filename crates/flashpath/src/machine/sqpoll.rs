//! io_uring's SQ polling thread (fio's `sqthread_poll`: IORING_SETUP_SQPOLL)
//! on the machine, as Linux 6.12 (io_uring/sqpoll.c) and fio 3.33
//! (engines/io_uring.c) run it.
//!
//! The ring's SQ thread is a kernel thread (create_io_thread) that loops in
//! io_sq_thread: it takes the SQEs the application wrote to the ring and
//! issues them (io_submit_sqes, the block layer's submit path and the
//! driver's queue_rq, on its own CPU), runs the ring's task work, and while
//! it has nothing to do it spins, until `sq_thread_idle` has passed since
//! it last did work; then it sets IORING_SQ_NEED_WAKEUP and sleeps. fio
//! leaves sq_thread_idle at 0, which the kernel makes HZ jiffies: one
//! second (io_sq_offload_create). The thread yields to other runnable
//! threads of its CPU (need_resched, cond_resched), so its spin fills the
//! CPU's otherwise idle time: the CPU is busy for as long as the thread
//! polls.
//!
//! fio's side: its commit (fio_ioring_commit) only writes the SQ ring's
//! tail, and calls io_uring_enter(IORING_ENTER_SQ_WAKEUP) only when the
//! ring's flags carry NEED_WAKEUP (the thread slept); the issue time of
//! each I/O is the commit (fio_ioring_queued). Its getevents
//! (fio_ioring_getevents) never enters the kernel with SQPOLL: it reads the
//! CQ ring in a loop until enough events are in, spinning on its CPU in
//! user space.
//!
//! Simplifications (assumptions): the SQ thread takes an SQE at the commit
//! (it spins, so its pickup delay is the loop's, tens of ns, not modelled);
//! the completion's CQE is visible to fio when the interrupt's completion
//! work ends (in 6.12 a read/write completion posts its CQE through task
//! work that the SQ thread runs, io_sq_tw: its cost is not booked on the SQ
//! CPU); an SQ thread's sleep after a quiet second counts as time the CPU
//! is not busy but does not enter the cpuidle model's states; two SQ
//! threads on one CPU are one busy stretch (each yields to the other).

use super::Machine;
use crate::sim::Ns;

/// sq_thread_idle when fio leaves it 0: HZ jiffies, one second
/// (io_uring/sqpoll.c io_sq_offload_create).
pub(super) const SQ_THREAD_IDLE: Ns = 1_000_000_000;

/// The SQ threads of one CPU: how many poll there now, since when, the
/// CPU's booked time then, and what they did (the `"flashpath"`
/// section's `io_uring_sqpoll`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SqCpu {
    threads: u32,
    since: Ns,
    booked_then: Ns,
    /// Time an SQ thread slept in the current stretch (a quiet second
    /// passed).
    slept: Ns,
    /// Wall time the CPU was the SQ threads', their spin within it, the
    /// SQEs they issued, and the wake-ups fio's commits asked for.
    pub busy_ns: u64,
    pub spin_ns: u64,
    pub sqes: u64,
    pub wakeups: u64,
}

impl Machine {
    /// The CPU's usr + sys + irq time booked so far.
    fn booked(&self, cpu: u32) -> Ns {
        let c = self.host.cpu(cpu);
        c.usr_ns + c.sys_ns + c.irq_ns
    }

    /// Thread `tid`'s ring and its SQ thread are set up at `now` (fio's
    /// init, before the job's first I/O): the SQ thread starts polling on
    /// its CPU, which leaves idle if it was.
    pub(super) fn sq_start(&mut self, tid: u32, now: Ns) {
        let Some(sq) = self.threads[tid as usize].sq_cpu else {
            return;
        };
        let exit = self.host.wake_cpu(sq, now);
        self.breakdown.cstate_exit_ns += u128::from(exit);
        self.host.make_runnable(sq);
        let booked = self.booked(sq);
        let s = &mut self.sqpoll[sq as usize];
        if s.threads == 0 {
            s.since = now;
            s.booked_then = booked;
            s.slept = 0;
        }
        s.threads += 1;
        self.threads[tid as usize].sq_last = now;
    }

    /// fio's commit of `n` SQEs at `now` on thread `tid`: if the SQ thread
    /// slept (a second without work), fio's io_uring_enter with
    /// IORING_ENTER_SQ_WAKEUP on its own core (entry, the wake-up and an
    /// IPI to the SQ thread's CPU, exit); then the SQ thread issues them,
    /// each with the block layer's submit work on its CPU. Returns when
    /// fio's thread goes on and when the SQ thread is done.
    pub(super) fn sq_commit(&mut self, tid: u32, n: u64, now: Ns) -> (Ns, Ns) {
        let ti = tid as usize;
        let Some(sq) = self.threads[ti].sq_cpu else {
            return (now, now);
        };
        let costs = self.host.costs();
        let asleep_at = self.threads[ti].sq_last + SQ_THREAD_IDLE;
        let (fio_end, sq_from) = if now > asleep_at {
            let ipi = if sq == self.host.task_cpu(tid) {
                0
            } else {
                costs.ipi
            };
            let woke = self
                .host
                .run_task(tid, now, 0, costs.syscall_entry + costs.wakeup + ipi);
            let end = self.host.run_task(tid, woke, 0, costs.syscall_exit);
            let s = &mut self.sqpoll[sq as usize];
            s.wakeups += 1;
            if s.threads == 1 {
                s.slept += woke - asleep_at;
            }
            let switch = costs.context_switch;
            let resumed = self.host.run_on(sq, woke, 0, switch);
            (end, resumed)
        } else {
            (now, now)
        };
        let submit = self.block.submit_work(&self.host);
        let done = self.host.run_on(sq, sq_from, 0, submit * n);
        self.sqpoll[sq as usize].sqes += n;
        self.threads[ti].sq_last = done;
        (fio_end, done)
    }

    /// The SQ thread of `tid` did task work (a completion) at `at`: its
    /// idle timeout starts again (io_sq_thread: io_sq_tw sets sqt_spin).
    pub(super) fn sq_touched(&mut self, tid: u32, at: Ns) {
        let t = &mut self.threads[tid as usize];
        if t.sq_cpu.is_some() {
            t.sq_last = t.sq_last.max(at);
        }
    }

    /// Thread `tid`'s job ends at `now` and closes its ring: its SQ thread
    /// exits. When the CPU's last SQ thread goes, the stretch it polled
    /// is booked: the time the CPU did nothing else is the SQ threads'
    /// spin (system time), so the CPU was busy for the whole stretch but
    /// for the SQ threads' sleeps.
    pub(super) fn sq_stop(&mut self, tid: u32, now: Ns) {
        let Some(sq) = self.threads[tid as usize].sq_cpu else {
            return;
        };
        let booked = self.booked(sq);
        let s = &mut self.sqpoll[sq as usize];
        s.threads -= 1;
        if s.threads == 0 {
            let wall = now.saturating_sub(s.since).saturating_sub(s.slept);
            let spin = wall.saturating_sub(booked - s.booked_then);
            s.busy_ns += wall;
            s.spin_ns += spin;
            self.host.book_spin(sq, spin);
        }
        self.host.make_unrunnable(sq);
        let busy = self.host.busy_until(sq).max(now);
        self.cpu_idle(sq, busy);
    }

    /// fio's getevents on a SQPOLL ring at `now`: it reads the CQ ring in a
    /// loop in user space, holding its core, until enough events are in
    /// (`sq_cq_found`).
    pub(super) fn sq_cq_spin(&mut self, tid: u32, now: Ns) {
        self.threads[tid as usize].cq_spin = true;
        self.host.hold(tid, now);
    }

    /// fio's CQ loop finds the events it waits for at `now`: the spin since
    /// it began is user time; threads that became runnable on its core
    /// meanwhile run first, then it reaps (without a system call).
    pub(super) fn sq_cq_found(&mut self, tid: u32, now: Ns) {
        self.threads[tid as usize].cq_spin = false;
        let since = match self.host.task_state(tid) {
            crate::host::task::TaskState::Polling(since) => since,
            _ => now,
        };
        let cpu = self.host.task_cpu(tid);
        let spun = self.host.spin_task(tid, since, now);
        self.host.account_usr(tid, now.saturating_sub(since));
        self.host.set_running(tid);
        let (queue, breakdown) = (&mut self.queue, &mut self.breakdown);
        let next = self.host.release(cpu, spun, |other, resumed, ready| {
            if let Some(ready) = ready {
                breakdown.wakeup_ns += u128::from(resumed - ready);
            }
            queue.schedule(resumed, super::Ev::Run(other));
        });
        self.queue.schedule(next, super::Ev::Run(tid));
    }
}
