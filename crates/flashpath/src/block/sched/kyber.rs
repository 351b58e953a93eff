//! Kyber as Linux 6.12 has it (block/kyber-iosched.c).
//!
//! Requests are split into scheduling domains by operation (read, write,
//! discard, other). Each domain has a device-wide number of tokens
//! (`domain_tokens`, starting at `kyber_depth`: 256, 128, 64, 16, the
//! kernel's fixed caps, not scaled to the queue: the driver's tags bound
//! what is in flight below them); a request needs its domain's token to
//! be dispatched and holds it until it completes. Per hardware queue
//! (`kyber_hctx_data`) requests sit on the software queue (`kcq`) of the
//! CPU that submitted them until a dispatch that has a token flushes all
//! of that domain's kcqs, in CPU order, onto the hctx's list; the hctx
//! dispatches up to `kyber_batch_size` (16, 8, 1, 1) requests of one
//! domain, then moves round to the next domain with requests and tokens.
//!
//! Every completion records its total latency (from allocation) and its
//! I/O latency (from issue to the driver) in a histogram per domain with
//! eight buckets a quarter of the domain's target wide (`read_lat_nsec` 2
//! ms, `write_lat_nsec` 10 ms, discard 5 s), and arms the timer 100 ms out
//! if it is not armed (`timer_reduce(jiffies + HZ / 10)`). The timer
//! (`kyber_timer_fn`): once a domain has 500 samples or a second passed
//! since it first had one, a p90 I/O latency past the target in any
//! domain means congestion; then every domain with a p99 total latency
//! (this window's, or the one kept from an earlier window) has its depth
//! scaled by `(p99 bucket + 1) / 4`: domains meeting their target are cut,
//! domains missing it grow. Without congestion only domains missing their
//! target grow.
//!
//! The timer changes only depths, and nothing in the kernel acts on a
//! depth change by itself (`sbitmap_queue_resize` wakes no one), so it
//! runs here lazily, at the first elevator call at or after its expiry,
//! before that call: the same result as the kernel's timer.
//!
//! Simplified: a freed token wakes one waiting hctx at once (sbitmap's
//! wake batching, `wake_batch` frees per wake-up, is left out); the async
//! requests' shallow scheduler-tag depth (`kyber_limit_depth`,
//! `async_depth` 75% of `nr_requests`) is not modelled, as the scheduler
//! tags are not (block/elevator.rs). A bio merges with the requests of its
//! CPU's kcq list (`kyber_bio_merge`, block/merge.rs).

use crate::block::elevator::{ElevatorOps, SchedRq};
use crate::sim::Ns;
use crate::types::Ddir;
use std::collections::VecDeque;

const KYBER_READ: usize = 0;
const KYBER_WRITE: usize = 1;
const KYBER_DISCARD: usize = 2;
const KYBER_OTHER: usize = 3;
const KYBER_NUM_DOMAINS: usize = 4;
/// `kyber_depth`: each domain's device-wide depth cap (and start).
const KYBER_DEPTH: [u32; KYBER_NUM_DOMAINS] = [256, 128, 64, 16];
/// `kyber_batch_size`.
const KYBER_BATCH_SIZE: [u32; KYBER_NUM_DOMAINS] = [16, 8, 1, 1];
/// Discard's latency target: `kyber_latency_targets[KYBER_DISCARD]`, 5 s
/// (no sysfs knob).
const DISCARD_LAT_NSEC: Ns = 5_000_000_000;
const KYBER_LATENCY_SHIFT: u32 = 2;
/// Buckets at or below the target.
const KYBER_GOOD_BUCKETS: i32 = 1 << KYBER_LATENCY_SHIFT;
const KYBER_LATENCY_BUCKETS: usize = 2 << KYBER_LATENCY_SHIFT;
const KYBER_TOTAL_LATENCY: usize = 0;
const KYBER_IO_LATENCY: usize = 1;
/// `timer_reduce(&kqd->timer, jiffies + HZ / 10)`.
const TIMER_PERIOD: Ns = 100_000_000;
/// `calculate_percentile`: 500 samples, or a second since the first.
const MIN_SAMPLES: u32 = 500;
const SAMPLE_TIMEOUT: Ns = 1_000_000_000;

/// The sysfs tunables (/sys/block/DEV/queue/iosched/*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KyberTunables {
    /// read_lat_nsec: 2 ms (`kyber_latency_targets[KYBER_READ]`).
    pub read_lat_nsec: Ns,
    /// write_lat_nsec: 10 ms (`kyber_latency_targets[KYBER_WRITE]`).
    pub write_lat_nsec: Ns,
}

impl Default for KyberTunables {
    fn default() -> Self {
        KyberTunables {
            read_lat_nsec: 2_000_000,
            write_lat_nsec: 10_000_000,
        }
    }
}

/// `kyber_sched_domain`: by operation (a flush bypasses the elevator).
fn sched_domain(ddir: Ddir) -> usize {
    match ddir {
        Ddir::Read => KYBER_READ,
        Ddir::Write => KYBER_WRITE,
        Ddir::Trim => KYBER_DISCARD,
    }
}

/// `struct kyber_hctx_data`.
#[derive(Default)]
struct Khd {
    /// `rqs`: requests flushed from the kcqs, per domain.
    rqs: [VecDeque<u32>; KYBER_NUM_DOMAINS],
    /// `kcqs[ctx].rq_list`, per software queue (CPU) of this hctx.
    kcqs: Vec<[VecDeque<u32>; KYBER_NUM_DOMAINS]>,
    cur_domain: usize,
    batching: u32,
    /// `domain_wait[d]` is on the domain's token wait queue.
    waiting: [bool; KYBER_NUM_DOMAINS],
}

impl Khd {
    fn kcq_pending(&self, d: usize) -> bool {
        self.kcqs.iter().any(|k| !k[d].is_empty())
    }
}

/// One queue's kyber state (`struct kyber_queue_data`).
pub struct Kyber {
    targets: [Ns; KYBER_OTHER],
    /// `domain_tokens[d].sb.depth`.
    depth: [u32; KYBER_NUM_DOMAINS],
    /// Tokens held by requests dispatched and not completed.
    used: [u32; KYBER_NUM_DOMAINS],
    /// hctxs waiting for each domain's token, in the order they began.
    waiters: [VecDeque<usize>; KYBER_NUM_DOMAINS],
    woken: VecDeque<usize>,
    /// `latency_buckets[domain][type][bucket]`.
    buckets: [[[u32; KYBER_LATENCY_BUCKETS]; 2]; KYBER_OTHER],
    /// `latency_timeout`: per domain, shared by both latency types.
    latency_timeout: [Option<Ns>; KYBER_OTHER],
    domain_p99: [i32; KYBER_OTHER],
    timer: Option<Ns>,
    hctxs: Vec<Khd>,
    /// Requests dispatched per domain, and dispatches a domain's empty
    /// token pool held back (`kyber_throttled` trace events).
    pub dispatched: [u64; KYBER_NUM_DOMAINS],
    pub throttled: [u64; KYBER_NUM_DOMAINS],
}

impl Kyber {
    /// Kyber on a queue with `nr_hw_queues` hardware queues.
    pub fn new(t: KyberTunables, nr_hw_queues: usize) -> Kyber {
        Kyber {
            targets: [t.read_lat_nsec, t.write_lat_nsec, DISCARD_LAT_NSEC],
            depth: KYBER_DEPTH,
            used: [0; KYBER_NUM_DOMAINS],
            waiters: Default::default(),
            woken: VecDeque::new(),
            buckets: [[[0; KYBER_LATENCY_BUCKETS]; 2]; KYBER_OTHER],
            latency_timeout: [None; KYBER_OTHER],
            domain_p99: [-1; KYBER_OTHER],
            timer: None,
            hctxs: (0..nr_hw_queues.max(1)).map(|_| Khd::default()).collect(),
            dispatched: [0; KYBER_NUM_DOMAINS],
            throttled: [0; KYBER_NUM_DOMAINS],
        }
    }

    /// A domain's current token depth.
    pub fn depth(&self, domain: Ddir) -> u32 {
        self.depth[sched_domain(domain)]
    }

    /// The timer, if it expired by `now`, runs first.
    fn tick(&mut self, now: Ns) {
        if let Some(at) = self.timer.filter(|&at| at <= now) {
            self.timer = None;
            self.timer_fn(at);
        }
    }

    /// `calculate_percentile` at `now`: the bucket holding the
    /// `percentile`th sample, or -1 with too few samples yet.
    fn calculate_percentile(&mut self, d: usize, ty: usize, percentile: u32, now: Ns) -> i32 {
        let buckets = &mut self.buckets[d][ty];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return -1;
        }
        let timeout = *self.latency_timeout[d].get_or_insert(now + SAMPLE_TIMEOUT);
        if samples < MIN_SAMPLES && timeout > now {
            return -1;
        }
        self.latency_timeout[d] = None;
        let mut left = (samples * percentile).div_ceil(100);
        let mut bucket = 0;
        while bucket < KYBER_LATENCY_BUCKETS - 1 {
            if buckets[bucket] >= left {
                break;
            }
            left -= buckets[bucket];
            bucket += 1;
        }
        *buckets = [0; KYBER_LATENCY_BUCKETS];
        bucket as i32
    }

    /// `kyber_resize_domain`.
    fn resize(&mut self, d: usize, depth: u32) {
        self.depth[d] = depth.clamp(1, KYBER_DEPTH[d]);
    }

    /// `kyber_timer_fn` at `now`.
    fn timer_fn(&mut self, now: Ns) {
        let mut bad = false;
        for d in 0..KYBER_OTHER {
            if self.calculate_percentile(d, KYBER_IO_LATENCY, 90, now) >= KYBER_GOOD_BUCKETS {
                bad = true;
            }
        }
        for d in 0..KYBER_OTHER {
            let mut p99 = self.calculate_percentile(d, KYBER_TOTAL_LATENCY, 99, now);
            // A domain without enough samples this window is judged on the
            // p99 it had when it last had them, once per congestion.
            if bad {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if bad || p99 >= KYBER_GOOD_BUCKETS {
                let depth = (self.depth[d] * (p99 as u32 + 1)) >> KYBER_LATENCY_SHIFT;
                self.resize(d, depth);
            }
        }
    }

    /// `add_latency_sample`.
    fn add_sample(&mut self, d: usize, ty: usize, latency: Ns) {
        let bucket = if latency > 0 {
            let divisor = (self.targets[d] >> KYBER_LATENCY_SHIFT).max(1);
            (((latency - 1) / divisor) as usize).min(KYBER_LATENCY_BUCKETS - 1)
        } else {
            0
        };
        self.buckets[d][ty][bucket] += 1;
    }

    /// `kyber_get_domain_token` for hctx `h`'s current domain: a token,
    /// or hctx `h` waits for one.
    fn get_token(&mut self, h: usize) -> bool {
        let d = self.hctxs[h].cur_domain;
        if self.used[d] < self.depth[d] {
            self.used[d] += 1;
            if self.hctxs[h].waiting[d] {
                self.hctxs[h].waiting[d] = false;
                self.waiters[d].retain(|&w| w != h);
            }
            true
        } else {
            if !self.hctxs[h].waiting[d] {
                self.hctxs[h].waiting[d] = true;
                self.waiters[d].push_back(h);
            }
            self.throttled[d] += 1;
            false
        }
    }

    /// `kyber_dispatch_cur_domain`: the kcqs are flushed only when a token
    /// is had (requests left there could still be merged).
    fn dispatch_cur_domain(&mut self, h: usize) -> Option<u32> {
        let d = self.hctxs[h].cur_domain;
        let khd = &self.hctxs[h];
        if khd.rqs[d].is_empty() && !khd.kcq_pending(d) {
            return None;
        }
        if !self.get_token(h) {
            return None;
        }
        let khd = &mut self.hctxs[h];
        if khd.rqs[d].is_empty() {
            // kyber_flush_busy_kcqs: each busy kcq in bit (CPU) order.
            for k in 0..khd.kcqs.len() {
                while let Some(key) = khd.kcqs[k][d].pop_front() {
                    khd.rqs[d].push_back(key);
                }
            }
        }
        khd.batching += 1;
        self.dispatched[d] += 1;
        khd.rqs[d].pop_front()
    }
}

impl ElevatorOps for Kyber {
    /// `kyber_insert_requests`: at the tail of its CPU's kcq list of its
    /// domain.
    fn insert(&mut self, rq: SchedRq, now: Ns) {
        self.tick(now);
        let n = self.hctxs.len();
        let khd = &mut self.hctxs[rq.hctx as usize % n];
        // blk_mq_map_queues spreads CPUs round the hctxs: the CPU's index
        // among its hctx's (`ctx->index_hw`).
        let ctx = rq.cpu as usize / n;
        if khd.kcqs.len() <= ctx {
            khd.kcqs.resize_with(ctx + 1, Default::default);
        }
        khd.kcqs[ctx][sched_domain(rq.ddir)].push_back(rq.key);
    }

    /// `kyber_bio_merge`: the bio's CPU's kcq list of its domain.
    fn list_merge_candidates(
        &self,
        hctx: u32,
        cpu: u32,
        ddir: Ddir,
        out: &mut [u32],
    ) -> Option<usize> {
        let n = self.hctxs.len();
        let khd = &self.hctxs[hctx as usize % n];
        let Some(kcq) = khd.kcqs.get(cpu as usize / n) else {
            return Some(0);
        };
        let mut i = 0;
        for &k in kcq[sched_domain(ddir)].iter().rev().take(out.len()) {
            out[i] = k;
            i += 1;
        }
        Some(i)
    }

    fn dispatch(&mut self, now: Ns) -> Option<u32> {
        self.dispatch_from(0, now)
    }

    /// `kyber_dispatch_request`.
    fn dispatch_from(&mut self, hctx: usize, now: Ns) -> Option<u32> {
        self.tick(now);
        let h = hctx % self.hctxs.len();
        let khd = &self.hctxs[h];
        if khd.batching < KYBER_BATCH_SIZE[khd.cur_domain] {
            if let Some(k) = self.dispatch_cur_domain(h) {
                return Some(k);
            }
        }
        // A new batch, from the next domain round (back to this one if no
        // other has requests and tokens).
        self.hctxs[h].batching = 0;
        for _ in 0..KYBER_NUM_DOMAINS {
            let khd = &mut self.hctxs[h];
            khd.cur_domain = (khd.cur_domain + 1) % KYBER_NUM_DOMAINS;
            if let Some(k) = self.dispatch_cur_domain(h) {
                return Some(k);
            }
        }
        None
    }

    /// kyber's finish_request work is done in `completed`.
    fn finish(&mut self, _ioprio: u16, now: Ns) {
        self.tick(now);
    }

    /// `kyber_completed_request`, then `kyber_finish_request`
    /// (`rq_clear_domain_token`, which wakes a waiting hctx).
    fn completed(&mut self, rq: SchedRq, start: Ns, io_start: Ns, now: Ns) {
        self.tick(now);
        let d = sched_domain(rq.ddir);
        if d != KYBER_OTHER {
            self.add_sample(d, KYBER_TOTAL_LATENCY, now - start);
            self.add_sample(d, KYBER_IO_LATENCY, now - io_start);
            self.timer.get_or_insert(now + TIMER_PERIOD);
        }
        self.used[d] -= 1;
        if let Some(h) = self.waiters[d].pop_front() {
            self.hctxs[h].waiting[d] = false;
            self.woken.push_back(h);
        }
    }

    fn woken_hctx(&mut self) -> Option<usize> {
        self.woken.pop_front()
    }

    /// Each domain's final token depth, dispatches and throttled
    /// dispatches (debugfs `*_tokens`; the `kyber_throttled` trace).
    fn counters(&self) -> Option<serde_json::Value> {
        let names = ["read", "write", "discard", "other"];
        let mut v = serde_json::json!({});
        for (d, name) in names.iter().enumerate() {
            v[*name] = serde_json::json!({
                "depth": self.depth[d],
                "dispatched": self.dispatched[d],
                "throttled": self.throttled[d],
            });
        }
        Some(v)
    }

    /// `kyber_has_work`.
    fn has_work(&self) -> bool {
        self.hctxs
            .iter()
            .any(|khd| (0..KYBER_NUM_DOMAINS).any(|d| !khd.rqs[d].is_empty() || khd.kcq_pending(d)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Ns = 1_000_000;

    fn rq(key: u32, ddir: Ddir) -> SchedRq {
        SchedRq::new(key, ddir, u64::from(key) << 12, 0)
    }

    /// Buckets are a quarter of the target wide; the last holds everything
    /// past 1.75 targets (add_latency_sample).
    #[test]
    fn latency_buckets_are_quarters_of_the_target() {
        let mut k = Kyber::new(KyberTunables::default(), 1);
        for (lat, bucket) in [
            (0, 0),
            (500_000, 0),
            (500_001, 1),
            (2 * MS, 3),
            (2 * MS + 1, 4),
            (3_500_000, 6),
            (3_500_001, 7),
            (100 * MS, 7),
        ] {
            k.buckets = Default::default();
            k.add_sample(KYBER_READ, KYBER_IO_LATENCY, lat);
            assert_eq!(k.buckets[KYBER_READ][KYBER_IO_LATENCY][bucket], 1, "{lat}");
        }
    }

    /// `n` requests of one domain go in, out and complete one after the
    /// other, 10 us apart, each with the given total and I/O latency.
    fn complete_many(k: &mut Kyber, ddir: Ddir, n: u32, total: Ns, io: Ns, from: Ns) -> Ns {
        let mut now = from;
        for key in 0..n {
            k.insert(rq(key, ddir), now);
            assert_eq!(k.dispatch(now), Some(key));
            now += MS / 100;
            k.completed(rq(key, ddir), now - total, now - io, now);
            k.finish(0, now);
        }
        now
    }

    /// A read p90 past its target is congestion: the write domain, whose
    /// p99 meets its target (bucket 1 of 8: 2.5-5 ms of 10), is cut to
    /// (1 + 1) / 4 of its depth each timer run, down to 1; reads meeting
    /// nothing grow back to their cap. Without congestion nothing moves.
    #[test]
    fn congestion_cuts_the_domains_that_meet_their_target() {
        let mut k = Kyber::new(KyberTunables::default(), 1);
        // Late enough that every latency fits before it.
        let mut now = 1_000 * MS;
        // Good reads and writes: no change.
        now = complete_many(&mut k, Ddir::Read, 600, MS, MS, now);
        now = complete_many(&mut k, Ddir::Write, 600, 3 * MS, 3 * MS, now);
        k.tick(now + TIMER_PERIOD);
        assert_eq!(k.depth, KYBER_DEPTH);
        let mut depths = vec![];
        for _ in 0..8 {
            // Reads at 5 ms (bucket 7), writes at 3 ms (bucket 1).
            now = complete_many(&mut k, Ddir::Read, 500, 5 * MS, 5 * MS, now + TIMER_PERIOD);
            now = complete_many(&mut k, Ddir::Write, 500, 3 * MS, 3 * MS, now);
            k.tick(now + TIMER_PERIOD);
            depths.push((k.depth[KYBER_READ], k.depth[KYBER_WRITE]));
        }
        assert_eq!(
            depths,
            vec![
                (256, 64),
                (256, 32),
                (256, 16),
                (256, 8),
                (256, 4),
                (256, 2),
                (256, 1),
                (256, 1)
            ]
        );
    }

    /// Under 500 samples a window is judged only a second after the
    /// domain's first check, and the two latency types share that
    /// timeout: the I/O p90 taken clears it, so the total p99 right after
    /// starts a new second and is never taken (calculate_percentile's
    /// `latency_timeout[sched_domain]`). A slow domain's depth stays put;
    /// 500 samples in a window move it.
    #[test]
    fn few_samples_never_move_a_depth_many_do() {
        let mut k = Kyber::new(KyberTunables::default(), 1);
        k.resize(KYBER_READ, 64);
        let mut now = 1_000 * MS;
        for _ in 0..6 {
            now = complete_many(&mut k, Ddir::Read, 10, 8 * MS, 8 * MS, now);
            now += 400 * MS;
            k.tick(now);
            assert_eq!(k.depth[KYBER_READ], 64);
        }
        now = complete_many(&mut k, Ddir::Read, 500, 8 * MS, 8 * MS, now);
        k.tick(now + TIMER_PERIOD);
        // Reads at 4x their target (bucket 7): depth * 8 / 4.
        assert_eq!(k.depth[KYBER_READ], 128);
    }

    /// A domain out of tokens holds its requests back while the other
    /// domain goes on; the freed token wakes the waiting hctx.
    #[test]
    fn a_domain_without_tokens_waits_and_is_woken() {
        let mut k = Kyber::new(KyberTunables::default(), 1);
        k.resize(KYBER_WRITE, 2);
        for key in 0..4 {
            k.insert(rq(key, Ddir::Write), 0);
        }
        k.insert(rq(10, Ddir::Read), 0);
        let out: Vec<Option<u32>> = (0..4).map(|_| k.dispatch(0)).collect();
        // Reads come first in domain order after the initial batch state
        // (cur_domain 0, read); then two writes; then nothing.
        assert_eq!(out, vec![Some(10), Some(0), Some(1), None]);
        assert!(k.has_work());
        assert_eq!(k.woken_hctx(), None);
        k.completed(rq(0, Ddir::Write), 0, 0, MS);
        assert_eq!(k.woken_hctx(), Some(0));
        assert_eq!(k.dispatch(MS), Some(2));
    }

    /// A batch of one domain runs to kyber_batch_size, then the next
    /// domain with requests gets its turn.
    #[test]
    fn batches_alternate_between_domains() {
        let mut k = Kyber::new(KyberTunables::default(), 1);
        for key in 0..40 {
            k.insert(rq(key, Ddir::Read), 0);
        }
        for key in 100..140 {
            k.insert(rq(key, Ddir::Write), 0);
        }
        let order: Vec<bool> = (0..48).map(|_| k.dispatch(0).unwrap() >= 100).collect();
        let runs: Vec<usize> = order.chunk_by(|a, b| a == b).map(|c| c.len()).collect();
        assert_eq!(runs, vec![16, 8, 16, 8]);
    }
}
