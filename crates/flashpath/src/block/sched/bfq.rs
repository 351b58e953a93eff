//! BFQ as Linux 6.12 has it (block/bfq-iosched.c, block/bfq-wf2q.c), the
//! parts that decide who gets the device: per-process queues, B-WF2Q+
//! virtual time with weights, budgets with their feedback, idling for
//! sync queues and low_latency's weight raising of interactive queues.
//!
//! Queues (`bfq_queue`): one sync queue per process (fio thread); async
//! requests (page-cache writeback) share one async queue per ioprio class
//! and level (`bfq_async_queue_prio`). A queue's weight is
//! `bfq_ioprio_to_weight`: `(8 - level) * 10` (a task without an ioprio is
//! BE at level 4: weight 40); classes are strict, RT before BE before IDLE.
//!
//! Scheduling (B-WF2Q+, bfq-wf2q.c): a queue that becomes busy gets start
//! `S = max(V, F)` and finish `F = S + budget / weight`; the in-service
//! queue is the eligible one (`S <= V`, V jumping to the least start when
//! none is) with the least finish. Each dispatch charges its sectors
//! (`bfq_serv_to_charge`: an async queue's times `bfq_async_charge_factor`,
//! 3, unless the scenario is asymmetric) to the queue and advances `V` by
//! `sectors / wsum`. The queue keeps the device until its budget is spent
//! (`BFQQE_BUDGET_EXHAUSTED`), its budget timeout (`timeout_sync`, 125 ms)
//! passes (`BFQQE_BUDGET_TIMEOUT`: a queue that used less than two thirds
//! of its budget is charged for the time, `bfq_bfqq_charge_time`), it is
//! empty and not worth idling for (`BFQQE_NO_MORE_REQUESTS`), or an idle
//! wait ends without a request (`BFQQE_TOO_IDLE`). On expiry its finish is
//! moved to `S + service / weight` and, still busy, it is requeued from
//! there. `__bfq_bfqq_recalc_budget` sets its next budget: doubled after a
//! timeout, quadrupled after exhaustion, cut after too-idle, the service
//! it used after no-more-requests; async queues always get `max_budget`,
//! weight-raised ones twice the minimum (`max_budget / 32`).
//!
//! Idling (`bfq_better_to_idle`): when the in-service sync queue empties,
//! the device is held for it `slice_idle` (8 ms) after its last request
//! completes, if idling is needed for service guarantees: the queue is
//! weight-raised and others are busy without it (or 4 more requests are
//! in the driver than its own), the scenario is asymmetric (busy queues
//! of different weights where this one's is not the smallest, or of
//! different classes), or it is the only busy queue. A flash device with
//! command queueing gains no throughput from idling
//! (`idling_boosts_thr_without_issues` is false for a non-rotational
//! queue with `hw_tag`), so only those guarantees idle.
//!
//! Weight raising (`low_latency`, on by default): a sync queue that becomes
//! busy after being idle for `bfq_wr_min_idle_time` (2 s; a new queue
//! counts as idle for long) is interactive: its weight is multiplied by
//! `bfq_wr_coeff` (30) for `bfq_wr_duration` or until it received
//! `max_service_from_wr` (120000 sectors) of service.
//!
//! Simplified (stated, not hidden): no peak-rate estimation, so
//! `max_budget` stays at `bfq_default_max_budget` (16384 sectors) unless
//! set, `bfq_wr_duration` is its start value (`rate_dur_prod / peak_rate`
//! = 1.5 x 2.5 s = 3.75 s on a non-rotational queue) and the `slow`
//! queue test of `bfq_bfqq_is_slow` is left out; `hw_tag` is taken as
//! set (the flash devices queue commands); a queue serves its requests in
//! arrival order (no sector-sorted `next_rq`, `back_seek_max`, FIFO
//! expiry); no soft real-time weight raising, burst detection, queue
//! merging, waker/wakee injection, preemption by a newly busy queue, or
//! cgroups; the idle class's 200 ms starvation guard
//! (`BFQ_CL_IDLE_TIMEOUT`) is left out.

use crate::block::elevator::{
    ioprio_class, ElevatorOps, SchedRq, IOPRIO_CLASS_IDLE, IOPRIO_CLASS_RT,
};
use crate::sim::Ns;
use std::collections::VecDeque;

const MS: Ns = 1_000_000;
/// `WFQ_SERVICE_SHIFT`: virtual time's fixed point.
const WFQ_SERVICE_SHIFT: u32 = 22;
/// `bfq_default_max_budget`, sectors.
const DEFAULT_MAX_BUDGET: u32 = 16 * 1024;
/// `bfq_async_charge_factor`.
const ASYNC_CHARGE_FACTOR: u32 = 3;
/// `bfq_wr_coeff`.
const WR_COEFF: u32 = 30;
/// `bfq_wr_min_idle_time`: 2 s.
const WR_MIN_IDLE_TIME: Ns = 2_000 * MS;
/// `bfq_wr_duration` with the initial peak rate: `ref_wr_duration[1]`
/// (2.5 s) x `ref_rate / (ref_rate * 2 / 3)`, within 3 to 25 s.
const WR_DURATION: Ns = 3_750 * MS;
/// `max_service_from_wr`, sectors.
const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// `IOPRIO_NR_LEVELS` and `BFQ_WEIGHT_CONVERSION_COEFF`.
const IOPRIO_NR_LEVELS: u32 = 8;
const WEIGHT_CONVERSION_COEFF: u32 = 10;
/// A task without an I/O priority: BE at `IOPRIO_NORM` (nice 0).
const IOPRIO_NORM: u16 = 4;
const CLASS_RT: usize = 0;
const CLASS_BE: usize = 1;
const CLASS_IDLE: usize = 2;

/// The sysfs tunables (/sys/block/DEV/queue/iosched/*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BfqTunables {
    /// slice_idle: `NSEC_PER_SEC / 125`, 8 ms.
    pub slice_idle: Ns,
    /// low_latency: 1.
    pub low_latency: bool,
    /// max_budget in sectors; 0 is the kernel's auto-tuning, here its
    /// start value `bfq_default_max_budget`, 16384.
    pub max_budget: u32,
    /// timeout_sync: `bfq_timeout`, `HZ / 8`, 125 ms.
    pub timeout_sync: Ns,
}

impl Default for BfqTunables {
    fn default() -> Self {
        BfqTunables {
            slice_idle: 8 * MS,
            low_latency: true,
            max_budget: 0,
            timeout_sync: 125 * MS,
        }
    }
}

/// `enum bfqq_expiration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expiration {
    TooIdle = 0,
    BudgetTimeout = 1,
    BudgetExhausted = 2,
    NoMoreRequests = 3,
}

/// `bfq_delta`: service over weight in virtual time.
fn delta(service: u64, weight: u32) -> u64 {
    (service << WFQ_SERVICE_SHIFT) / u64::from(weight.max(1))
}

struct Bfqq {
    task: u32,
    sync: bool,
    class: usize,
    level: u16,
    /// Queued requests (key, sectors), in arrival order.
    rqs: VecDeque<(u32, u32)>,
    dispatched: u32,
    orig_weight: u32,
    wr_coeff: u32,
    wr_start: Ns,
    service_from_wr: u64,
    /// The entity: start and finish in virtual time, budget and service
    /// received in service, sectors.
    start: u64,
    finish: u64,
    budget: u32,
    service: u32,
    /// Busy: on its class's active tree (in service counts).
    busy: bool,
    /// `bfqq->max_budget`: the budget the feedback gives it next.
    max_budget: u32,
    /// `budget_timeout`; None: never served (`bfq_smallest_from_now`).
    budget_timeout: Option<Ns>,
}

impl Bfqq {
    fn weight(&self) -> u32 {
        self.orig_weight * self.wr_coeff
    }
}

/// One queue's BFQ state (`struct bfq_data`).
pub struct Bfq {
    t: BfqTunables,
    max_budget: u32,
    queues: Vec<Bfqq>,
    vtime: [u64; 3],
    wsum: [u64; 3],
    in_service: Option<usize>,
    /// When the in-service queue began its service slot.
    service_from: Ns,
    /// The idle slice timer (`wait_request`).
    idle_timer: Option<Ns>,
    queued: usize,
    tot_in_driver: u32,
    budgets_assigned: u32,
    /// Expirations by reason: too idle, budget timeout, budget exhausted,
    /// no more requests.
    pub expirations: [u64; 4],
    /// Idle slice timers that fired without a request.
    pub idle_expired: u64,
}

impl Bfq {
    pub fn new(t: BfqTunables) -> Bfq {
        Bfq {
            t,
            max_budget: if t.max_budget == 0 {
                DEFAULT_MAX_BUDGET
            } else {
                t.max_budget
            },
            queues: Vec::new(),
            vtime: [0; 3],
            wsum: [0; 3],
            in_service: None,
            service_from: 0,
            idle_timer: None,
            queued: 0,
            tot_in_driver: 0,
            budgets_assigned: 0,
            expirations: [0; 4],
            idle_expired: 0,
        }
    }

    /// `bfq_min_budget`.
    fn min_budget(&self) -> u32 {
        self.max_budget / 32
    }

    /// The queue request `rq` belongs to (`bic_to_bfqq`, or the async
    /// queue of its priority), made on first use.
    fn queue_of(&mut self, rq: &SchedRq) -> usize {
        let (class, level) = match ioprio_class(rq.ioprio) {
            IOPRIO_CLASS_RT => (CLASS_RT, rq.ioprio & 7),
            IOPRIO_CLASS_IDLE => (CLASS_IDLE, 7),
            0 => (CLASS_BE, IOPRIO_NORM),
            _ => (CLASS_BE, rq.ioprio & 7),
        };
        let task = if rq.sync { rq.task } else { u32::MAX };
        let found = self.queues.iter().position(|q| {
            q.sync == rq.sync && q.task == task && (rq.sync || (q.class, q.level) == (class, level))
        });
        let i = match found {
            Some(i) => i,
            None => {
                self.queues.push(Bfqq {
                    task,
                    sync: rq.sync,
                    class,
                    level,
                    rqs: VecDeque::new(),
                    dispatched: 0,
                    orig_weight: 0,
                    wr_coeff: 1,
                    wr_start: 0,
                    service_from_wr: 0,
                    start: 0,
                    finish: 0,
                    budget: 0,
                    service: 0,
                    busy: false,
                    max_budget: self.max_budget,
                    budget_timeout: None,
                });
                self.queues.len() - 1
            }
        };
        // bfq_check_ioprio_change / bfq_set_next_ioprio_data: a sync
        // queue follows its task's priority, applied while it is not busy
        // (an entity's weight changes on its next activation).
        let q = &mut self.queues[i];
        if !q.busy {
            q.class = class;
            q.level = level;
            q.orig_weight = (IOPRIO_NR_LEVELS - u32::from(level)) * WEIGHT_CONVERSION_COEFF;
        }
        i
    }

    fn busy_queues(&self) -> usize {
        self.queues.iter().filter(|q| q.busy).count()
    }

    /// `bfq_asymmetric_scenario` for queue `i`: queues in the weights tree
    /// (busy or with requests in the driver, not weight-raised) have
    /// different weights and `i`'s is not the smallest, or busy queues of
    /// two classes.
    fn asymmetric(&self, i: usize) -> bool {
        let in_tree = |q: &Bfqq| (q.busy || q.dispatched > 0) && q.wr_coeff == 1;
        let mut min = u32::MAX;
        let mut max = 0;
        for q in self.queues.iter().filter(|q| in_tree(q)) {
            min = min.min(q.orig_weight);
            max = max.max(q.orig_weight);
        }
        let q = &self.queues[i];
        let smallest = in_tree(q) && q.orig_weight == min;
        let varied = !smallest && min < max;
        let mut classes = [false; 3];
        for q in self.queues.iter().filter(|q| q.busy) {
            classes[q.class] = true;
        }
        varied || classes.iter().filter(|&&c| c).count() > 1
    }

    /// `bfq_better_to_idle` on a flash device with command queueing: only
    /// `idling_needed_for_service_guarantees`.
    fn better_to_idle(&self, i: usize) -> bool {
        let q = &self.queues[i];
        if self.t.slice_idle == 0 || !q.sync || q.class == CLASS_IDLE {
            return false;
        }
        let busy = self.busy_queues();
        let wr_busy = self
            .queues
            .iter()
            .filter(|q| q.busy && q.wr_coeff > 1)
            .count();
        (q.wr_coeff > 1 && (wr_busy < busy || self.tot_in_driver >= q.dispatched + 4))
            || self.asymmetric(i)
            || busy == 1
    }

    /// `bfq_serv_to_charge`.
    fn charge(&self, i: usize, sectors: u32) -> u32 {
        let q = &self.queues[i];
        if q.sync || q.wr_coeff > 1 || self.asymmetric(i) {
            sectors
        } else {
            sectors * ASYNC_CHARGE_FACTOR
        }
    }

    /// The charge of queue `i`'s next request (0 when it has none).
    fn next_charge(&self, i: usize) -> u32 {
        self.queues[i]
            .rqs
            .front()
            .map_or(0, |&(_, sectors)| self.charge(i, sectors))
    }

    /// `bfq_update_wr_data`: weight raising ends after its duration or
    /// its service.
    fn update_wr(&mut self, i: usize, now: Ns) {
        let q = &mut self.queues[i];
        if q.wr_coeff > 1
            && (now - q.wr_start > WR_DURATION || q.service_from_wr > MAX_SERVICE_FROM_WR)
        {
            let old = q.weight();
            q.wr_coeff = 1;
            if q.busy {
                self.wsum[q.class] = self.wsum[q.class] - u64::from(old) + u64::from(q.weight());
            }
        }
    }

    /// Queue `i` becomes busy at `now` (`bfq_add_bfqq_busy` after
    /// `bfq_bfqq_handle_idle_busy_switch`).
    fn activate(&mut self, i: usize, now: Ns) {
        let low_latency = self.t.low_latency;
        let next_charge = self.next_charge(i);
        let q = &mut self.queues[i];
        // bfq_bfqq_idle_for_long_time: a new queue counts as idle for long.
        let idle_long = q.dispatched == 0
            && q.budget_timeout
                .is_none_or(|bt| now > bt + WR_MIN_IDLE_TIME);
        if low_latency && q.sync && q.wr_coeff == 1 && idle_long {
            q.wr_coeff = WR_COEFF;
            q.wr_start = now;
            q.service_from_wr = 0;
        }
        // bfq_bfqq_update_budg_for_activation: the budget the feedback
        // gave it, enough for its next request's charge.
        q.budget = q.max_budget.max(next_charge);
        let v = self.vtime[q.class];
        q.start = v.max(q.finish);
        q.finish = q.start + delta(u64::from(q.budget), q.weight());
        q.busy = true;
        self.wsum[q.class] += u64::from(q.weight());
    }

    /// `bfq_get_next_queue`: the highest class with a busy queue; in it
    /// the eligible queue (start <= V) with the least finish, V jumping
    /// to the least start if none is eligible.
    fn next_queue(&mut self) -> Option<usize> {
        for class in [CLASS_RT, CLASS_BE, CLASS_IDLE] {
            let cands = || {
                self.queues
                    .iter()
                    .enumerate()
                    .filter(move |(_, q)| q.busy && q.class == class)
            };
            let Some(min_start) = cands().map(|(_, q)| q.start).min() else {
                continue;
            };
            let v = self.vtime[class].max(min_start);
            let pick = cands()
                .filter(|(_, q)| q.start <= v)
                .min_by_key(|(_, q)| q.finish)
                .map(|(i, _)| i);
            self.vtime[class] = v;
            return pick;
        }
        None
    }

    /// `bfq_set_in_service_queue` at `now`.
    fn set_in_service(&mut self, i: usize, now: Ns) {
        self.in_service = Some(i);
        self.service_from = now;
        self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
        let q = &mut self.queues[i];
        q.service = 0;
        q.budget_timeout = Some(now + self.t.timeout_sync);
    }

    /// `__bfq_bfqq_recalc_budget`.
    fn recalc_budget(&mut self, i: usize, reason: Expiration) {
        let min_budget = self.min_budget();
        let max_budget = self.max_budget;
        let q = &mut self.queues[i];
        let mut budget = if q.wr_coeff == 1 {
            q.max_budget
        } else {
            2 * min_budget
        };
        if q.sync && q.wr_coeff == 1 {
            budget = match reason {
                Expiration::TooIdle if q.dispatched > 0 => (budget * 2).min(max_budget),
                Expiration::TooIdle if budget > 5 * min_budget => budget - 4 * min_budget,
                Expiration::TooIdle => min_budget,
                Expiration::BudgetTimeout => (budget * 2).min(max_budget),
                Expiration::BudgetExhausted => (budget * 4).min(max_budget),
                Expiration::NoMoreRequests => q.service.max(min_budget),
            };
        } else if !q.sync {
            budget = max_budget;
        }
        q.max_budget = budget;
    }

    /// `bfq_bfqq_expire` of the in-service queue at `now`.
    fn expire(&mut self, reason: Expiration, now: Ns) {
        let Some(i) = self.in_service.take() else {
            return;
        };
        self.idle_timer = None;
        self.expirations[reason as usize] += 1;
        let timeout = self.t.timeout_sync;
        let max_budget = self.max_budget;
        {
            let q = &mut self.queues[i];
            // bfq_bfqq_charge_time: a queue that timed out with a third of
            // its budget left is charged for the time it held the device.
            if reason == Expiration::BudgetTimeout
                && q.wr_coeff == 1
                && q.budget - q.service.min(q.budget) >= q.budget / 3
            {
                let held = (now - self.service_from).min(timeout);
                let for_time =
                    (u128::from(max_budget) * u128::from(held) / u128::from(timeout.max(1))) as u32;
                let charged = for_time.max(q.service);
                if charged > q.budget {
                    q.budget = charged;
                }
                self.vtime[q.class] +=
                    delta(u64::from(charged - q.service), self.wsum[q.class] as u32);
                q.service = charged;
            }
        }
        self.recalc_budget(i, reason);
        let next_charge = self.next_charge(i);
        let q = &mut self.queues[i];
        // __bfq_requeue_entity: the finish the service received gives,
        // and from there the next slot; an empty queue leaves the tree.
        q.finish = q.start + delta(u64::from(q.service), q.weight());
        if !q.rqs.is_empty() {
            q.start = q.finish;
            q.budget = q.max_budget.max(next_charge);
            q.finish = q.start + delta(u64::from(q.budget), q.weight());
        } else {
            q.busy = false;
            self.wsum[q.class] -= u64::from(q.weight());
        }
    }
}

impl ElevatorOps for Bfq {
    /// `bfq_insert_request` -> `bfq_add_request`.
    fn insert(&mut self, rq: SchedRq, now: Ns) {
        let i = self.queue_of(&rq);
        self.queues[i].rqs.push_back((rq.key, rq.sectors.max(1)));
        self.queued += 1;
        if self.in_service == Some(i) {
            // bfq_rq_enqueued: the request it was idling for came.
            self.idle_timer = None;
        } else if !self.queues[i].busy {
            self.activate(i, now);
        }
    }

    /// `bfq_dispatch_request` -> `bfq_select_queue`.
    fn dispatch(&mut self, now: Ns) -> Option<u32> {
        for _ in 0..=2 * self.queues.len() + 2 {
            let Some(i) = self.in_service else {
                let i = self.next_queue()?;
                self.set_in_service(i, now);
                continue;
            };
            self.update_wr(i, now);
            let q = &self.queues[i];
            let timed_out = q.budget_timeout.is_some_and(|t| now >= t);
            if timed_out && self.idle_timer.is_none() {
                self.expire(Expiration::BudgetTimeout, now);
                continue;
            }
            let Some(&(key, sectors)) = q.rqs.front() else {
                // Empty: wait for its next request if idling, or while
                // its requests in flight may make it worth idling.
                if self.idle_timer.is_some() || (q.dispatched > 0 && self.better_to_idle(i)) {
                    return None;
                }
                self.expire(Expiration::NoMoreRequests, now);
                continue;
            };
            let serv = self.charge(i, sectors);
            let left = q.budget - q.service.min(q.budget);
            if serv > left {
                self.expire(Expiration::BudgetExhausted, now);
                continue;
            }
            // bfq_dispatch_rq_from_bfqq -> bfq_bfqq_served.
            let class = q.class;
            let wsum = self.wsum[class];
            let q = &mut self.queues[i];
            q.rqs.pop_front();
            q.service += serv;
            if q.wr_coeff > 1 {
                q.service_from_wr += u64::from(serv);
            }
            q.dispatched += 1;
            self.vtime[class] += delta(u64::from(serv), wsum as u32);
            self.queued -= 1;
            self.tot_in_driver += 1;
            if class == CLASS_IDLE && self.busy_queues() > 1 {
                self.expire(Expiration::BudgetExhausted, now);
            }
            return Some(key);
        }
        None
    }

    fn finish(&mut self, _ioprio: u16, _now: Ns) {}

    /// `bfq_completed_request` (and `bfq_finish_requeue_request`): a
    /// queue left empty with nothing in flight idles when that is better,
    /// else expires.
    fn completed(&mut self, rq: SchedRq, _start: Ns, _io_start: Ns, now: Ns) {
        let i = self.queue_of(&rq);
        self.queues[i].dispatched -= 1;
        self.tot_in_driver -= 1;
        self.update_wr(i, now);
        if self.in_service != Some(i) {
            return;
        }
        let q = &self.queues[i];
        let empty = q.rqs.is_empty();
        if empty && self.better_to_idle(i) {
            if q.dispatched == 0 {
                self.idle_timer = Some(now + self.t.slice_idle);
            }
        } else if q.budget_timeout.is_some_and(|t| now >= t) {
            self.expire(Expiration::BudgetTimeout, now);
        } else if empty && (q.dispatched == 0 || !self.better_to_idle(i)) {
            self.expire(Expiration::NoMoreRequests, now);
        }
    }

    fn has_work(&self) -> bool {
        self.queued > 0
    }

    fn timer_at(&self) -> Option<Ns> {
        self.idle_timer
    }

    /// Queue expirations by reason and idle slices that ran out.
    fn counters(&self) -> Option<serde_json::Value> {
        let e = &self.expirations;
        Some(serde_json::json!({
            "queues": self.queues.len(),
            "expired_too_idle": e[Expiration::TooIdle as usize],
            "expired_budget_timeout": e[Expiration::BudgetTimeout as usize],
            "expired_budget_exhausted": e[Expiration::BudgetExhausted as usize],
            "expired_no_more_requests": e[Expiration::NoMoreRequests as usize],
            "idle_slices_expired": self.idle_expired,
        }))
    }

    /// `bfq_idle_slice_timer`: the in-service queue got no request.
    fn timer(&mut self, now: Ns) {
        if self.idle_timer.is_some_and(|t| t <= now) {
            self.idle_timer = None;
            if let Some(i) = self.in_service {
                if self.queues[i].rqs.is_empty() {
                    self.idle_expired += 1;
                    self.expire(Expiration::TooIdle, now);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::elevator::{ioprio_value, IOPRIO_CLASS_BE};
    use crate::types::Ddir;

    fn rq(key: u32, task: u32, ioprio: u16) -> SchedRq {
        SchedRq {
            task,
            ..SchedRq::new(key, Ddir::Read, u64::from(key) << 12, ioprio)
        }
    }

    /// Two always-backlogged sync queues of weights 80 and 40 (levels 0
    /// and 4), served one request at a time by a device that completes
    /// each before the next: service splits 2:1 over many budgets.
    #[test]
    fn weights_split_service_in_proportion() {
        let t = BfqTunables {
            low_latency: false,
            ..Default::default()
        };
        let mut b = Bfq::new(t);
        let prio = [
            ioprio_value(IOPRIO_CLASS_BE, 0),
            ioprio_value(IOPRIO_CLASS_BE, 4),
        ];
        let mut key = 0;
        let mut owner = vec![];
        for task in 0..2u32 {
            for _ in 0..4 {
                b.insert(rq(key, task, prio[task as usize]), 0);
                owner.push(task);
                key += 1;
            }
        }
        let mut served = [0u64; 2];
        let mut now = 0;
        for _ in 0..60_000 {
            now += 10_000;
            let k = b.dispatch(now).expect("backlogged");
            let task = owner[k as usize];
            served[task as usize] += 1;
            b.completed(rq(k, task, prio[task as usize]), 0, now, now + 5_000);
            // Its process issues the next at once.
            b.insert(rq(key, task, prio[task as usize]), now + 5_000);
            owner.push(task);
            key += 1;
        }
        let ratio = served[0] as f64 / served[1] as f64;
        assert!((ratio - 2.0).abs() < 0.1, "{served:?}");
    }

    /// An in-service sync queue that empties with idling needed waits
    /// slice_idle for its next request: the other queue's requests stay
    /// put; a request in time is served at once; none in time and the
    /// queue expires too idle.
    #[test]
    fn an_emptied_sync_queue_holds_the_device_for_slice_idle() {
        let mut b = Bfq::new(BfqTunables::default());
        b.insert(rq(0, 0, 0), 0);
        b.insert(rq(1, 1, 0), 0);
        b.insert(rq(2, 1, 0), 0);
        assert_eq!(b.dispatch(0), Some(0), "equal finish: the first queue");
        // Both queues are new, so weight-raised; with every busy queue
        // raised and under four requests in the driver no guarantee needs
        // idling: queue 0 expires as it empties.
        b.completed(rq(0, 0, 0), 0, 0, MS);
        assert_eq!(b.timer_at(), None);
        assert_eq!(b.dispatch(MS), Some(1));

        // Now with queue 1 no longer weight-raised (low_latency off for
        // it is the same as its raising having ended): weights differ.
        let t = BfqTunables::default();
        let mut b = Bfq::new(t);
        b.insert(rq(0, 0, ioprio_value(IOPRIO_CLASS_BE, 0)), 0);
        b.insert(rq(1, 1, ioprio_value(IOPRIO_CLASS_BE, 7)), 0);
        for q in &mut b.queues {
            if q.wr_coeff > 1 {
                b.wsum[q.class] -= u64::from(q.weight() - q.orig_weight);
                q.wr_coeff = 1;
            }
        }
        assert_eq!(b.dispatch(0), Some(0));
        b.completed(rq(0, 0, ioprio_value(IOPRIO_CLASS_BE, 0)), 0, 0, MS);
        assert_eq!(b.timer_at(), Some(MS + 8 * MS));
        assert_eq!(b.dispatch(2 * MS), None, "idling for queue 0");
        b.insert(rq(2, 0, ioprio_value(IOPRIO_CLASS_BE, 0)), 3 * MS);
        assert_eq!(b.dispatch(3 * MS), Some(2));
        b.completed(rq(2, 0, ioprio_value(IOPRIO_CLASS_BE, 0)), 0, 0, 4 * MS);
        assert_eq!(b.timer_at(), Some(12 * MS));
        b.timer(12 * MS);
        assert_eq!(b.idle_expired, 1);
        assert_eq!(b.dispatch(12 * MS), Some(1));
        assert_eq!(b.expirations[Expiration::TooIdle as usize], 1);
    }

    /// A budget smaller than an async request's 3x charge still serves
    /// it: the budget is set to cover the next request's charge
    /// (bfq_bfqq_update_budg_for_activation).
    #[test]
    fn a_tiny_max_budget_still_serves_async_requests() {
        let t = BfqTunables {
            max_budget: 8,
            low_latency: false,
            ..Default::default()
        };
        let mut b = Bfq::new(t);
        let asy = |k| SchedRq {
            sync: false,
            task: u32::MAX,
            write: true,
            ddir: Ddir::Write,
            sectors: 256,
            ..rq(k, 9, 0)
        };
        for k in 0..4 {
            b.insert(asy(k), 0);
        }
        for k in 0..4 {
            assert_eq!(b.dispatch(MS), Some(k));
        }
        assert!(!b.has_work());
    }

    /// With slice_idle 0 nothing idles: the emptied queue expires at once.
    #[test]
    fn slice_idle_zero_never_idles() {
        let t = BfqTunables {
            slice_idle: 0,
            ..Default::default()
        };
        let mut b = Bfq::new(t);
        b.insert(rq(0, 0, ioprio_value(IOPRIO_CLASS_BE, 0)), 0);
        b.insert(rq(1, 1, ioprio_value(IOPRIO_CLASS_BE, 7)), 0);
        assert_eq!(b.dispatch(0), Some(0));
        b.completed(rq(0, 0, ioprio_value(IOPRIO_CLASS_BE, 0)), 0, 0, MS);
        assert_eq!(b.timer_at(), None);
        assert_eq!(b.dispatch(MS), Some(1));
    }

    /// An async queue is charged three times its sectors when the
    /// scenario is symmetric, so beside a sync queue of the same weight it
    /// gets a third of the sectors.
    #[test]
    fn async_queues_are_charged_three_times() {
        let t = BfqTunables {
            low_latency: false,
            ..Default::default()
        };
        let mut b = Bfq::new(t);
        let sync = |k| rq(k, 0, 0);
        let asy = |k| SchedRq {
            sync: false,
            task: u32::MAX,
            write: true,
            ddir: Ddir::Write,
            ..rq(k, 9, 0)
        };
        let mut next = 0u32;
        let mut is_async = vec![];
        for _ in 0..4 {
            b.insert(sync(next), 0);
            is_async.push(false);
            next += 1;
            b.insert(asy(next), 0);
            is_async.push(true);
            next += 1;
        }
        let mut served = [0u64; 2];
        let mut now = 0;
        for _ in 0..60_000 {
            now += 10_000;
            let k = b.dispatch(now).unwrap();
            let a = is_async[k as usize];
            served[usize::from(a)] += 1;
            let r = if a { asy(k) } else { sync(k) };
            b.completed(r, 0, now, now + 5_000);
            let r = if a { asy(next) } else { sync(next) };
            b.insert(r, now + 5_000);
            is_async.push(a);
            next += 1;
        }
        let ratio = served[0] as f64 / served[1] as f64;
        assert!((ratio - 3.0).abs() < 0.15, "{served:?}");
    }
}
