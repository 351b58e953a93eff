//! fio's serialize_overlap with io_submit_mode=offload (fio 3.33
//! rate-submit.c check_overlap, backend.c in_flight_overlap, ioengines.c
//! td_io_queue): before a submit worker queues an I/O it takes the global
//! `overlap_check` mutex and compares the I/O's range with every io_u in
//! flight (IO_U_F_FLIGHT) of every job of the run that offloads with
//! serialize_overlap and runs (runstate past TD_SETTING_UP and before
//! TD_FINISHING: a job still in ramp_time is TD_RAMP, not checked). On an
//! overlap it unlocks, locks again and checks again, a spin that holds
//! the mutex nearly all the time; when the coast is clear td_io_queue sets
//! IO_U_F_FLIGHT and only then unlocks, so no two workers can both see the
//! coast clear for overlapping I/Os. The flag clears when the I/O
//! completes (io_completed), which needs no lock. fio compares offsets
//! alone (in_flight_overlap): I/Os of different files overlap when their
//! in-file ranges do, as the 8 jobs of fio's t0013 (8 files) do.
//!
//! The model: the worker that holds the mutex and finds an overlap spins
//! on its CPU until the last I/O it overlaps leaves flight (it is reaped,
//! `offload.rs`); the workers that ask for the mutex meanwhile sleep in
//! FUTEX_WAIT, and each unlock after a successful check (td_io_queue)
//! wakes the next (FUTEX_WAKE). Assumptions: the waiters take the mutex
//! in arrival order (the kernel's futex queue is FIFO among equal
//! priorities; fio's spinner re-locking before a woken waiter runs is what
//! keeps the mutex with it); the spin fills only its CPU's otherwise free
//! time, counted as the CPU's user time (pthread_mutex_lock and unlock in
//! user space; the FUTEX_WAKE each unlock makes while others wait is not
//! split out) and in the `offload` counters, not in the job's rusage
//! (a worker's: `offload.rs`), as machine/sqpoll.rs books its SQ thread's spin: on a
//! loaded CPU the real spinner's share of the CPU (CFS) would slow the
//! work booked there, which flashpath does not; and a job's own end
//! (backend.c takes the mutex to set TD_FINISHING) does not wait for the
//! spinner.
//!
//! Memory: one entry per I/O between its hand-off and its reap, at most
//! the jobs' iodepths together, reserved before the run.

use std::collections::VecDeque;

use super::{Ev, Machine};
use crate::sim::Ns;

/// One I/O of a serialize_overlap offload job, from its hand-off to a
/// worker until its worker reaps it.
#[derive(Clone, Copy, Debug)]
struct Io {
    /// The request's key.
    key: u32,
    /// The job thread that made it.
    tid: u32,
    /// fio's io_u->offset and offset + buflen (in the file).
    start: u64,
    end: u64,
    /// IO_U_F_FLIGHT: queued to the engine, not yet completed.
    flight: bool,
}

/// The worker that holds `overlap_check` and spins.
#[derive(Clone, Copy, Debug)]
struct Spin {
    key: u32,
    cpu: u32,
    since: Ns,
    /// The CPU's booked work when the spin started.
    booked_then: Ns,
}

/// What a worker does after asking for the mutex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admit {
    /// Its I/O is in flight; its engine runs from the time given (after
    /// the unlock and its FUTEX_WAKE of the next waiter, if any).
    Go(Ns),
    /// It spins on the mutex or sleeps on it.
    Wait,
}

/// The run's `overlap_check` mutex and the I/Os it guards.
#[derive(Debug)]
pub(super) struct OverlapCheck {
    ios: Vec<Io>,
    /// Workers waiting for the mutex, in arrival order; the first is the
    /// spinner when `spin` is set, else the one woken to take it next.
    waiters: VecDeque<u32>,
    spin: Option<Spin>,
    /// I/Os that waited for the mutex or for an overlap to clear.
    pub waits: u64,
    /// CPU time the spinning workers burned (ns).
    pub spin_ns: u64,
}

impl OverlapCheck {
    /// Room for `depth` I/Os in flight at once (the jobs' iodepths).
    pub(super) fn new(depth: usize) -> OverlapCheck {
        OverlapCheck {
            ios: Vec::with_capacity(depth),
            waiters: VecDeque::with_capacity(depth),
            spin: None,
            waits: 0,
            spin_ns: 0,
        }
    }

    /// An I/O of job thread `tid` over fio's `[start, end)` was handed to
    /// its worker as request `key`.
    pub(super) fn handed(&mut self, key: u32, tid: u32, start: u64, end: u64) {
        self.ios.push(Io {
            key,
            tid,
            start,
            end,
            flight: false,
        });
    }

    fn index(&self, key: u32) -> usize {
        self.ios
            .iter()
            .position(|io| io.key == key)
            .expect("an offloaded I/O of a serialize_overlap job is registered at its hand-off")
    }

    /// in_flight_overlap over every checked job: whether I/O `i` overlaps
    /// one in flight of a job for which `checked(tid)` holds.
    fn blocked(&self, i: usize, checked: &impl Fn(u32) -> bool) -> bool {
        let me = self.ios[i];
        self.ios
            .iter()
            .any(|o| o.flight && me.start < o.end && o.start < me.end && checked(o.tid))
    }

    /// Request `key`'s worker asks for the mutex at `now`: `Some(true)`
    /// when it holds it and may check, `Some(false)` when it had been let
    /// through already (its I/O is in flight), `None` when the mutex is
    /// another's and it goes to sleep on it.
    fn lock(&mut self, key: u32) -> Option<bool> {
        let i = self.index(key);
        if self.ios[i].flight {
            return Some(false);
        }
        let first = self.waiters.front().copied();
        if self.spin.is_some() || first.is_some_and(|k| k != key) {
            if !self.waiters.contains(&key) {
                self.waiters.push_back(key);
                self.waits += 1;
            }
            return None;
        }
        Some(true)
    }

    /// The worker holding the mutex checked request `key`: the overlap it
    /// found makes it spin (true), else its I/O goes in flight (false).
    fn check(
        &mut self,
        key: u32,
        cpu: u32,
        now: Ns,
        booked: Ns,
        checked: &impl Fn(u32) -> bool,
    ) -> bool {
        let i = self.index(key);
        if self.blocked(i, checked) {
            if self.waiters.front() != Some(&key) {
                self.waiters.push_front(key);
                self.waits += 1;
            }
            self.spin = Some(Spin {
                key,
                cpu,
                since: now,
                booked_then: booked,
            });
            return true;
        }
        if self.waiters.front() == Some(&key) {
            self.waiters.pop_front();
        }
        self.ios[i].flight = true;
        false
    }

    /// Request `key` was reaped: its io_u leaves flight. Returns the
    /// spinner it lets through, if its overlap is now clear.
    fn reaped(&mut self, key: u32, checked: &impl Fn(u32) -> bool) -> Option<Spin> {
        let i = self.index(key);
        self.ios.swap_remove(i);
        let s = self.spin?;
        let j = self.index(s.key);
        if self.blocked(j, checked) {
            return None;
        }
        self.spin = None;
        self.ios[j].flight = true;
        self.waiters.pop_front();
        Some(s)
    }
}

impl Machine {
    /// Request `key`'s worker on `cpu` runs check_overlap at `now`.
    pub(super) fn overlap_admit(&mut self, key: u32, cpu: u32, now: Ns) -> Admit {
        let Some(ov) = self.overlap.as_mut() else {
            return Admit::Go(now);
        };
        match ov.lock(key) {
            Some(false) => return Admit::Go(self.overlap_unlock(cpu, now)),
            Some(true) => {}
            None => {
                // pthread_mutex_lock on a held mutex: FUTEX_WAIT.
                let costs = self.host.costs();
                let asleep = self.host.run_on(cpu, now, 0, costs.syscall_entry);
                self.account_worker(cpu, 0, costs.syscall_entry);
                self.host.make_unrunnable(cpu);
                self.cpu_idle(cpu, asleep);
                return Admit::Wait;
            }
        }
        let booked = {
            let c = self.host.cpu(cpu);
            c.usr_ns + c.sys_ns + c.irq_ns
        };
        let threads = &self.threads;
        let checked = |t: u32| {
            let f = &threads[t as usize].fio;
            f.serialize_overlap && !f.in_ramp(now)
        };
        let ov = self.overlap.as_mut().expect("checked above");
        if ov.check(key, cpu, now, booked, &checked) {
            // It spins, runnable on its CPU, until `overlap_reaped`.
            return Admit::Wait;
        }
        Admit::Go(self.overlap_unlock(cpu, now))
    }

    /// td_io_queue unlocks `overlap_check` once the io_u of the worker on
    /// `cpu` is in flight: with a worker asleep on it, the unlock is a FUTEX_WAKE
    /// (entry, try_to_wake_up, an IPI to another CPU, exit) and that
    /// worker runs its check once it is back on its CPU. Returns when the
    /// unlocking worker goes on.
    fn overlap_unlock(&mut self, cpu: u32, now: Ns) -> Ns {
        let next = self
            .overlap
            .as_ref()
            .and_then(|o| o.waiters.front().copied());
        let Some(next) = next else {
            return now;
        };
        let costs = self.host.costs();
        let next_cpu = self.block.rqs.get(next).cpu;
        let ipi = if next_cpu == cpu { 0 } else { costs.ipi };
        let wake = costs.syscall_entry + costs.wakeup + ipi + costs.syscall_exit;
        let end = self.host.run_on(cpu, now, 0, wake);
        self.account_worker(cpu, 0, wake);
        let exit = self.host.wake_cpu(next_cpu, end);
        self.breakdown.cstate_exit_ns += u128::from(exit);
        self.host.make_runnable(next_cpu);
        let switch = costs.context_switch + costs.syscall_exit;
        let resumed = self.host.run_on(next_cpu, end + exit, 0, switch);
        self.account_worker(next_cpu, 0, switch);
        self.breakdown.wakeup_ns += u128::from(resumed - end);
        self.queue.schedule(resumed, Ev::OffloadRun(next));
        end
    }

    /// Request `key` of a serialize_overlap job is reaped at `now`
    /// (io_completed clears IO_U_F_FLIGHT): the spinner, if its overlap
    /// is now clear, sees it at its next look and goes on; its spin is
    /// booked.
    pub(super) fn overlap_reaped(&mut self, key: u32, now: Ns) {
        let threads = &self.threads;
        let checked = |t: u32| {
            let f = &threads[t as usize].fio;
            f.serialize_overlap && !f.in_ramp(now)
        };
        let Some(ov) = self.overlap.as_mut() else {
            return;
        };
        let Some(s) = ov.reaped(key, &checked) else {
            return;
        };
        let booked = {
            let c = self.host.cpu(s.cpu);
            c.usr_ns + c.sys_ns + c.irq_ns
        };
        let wall = now.saturating_sub(s.since);
        let spin = wall.saturating_sub(booked.saturating_sub(s.booked_then));
        self.host.book_user_spin(s.cpu, spin);
        self.offload_worker_ns += spin;
        if let Some(ov) = self.overlap.as_mut() {
            ov.spin_ns += spin;
        }
        self.queue.schedule(now, Ev::OffloadRun(s.key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Drives the mutex as the machine does, with every job checked: a
    /// step hands an I/O over and lets its worker run, or reaps one in
    /// flight. A worker let through or woken runs at once.
    #[derive(Default)]
    struct World {
        next_key: u32,
        ov: Option<OverlapCheck>,
        /// Workers to run (woken or let through).
        ready: VecDeque<u32>,
        in_flight: Vec<(u32, u64, u64)>,
    }

    impl World {
        fn ov(&mut self) -> &mut OverlapCheck {
            self.ov.get_or_insert_with(|| OverlapCheck::new(64))
        }

        fn run(&mut self, key: u32) {
            let all = |_: u32| true;
            let go = match self.ov().lock(key) {
                Some(false) => true,
                Some(true) => !self.ov().check(key, 0, 0, 0, &all),
                None => false,
            };
            if go {
                let i = self.ov().index(key);
                let io = self.ov().ios[i];
                // No I/O in flight overlaps the one going in flight.
                for &(k, s, e) in &self.in_flight {
                    assert!(
                        !(io.start < e && s < io.end),
                        "{key} overlaps {k} in flight"
                    );
                }
                self.in_flight.push((key, io.start, io.end));
                if let Some(&next) = self.ov().waiters.front() {
                    if self.ov().spin.is_none() {
                        self.ready.push_back(next);
                    }
                }
            }
        }

        fn drain(&mut self) {
            while let Some(k) = self.ready.pop_front() {
                self.run(k);
            }
        }

        fn hand(&mut self, tid: u32, start: u64, len: u64) {
            let key = self.next_key;
            self.next_key += 1;
            self.ov().handed(key, tid, start, start + len);
            self.run(key);
            self.drain();
        }

        fn reap(&mut self, pick: usize) {
            if self.in_flight.is_empty() {
                return;
            }
            let (key, ..) = self.in_flight.remove(pick % self.in_flight.len());
            if let Some(s) = self.ov().reaped(key, &|_| true) {
                self.ready.push_back(s.key);
            }
            self.drain();
        }
    }

    proptest! {
        /// No two overlapping I/Os are in flight at once, whatever the
        /// order of hand-offs and completions, and every I/O handed over
        /// goes in flight once the ones before it complete (no I/O is
        /// left waiting with nothing in flight).
        #[test]
        fn no_two_overlapping_ios_fly_together(
            steps in proptest::collection::vec((any::<bool>(), 0u32..8, 0u64..16, 1u64..4, any::<usize>()), 1..200)
        ) {
            let mut w = World::default();
            for (hand, tid, block, len, pick) in steps {
                if hand {
                    w.hand(tid, block * 4096, len * 4096);
                } else {
                    w.reap(pick);
                }
            }
            while !w.in_flight.is_empty() {
                w.reap(0);
            }
            let ov = w.ov();
            prop_assert!(ov.ios.is_empty(), "left waiting: {:?}", ov.ios);
            prop_assert!(ov.waiters.is_empty());
            prop_assert!(ov.spin.is_none());
        }
    }

    #[test]
    fn disjoint_ranges_fly_together_and_an_overlap_waits_in_order() {
        let mut w = World::default();
        w.hand(0, 0, 4096);
        w.hand(1, 4096, 4096);
        assert_eq!(w.in_flight.len(), 2);
        // Overlaps key 0: it spins; key 3 (disjoint) waits behind it for
        // the mutex, as fio's spinner holds it.
        w.hand(2, 0, 8192);
        w.hand(3, 1 << 20, 4096);
        assert_eq!(w.in_flight.len(), 2);
        assert_eq!(w.ov().waits, 2);
        // Key 1 ends: key 2 still overlaps key 0.
        w.reap(1);
        assert_eq!(w.in_flight.iter().map(|f| f.0).collect::<Vec<_>>(), [0]);
        // Key 0 ends: key 2 goes, then key 3, woken by its unlock.
        w.reap(0);
        assert_eq!(w.in_flight.iter().map(|f| f.0).collect::<Vec<_>>(), [2, 3]);
    }
}
