//! The event queue: a binary min-heap ordered by (time, sequence number).
//!
//! The sequence number is the order of scheduling, so two events at the same
//! nanosecond fire in the order they were scheduled: runs are deterministic
//! without any tie-breaking by payload. The heap's storage is reserved once
//! and reused, so scheduling allocates nothing once it has grown to the
//! run's peak number of pending events.

use super::Ns;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: Ns,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: Ns,
    popped: u64,
}

impl<E> EventQueue<E> {
    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: 0,
            now: 0,
            popped: 0,
        }
    }

    /// The time of the event being handled (the last one popped).
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Schedule `event` at absolute time `at`. Scheduling in the past is a
    /// model bug; it is clamped to now in release builds and caught in debug.
    pub fn schedule(&mut self, at: Ns, event: E) {
        debug_assert!(
            at >= self.now,
            "event scheduled in the past: {at} < {}",
            self.now
        );
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
    }

    /// Schedule `event` `delay` nanoseconds from now.
    pub fn schedule_in(&mut self, delay: Ns, event: E) {
        self.schedule(self.now + delay, event);
    }

    pub fn pop(&mut self) -> Option<(Ns, E)> {
        let entry = self.heap.pop()?;
        self.now = entry.at;
        self.popped += 1;
        Some((entry.at, entry.event))
    }

    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|e| e.at)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events handled so far.
    pub fn events_popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pops_in_time_then_schedule_order(times in proptest::collection::vec(0u64..50, 1..200)) {
            let mut q = EventQueue::with_capacity(4);
            for (i, t) in times.iter().enumerate() {
                q.schedule(*t, i);
            }
            let mut last: Option<(u64, usize)> = None;
            let mut n = 0;
            while let Some((t, i)) = q.pop() {
                prop_assert_eq!(t, times[i]);
                if let Some((lt, li)) = last {
                    prop_assert!(lt < t || (lt == t && li < i));
                }
                last = Some((t, i));
                n += 1;
            }
            prop_assert_eq!(n, times.len());
        }

        #[test]
        fn interleaved_scheduling_never_goes_back_in_time(ops in proptest::collection::vec((0u64..1000, any::<bool>()), 1..300)) {
            let mut q = EventQueue::with_capacity(4);
            let mut last = 0;
            for (delay, pop) in ops {
                q.schedule_in(delay, ());
                if pop {
                    let (t, ()) = q.pop().unwrap();
                    prop_assert!(t >= last);
                    last = t;
                }
            }
        }
    }
}
