//! The NVMe controller's submission queues and its command arbitration
//! (NVM Express Base Specification 2.0c, section 3.4.4 "Command
//! Arbitration"): which submission queue's head command the controller
//! fetches next when it has room for one.
//!
//! - **Round robin** (CC.AMS 000b, every controller supports it): the
//!   submission queues are visited in turn; at each visit the controller
//!   takes up to the Arbitration Burst (AB, Set Features Arbitration,
//!   FID 01h, bits 2:0: 2^AB commands, 111b no limit) from that queue,
//!   of those it holds when the visit starts ("at one time").
//! - **Weighted round robin with an urgent priority class** (CC.AMS 001b,
//!   optional: CAP.AMS bit 0): each queue has the priority its Create I/O
//!   Submission Queue command gave it (QPRIO, CDW11 bits 2:1). Urgent
//!   queues are served strictly first (round robin among them, with the
//!   burst); then High, Medium and Low share what is left by their weights
//!   HPW, MPW, LPW (Set Features Arbitration bits 31:24, 23:16, 15:8, each
//!   0's based): a class takes one credit per command, the credits of the
//!   classes with commands are given back (the weights) when none of them
//!   has one left, and within a class the queues go round robin.
//!
//! The Admin queue (QID 0) and its own strict priority are not modelled:
//! no admin command is sent during a run.
//!
//! A queue's commands are offered in the order the host rang its doorbell;
//! the arbiter only sees the commands that have reached the controller by
//! the time it arbitrates (`at` no later than that time). It allocates
//! nothing once its queues are built: each queue's ring is reserved at its
//! depth.

use std::collections::VecDeque;

use super::Command;
use crate::sim::Ns;

/// A submission queue's priority (QPRIO, Create I/O Submission Queue CDW11
/// bits 2:1): 00b Urgent, 01b High, 10b Medium, 11b Low. Under round
/// robin it is ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Qprio {
    Urgent = 0,
    High = 1,
    Medium = 2,
    Low = 3,
}

impl Qprio {
    pub const ALL: [Qprio; 4] = [Qprio::Urgent, Qprio::High, Qprio::Medium, Qprio::Low];

    pub fn name(self) -> &'static str {
        match self {
            Qprio::Urgent => "urgent",
            Qprio::High => "high",
            Qprio::Medium => "medium",
            Qprio::Low => "low",
        }
    }
}

/// The Arbitration Mechanism Selected (CC.AMS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ams {
    /// 000b: round robin.
    RoundRobin,
    /// 001b: weighted round robin with an urgent priority class.
    WeightedRoundRobin,
}

/// A command in a submission queue: when it reached the controller, what
/// it is, its data's time on the link, its completion entry's, and the
/// host's command identifier (CID), handed back when it is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub at: Ns,
    pub cmd: Command,
    pub xfer: Ns,
    pub posted: Ns,
    pub cid: u32,
}

struct Sq {
    prio: Qprio,
    ring: VecDeque<Queued>,
}

/// The controller's submission queues and its arbiter.
pub struct Arbiter {
    ams: Ams,
    /// Commands taken from a queue at one visit (2^AB; `u32::MAX`: no
    /// limit).
    burst: u32,
    /// Weights of High, Medium, Low (the register values + 1).
    weights: [u32; 3],
    credits: [u32; 3],
    sqs: Vec<Sq>,
    /// The queues of each priority, in QID order (under round robin every
    /// queue is in the first list).
    members: [Vec<usize>; 4],
    /// The next queue to visit in each list.
    next: [usize; 4],
    /// The class (0 High, 1 Medium, 2 Low) weighted round robin is on.
    class: usize,
    /// The queue being served in a burst and the commands it may still
    /// give.
    current: Option<(usize, u32)>,
    waiting: usize,
    /// Commands served from each class, for the counters.
    pub served: [u64; 4],
}

impl Arbiter {
    /// The arbiter over queues of the given priorities (QID 1 first), each
    /// with room for `depth` commands. `ab` is the Arbitration Burst field
    /// (0 to 7), `weights` High, Medium, Low (1 to 256).
    pub fn new(ams: Ams, ab: u32, weights: [u32; 3], prios: &[Qprio], depth: usize) -> Arbiter {
        let mut members: [Vec<usize>; 4] = Default::default();
        for (i, &p) in prios.iter().enumerate() {
            let list = match ams {
                Ams::RoundRobin => 0,
                Ams::WeightedRoundRobin => p as usize,
            };
            members[list].push(i);
        }
        Arbiter {
            ams,
            burst: if ab >= 7 { u32::MAX } else { 1 << ab },
            weights,
            credits: weights,
            sqs: prios
                .iter()
                .map(|&prio| Sq {
                    prio,
                    ring: VecDeque::with_capacity(depth),
                })
                .collect(),
            members,
            next: [0; 4],
            class: 0,
            current: None,
            waiting: 0,
            served: [0; 4],
        }
    }

    pub fn ams(&self) -> Ams {
        self.ams
    }

    pub fn queues(&self) -> usize {
        self.sqs.len()
    }

    pub fn prio(&self, sq: usize) -> Qprio {
        self.sqs[sq].prio
    }

    /// Commands in the queues.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// A command the host put in queue `sq` (its doorbell rung).
    pub fn push(&mut self, sq: usize, q: Queued) {
        self.sqs[sq].ring.push_back(q);
        self.waiting += 1;
    }

    /// When the earliest head command reaches the controller.
    pub fn first_arrival(&self) -> Option<Ns> {
        self.sqs
            .iter()
            .filter_map(|s| s.ring.front().map(|q| q.at))
            .min()
    }

    fn ready(&self, sq: usize, t: Ns) -> bool {
        self.sqs[sq].ring.front().is_some_and(|q| q.at <= t)
    }

    /// The next queue of list `l` (round robin from its pointer) with a
    /// command there by `t`.
    fn round_robin(&self, l: usize, t: Ns) -> Option<usize> {
        let m = &self.members[l];
        (0..m.len())
            .map(|k| (self.next[l] + k) % m.len())
            .find(|&k| self.ready(m[k], t))
    }

    /// Take the head of list `l`'s next ready queue, starting a burst
    /// there.
    fn visit(&mut self, l: usize, t: Ns) -> Option<Queued> {
        let k = self.round_robin(l, t)?;
        let sq = self.members[l][k];
        self.next[l] = (k + 1) % self.members[l].len();
        // A burst launches commands the queue holds when the visit starts
        // ("at one time"): later arrivals wait for the next visit.
        let there = self.sqs[sq]
            .ring
            .iter()
            .take(self.burst as usize)
            .take_while(|q| q.at <= t)
            .count() as u32;
        self.current = Some((sq, there));
        self.take(sq)
    }

    fn take(&mut self, sq: usize) -> Option<Queued> {
        let q = self.sqs[sq].ring.pop_front()?;
        self.waiting -= 1;
        if let Some((s, left)) = &mut self.current {
            if *s == sq {
                *left = left.saturating_sub(1);
            }
        }
        self.served[self.sqs[sq].prio as usize] += 1;
        Some(q)
    }

    /// The command the controller fetches next at `t`, if a queue has one
    /// there by then.
    pub fn pick(&mut self, t: Ns) -> Option<Queued> {
        // Urgent queues pre-empt a burst of a weighted class, never the
        // other way round.
        let urgent_ready = self.ams == Ams::WeightedRoundRobin
            && self.members[0].iter().any(|&s| self.ready(s, t));
        if let Some((sq, left)) = self.current {
            let same_class = !urgent_ready || self.sqs[sq].prio == Qprio::Urgent;
            let credit = match self.ams {
                Ams::RoundRobin => true,
                Ams::WeightedRoundRobin => match self.sqs[sq].prio {
                    Qprio::Urgent => true,
                    p => self.credits[p as usize - 1] > 0,
                },
            };
            if left > 0 && same_class && credit && self.ready(sq, t) {
                if let Some(c) = self.sqs[sq].prio.weighted_class() {
                    if self.ams == Ams::WeightedRoundRobin {
                        self.credits[c] -= 1;
                    }
                }
                return self.take(sq);
            }
            self.current = None;
        }
        match self.ams {
            Ams::RoundRobin => self.visit(0, t),
            Ams::WeightedRoundRobin => {
                if urgent_ready {
                    return self.visit(0, t);
                }
                self.weighted(t)
            }
        }
    }

    /// High, Medium and Low by their weights: the class being served keeps
    /// its turn while it has credit and a command; the credits come back
    /// when no class with a command has any left.
    fn weighted(&mut self, t: Ns) -> Option<Queued> {
        let has = |a: &Arbiter, c: usize| a.round_robin(c + 1, t).is_some();
        if !(0..3).any(|c| has(self, c)) {
            return None;
        }
        if !(0..3).any(|c| has(self, c) && self.credits[c] > 0) {
            // A new round, from High.
            self.credits = self.weights;
            self.class = 0;
        }
        let c = (0..3)
            .map(|k| (self.class + k) % 3)
            .find(|&c| has(self, c) && self.credits[c] > 0)?;
        self.class = c;
        self.credits[c] -= 1;
        self.visit(c + 1, t)
    }
}

impl Qprio {
    /// The weighted class (0 High, 1 Medium, 2 Low), none for Urgent.
    fn weighted_class(self) -> Option<usize> {
        match self {
            Qprio::Urgent => None,
            p => Some(p as usize - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Op;

    fn q(at: Ns, cid: u32) -> Queued {
        Queued {
            at,
            cmd: Command::of(Op::Read, 0, 4096),
            xfer: 0,
            posted: 0,
            cid,
        }
    }

    /// Serve `n` commands from queues that never run dry: the queue of
    /// each pick.
    fn order(a: &mut Arbiter, n: usize) -> Vec<usize> {
        let queues = a.queues();
        let mut cid = 0;
        for s in 0..queues {
            for _ in 0..n {
                a.push(s, q(0, cid));
                cid += 1;
            }
        }
        (0..n)
            .map(|_| a.pick(0).expect("a command").cid as usize / n)
            .collect()
    }

    #[test]
    fn round_robin_takes_one_burst_per_queue_in_turn() {
        let prios = [Qprio::Urgent; 3];
        let mut a = Arbiter::new(Ams::RoundRobin, 0, [1; 3], &prios, 16);
        assert_eq!(order(&mut a, 6), [0, 1, 2, 0, 1, 2]);
        // AB = 1: two commands per visit.
        let mut a = Arbiter::new(Ams::RoundRobin, 1, [1; 3], &prios, 16);
        assert_eq!(order(&mut a, 8), [0, 0, 1, 1, 2, 2, 0, 0]);
        // Under round robin a queue's QPRIO means nothing.
        let prios = [Qprio::Low, Qprio::Urgent];
        let mut a = Arbiter::new(Ams::RoundRobin, 0, [1; 3], &prios, 16);
        assert_eq!(order(&mut a, 4), [0, 1, 0, 1]);
    }

    #[test]
    fn an_unlimited_burst_takes_what_the_queue_held_at_the_visit() {
        let prios = [Qprio::Urgent; 2];
        let mut a = Arbiter::new(Ams::RoundRobin, 7, [1; 3], &prios, 8);
        a.push(0, q(0, 0));
        a.push(0, q(0, 1));
        a.push(0, q(5, 2));
        a.push(1, q(0, 10));
        let got: Vec<u32> = [0, 0, 5, 5]
            .iter()
            .map(|&t| a.pick(t).expect("a command").cid)
            .collect();
        // Queue 0's third command came after its visit began at 0 (the
        // visit saw two): queue 1 goes before it.
        assert_eq!(got, [0, 1, 10, 2]);
    }

    #[test]
    fn an_empty_or_not_yet_arrived_queue_is_skipped() {
        let prios = [Qprio::Urgent; 3];
        let mut a = Arbiter::new(Ams::RoundRobin, 0, [1; 3], &prios, 4);
        a.push(0, q(0, 0));
        a.push(0, q(0, 1));
        a.push(2, q(50, 2));
        assert_eq!(a.pick(10).map(|c| c.cid), Some(0));
        // Queue 2's command is not at the controller before 50.
        assert_eq!(a.pick(10).map(|c| c.cid), Some(1));
        assert_eq!(a.pick(10), None);
        assert_eq!(a.first_arrival(), Some(50));
        assert_eq!(a.pick(50).map(|c| c.cid), Some(2));
        assert_eq!(a.waiting(), 0);
    }

    #[test]
    fn urgent_first_then_weights() {
        let prios = [Qprio::High, Qprio::Medium, Qprio::Low, Qprio::Urgent];
        let mut a = Arbiter::new(Ams::WeightedRoundRobin, 0, [4, 2, 1], &prios, 64);
        for s in 0..3 {
            for _ in 0..30 {
                a.push(s, q(0, s as u32));
            }
        }
        for _ in 0..10 {
            a.push(3, q(0, 3));
        }
        let got: Vec<u32> = (0..24).map(|_| a.pick(0).expect("a command").cid).collect();
        // The urgent queue drains first, whatever the others hold; then
        // 4:2:1 in each round of seven.
        assert_eq!(got[..10], [3; 10]);
        assert_eq!(got[10..], [0, 0, 0, 0, 1, 1, 2, 0, 0, 0, 0, 1, 1, 2]);
        assert_eq!(a.served, [10, 8, 4, 2]);
    }

    #[test]
    fn an_urgent_arrival_cuts_a_weighted_burst() {
        let prios = [Qprio::High, Qprio::Urgent];
        let mut a = Arbiter::new(Ams::WeightedRoundRobin, 7, [8, 1, 1], &prios, 8);
        for i in 0..4 {
            a.push(0, q(0, i));
        }
        a.push(1, q(5, 99));
        assert_eq!(a.pick(0).map(|c| c.cid), Some(0));
        assert_eq!(a.pick(5).map(|c| c.cid), Some(99));
        assert_eq!(a.pick(5).map(|c| c.cid), Some(1));
        assert_eq!(a.served, [1, 2, 0, 0]);
    }
}
