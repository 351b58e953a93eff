//! A booking timeline: the busy intervals of one resource (a NAND die's
//! channel, a link direction, a bus line) that a booking model reserves
//! time on and first-fit fills gaps in. The device, the links and the
//! drivers all book on it, so it lives in the engine below them.

use std::collections::VecDeque;

use crate::sim::Ns;

/// Most intervals a channel keeps. When more are booked, the oldest is
/// folded into the floor (time before it is treated as busy): bounded memory
/// and search cost, at the price of forgetting very old gaps.
const MAX_INTERVALS: usize = 128;

/// A bus timeline: sorted, disjoint busy intervals `[start, end)` after
/// `floor`; no booking starts before `floor`.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    floor: Ns,
    busy: VecDeque<(Ns, Ns)>,
}

impl Timeline {
    pub fn new() -> Self {
        Timeline {
            floor: 0,
            busy: VecDeque::with_capacity(MAX_INTERVALS + 1),
        }
    }

    /// Forget intervals that ended by `now`. `now` is the caller's current
    /// time, non-decreasing in an event loop; the floor makes the timeline
    /// safe (never double-booked) even if it is not.
    #[inline]
    pub fn prune(&mut self, now: Ns) {
        if now > self.floor {
            self.floor = now;
        }
        while let Some(&(_, end)) = self.busy.front() {
            if end <= self.floor {
                self.busy.pop_front();
            } else {
                break;
            }
        }
    }

    /// Book `dur` at the first free gap starting at or after `earliest`;
    /// returns the start.
    pub fn reserve(&mut self, earliest: Ns, dur: Ns) -> Ns {
        let mut t = earliest.max(self.floor);
        // Fast path: after everything booked (the common case: a transfer
        // after a tR lands past the bus's current bookings).
        if let Some(last) = self.busy.back_mut() {
            if t > last.1 {
                // fall through to push_back below
            } else if t == last.1 {
                last.1 = t + dur;
                return t;
            }
        }
        // Intervals ending by t cannot hold the booking: skip them.
        let mut i = self.busy.partition_point(|&(_, e)| e <= t);
        while i < self.busy.len() {
            let (s, e) = self.busy[i];
            if t + dur <= s {
                break;
            }
            if e > t {
                t = e;
            }
            i += 1;
        }
        let end = t + dur;
        // Merge with the neighbours when touching, else insert.
        let merge_prev = i > 0 && self.busy[i - 1].1 == t;
        let merge_next = i < self.busy.len() && self.busy[i].0 == end;
        match (merge_prev, merge_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = end,
            (false, true) => self.busy[i].0 = t,
            (false, false) => {
                if dur > 0 {
                    self.busy.insert(i, (t, end));
                }
            }
        }
        if self.busy.len() > MAX_INTERVALS {
            if let Some((_, e)) = self.busy.pop_front() {
                self.floor = self.floor.max(e);
            }
        }
        t
    }

    /// Time after which the bus is free for good.
    pub fn busy_until(&self) -> Ns {
        self.busy.back().map_or(self.floor, |&(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_fills_gaps_first_fit() {
        let mut t = Timeline::new();
        assert_eq!(t.reserve(100, 10), 100);
        assert_eq!(t.reserve(0, 10), 0);
        // Does not fit in [10,100)? It does: 10..60.
        assert_eq!(t.reserve(5, 50), 10);
        // Gap 60..100 is 40 long: 50 does not fit, goes after 110.
        assert_eq!(t.reserve(55, 50), 110);
        assert_eq!(t.reserve(60, 40), 60);
        assert_eq!(t.busy_until(), 160);
        // Everything touching merged into one interval.
        assert_eq!(t.busy.len(), 1);
    }

    #[test]
    fn timeline_floor_never_double_books() {
        let mut t = Timeline::new();
        t.reserve(0, 100);
        t.prune(200);
        assert_eq!(t.reserve(0, 10), 200);
    }
}
