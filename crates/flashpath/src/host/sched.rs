//! Where CFS puts a thread it wakes: the fast path of `select_task_rq_fair`
//! (kernel/sched/fair.c) for a `try_to_wake_up` (WF_TTWU) of a task that
//! slept, such as a fio thread in `io_getevents` woken by the completion
//! interrupt (`aio_complete` -> `wake_up`).
//!
//! The kernel's steps, as modelled here:
//!
//! * `select_task_rq_fair`: `want_affine` holds when the waking CPU is in
//!   the task's allowed mask (`wake_wide` is taken as false: an interrupt's
//!   waker is whatever it interrupted, which has no wakee flips with the
//!   I/O thread). If the waking CPU differs from the task's previous CPU,
//!   `wake_affine` picks between the two; then `select_idle_sibling` looks
//!   for an idle CPU around that target in the last-level-cache domain.
//! * `wake_affine_idle`: "If this_cpu is idle, it implies the wakeup is
//!   from interrupt context. Only allow the move if cache is shared ...
//!   If the prev_cpu is idle and cache affine then avoid a migration."
//!   So an idle previous CPU keeps the task; an idle waking CPU takes it
//!   only when the previous one is busy. An interrupt wake-up is not sync
//!   (`wake_up`, not `wake_up_sync`), so the sync branch never applies.
//! * `wake_affine_weight` (both CPUs busy): the waking CPU wins when its
//!   load plus the task's is below the previous CPU's load minus the
//!   task's, the latter scaled by half the domain's imbalance margin
//!   (`100 + (imbalance_pct - 100) / 2`). The model's load is the number of
//!   runnable threads (every thread has nice 0's weight), and the task's
//!   load one thread's weight (PELT averages are not modelled): the
//!   previous CPU's `cpu_load` still holds the sleeping task's blocked
//!   load, so minus the task's it is the other threads there.
//! * `select_idle_sibling`: the target if idle; else the previous CPU if
//!   idle and cache affine; else the task's `recent_used_cpu` if idle
//!   (the field then becomes the previous CPU); else `select_idle_cpu`,
//!   the first idle allowed CPU of the LLC domain from `target + 1`,
//!   wrapping; else the target. (No SMT siblings, clusters or asymmetric
//!   capacities are modelled: `select_idle_core` and `select_idle_smt`
//!   reduce to the idle test, and SIS_UTIL's scan limit never binds on the
//!   few CPUs simulated.)
//!
//! "Idle" is `available_idle_cpu`: nothing runnable on the CPU (an
//! interrupt handler running on an idle CPU does not make it busy:
//! `idle_cpu()` looks at the run queue, and the interrupted task is the
//! idle task). Every CPU of a host shares one last-level cache here
//! (`cpus_share_cache` is always true), as on the single-socket hosts the
//! profiles describe.

/// How a woken thread's CPU is chosen (`host.wake_placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakePlacement {
    /// The thread always runs where it slept (a thread pinned to one CPU).
    PrevCpu,
    /// CFS's `select_task_rq_fair` fast path.
    SelectTaskRqFair,
}

impl WakePlacement {
    /// The profile names, in the order of the variants.
    pub const NAMES: [&'static str; 2] = ["prev-cpu", "select_task_rq_fair"];

    pub fn from_name(name: &str) -> Option<WakePlacement> {
        match name {
            "prev-cpu" => Some(WakePlacement::PrevCpu),
            "select_task_rq_fair" => Some(WakePlacement::SelectTaskRqFair),
            _ => None,
        }
    }
}

/// `sd->imbalance_pct` of the MC (LLC) domain (`sd_init` in
/// kernel/sched/topology.c sets 117 and keeps it for domains that share
/// package resources).
pub const LLC_IMBALANCE_PCT: u64 = 117;

/// What the waker sees of the CPUs at the wake-up.
pub trait RunQueues {
    fn ncpus(&self) -> u32;
    /// Runnable threads on `cpu` (`rq->nr_running`, without the wakee).
    fn nr_running(&self, cpu: u32) -> u32;
    /// `available_idle_cpu`.
    fn idle(&self, cpu: u32) -> bool {
        self.nr_running(cpu) == 0
    }
}

/// The wakee: its previous CPU, its allowed CPUs (`p->cpus_ptr`) and its
/// `recent_used_cpu`.
pub struct Wakee<'a> {
    pub prev: u32,
    /// Allowed CPUs; empty means all.
    pub allowed: &'a [u32],
    pub recent_used_cpu: &'a mut Option<u32>,
}

impl Wakee<'_> {
    fn allows(&self, cpu: u32) -> bool {
        self.allowed.is_empty() || self.allowed.contains(&cpu)
    }
}

/// The CPU `try_to_wake_up` on `this_cpu` puts the wakee on.
pub fn select_task_rq(
    placement: WakePlacement,
    rqs: &impl RunQueues,
    this_cpu: u32,
    wakee: &mut Wakee<'_>,
) -> u32 {
    match placement {
        WakePlacement::PrevCpu => wakee.prev,
        WakePlacement::SelectTaskRqFair => select_task_rq_fair(rqs, this_cpu, wakee),
    }
}

fn select_task_rq_fair(rqs: &impl RunQueues, this_cpu: u32, wakee: &mut Wakee<'_>) -> u32 {
    let prev = wakee.prev;
    let want_affine = wakee.allows(this_cpu);
    let mut new_cpu = prev;
    if want_affine && this_cpu != prev {
        new_cpu = wake_affine(rqs, this_cpu, prev);
    }
    select_idle_sibling(rqs, wakee, prev, new_cpu)
}

/// `wake_affine`: the waking CPU if `wake_affine_idle` or
/// `wake_affine_weight` names it, else the previous CPU.
fn wake_affine(rqs: &impl RunQueues, this_cpu: u32, prev: u32) -> u32 {
    let target = wake_affine_idle(rqs, this_cpu, prev)
        .or_else(|| wake_affine_weight(rqs, this_cpu, prev).then_some(this_cpu));
    match target {
        Some(t) if t == this_cpu => this_cpu,
        _ => prev,
    }
}

/// `wake_affine_idle` for a non-sync wake-up with a shared cache.
fn wake_affine_idle(rqs: &impl RunQueues, this_cpu: u32, prev: u32) -> Option<u32> {
    if rqs.idle(this_cpu) {
        return Some(if rqs.idle(prev) { prev } else { this_cpu });
    }
    rqs.idle(prev).then_some(prev)
}

/// `wake_affine_weight` for a non-sync wake-up on CPUs of equal capacity:
/// `this_eff_load = (load(this) + task) * 100` against
/// `prev_eff_load = (load(prev) - task) * (100 + (imbalance_pct - 100) / 2)`,
/// where `load(prev)` counts the wakee's blocked load.
fn wake_affine_weight(rqs: &impl RunQueues, this_cpu: u32, prev: u32) -> bool {
    // task_h_load(p): one nice-0 thread.
    const TASK_LOAD: u64 = 1;
    let this_cpu_load = u64::from(rqs.nr_running(this_cpu));
    let prev_cpu_load = u64::from(rqs.nr_running(prev)) + TASK_LOAD;
    let this_eff = (this_cpu_load + TASK_LOAD) * 100;
    let prev_eff = (prev_cpu_load - TASK_LOAD) * (100 + (LLC_IMBALANCE_PCT - 100) / 2);
    this_eff < prev_eff
}

/// `select_idle_sibling` on one LLC domain without SMT.
fn select_idle_sibling(rqs: &impl RunQueues, wakee: &mut Wakee<'_>, prev: u32, target: u32) -> u32 {
    if rqs.idle(target) {
        return target;
    }
    if prev != target && rqs.idle(prev) {
        return prev;
    }
    let recent = wakee.recent_used_cpu.replace(prev);
    if let Some(r) = recent {
        if r != prev && r != target && rqs.idle(r) && wakee.allows(r) {
            return r;
        }
    }
    let n = rqs.ncpus();
    (1..=n)
        .map(|i| (target + i) % n)
        .find(|&c| wakee.allows(c) && rqs.idle(c))
        .unwrap_or(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rqs(Vec<u32>);

    impl RunQueues for Rqs {
        fn ncpus(&self) -> u32 {
            self.0.len() as u32
        }
        fn nr_running(&self, cpu: u32) -> u32 {
            self.0[cpu as usize]
        }
    }

    fn place(rqs: &[u32], this: u32, prev: u32, allowed: &[u32]) -> (u32, Option<u32>) {
        let mut recent = None;
        let cpu = select_task_rq(
            WakePlacement::SelectTaskRqFair,
            &Rqs(rqs.to_vec()),
            this,
            &mut Wakee {
                prev,
                allowed,
                recent_used_cpu: &mut recent,
            },
        );
        (cpu, recent)
    }

    #[test]
    fn idle_prev_cpu_keeps_the_task_whoever_wakes_it() {
        // wake_affine_idle: "If the prev_cpu is idle and cache affine then
        // avoid a migration" (waker idle, i.e. an interrupt on an idle CPU)
        // and the later `available_idle_cpu(prev_cpu)` (waker busy).
        assert_eq!(place(&[0, 0, 0, 0], 0, 2, &[]).0, 2);
        assert_eq!(place(&[3, 0, 0, 0], 0, 2, &[]).0, 2);
    }

    #[test]
    fn busy_prev_and_idle_waker_move_the_task_to_the_waker() {
        // The interrupt's CPU is idle, the previous CPU runs something:
        // wake_affine_idle returns this_cpu, which select_idle_sibling
        // keeps (idle target).
        assert_eq!(place(&[0, 1, 1, 1], 0, 2, &[]).0, 0);
    }

    #[test]
    fn busy_prev_and_busy_waker_go_to_an_idle_sibling_after_the_target() {
        // Both busy and equally loaded: wake_affine_weight keeps prev (2);
        // select_idle_cpu scans from 3, wrapping, for the first idle CPU.
        assert_eq!(place(&[1, 0, 1, 1], 0, 2, &[]).0, 1);
        // Nothing idle: the target stays.
        assert_eq!(place(&[1, 1, 1, 1], 0, 2, &[]).0, 2);
    }

    #[test]
    fn heavily_loaded_prev_loses_to_a_lighter_waker() {
        // load(prev) = 2 runnable + the wakee's blocked load:
        // this_eff = (1 + 1) * 100 = 200 < prev_eff = (3 - 1) * 108 = 216.
        assert_eq!(place(&[1, 1, 2], 0, 2, &[]).0, 0);
        // One runnable on each: 200 > (2 - 1) * 108, prev stays the target
        // (and nothing is idle).
        assert_eq!(place(&[1, 1, 1], 0, 2, &[]).0, 2);
    }

    #[test]
    fn a_pinned_task_never_leaves_its_cpu() {
        assert_eq!(place(&[0, 1, 1, 1], 0, 2, &[2]).0, 2);
        assert_eq!(place(&[1, 0, 1, 1], 0, 2, &[2]).0, 2);
    }

    #[test]
    fn recent_used_cpu_is_tried_and_becomes_prev() {
        let mut recent = Some(3);
        let cpu = select_task_rq(
            WakePlacement::SelectTaskRqFair,
            &Rqs(vec![1, 0, 1, 0]),
            2,
            &mut Wakee {
                prev: 2,
                allowed: &[],
                recent_used_cpu: &mut recent,
            },
        );
        // this == prev (2, busy): no wake_affine; 2 busy; recent 3 idle.
        assert_eq!(cpu, 3);
        assert_eq!(recent, Some(2));
    }

    #[test]
    fn prev_cpu_placement_ignores_the_run_queues() {
        let mut recent = None;
        let cpu = select_task_rq(
            WakePlacement::PrevCpu,
            &Rqs(vec![0, 5, 5, 5]),
            0,
            &mut Wakee {
                prev: 1,
                allowed: &[],
                recent_used_cpu: &mut recent,
            },
        );
        assert_eq!(cpu, 1);
        assert_eq!(recent, None);
    }

    use proptest::prelude::*;

    proptest! {
        /// The thread's CPU changes only as fair.c allows: never when its
        /// previous CPU is idle, never to a CPU outside its mask, and only
        /// to the waking CPU or to an idle CPU otherwise.
        #[test]
        fn cpu_changes_only_per_the_wake_rule(
            load in prop::collection::vec(0u32..3, 1..9),
            this in 0u32..8,
            prev in 0u32..8,
            recent in prop::option::of(0u32..8),
            mask in 1u32..256,
        ) {
            let n = load.len() as u32;
            let (this, prev) = (this % n, prev % n);
            let recent = recent.map(|r| r % n);
            let mut allowed: Vec<u32> = (0..n).filter(|c| mask & (1 << c) != 0).collect();
            if !allowed.contains(&prev) {
                allowed.push(prev);
            }
            let rqs = Rqs(load.clone());
            let mut rec = recent;
            let cpu = select_task_rq(
                WakePlacement::SelectTaskRqFair,
                &rqs,
                this,
                &mut Wakee { prev, allowed: &allowed, recent_used_cpu: &mut rec },
            );
            prop_assert!(allowed.contains(&cpu));
            if load[prev as usize] == 0 {
                prop_assert_eq!(cpu, prev);
            }
            if cpu != prev {
                prop_assert!(cpu == this || load[cpu as usize] == 0);
            }
        }
    }
}
