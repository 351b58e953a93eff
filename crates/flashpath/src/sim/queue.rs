//! The event queue: a binary min-heap ordered by (time, sequence number).
//!
//! The sequence number is the order of scheduling, so two events at the same
//! nanosecond fire in the order they were scheduled: runs are deterministic
//! without any tie-breaking by payload. The heap's storage is reserved once
//! and reused, so scheduling allocates nothing once it has grown to the
//! run's peak number of pending events.
//!
//! Beside the heap, up to two entries wait in a front pair: the two
//! earliest entries scheduled since they were last emptied. Most events
//! only hand work to the next step of a request at (or just after) the time
//! of the event being handled (the block layer's dispatch and the thread's
//! next submission, both at the end of its submit path; a woken thread's
//! run): such entries are scheduled and popped again before anything
//! earlier is scheduled, and from the pair each costs a comparison or two
//! instead of a sift up and a sift down of the heap. An entry the pair has
//! no room for (the later of three) goes into the heap. `pop` takes the
//! smaller of the pair's first and the heap's top, so the order is exactly
//! the (time, sequence) order of one heap holding everything.
//!
//! A [`Timer`] is an event that can be cancelled or moved: at most one
//! expiry of a timer is pending at a time, as with the kernel's
//! `hrtimer_start` / `hrtimer_cancel` and `mod_delayed_work` /
//! `cancel_delayed_work`. Re-arming or cancelling leaves the old entry in
//! the heap (removing from the middle of a binary heap costs a search);
//! `pop` skips it. Cancelled entries never reach a handler, so a model
//! needs no generation numbers of its own to ignore stale timers.

use super::Ns;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: Ns,
    seq: u64,
    /// The timer this entry is an expiry of, or [`NO_TIMER`].
    timer: u32,
    event: E,
}

const NO_TIMER: u32 = u32::MAX;
/// A timer slot's `seq` when nothing is pending.
const DISARMED: u64 = u64::MAX;

/// A handle on a cancellable one-shot event (a timer) in an
/// [`EventQueue`]. Its slot in the queue is assigned when it is first
/// armed, so a model can hold one before the queue exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timer {
    slot: Option<u32>,
}

/// The pending expiry of one timer: the sequence number of its live heap
/// entry (`DISARMED` if none) and its time.
#[derive(Clone, Copy, Debug)]
struct TimerSlot {
    seq: u64,
    at: Ns,
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
impl<E> Entry<E> {
    /// `(at, seq)` as one number: its order is the pair's lexicographic
    /// order, compared without a branch on `at` (the heap compares on
    /// every level of every push and pop).
    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.at) << 64) | u128::from(self.seq)
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    /// Pending entries not in the heap (see the module's comment): `first`
    /// before `second` in (time, sequence) order, and `second` only with
    /// `first`.
    first: Option<Entry<E>>,
    second: Option<Entry<E>>,
    timers: Vec<TimerSlot>,
    next_seq: u64,
    now: Ns,
    popped: u64,
}

impl<E> EventQueue<E> {
    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            first: None,
            second: None,
            timers: Vec::new(),
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
        self.push(at, NO_TIMER, event);
    }

    fn push(&mut self, at: Ns, timer: u32, event: E) -> (Ns, u64) {
        debug_assert!(
            at >= self.now,
            "event scheduled in the past: {at} < {}",
            self.now
        );
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry {
            at,
            seq,
            timer,
            event,
        };
        // The two earliest of the pair and the new entry stay in the pair,
        // the latest goes into the heap.
        let key = entry.key();
        match (&mut self.first, &mut self.second) {
            (None, _) => self.first = Some(entry),
            (Some(f), second) if key < f.key() => {
                let was_first = std::mem::replace(f, entry);
                if let Some(later) = second.replace(was_first) {
                    self.heap.push(later);
                }
            }
            (Some(_), second @ None) => *second = Some(entry),
            (Some(_), Some(s)) if key < s.key() => {
                let later = std::mem::replace(s, entry);
                self.heap.push(later);
            }
            (Some(_), Some(_)) => self.heap.push(entry),
        }
        (at, seq)
    }

    /// Arm `timer` to fire `event` at `at`, replacing its pending expiry
    /// if it has one (which then never fires).
    pub fn arm(&mut self, timer: &mut Timer, at: Ns, event: E) {
        let slot = match timer.slot {
            Some(s) => s,
            None => {
                let s = self.timers.len() as u32;
                assert!(s != NO_TIMER, "too many timers");
                self.timers.push(TimerSlot {
                    seq: DISARMED,
                    at: 0,
                });
                timer.slot = Some(s);
                s
            }
        };
        let (at, seq) = self.push(at, slot, event);
        self.timers[slot as usize] = TimerSlot { seq, at };
    }

    /// Drop `timer`'s pending expiry, if any.
    pub fn cancel(&mut self, timer: &Timer) {
        if let Some(s) = timer.slot {
            self.timers[s as usize].seq = DISARMED;
        }
    }

    /// When `timer` fires, if it is armed.
    pub fn expires(&self, timer: &Timer) -> Option<Ns> {
        let t = self.timers[timer.slot? as usize];
        (t.seq != DISARMED).then_some(t.at)
    }

    /// Schedule `event` `delay` nanoseconds from now.
    pub fn schedule_in(&mut self, delay: Ns, event: E) {
        self.schedule(self.now + delay, event);
    }

    /// The next event, in (time, scheduling) order; cancelled and
    /// re-armed timers' old entries are skipped.
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        loop {
            let from_pair = match (&self.first, self.heap.peek()) {
                (Some(f), Some(h)) => f.key() < h.key(),
                (Some(_), None) => true,
                (None, _) => false,
            };
            let entry = if from_pair {
                let next = self.second.take();
                std::mem::replace(&mut self.first, next)?
            } else {
                self.heap.pop()?
            };
            if entry.timer != NO_TIMER {
                let slot = &mut self.timers[entry.timer as usize];
                if slot.seq != entry.seq {
                    continue;
                }
                slot.seq = DISARMED;
            }
            self.now = entry.at;
            self.popped += 1;
            return Some((entry.at, entry.event));
        }
    }

    /// An entry for `at` that would be the next one popped (nothing
    /// pending is due at or before `at`: one due at `at` was scheduled
    /// earlier, so it would go first) takes its turn at once instead of
    /// being scheduled: its sequence number is used, the clock moves to
    /// `at` and it counts as popped, and the caller runs its handler now.
    /// That is the same run only when the caller does nothing after it
    /// before the loop pops again (the loop would have popped it then).
    /// Returns false, changing nothing, when something else is due first.
    pub fn turn_now(&mut self, at: Ns) -> bool {
        if self.peek_time().is_some_and(|t| t <= at) {
            return false;
        }
        debug_assert!(at >= self.now, "a turn in the past: {at} < {}", self.now);
        self.next_seq += 1;
        self.now = at;
        self.popped += 1;
        true
    }

    /// Time of the next entry (possibly a cancelled timer's).
    pub fn peek_time(&self) -> Option<Ns> {
        let heap = self.heap.peek().map(|e| e.at);
        match (self.first.as_ref().map(|e| e.at), heap) {
            (Some(f), Some(h)) => Some(f.min(h)),
            (f, h) => f.or(h),
        }
    }

    /// Entries pending (in the heap and the pair), cancelled timers'
    /// included.
    pub fn len(&self) -> usize {
        self.heap.len() + usize::from(self.first.is_some()) + usize::from(self.second.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none() && self.heap.is_empty()
    }

    /// Events handled so far (cancelled timers' entries not counted).
    pub fn events_popped(&self) -> u64 {
        self.popped
    }

    /// Bytes of the heap's and the timer table's arrays (capacities): the
    /// queue's share of the model's own memory.
    pub fn model_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Entry<E>>()
            + self.timers.capacity() * std::mem::size_of::<TimerSlot>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_rearmed_or_cancelled_timer_fires_once_at_its_last_time() {
        let mut q = EventQueue::with_capacity(4);
        let (mut a, mut b) = (Timer::default(), Timer::default());
        q.cancel(&a);
        assert_eq!(q.expires(&a), None);
        q.arm(&mut a, 10, "a@10");
        q.schedule(15, "plain");
        q.arm(&mut a, 20, "a@20");
        q.arm(&mut b, 5, "b@5");
        assert_eq!(q.expires(&a), Some(20));
        q.cancel(&b);
        assert_eq!(q.expires(&b), None);
        assert_eq!(q.pop(), Some((15, "plain")));
        assert_eq!(q.pop(), Some((20, "a@20")));
        assert_eq!(q.expires(&a), None, "fired: disarmed");
        assert_eq!(q.pop(), None);
        // Re-armed after firing, the slot is reused.
        q.arm(&mut a, 30, "a@30");
        assert_eq!(q.pop(), Some((30, "a@30")));
    }

    proptest! {
        #[test]
        fn timers_fire_as_their_last_arming_in_schedule_order(
            ops in proptest::collection::vec((0u64..50, 0usize..3, any::<bool>()), 1..100)
        ) {
            // Arm (or cancel) three timers; each fires at most once, at the
            // time of its last arming, and the live ones keep the order a
            // plain schedule of those last armings would have.
            let mut q = EventQueue::with_capacity(4);
            let mut timers = [Timer::default(); 3];
            let mut last: [Option<(u64, usize)>; 3] = [None; 3];
            for (i, &(t, k, cancel)) in ops.iter().enumerate() {
                if cancel {
                    q.cancel(&timers[k]);
                    last[k] = None;
                } else {
                    q.arm(&mut timers[k], t, (k, i));
                    last[k] = Some((t, i));
                }
            }
            let mut want: Vec<(u64, usize, usize)> = last
                .iter()
                .enumerate()
                .filter_map(|(k, l)| l.map(|(t, i)| (t, i, k)))
                .collect();
            want.sort();
            let mut got = Vec::new();
            while let Some((t, (k, i))) = q.pop() {
                got.push((t, i, k));
            }
            prop_assert_eq!(got, want);
        }

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
        fn interleaved_schedules_and_pops_follow_one_sorted_order(
            ops in proptest::collection::vec((0u64..64, 0u8..4), 1..400)
        ) {
            // Schedules (delays from now, many equal, so ties on time are
            // common) interleaved with pops, against a reference that keeps
            // every pending (time, sequence) in one ordered set: the front
            // pair and the heap together pop exactly in that order, and
            // `peek_time` and `len` agree with it at every step.
            let mut q = EventQueue::with_capacity(4);
            let mut reference = std::collections::BTreeSet::new();
            let mut seq = 0usize;
            for (delay, op) in ops {
                if op == 0 {
                    let got = q.pop();
                    let want = reference.pop_first();
                    prop_assert_eq!(got, want);
                } else {
                    let at = q.now() + delay;
                    q.schedule(at, seq);
                    reference.insert((at, seq));
                    seq += 1;
                }
                prop_assert_eq!(q.peek_time(), reference.first().map(|&(t, _)| t));
                prop_assert_eq!(q.len(), reference.len());
                prop_assert_eq!(q.is_empty(), reference.is_empty());
            }
            while let Some(got) = q.pop() {
                prop_assert_eq!(Some(got), reference.pop_first());
            }
            prop_assert!(reference.is_empty());
        }

        #[test]
        fn a_turn_taken_now_runs_as_the_scheduled_entry_would(
            ops in proptest::collection::vec((0u64..16, 0u8..4), 1..300)
        ) {
            // Two queues see the same operations; on a turn, one schedules
            // the entry and pops it, the other takes `turn_now` when it
            // allows. Both must hand out the same (time, payload) sequence,
            // clock and event count, and the turn must be refused exactly
            // when the scheduled entry would not be the next popped.
            let mut sched = EventQueue::with_capacity(4);
            let mut turns = EventQueue::with_capacity(4);
            for (i, &(delay, op)) in ops.iter().enumerate() {
                match op {
                    0 => prop_assert_eq!(sched.pop(), turns.pop()),
                    1 => {
                        let at = sched.now() + delay;
                        let due_first = sched.peek_time().is_some_and(|t| t <= at);
                        let took = turns.turn_now(at);
                        prop_assert_eq!(took, !due_first);
                        sched.schedule(at, i);
                        if took {
                            prop_assert_eq!(sched.pop(), Some((at, i)));
                        } else {
                            turns.schedule(at, i);
                        }
                    }
                    _ => {
                        let at = sched.now() + delay;
                        sched.schedule(at, i);
                        turns.schedule(at, i);
                    }
                }
                prop_assert_eq!(sched.now(), turns.now());
                prop_assert_eq!(sched.events_popped(), turns.events_popped());
                prop_assert_eq!(sched.len(), turns.len());
            }
            while let Some(e) = sched.pop() {
                prop_assert_eq!(Some(e), turns.pop());
            }
            prop_assert_eq!(turns.pop(), None);
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
