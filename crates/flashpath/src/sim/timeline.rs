//! A booking timeline: the busy intervals of one resource (a NAND die's
//! channel, a link direction, a bus line) that a booking model reserves
//! time on and first-fit fills gaps in. The device, the links and the
//! drivers all book on it, so it lives in the engine below them.

use crate::sim::Ns;

/// Most intervals a channel keeps. When more are booked, the oldest is
/// folded into the floor (time before it is treated as busy): bounded memory
/// and search cost, at the price of forgetting very old gaps.
const MAX_INTERVALS: usize = 128;

/// Room of the interval array: the live intervals (at most
/// `MAX_INTERVALS + 1` between an insert and the fold) and the dead ones
/// before `head` that pruning left, compacted away when the array is full.
const ROOM: usize = 2 * (MAX_INTERVALS + 1);

/// A bus timeline: sorted, disjoint busy intervals `[start, end)` after
/// `floor`; no booking starts before `floor`.
///
/// The intervals are `busy[head..]` of one contiguous array: pruning
/// advances `head` instead of moving anything, and the search and inserts
/// work on one slice (a ring buffer's two halves cost a branch per index
/// and a split binary search, measured at 142 instructions a booking in
/// docs/performance.md). The array is compacted when an insert finds it
/// full, at most once per `ROOM - MAX_INTERVALS - 1` prunes.
#[derive(Clone, Debug)]
pub struct Timeline {
    floor: Ns,
    head: usize,
    busy: Vec<(Ns, Ns)>,
}

/// With its array's room reserved, as [`Timeline::new`]: a default one
/// (a struct's derived `Default`) allocates nothing when it books.
impl Default for Timeline {
    fn default() -> Self {
        Timeline::new()
    }
}

impl Timeline {
    pub fn new() -> Self {
        Timeline {
            floor: 0,
            head: 0,
            busy: Vec::with_capacity(ROOM),
        }
    }

    /// The live intervals.
    #[inline]
    fn live(&self) -> &[(Ns, Ns)] {
        &self.busy[self.head..]
    }

    /// Forget intervals that ended by `now`. `now` is the caller's current
    /// time, non-decreasing in an event loop; the floor makes the timeline
    /// safe (never double-booked) even if it is not.
    #[inline]
    pub fn prune(&mut self, now: Ns) {
        // A max, not a branch: the FTL's read loop prunes a channel per
        // unit, alternating between channels already pruned at `now` and
        // not, which mispredicted 4 times per 128 KiB read.
        self.floor = self.floor.max(now);
        while let Some(&(_, end)) = self.busy.get(self.head) {
            if end <= self.floor {
                self.head += 1;
            } else {
                break;
            }
        }
        if self.head == self.busy.len() {
            self.busy.clear();
            self.head = 0;
        }
    }

    /// Book `dur` at the first free gap starting at or after `earliest`;
    /// returns the start.
    ///
    /// The fast paths are inlined into the callers (a 128 KiB read books
    /// 32 transfers, nearly all of which take one), the search is not.
    #[inline(always)]
    pub fn reserve(&mut self, earliest: Ns, dur: Ns) -> Ns {
        let t = earliest.max(self.floor);
        // Fast paths at the last interval, each what the search below would
        // find, without the search (a 128 KiB read books four transfers a
        // channel, sensed together, the later three inside the first's):
        // - after everything booked (a transfer after a tR lands past the
        //   bus's current bookings): a new last interval;
        // - touching the last interval's end: it grows;
        // - inside the last interval: every earlier one ends by its start,
        //   so the first fit is at its end, which it grows to cover (a
        //   zero-length booking at its start fits there, so it is left to
        //   the search).
        let n = self.busy.len();
        if n == self.head || t > self.busy[n - 1].1 {
            if dur > 0 {
                if n == ROOM {
                    self.compact();
                }
                self.busy.push((t, t + dur));
                self.fold();
            }
            return t;
        }
        let last = &mut self.busy[n - 1];
        if t == last.1 || (dur > 0 && t >= last.0) {
            let start = last.1;
            last.1 = start + dur;
            return start;
        }
        self.reserve_in_gaps(t, dur)
    }

    /// [`Self::reserve`] of a booking from `t` (past the floor) that
    /// starts before the last interval: the first-fit search.
    #[inline(never)]
    fn reserve_in_gaps(&mut self, mut t: Ns, dur: Ns) -> Ns {
        // Intervals ending by t cannot hold the booking: skip them.
        let live = self.live();
        let mut i = live.partition_point(|&(_, e)| e <= t);
        while i < live.len() {
            let (s, e) = live[i];
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
        let merge_prev = i > 0 && live[i - 1].1 == t;
        let merge_next = i < live.len() && live[i].0 == end;
        let at = self.head + i;
        match (merge_prev, merge_next) {
            (true, true) => {
                self.busy[at - 1].1 = self.busy[at].1;
                self.busy.remove(at);
            }
            (true, false) => self.busy[at - 1].1 = end,
            (false, true) => self.busy[at].0 = t,
            (false, false) => {
                if dur > 0 {
                    let at = if self.busy.len() == ROOM {
                        self.compact();
                        i
                    } else {
                        at
                    };
                    self.busy.insert(at, (t, end));
                }
            }
        }
        self.fold();
        t
    }

    /// Past `MAX_INTERVALS` live intervals, fold the oldest into the floor.
    #[inline]
    fn fold(&mut self) {
        if self.busy.len() - self.head > MAX_INTERVALS {
            let (_, e) = self.busy[self.head];
            self.head += 1;
            self.floor = self.floor.max(e);
        }
    }

    /// Move the live intervals to the front of the array.
    #[cold]
    fn compact(&mut self) {
        self.busy.drain(..self.head);
        self.head = 0;
    }

    /// Time after which the bus is free for good.
    pub fn busy_until(&self) -> Ns {
        self.live().last().map_or(self.floor, |&(_, e)| e)
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
        assert_eq!(t.live().len(), 1);
    }

    #[test]
    fn timeline_floor_never_double_books() {
        let mut t = Timeline::new();
        t.reserve(0, 100);
        t.prune(200);
        assert_eq!(t.reserve(0, 10), 200);
    }

    /// The ring-buffer timeline this one replaced (a `VecDeque` popped at
    /// the front), kept as the reference: the booking rules are the same,
    /// only the storage differs.
    struct RingTimeline {
        floor: Ns,
        busy: std::collections::VecDeque<(Ns, Ns)>,
    }

    impl RingTimeline {
        fn prune(&mut self, now: Ns) {
            self.floor = self.floor.max(now);
            while self.busy.front().is_some_and(|&(_, e)| e <= self.floor) {
                self.busy.pop_front();
            }
        }

        fn reserve(&mut self, earliest: Ns, dur: Ns) -> Ns {
            let mut t = earliest.max(self.floor);
            if let Some(last) = self.busy.back_mut() {
                if t == last.1 {
                    last.1 = t + dur;
                    return t;
                }
            }
            let mut i = self.busy.partition_point(|&(_, e)| e <= t);
            while i < self.busy.len() && t + dur > self.busy[i].0 {
                t = t.max(self.busy[i].1);
                i += 1;
            }
            let end = t + dur;
            let merge_prev = i > 0 && self.busy[i - 1].1 == t;
            let merge_next = i < self.busy.len() && self.busy[i].0 == end;
            match (merge_prev, merge_next) {
                (true, true) => {
                    self.busy[i - 1].1 = self.busy[i].1;
                    self.busy.remove(i);
                }
                (true, false) => self.busy[i - 1].1 = end,
                (false, true) => self.busy[i].0 = t,
                (false, false) if dur > 0 => self.busy.insert(i, (t, end)),
                (false, false) => {}
            }
            if self.busy.len() > MAX_INTERVALS {
                let (_, e) = self.busy.pop_front().expect("non-empty");
                self.floor = self.floor.max(e);
            }
            t
        }
    }

    /// Bookings 1,000 ns apart, 100 of them ahead of a clock that prunes
    /// one behind: about 100 live intervals and a growing run of dead ones
    /// before `head`, so the array fills and is compacted in place, again
    /// and again, and books as the reference all along.
    #[test]
    fn a_full_array_compacts_in_place() {
        let mut a = Timeline::new();
        let mut b = RingTimeline {
            floor: 0,
            busy: Default::default(),
        };
        assert_eq!(Timeline::default().busy.capacity(), ROOM);
        let mut compactions = 0;
        for k in 0..5_000u64 {
            let now = k * 1_000;
            a.prune(now);
            b.prune(now);
            let before = a.head;
            let at = now + 100 * 1_000;
            assert_eq!(a.reserve(at, 500), b.reserve(at, 500));
            if a.head < before {
                compactions += 1;
            }
            assert!(a.busy.len() <= ROOM && a.busy.capacity() == ROOM);
            assert!(a.live().iter().eq(b.busy.iter()));
        }
        assert!(compactions > 10, "{compactions} compactions");
    }

    proptest::proptest! {
        /// Random bookings (gaps, merges, zero lengths, more than
        /// `MAX_INTERVALS` live so that the oldest fold into the floor,
        /// and enough prunes to compact the array many times) start where
        /// the ring-buffer timeline starts them, and leave the same
        /// intervals and floor.
        #[test]
        fn contiguous_timeline_books_as_the_ring_buffer(
            ops in proptest::collection::vec((0u64..8, 0u64..4_000, 0u64..60), 1..3_000)
        ) {
            let mut a = Timeline::new();
            let mut b = RingTimeline { floor: 0, busy: Default::default() };
            let mut now = 0;
            for (kind, ahead, dur) in ops {
                if kind == 0 {
                    now += ahead / 32;
                    a.prune(now);
                    b.prune(now);
                } else {
                    proptest::prop_assert_eq!(a.reserve(now + ahead, dur), b.reserve(now + ahead, dur));
                }
                proptest::prop_assert_eq!(a.floor, b.floor);
                proptest::prop_assert!(a.live().iter().eq(b.busy.iter()));
                proptest::prop_assert!(a.busy.len() <= ROOM);
                proptest::prop_assert_eq!(a.busy_until(), b.busy.back().map_or(b.floor, |&(_, e)| e));
            }
        }
    }
}
