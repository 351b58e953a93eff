//! From blktrace events to I/Os, for the binary reader and the blkparse
//! text reader alike.
//!
//! Which event is the I/O: the queue event `Q` (`__BLK_TA_QUEUE`), as fio's
//! blktrace.c does (`queue_trace`: "We only care for queue traces, most of
//! the others are side effects due to internal workings of the block
//! layer"). A `Q` is what the submitter asked for, before merging and
//! splitting; the dispatch `D` and completion `C` are per request, after
//! the block layer merged bios. So one `C` may complete several queued
//! I/Os: a `C` of `sector + len` completes every pending `Q` of that device
//! that starts inside `[sector, sector + len)`, and a `C` without a length
//! completes the oldest pending flush. Passthrough (`PC`) and notes are
//! not I/Os (fio skips them too).
//!
//! Records leave in `Q` order, each once its completion is seen; a `Q`
//! whose completion never comes (the trace ended, or the `C` landed in a
//! per-CPU file not read) leaves without one when [`MAX_PENDING`] younger
//! I/Os wait behind it, or at the end. Memory is bounded by that window,
//! not by the trace.

use super::{Op, TraceRecord};
use crate::error::Result;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Queued I/Os held for their completion, at most.
pub const MAX_PENDING: usize = 1 << 16;

/// One blktrace event, reduced to what the I/O stream needs.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub time_ns: u64,
    pub device: u32,
    pub kind: Kind,
    /// 512-byte sector (None: the event names none, as a flush).
    pub sector: Option<u64>,
    pub bytes: u64,
    pub op: Op,
    pub at: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Queue,
    /// The dispatch `D` (`__BLK_TA_ISSUE`).
    Issue,
    Complete,
    /// Every other action: not part of the I/O stream.
    Other,
}

/// Which events are the I/Os. A whole trace has a `Q` for every I/O; a
/// trace filtered to one action (`blkparse -a issue` keeps only `D`,
/// `-a complete` only `C`) is replayed from what it has: the dispatches
/// (paired with their completions when it has them), else the
/// completions, each an I/O at its completion time with no recorded
/// latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// Not known yet: no `Q` among the events held so far.
    #[default]
    Undecided,
    Queue,
    Issue,
    Complete,
}

impl Source {
    /// The events replayed, as the run's notes name them.
    pub fn name(self) -> &'static str {
        match self {
            Source::Undecided | Source::Queue => "queue (Q)",
            Source::Issue => "issue (D)",
            Source::Complete => "complete (C)",
        }
    }
}

/// Pairs queue and completion events into records.
#[derive(Default)]
pub struct Assembler {
    /// Which events are the I/Os, and the events held until that is
    /// known: a trace is taken as filtered when none of its first
    /// [`MAX_PENDING`] data events is a `Q` (a whole trace queues every
    /// I/O before dispatching it, so a `Q` comes within the first few).
    source: Source,
    held: VecDeque<Event>,
    /// Queued I/Os in queue order; `.1`: completion seen.
    pending: VecDeque<(TraceRecord, bool)>,
    /// Queued data I/Os waiting for completion: (device, start sector,
    /// absolute index in `pending`, see `base`).
    by_sector: BTreeSet<(u32, u64, u64)>,
    /// Scratch for the keys one completion takes.
    taken: Vec<(u32, u64, u64)>,
    /// Pending flushes by device.
    flushes: BTreeMap<u32, VecDeque<u64>>,
    /// The absolute index of `pending[0]`.
    base: u64,
    done: bool,
}

impl Assembler {
    /// Which events are the I/Os (decided at the first `Q`, or once
    /// [`MAX_PENDING`] events or the end came without one).
    pub fn source(&self) -> Source {
        self.source
    }

    /// Take one event in.
    pub fn push(&mut self, e: Event) {
        if self.source != Source::Undecided {
            return self.take(e);
        }
        match e.kind {
            Kind::Queue => {
                self.decide(Source::Queue);
                self.take(e);
            }
            Kind::Issue | Kind::Complete => {
                self.held.push_back(e);
                if self.held.len() >= MAX_PENDING {
                    self.decide_from_held();
                }
            }
            Kind::Other => {}
        }
    }

    /// No `Q` among the held events: the dispatches are the I/Os if there
    /// are any, else the completions.
    fn decide_from_held(&mut self) {
        let src = if self.held.iter().any(|e| e.kind == Kind::Issue) {
            Source::Issue
        } else if self.held.is_empty() {
            Source::Queue
        } else {
            Source::Complete
        };
        self.decide(src);
    }

    fn decide(&mut self, src: Source) {
        self.source = src;
        while let Some(e) = self.held.pop_front() {
            self.take(e);
        }
    }

    /// One event, once the source is known.
    fn take(&mut self, e: Event) {
        let kind = match (self.source, e.kind) {
            (Source::Queue, Kind::Issue) | (Source::Issue, Kind::Queue) => Kind::Other,
            (Source::Issue, Kind::Issue) => Kind::Queue,
            (Source::Complete, Kind::Complete) => {
                // An I/O at its completion, with no recorded latency.
                self.pending.push_back((
                    TraceRecord {
                        time_ns: e.time_ns,
                        device: e.device,
                        offset: e.sector.unwrap_or(0).saturating_mul(512),
                        len: e.bytes,
                        op: if e.bytes == 0 && e.op == Op::Write {
                            Op::Flush
                        } else {
                            e.op
                        },
                        completion_ns: None,
                        at: e.at,
                    },
                    true,
                ));
                return;
            }
            (_, k) => k,
        };
        match kind {
            Kind::Queue => {
                let idx = self.base + self.pending.len() as u64;
                let sector = e.sector.unwrap_or(0);
                let op = if e.bytes == 0 && e.op == Op::Write {
                    // A write of nothing is the flush of a preflush/FUA
                    // sequence (blkparse shows it as `Q FWFS` with no
                    // sector).
                    Op::Flush
                } else {
                    e.op
                };
                self.pending.push_back((
                    TraceRecord {
                        time_ns: e.time_ns,
                        device: e.device,
                        offset: sector.saturating_mul(512),
                        len: e.bytes,
                        op,
                        completion_ns: None,
                        at: e.at,
                    },
                    false,
                ));
                if op == Op::Flush || e.bytes == 0 {
                    self.flushes.entry(e.device).or_default().push_back(idx);
                } else {
                    self.by_sector.insert((e.device, sector, idx));
                }
            }
            Kind::Complete => {
                let len = e.bytes.div_ceil(512);
                match e.sector {
                    Some(s) if len > 0 => {
                        // The oldest pending I/O at each start sector in
                        // the completed range.
                        let end = s.saturating_add(len);
                        let mut last = None;
                        self.taken.clear();
                        for &k in self.by_sector.range((e.device, s, 0)..(e.device, end, 0)) {
                            if last != Some(k.1) {
                                self.taken.push(k);
                                last = Some(k.1);
                            }
                        }
                        for k in &self.taken {
                            self.by_sector.remove(k);
                            if let Some(p) =
                                k.2.checked_sub(self.base)
                                    .and_then(|i| self.pending.get_mut(i as usize))
                            {
                                p.0.completion_ns = Some(e.time_ns);
                                p.1 = true;
                            }
                        }
                    }
                    _ => {
                        if let Some(q) = self.flushes.get_mut(&e.device) {
                            if let Some(i) = q.pop_front() {
                                if let Some(p) = i
                                    .checked_sub(self.base)
                                    .and_then(|i| self.pending.get_mut(i as usize))
                                {
                                    p.0.completion_ns = Some(e.time_ns);
                                    p.1 = true;
                                }
                            }
                            if q.is_empty() {
                                self.flushes.remove(&e.device);
                            }
                        }
                    }
                }
            }
            Kind::Issue | Kind::Other => {}
        }
    }

    /// No more events: what is pending leaves without completion.
    pub fn finish(&mut self) {
        if self.source == Source::Undecided {
            self.decide_from_held();
        }
        self.done = true;
    }

    /// Whether [`Self::finish`] was called: no event comes any more.
    pub fn finished(&self) -> bool {
        self.done
    }

    /// The next record ready to leave.
    pub fn pop(&mut self) -> Option<TraceRecord> {
        let ready = match self.pending.front() {
            Some((_, true)) => true,
            Some(_) => self.done || self.pending.len() > MAX_PENDING,
            None => false,
        };
        if !ready {
            return None;
        }
        let (rec, completed) = self.pending.pop_front()?;
        let idx = self.base;
        self.base += 1;
        if !completed {
            // Forget its index, so a late completion cannot land on a
            // younger I/O.
            let forget = |q: &mut VecDeque<u64>| {
                if q.front() == Some(&idx) {
                    q.pop_front();
                }
            };
            if rec.op == Op::Flush || rec.len == 0 {
                if let Some(q) = self.flushes.get_mut(&rec.device) {
                    forget(q);
                    if q.is_empty() {
                        self.flushes.remove(&rec.device);
                    }
                }
            } else {
                self.by_sector.remove(&(rec.device, rec.offset / 512, idx));
            }
        }
        Some(rec)
    }
}

/// A reader of events (blkparse lines, blktrace records) that feeds an
/// [`Assembler`] one line or record at a time.
pub trait EventSteps {
    fn assembler(&mut self) -> &mut Assembler;
    /// Read one line or record into the assembler; false at the end.
    fn step(&mut self) -> Result<bool>;
}

/// The next record of such a reader: what the assembler has ready, else
/// more steps, and every pending I/O once the input has ended.
pub fn next_assembled(r: &mut impl EventSteps) -> Result<Option<TraceRecord>> {
    loop {
        if let Some(rec) = r.assembler().pop() {
            return Ok(Some(rec));
        }
        if r.assembler().finished() {
            return Ok(None);
        }
        if !r.step()? {
            r.assembler().finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: u64, kind: Kind, sector: Option<u64>, bytes: u64, op: Op) -> Event {
        Event {
            time_ns: t,
            device: 7,
            kind,
            sector,
            bytes,
            op,
            at: t,
        }
    }

    #[test]
    fn a_merged_completion_completes_every_queued_part() {
        let mut a = Assembler::default();
        a.push(ev(1, Kind::Queue, Some(100), 4096, Op::Write));
        a.push(ev(2, Kind::Queue, Some(108), 4096, Op::Write));
        a.push(ev(3, Kind::Queue, Some(500), 4096, Op::Read));
        assert_eq!(a.pop(), None);
        a.push(ev(10, Kind::Complete, Some(100), 8192, Op::Write));
        let r1 = a.pop().unwrap();
        let r2 = a.pop().unwrap();
        assert_eq!((r1.offset, r1.completion_ns), (100 * 512, Some(10)));
        assert_eq!((r2.offset, r2.completion_ns), (108 * 512, Some(10)));
        assert_eq!(a.pop(), None);
        a.finish();
        let r3 = a.pop().unwrap();
        assert_eq!(r3.completion_ns, None);
    }

    #[test]
    fn flushes_complete_in_order_and_a_write_of_nothing_is_one() {
        let mut a = Assembler::default();
        a.push(ev(1, Kind::Queue, None, 0, Op::Write));
        a.push(ev(2, Kind::Complete, None, 0, Op::Write));
        let r = a.pop().unwrap();
        assert_eq!((r.op, r.completion_ns), (Op::Flush, Some(2)));
    }

    fn drain(a: &mut Assembler) -> Vec<TraceRecord> {
        a.finish();
        std::iter::from_fn(|| a.pop()).collect()
    }

    #[test]
    fn a_trace_of_issues_only_replays_them_with_their_completions() {
        // blkparse -a issue,complete: D and C, no Q.
        let mut a = Assembler::default();
        a.push(ev(1, Kind::Issue, Some(100), 4096, Op::Write));
        a.push(ev(2, Kind::Issue, Some(300), 4096, Op::Read));
        a.push(ev(9, Kind::Complete, Some(100), 4096, Op::Write));
        let v = drain(&mut a);
        assert_eq!(a.source(), Source::Issue);
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].offset, v[0].completion_ns), (100 * 512, Some(9)));
        assert_eq!((v[1].op, v[1].completion_ns), (Op::Read, None));
    }

    #[test]
    fn a_trace_of_completions_only_replays_each_at_its_time() {
        // blkparse -a complete: C only; no latency can be recorded.
        let mut a = Assembler::default();
        a.push(ev(5, Kind::Complete, Some(8), 8192, Op::Read));
        a.push(ev(7, Kind::Complete, Some(64), 4096, Op::Write));
        let v = drain(&mut a);
        assert_eq!(a.source(), Source::Complete);
        let got: Vec<_> = v
            .iter()
            .map(|r| (r.time_ns, r.offset, r.len, r.op))
            .collect();
        assert_eq!(
            got,
            vec![(5, 4096, 8192, Op::Read), (7, 32768, 4096, Op::Write)]
        );
        assert!(v.iter().all(|r| r.completion_ns.is_none()));
    }

    #[test]
    fn a_whole_trace_replays_its_queue_events_and_not_its_issues() {
        let mut a = Assembler::default();
        // A completion of an I/O queued before the trace started, then Q D C.
        a.push(ev(0, Kind::Complete, Some(900), 4096, Op::Read));
        a.push(ev(1, Kind::Queue, Some(100), 4096, Op::Write));
        a.push(ev(2, Kind::Issue, Some(100), 4096, Op::Write));
        a.push(ev(3, Kind::Complete, Some(100), 4096, Op::Write));
        let v = drain(&mut a);
        assert_eq!(a.source(), Source::Queue);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].time_ns, v[0].completion_ns), (1, Some(3)));
    }
}
