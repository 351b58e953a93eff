//! The block layer (blk-mq): per-CPU software queues map to hardware
//! queues; a request needs a tag of its hardware queue (the queue depth)
//! before it reaches the driver, and waits on the hardware queue when none
//! is free (blk_mq_get_tag sleeping on the tag wait queue). Queue settings
//! are named as /sys/block/<dev>/queue names them.

use crate::profile::limits::{DELAY, QUEUE_DEPTH};
use crate::profile::{range, Profile};
use std::collections::VecDeque;

/// /sys/block/<dev>/queue settings that change the simulated path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSettings {
    /// io_poll: polled completion allowed for REQ_POLLED submissions.
    pub io_poll: bool,
    /// io_poll_delay: -1 classic polling, 0 adaptive hybrid, N>0 sleep N us
    /// then poll (block/blk-mq.c, v4.10 to v6.3).
    pub io_poll_delay: i64,
    /// nr_requests: tags per hardware queue the block layer will use (the
    /// driver's depth caps it).
    pub nr_requests: u32,
    /// Seed 3's per-disk `dev_freq_timeout_ms` (0 = off): sync I/O holds a
    /// MIN_FREQUENCY PM QoS request at the maximum on the disk's device
    /// until this long without block I/O. Profiles without the key: off.
    pub dev_freq_timeout: crate::sim::Ns,
    /// What the kernel does with a polled (REQ_POLLED) submission on a
    /// queue that cannot poll: `true` ends it with EOPNOTSUPP, as
    /// submit_bio_noacct does since the 2024 poll-queue check
    /// (block/blk-core.c, `goto not_supported`); `false` clears the flag
    /// and completes it by interrupt, as older kernels did.
    pub polled_without_poll_fails: bool,
}

impl QueueSettings {
    pub fn from_profile(p: &Profile) -> crate::Result<QueueSettings> {
        let delay = p.signed(
            "block.io_poll_delay",
            range(
                -1.0,
                1e6,
                "-1 (classic polling), 0 (adaptive hybrid) or a hybrid sleep in us \
                 (queue_poll_delay_store), at most a second",
            ),
        )?;
        Ok(QueueSettings {
            io_poll: p.flag("block.io_poll")?,
            io_poll_delay: delay,
            nr_requests: p.count_u32("block.nr_requests", QUEUE_DEPTH)?,
            dev_freq_timeout: if p.has("block.dev_freq_timeout_ms") {
                p.ns("block.dev_freq_timeout_ms", DELAY)?
            } else {
                0
            },
            polled_without_poll_fails: p.choice(
                "block.polled_without_poll_queue",
                &["interrupt", "eopnotsupp"],
            )? == "eopnotsupp",
        })
    }
}

struct Hctx {
    free_tags: u32,
    /// Requests waiting for a tag, in arrival order.
    waiting: VecDeque<u32>,
    /// `hctx->next_cpu` and `hctx->next_cpu_batch` of
    /// `blk_mq_hctx_next_cpu` (block/blk-mq.c).
    next_cpu: u32,
    next_cpu_batch: u32,
}

/// `BLK_MQ_CPU_WORK_BATCH` (block/blk-mq.h): an asynchronous run of a
/// hardware queue stays on one CPU of its mask for this many runs.
pub const BLK_MQ_CPU_WORK_BATCH: u32 = 8;

/// Tags and hardware queues.
pub struct BlkMq {
    hctxs: Vec<Hctx>,
    pub tag_waits: u64,
}

impl BlkMq {
    pub fn new(hw_queues: u32, depth: u32) -> BlkMq {
        BlkMq {
            hctxs: (0..hw_queues.max(1))
                .map(|_| Hctx {
                    free_tags: depth,
                    // Grown on demand: a reserve per queue would be
                    // gigabytes with thousands of deep queues.
                    waiting: VecDeque::new(),
                    next_cpu: u32::MAX,
                    next_cpu_batch: 0,
                })
                .collect(),
            tag_waits: 0,
        }
    }

    /// blk_mq_map_queues: CPUs spread over hardware queues in order.
    pub fn hctx_of_cpu(&self, cpu: u32) -> usize {
        cpu as usize % self.hctxs.len()
    }

    /// Whether a request arriving now on `hctx` would get a tag at once.
    pub fn tag_free(&self, hctx: usize) -> bool {
        let h = &self.hctxs[hctx];
        h.free_tags > 0 && h.waiting.is_empty()
    }

    /// The CPU that runs an asynchronous run of `hctx` queued from
    /// `this_cpu` (`blk_mq_run_hw_queue(hctx, true)` ->
    /// `kblockd_mod_delayed_work_on(blk_mq_hctx_next_cpu(hctx), ...)`,
    /// block/blk-mq.c): with one hardware queue `blk_mq_hctx_next_cpu`
    /// returns WORK_CPU_UNBOUND, and `__queue_work` on the per-CPU kblockd
    /// workqueue then takes the queueing CPU (kernel/workqueue.c); with
    /// several it goes round the hctx's CPUs (those `hctx_of_cpu` maps to
    /// it), `BLK_MQ_CPU_WORK_BATCH` runs on each.
    pub fn async_run_cpu(&mut self, hctx: usize, this_cpu: u32, ncpus: u32) -> u32 {
        let n = self.hctxs.len() as u32;
        if n == 1 {
            return this_cpu;
        }
        let h = &mut self.hctxs[hctx];
        if h.next_cpu == u32::MAX {
            // hctx->next_cpu starts at the first CPU of the mask
            // (blk_mq_map_swqueue: blk_mq_first_mapped_cpu).
            h.next_cpu = hctx as u32;
            h.next_cpu_batch = BLK_MQ_CPU_WORK_BATCH;
        }
        h.next_cpu_batch = h.next_cpu_batch.saturating_sub(1);
        if h.next_cpu_batch == 0 {
            // cpumask_next_and(next_cpu, hctx->cpumask, online), wrapping
            // to the first mapped CPU.
            let next = h.next_cpu + n;
            h.next_cpu = if next < ncpus { next } else { hctx as u32 };
            h.next_cpu_batch = BLK_MQ_CPU_WORK_BATCH;
        }
        h.next_cpu
    }

    /// Take a tag for request `rq` on `hctx`; false means it now waits.
    pub fn get_tag(&mut self, hctx: usize, rq: u32) -> bool {
        let h = &mut self.hctxs[hctx];
        if h.free_tags > 0 && h.waiting.is_empty() {
            h.free_tags -= 1;
            true
        } else {
            h.waiting.push_back(rq);
            self.tag_waits += 1;
            false
        }
    }

    /// Give a tag back; if a request was waiting, it takes the tag and is
    /// returned, to be dispatched.
    pub fn put_tag(&mut self, hctx: usize) -> Option<u32> {
        let h = &mut self.hctxs[hctx];
        match h.waiting.pop_front() {
            Some(rq) => Some(rq),
            None => {
                h.free_tags += 1;
                None
            }
        }
    }
}

/// `BLK_MQ_POLL_STATS_BKTS`: 16 buckets by direction and size.
pub const POLL_STATS_BKTS: usize = 16;
/// The poll statistics window: `blk_stat_activate_msecs(q->poll_cb, 100)`.
pub const POLL_STAT_WINDOW_NS: u64 = 100_000_000;

/// Hybrid polling's completion-time statistics (block/blk-mq.c, v4.10 to
/// v6.3): per bucket, the mean of the last finished 100 ms window.
#[derive(Clone, Debug)]
pub struct PollStats {
    window_start: u64,
    sum: [u64; POLL_STATS_BKTS],
    n: [u64; POLL_STATS_BKTS],
    mean: [u64; POLL_STATS_BKTS],
}

impl Default for PollStats {
    fn default() -> Self {
        PollStats {
            window_start: 0,
            sum: [0; POLL_STATS_BKTS],
            n: [0; POLL_STATS_BKTS],
            mean: [0; POLL_STATS_BKTS],
        }
    }
}

impl PollStats {
    /// blk_mq_poll_stats_bkt: `ddir + 2 * (ilog2(sectors) - 9)`, where the
    /// kernel's `ilog2(bytes) - 9` is ilog2 of 512-byte sectors.
    pub fn bucket(write: bool, bytes: u32) -> Option<usize> {
        let sectors = (bytes >> 9).max(1);
        let b = usize::from(write) + 2 * sectors.ilog2() as usize;
        (b < POLL_STATS_BKTS).then_some(b)
    }

    fn roll(&mut self, now: u64) {
        if now >= self.window_start + POLL_STAT_WINDOW_NS {
            // blk_mq_poll_stats_fn: a bucket with samples takes the
            // window's mean; one without keeps its old value.
            for b in 0..POLL_STATS_BKTS {
                if let Some(mean) = self.sum[b].checked_div(self.n[b]) {
                    self.mean[b] = mean;
                }
                self.sum[b] = 0;
                self.n[b] = 0;
            }
            self.window_start = now - (now - self.window_start) % POLL_STAT_WINDOW_NS;
        }
    }

    /// One completed request of the bucket took `ns`.
    pub fn add(&mut self, now: u64, bucket: usize, ns: u64) {
        self.roll(now);
        self.sum[bucket] += ns;
        self.n[bucket] += 1;
    }

    /// blk_mq_poll_nsecs: `(mean + 1) / 2` of the bucket's last window, 0
    /// (no sleep: classic poll) without statistics yet.
    pub fn sleep_ns(&mut self, now: u64, bucket: usize) -> u64 {
        self.roll(now);
        let m = self.mean[bucket];
        if m == 0 {
            0
        } else {
            m.div_ceil(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_sleep_is_half_the_last_window_mean() {
        let mut s = PollStats::default();
        let b = PollStats::bucket(false, 4096).unwrap();
        assert_eq!(b, 6);
        s.add(1_000, b, 10_000);
        s.add(2_000, b, 20_000);
        // Still the first window: no statistics, classic poll.
        assert_eq!(s.sleep_ns(3_000, b), 0);
        // Next window: mean 15,000 -> sleep (15,000 + 1) / 2.
        assert_eq!(s.sleep_ns(POLL_STAT_WINDOW_NS + 5, b), 7_500);
        assert_eq!(PollStats::bucket(true, 4096), Some(7));
    }

    #[test]
    fn requests_wait_for_tags_in_order() {
        let mut b = BlkMq::new(1, 2);
        assert!(b.get_tag(0, 10));
        assert!(b.get_tag(0, 11));
        assert!(!b.get_tag(0, 12));
        assert!(!b.get_tag(0, 13));
        assert_eq!(b.put_tag(0), Some(12));
        assert_eq!(b.put_tag(0), Some(13));
        assert_eq!(b.put_tag(0), None);
        assert_eq!(b.put_tag(0), None);
        assert!(b.get_tag(0, 14));
        assert!(b.get_tag(0, 15));
        assert!(!b.get_tag(0, 16));
    }
}

/// The state of seed 3's per-queue frequency request (patch 2/3:
/// `blk_mq_submit_bio` records `last_active`; `dev_freq_work` adds the
/// MIN_FREQUENCY request at FREQ_QOS_MAX_DEFAULT_VALUE when idle, and
/// removes it once `timeout` has passed without I/O, re-arming otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevFreqQos {
    pub timeout: crate::sim::Ns,
    /// PM_QOS_ACTIVE (false: idle) / FREQ_SET (true).
    pub set: bool,
    pub last_active: crate::sim::Ns,
    /// When `dev_freq_work` is queued to run.
    pub work_at: Option<crate::sim::Ns>,
    pub adds: u64,
    pub removes: u64,
    /// (time, last_active) of every add and removal, for tests and plots.
    pub added: Vec<(crate::sim::Ns, crate::sim::Ns)>,
    pub removed: Vec<(crate::sim::Ns, crate::sim::Ns)>,
}

/// What `dev_freq_work` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosAction {
    Add,
    Remove,
    Rearm,
}

impl DevFreqQos {
    /// A REQ_SYNC or READ bio is submitted at `now`: returns when the work
    /// must run if it has to be queued now (state idle, not queued).
    pub fn submit(&mut self, now: crate::sim::Ns) -> Option<crate::sim::Ns> {
        if self.timeout == 0 {
            return None;
        }
        self.last_active = now;
        if !self.set && self.work_at.is_none() {
            self.work_at = Some(now);
            return Some(now);
        }
        None
    }

    /// `dev_freq_work` runs at `now`; on `Rearm` and `Add` it is queued
    /// again at `work_at`.
    pub fn work(&mut self, now: crate::sim::Ns) -> QosAction {
        self.work_at = None;
        if !self.set {
            self.set = true;
            self.adds += 1;
            self.added.push((now, self.last_active));
            self.work_at = Some(self.last_active + self.timeout);
            return QosAction::Add;
        }
        let expiry = self.last_active + self.timeout;
        if now >= expiry {
            self.set = false;
            self.removes += 1;
            self.removed.push((now, self.last_active));
            QosAction::Remove
        } else {
            self.work_at = Some(expiry);
            QosAction::Rearm
        }
    }
}

#[cfg(test)]
mod devfreq_qos_tests {
    use super::*;

    #[test]
    fn request_added_at_once_and_dropped_exactly_timeout_after_last_io() {
        let ms = 1_000_000;
        let mut q = DevFreqQos {
            timeout: 30 * ms,
            ..DevFreqQos::default()
        };
        assert_eq!(q.submit(5 * ms), Some(5 * ms));
        assert_eq!(q.work(5 * ms), QosAction::Add);
        assert_eq!(q.work_at, Some(35 * ms));
        // More I/O every 6.25 ms: no new work while the request is set.
        let mut t = 5 * ms;
        for _ in 0..10 {
            t += 6_250_000;
            assert_eq!(q.submit(t), None);
        }
        assert_eq!(q.work(35 * ms), QosAction::Rearm);
        assert_eq!(q.work_at, Some(t + 30 * ms));
        assert_eq!(q.work(t + 30 * ms), QosAction::Remove);
        assert!(!q.set);
        // Off: nothing happens.
        let mut off = DevFreqQos::default();
        assert_eq!(off.submit(1), None);
    }
}
