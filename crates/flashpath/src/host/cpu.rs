//! CPU cores as serial servers of kernel and application work.
//!
//! A core runs one thing at a time: work asked of a busy core starts when
//! it is free (`busy_until`), so two threads pinned to one core queue for
//! it and a spinning poller holds its core. Interrupts preempt: a handler
//! starts at once and pushes the core's other work back by its length.
//! Costs are given in ns at the host's reference frequency and scaled by
//! the core's current frequency.

use crate::profile::limits::{COST, DELAY};
use crate::profile::Profile;
use crate::sim::Ns;

crate::params! {
    /// Per-operation CPU costs of the I/O path, ns at the reference frequency.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct HostCosts {
        /// fio's user-space work to prepare and issue one I/O (get_io_u,
        /// offset/size choice, time stamps).
        pub fio_submit: Ns = required ns("host.cost.fio_submit", COST),
        /// fio's user-space work to account one completed I/O.
        pub fio_complete: Ns = required ns("host.cost.fio_complete", COST),
        /// System call entry (to the first line of the call).
        pub syscall_entry: Ns = required ns("host.cost.syscall_entry", COST),
        /// System call exit (back to user space).
        pub syscall_exit: Ns = required ns("host.cost.syscall_exit", COST),
        /// Block layer submission: bio, request allocation, hctx dispatch
        /// (blk_mq_submit_bio up to queue_rq).
        pub blk_submit: Ns = required ns("host.cost.blk_submit", COST),
        /// Block layer completion: blk_mq_end_request, bio and dio completion.
        pub blk_complete: Ns = required ns("host.cost.blk_complete", COST),
        /// Hard interrupt entry and exit (irq_enter/irq_exit, EOI).
        pub irq_entry: Ns = required ns("host.cost.irq_entry", COST),
        /// try_to_wake_up of the sleeping thread.
        pub wakeup: Ns = required ns("host.cost.wakeup", COST),
        /// Context switch into the woken thread (schedule()).
        pub context_switch: Ns = required ns("host.cost.context_switch", COST),
        /// Delivery of a reschedule IPI to another core.
        pub ipi: Ns = required ns("host.cost.ipi", COST),
        /// How late a timed sleep (nanosleep) of a normal thread wakes: its
        /// timer slack, the end of the hrtimer's range on an idle CPU.
        pub timer_slack: Ns = required ns("host.timer_slack", DELAY),
    }
}

impl HostCosts {
    pub fn from_profile(p: &Profile) -> crate::Result<HostCosts> {
        HostCosts::read(p)
    }
}

/// One core.
#[derive(Clone, Debug)]
pub struct Cpu {
    pub id: u32,
    /// The core is busy with queued work until then.
    pub busy_until: Ns,
    /// reference frequency / current frequency: a cost of c ns at the
    /// reference frequency takes c * scale ns here.
    scale: f64,
    /// The frequency the costs are given at.
    reference_hz: f64,
    /// Idle since this time (no runnable work), if idle.
    pub idle_since: Option<Ns>,
    /// Threads on this core that are runnable or running.
    pub runnable: u32,
    /// Accounting: ns of user and system work, interrupts.
    pub usr_ns: Ns,
    pub sys_ns: Ns,
    pub irq_ns: Ns,
    pub idle_ns: Ns,
    pub wakeups_from_idle: u64,
}

impl Cpu {
    pub fn new(id: u32, reference_hz: f64, hz: f64) -> Cpu {
        Cpu {
            id,
            busy_until: 0,
            scale: reference_hz / hz,
            reference_hz,
            idle_since: None,
            runnable: 0,
            usr_ns: 0,
            sys_ns: 0,
            irq_ns: 0,
            idle_ns: 0,
            wakeups_from_idle: 0,
        }
    }

    /// The core's clock changes (a frequency governor's P-state): work
    /// booked from now on takes reference / `hz` times its cost.
    pub fn set_hz(&mut self, hz: f64) {
        self.scale = self.reference_hz / hz;
    }

    /// The time `cost` (ns at the reference frequency) takes on this core.
    pub fn scaled(&self, cost: Ns) -> Ns {
        if self.scale == 1.0 {
            cost
        } else {
            (cost as f64 * self.scale).round() as Ns
        }
    }

    /// Run thread work of `usr` + `sys` reference-ns, asked at `now`.
    /// Returns when it finishes.
    pub fn run(&mut self, now: Ns, usr: Ns, sys: Ns) -> Ns {
        let usr = self.scaled(usr);
        let sys = self.scaled(sys);
        let start = now.max(self.busy_until);
        self.busy_until = start + usr + sys;
        self.usr_ns += usr;
        self.sys_ns += sys;
        self.busy_until
    }

    /// Hold the core busy until `until` (spinning): system time.
    pub fn spin_until(&mut self, now: Ns, until: Ns) -> Ns {
        let start = now.max(self.busy_until);
        let end = until.max(start);
        self.sys_ns += end - start;
        self.busy_until = end;
        end
    }

    /// An interrupt handler of `cost` reference-ns that starts at `at`
    /// (after any idle exit). It preempts: other queued work moves back.
    pub fn run_irq(&mut self, at: Ns, cost: Ns) -> Ns {
        let cost = self.scaled(cost);
        self.irq_ns += cost;
        self.busy_until = self.busy_until.max(at) + cost;
        at + cost
    }

    /// The core goes idle at `at` (its last runnable thread blocked).
    pub fn enter_idle(&mut self, at: Ns) {
        if self.idle_since.is_none() {
            self.idle_since = Some(at.max(self.busy_until));
        }
    }

    /// Something wakes the core at `at`. Returns the idle duration if it
    /// was idle (None if it was busy or the wake came before idle began).
    pub fn leave_idle(&mut self, at: Ns) -> Option<Ns> {
        let since = self.idle_since.take()?;
        if at <= since {
            return None;
        }
        self.idle_ns += at - since;
        self.wakeups_from_idle += 1;
        Some(at - since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_jobs_on_one_core_queue() {
        let mut c = Cpu::new(0, 1e9, 1e9);
        assert_eq!(c.run(0, 100, 0), 100);
        // Asked at 50 while busy until 100: starts at 100.
        assert_eq!(c.run(50, 0, 100), 200);
        assert_eq!((c.usr_ns, c.sys_ns), (100, 100));
    }

    #[test]
    fn half_frequency_doubles_costs() {
        let mut c = Cpu::new(0, 2e9, 1e9);
        assert_eq!(c.run(0, 100, 50), 300);
    }

    #[test]
    fn a_new_clock_scales_work_booked_after_it() {
        let mut c = Cpu::new(0, 3e9, 3e9);
        assert_eq!(c.run(0, 0, 300), 300);
        c.set_hz(1.2e9);
        assert_eq!(c.run(300, 0, 300), 1_050);
        c.set_hz(3.5e9);
        assert_eq!(c.scaled(350), 300);
    }

    #[test]
    fn spinner_holds_the_core_and_delays_others() {
        let mut c = Cpu::new(0, 1e9, 1e9);
        c.spin_until(0, 5_000);
        assert_eq!(c.run(1_000, 0, 10), 5_010);
    }

    #[test]
    fn interrupt_preempts_and_pushes_work_back() {
        let mut c = Cpu::new(0, 1e9, 1e9);
        c.run(0, 0, 1_000);
        assert_eq!(c.run_irq(500, 100), 600);
        assert_eq!(c.busy_until, 1_100);
    }

    #[test]
    fn idle_duration_is_measured_from_the_end_of_work() {
        let mut c = Cpu::new(0, 1e9, 1e9);
        c.run(0, 0, 100);
        c.enter_idle(50);
        assert_eq!(c.leave_idle(400), Some(300));
        assert_eq!(c.leave_idle(500), None);
    }
}
