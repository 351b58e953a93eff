//! fio's token-based flow control between jobs (flow.c, fio 3.33): the
//! jobs with the same `flow_id` share a counter; a job with weight `flow`
//! issues its next I/O only while its share of the group's I/Os is at most
//! its share of the group's weight, else it waits (backend.c do_io checks
//! `flow_threshold_exceeded` before each I/O).

use std::cell::Cell;
use std::rc::Rc;

/// One `flow_id` group (fio's `struct fio_flow`).
#[derive(Debug)]
pub struct FlowGroup {
    /// I/Os the group's running jobs let through, plus one (flow_get
    /// starts it at 1; flow_put takes an ending job's own count away).
    counter: Cell<u64>,
    /// Sum of the running jobs' weights.
    total_weight: Cell<u64>,
}

impl FlowGroup {
    pub fn new() -> Rc<FlowGroup> {
        Rc::new(FlowGroup {
            counter: Cell::new(1),
            total_weight: Cell::new(0),
        })
    }
}

/// A job clone's place in its group.
#[derive(Debug)]
pub struct FlowMember {
    group: Rc<FlowGroup>,
    weight: u64,
    /// td->flow_counter: this clone's I/Os let through.
    counter: u64,
    joined: bool,
}

impl FlowMember {
    pub fn new(group: Rc<FlowGroup>, weight: u64) -> FlowMember {
        FlowMember {
            group,
            weight,
            counter: 0,
            joined: false,
        }
    }

    /// flow_init_job, when the thread starts: its weight joins the group.
    pub fn join(&mut self) {
        if !self.joined {
            self.joined = true;
            self.counter = 0;
            let g = &self.group;
            g.total_weight.set(g.total_weight.get() + self.weight);
        }
    }

    /// flow_exit_job, when the thread ends: its count and weight leave.
    pub fn leave(&mut self) {
        if self.joined {
            self.joined = false;
            let g = &self.group;
            g.counter
                .set(g.counter.get().saturating_sub(self.counter).max(1));
            g.total_weight
                .set(g.total_weight.get().saturating_sub(self.weight));
        }
    }

    /// flow_threshold_exceeded: false (and counted) when the job may issue
    /// its next I/O; true when its share of the group's I/Os is above its
    /// share of the weight.
    pub fn exceeded(&mut self) -> bool {
        let g = &self.group;
        let count_ratio = self.counter as f64 / g.counter.get() as f64;
        let weight_ratio = self.weight as f64 / g.total_weight.get().max(1) as f64;
        if count_ratio > weight_ratio {
            return true;
        }
        g.counter.set(g.counter.get() + 1);
        self.counter += 1;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs of weights 1 and 8 taking turns as fio's loops do: each issues
    /// until it is held; the I/Os let through follow the weights.
    #[test]
    fn the_group_shares_ios_by_weight() {
        let g = FlowGroup::new();
        let mut m = [FlowMember::new(g.clone(), 1), FlowMember::new(g.clone(), 8)];
        m.iter_mut().for_each(FlowMember::join);
        let mut n = [0u64; 2];
        while n[0] + n[1] < 9000 {
            for (i, job) in m.iter_mut().enumerate() {
                while !job.exceeded() {
                    n[i] += 1;
                }
            }
            // Never more than an I/O past its share: n / counter <= w / W.
            assert!(n[0] * 9 <= n[0] + n[1] + 1 + 9, "{n:?}");
            assert!(n[1] * 9 <= 8 * (n[0] + n[1] + 1) + 9, "{n:?}");
        }
        assert!((n[1] as f64 / n[0] as f64 - 8.0).abs() < 0.05, "{n:?}");
    }

    #[test]
    fn a_job_alone_is_never_held_and_a_leaving_job_frees_the_rest() {
        let g = FlowGroup::new();
        let mut a = FlowMember::new(g.clone(), 1);
        let mut b = FlowMember::new(g.clone(), 3);
        a.join();
        assert!((0..100).all(|_| !a.exceeded()));
        b.join();
        // a is far ahead of its quarter: held until b catches up.
        assert!(a.exceeded());
        b.leave();
        assert!(!a.exceeded());
        assert_eq!(g.total_weight.get(), 1);
        assert_eq!(g.counter.get(), 1 + 101);
    }
}
