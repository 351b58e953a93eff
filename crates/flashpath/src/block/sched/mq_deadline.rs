//! mq-deadline as Linux 6.9 has it (block/mq-deadline.c after the 6.3
//! rework: per-priority lists, `latest_pos`, `last_dir`; the
//! per-priority `dispatch` lists and `async_depth` left aside, below).
//!
//! Per I/O priority (RT, BE, IDLE: `ioprio_class_to_prio`, NONE counts
//! as BE) and per direction, requests sit on a list sorted by sector (the
//! kernel's rb-tree) and on a FIFO with their deadline (`fifo_time =
//! now + fifo_expire[dir]`). A dispatch (`dd_dispatch_request`):
//! 1. `dd_dispatch_prio_aged_requests`: when two or more priorities have
//!    requests queued or in flight, a BE or IDLE request inserted more
//!    than `prio_aging_expire` ago goes first;
//! 2. then priorities in order, RT first; a priority with requests queued
//!    *or still in the driver* (`dd_queued` = inserted - completed) stops
//!    the lower ones from dispatching at all.
//!
//! Within a priority (`__dd_dispatch_request`): a batch goes on in the
//! last direction, in sector order from `latest_pos`, for `fifo_batch`
//! requests; then reads are preferred unless writes have been passed over
//! `writes_starved` times; in the chosen direction the FIFO's head goes if
//! its deadline has passed or nothing lies at or above `latest_pos`,
//! otherwise the next request in sector order.
//!
//! On a zoned disk of a kernel before 6.10 (zone write locking), a write
//! goes only to a zone no other write holds: deadline_fifo_request takes
//! the first write in FIFO order whose zone is unlocked, and
//! deadline_next_request the first in sector order from `latest_pos`
//! (blk_req_can_dispatch_to_zone; the disk is non-rotational, so no
//! sequential stream is kept whole); the dispatch locks the zone
//! (blk_req_zone_write_lock) and dd_finish_request unlocks it.
//!
//! Merging: a bio merges at the back of a queued request through the
//! elevator hash, or at the front of one in its sorted list with
//! `front_merges` (block/merge.rs; `request_merged` moves a front-merged
//! request). Not modelled: the `async_depth` shallow tag depth for
//! writes.

use crate::block::elevator::{
    ioprio_class, ElevatorOps, SchedRq, IOPRIO_CLASS_IDLE, IOPRIO_CLASS_RT,
};
use crate::sim::Ns;
use std::collections::VecDeque;

/// The sysfs tunables (/sys/block/DEV/queue/iosched/*), in ns where the
/// kernel keeps jiffies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadlineTunables {
    /// read_expire: `HZ / 2`, 500 ms.
    pub read_expire: Ns,
    /// write_expire: `5 * HZ`, 5 s.
    pub write_expire: Ns,
    /// writes_starved: 2 read batches may pass over queued writes.
    pub writes_starved: u32,
    /// fifo_batch: 16 requests in sector order between direction checks.
    pub fifo_batch: u32,
    /// prio_aging_expire: `10 * HZ`, 10 s.
    pub prio_aging_expire: Ns,
    /// front_merges: a bio may merge at a queued request's front
    /// (`dd->front_merges = 1`, dd_init_sched).
    pub front_merges: bool,
}

impl Default for DeadlineTunables {
    /// The kernel's defaults (block/mq-deadline.c: read_expire,
    /// write_expire, writes_starved, fifo_batch, prio_aging_expire).
    fn default() -> Self {
        DeadlineTunables {
            read_expire: 500_000_000,
            write_expire: 5_000_000_000,
            writes_starved: 2,
            fifo_batch: 16,
            prio_aging_expire: 10_000_000_000,
            front_merges: true,
        }
    }
}

const DD_READ: usize = 0;
const DD_WRITE: usize = 1;
/// `enum dd_prio`: DD_RT_PRIO, DD_BE_PRIO, DD_IDLE_PRIO.
const DD_PRIO_COUNT: usize = 3;
const DD_BE_PRIO: usize = 1;

/// `ioprio_class_to_prio`: NONE and BE share DD_BE_PRIO.
fn dd_prio(ioprio: u16) -> usize {
    match ioprio_class(ioprio) {
        IOPRIO_CLASS_RT => 0,
        IOPRIO_CLASS_IDLE => 2,
        _ => DD_BE_PRIO,
    }
}

/// Whether two I/O priorities share mq-deadline's per-priority lists
/// (`ioprio_class_to_prio`): `dd_request_merge` looks in the bio's.
pub fn same_prio(a: u16, b: u16) -> bool {
    dd_prio(a) == dd_prio(b)
}

#[derive(Clone, Copy, Debug)]
struct Fifo {
    key: u32,
    sector: u64,
    /// `rq->fifo_time`: insertion time plus the direction's expiry.
    fifo_time: Ns,
}

#[derive(Default)]
struct PerPrio {
    /// `sort_list`: (sector, key), sorted by sector, equal sectors in
    /// insertion order (elv_rb_add puts an equal key to the right).
    sort: [Vec<(u64, u32)>; 2],
    fifo: [VecDeque<Fifo>; 2],
    latest_pos: [u64; 2],
    inserted: u64,
    completed: u64,
}

impl PerPrio {
    /// `deadline_from_pos`: the first request at or above `pos`.
    fn at_or_above(&self, dir: usize, pos: u64) -> Option<(u64, u32)> {
        let s = &self.sort[dir];
        let i = s.partition_point(|&(sec, _)| sec < pos);
        s.get(i).copied()
    }

    fn fifo_head(&self, dir: usize) -> Option<(u64, u32)> {
        self.fifo[dir].front().map(|f| (f.sector, f.key))
    }

    /// `deadline_remove_request`: off both lists.
    fn remove(&mut self, dir: usize, sector: u64, key: u32) {
        let s = &mut self.sort[dir];
        let mut i = s.partition_point(|&(sec, _)| sec < sector);
        while s[i].1 != key {
            i += 1;
        }
        s.remove(i);
        let f = &mut self.fifo[dir];
        let j = f
            .iter()
            .position(|e| e.key == key)
            .expect("a queued request is on its FIFO");
        f.remove(j);
    }

    fn fifo_time(&self, dir: usize, key: u32) -> Ns {
        self.fifo[dir]
            .iter()
            .find(|e| e.key == key)
            .expect("a queued request is on its FIFO")
            .fifo_time
    }
}

const NO_ZONE: u32 = u32::MAX;

/// The zone write locks of a zoned disk (the request queue's
/// `seq_zones_wlock` bitmap before 6.10).
struct ZoneLocks {
    zone_sectors: u64,
    locked: Vec<bool>,
    /// Per request key: whether it is a data write (kept from insert), and
    /// the zone it locked at dispatch (NO_ZONE: none).
    data_write: Vec<bool>,
    holds: Vec<u32>,
}

impl ZoneLocks {
    fn zone(&self, sector: u64) -> usize {
        ((sector / self.zone_sectors) as usize).min(self.locked.len() - 1)
    }
}

/// blk_req_can_dispatch_to_zone: a data write to a locked zone waits.
fn can_dispatch(z: &Option<ZoneLocks>, sector: u64, key: u32) -> bool {
    match z {
        None => true,
        Some(z) => {
            !z.data_write.get(key as usize).copied().unwrap_or(false) || !z.locked[z.zone(sector)]
        }
    }
}

/// One queue's mq-deadline state (`struct deadline_data`).
pub struct MqDeadline {
    t: DeadlineTunables,
    per_prio: [PerPrio; DD_PRIO_COUNT],
    batching: u32,
    starved: u32,
    /// `last_dir`: DD_WRITE at init (dd_init_sched).
    last_dir: usize,
    /// Requests dispatched per priority (debugfs `dispatched`).
    pub dispatched: [u64; DD_PRIO_COUNT],
    zones: Option<ZoneLocks>,
}

impl MqDeadline {
    pub fn new(t: DeadlineTunables) -> MqDeadline {
        MqDeadline {
            t,
            per_prio: Default::default(),
            batching: 0,
            starved: 0,
            last_dir: DD_WRITE,
            dispatched: [0; DD_PRIO_COUNT],
            zones: None,
        }
    }

    /// deadline_next_request: the first request at or above `pos` in
    /// direction `dir` that may go (a write to a locked zone is passed
    /// over, deadline_latter_request).
    fn next_request(&self, prio: usize, dir: usize, pos: u64) -> Option<(u64, u32)> {
        let p = &self.per_prio[prio];
        if dir == DD_READ || self.zones.is_none() {
            return p.at_or_above(dir, pos);
        }
        let s = &p.sort[dir];
        let i = s.partition_point(|&(sec, _)| sec < pos);
        s[i..]
            .iter()
            .copied()
            .find(|&(sec, key)| can_dispatch(&self.zones, sec, key))
    }

    /// deadline_fifo_request: the oldest request of direction `dir` that
    /// may go.
    fn fifo_request(&self, prio: usize, dir: usize) -> Option<(u64, u32)> {
        let p = &self.per_prio[prio];
        if dir == DD_READ || self.zones.is_none() {
            return p.fifo_head(dir);
        }
        p.fifo[dir]
            .iter()
            .find(|f| can_dispatch(&self.zones, f.sector, f.key))
            .map(|f| (f.sector, f.key))
    }

    fn expire(&self, dir: usize) -> Ns {
        if dir == DD_READ {
            self.t.read_expire
        } else {
            self.t.write_expire
        }
    }

    /// `dd_queued`: inserted and not yet completed (queued here or in the
    /// driver).
    fn queued(&self, prio: usize) -> u64 {
        let p = &self.per_prio[prio];
        p.inserted - p.completed
    }

    /// `__dd_dispatch_request` for priority `prio` at `now`, taking only a
    /// request inserted at or before `latest_start` (None: no bound).
    fn dispatch_prio(&mut self, prio: usize, now: Ns, latest_start: Option<Ns>) -> Option<u32> {
        let fifo_batch = self.t.fifo_batch;
        let p = &self.per_prio[prio];
        let mut pick = None;
        // Batches are reads XOR writes: go on in the last direction.
        if let Some(rq) = self.next_request(prio, self.last_dir, p.latest_pos[self.last_dir]) {
            if self.batching < fifo_batch {
                pick = Some((self.last_dir, rq));
            }
        }
        if pick.is_none() {
            let dir = if !p.fifo[DD_READ].is_empty() {
                // deadline_fifo_request(DD_WRITE): a write that may go.
                let writes = self.fifo_request(prio, DD_WRITE).is_some();
                // `dd->starved++ >= dd->writes_starved`: counted only when
                // writes wait.
                let starve = writes && {
                    let s = self.starved;
                    self.starved += 1;
                    s >= self.t.writes_starved
                };
                if starve {
                    self.starved = 0;
                    DD_WRITE
                } else {
                    DD_READ
                }
            } else if !p.fifo[DD_WRITE].is_empty() {
                self.starved = 0;
                DD_WRITE
            } else {
                return None;
            };
            let next = self.next_request(prio, dir, p.latest_pos[dir]);
            let expired = p.fifo[dir].front().is_some_and(|f| now >= f.fifo_time);
            // A deadline passed, or nothing lies above the last position:
            // start again from the oldest request. (On a zoned disk none
            // may go when every queued write's zone is locked.)
            let rq = if expired || next.is_none() {
                self.fifo_request(prio, dir)
            } else {
                next
            };
            let rq = rq?;
            self.last_dir = dir;
            self.batching = 0;
            pick = Some((dir, rq));
        }
        let (dir, (sector, key)) = pick?;
        if let Some(latest) = latest_start {
            // `started_after`: inserted after the bound.
            let start = p.fifo_time(dir, key) - self.expire(dir);
            if start > latest {
                return None;
            }
        }
        self.batching += 1;
        let p = &mut self.per_prio[prio];
        p.remove(dir, sector, key);
        // dd_start_request.
        p.latest_pos[dir] = sector;
        self.dispatched[prio] += 1;
        // blk_req_zone_write_lock: a data write locks its zone.
        if let Some(z) = self.zones.as_mut() {
            if z.data_write.get(key as usize).copied().unwrap_or(false) {
                let zone = z.zone(sector);
                z.locked[zone] = true;
                z.holds[key as usize] = zone as u32;
            }
        }
        Some(key)
    }
}

impl ElevatorOps for MqDeadline {
    /// `dd_insert_request`: on the sorted list and, with its deadline, at
    /// the FIFO's tail.
    fn insert(&mut self, rq: SchedRq, now: Ns) {
        let dir = usize::from(rq.write);
        let fifo_time = now + self.expire(dir);
        let p = &mut self.per_prio[dd_prio(rq.ioprio)];
        let i = p.sort[dir].partition_point(|&(sec, _)| sec <= rq.sector);
        p.sort[dir].insert(i, (rq.sector, rq.key));
        p.fifo[dir].push_back(Fifo {
            key: rq.key,
            sector: rq.sector,
            fifo_time,
        });
        p.inserted += 1;
        if let Some(z) = self.zones.as_mut() {
            let k = rq.key as usize;
            if k >= z.data_write.len() {
                z.data_write.resize(k + 1, false);
                z.holds.resize(k + 1, NO_ZONE);
            }
            z.data_write[k] = rq.data_write;
        }
    }

    /// mq-deadline merges through the elevator hash and, with
    /// front_merges, its sorted lists (`dd_bio_merge`, `dd_request_merge`).
    fn bio_merges(&self) -> Option<bool> {
        Some(self.t.front_merges)
    }

    /// `dd_request_merged`: a front-merged request moves in its sorted
    /// list (`elv_rb_del`, `deadline_add_rq_rb`); its FIFO place stays.
    fn request_merged(&mut self, key: u32, write: bool, ioprio: u16, old: u64, new: u64) {
        let dir = usize::from(write);
        let p = &mut self.per_prio[dd_prio(ioprio)];
        let s = &mut p.sort[dir];
        let mut i = s.partition_point(|&(sec, _)| sec < old);
        while s[i].1 != key {
            i += 1;
        }
        s.remove(i);
        let j = s.partition_point(|&(sec, _)| sec <= new);
        s.insert(j, (new, key));
        if let Some(f) = p.fifo[dir].iter_mut().find(|f| f.key == key) {
            f.sector = new;
        }
    }

    /// `dd_dispatch_request`.
    fn dispatch(&mut self, now: Ns) -> Option<u32> {
        let active = (0..DD_PRIO_COUNT).filter(|&p| self.queued(p) > 0).count();
        if active >= 2 {
            // jiffies - prio_aging_expire: before the run is that old no
            // request can be aged.
            if let Some(latest) = now.checked_sub(self.t.prio_aging_expire) {
                for prio in DD_BE_PRIO..DD_PRIO_COUNT {
                    if let Some(k) = self.dispatch_prio(prio, now, Some(latest)) {
                        return Some(k);
                    }
                }
            }
        }
        for prio in 0..DD_PRIO_COUNT {
            let rq = self.dispatch_prio(prio, now, None);
            if rq.is_some() || self.queued(prio) > 0 {
                return rq;
            }
        }
        None
    }

    /// `dd_finish_request`: `stats.completed` of its priority.
    fn finish(&mut self, ioprio: u16, _now: Ns) {
        self.per_prio[dd_prio(ioprio)].completed += 1;
    }

    fn set_zone_write_lock(&mut self, zone_sectors: u64, nr_zones: u32) {
        self.zones = Some(ZoneLocks {
            zone_sectors: zone_sectors.max(1),
            locked: vec![false; nr_zones.max(1) as usize],
            data_write: Vec::new(),
            holds: Vec::new(),
        });
    }

    /// dd_finish_request: blk_req_zone_write_unlock.
    fn completed(&mut self, rq: SchedRq, _start: Ns, _io_start: Ns, _now: Ns) {
        if let Some(z) = self.zones.as_mut() {
            if let Some(h) = z.holds.get_mut(rq.key as usize) {
                if *h != NO_ZONE {
                    z.locked[*h as usize] = false;
                    *h = NO_ZONE;
                }
            }
        }
    }

    /// `dd_has_work`.
    fn has_work(&self) -> bool {
        self.per_prio
            .iter()
            .any(|p| !p.fifo[DD_READ].is_empty() || !p.fifo[DD_WRITE].is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::elevator::ioprio_value;
    use crate::types::Ddir;

    const MS: Ns = 1_000_000;

    fn rq(key: u32, ddir: Ddir, sector: u64, ioprio: u16) -> SchedRq {
        SchedRq::new(key, ddir, sector << 9, ioprio)
    }

    /// A device that takes one request per `period`: each tick the
    /// elevator dispatches one, which completes before the next tick.
    fn tick(dd: &mut MqDeadline, now: Ns) -> Option<u32> {
        let k = dd.dispatch(now)?;
        dd.finish(0, now);
        Some(k)
    }

    /// Zone write locking (kernels before 6.10): of two writes to one zone
    /// only the first is dispatched until it completes; a write to another
    /// zone and a read pass it meanwhile; the completion unlocks the zone.
    #[test]
    fn one_write_per_zone_is_dispatched_with_zone_write_locking() {
        let mut dd = MqDeadline::new(DeadlineTunables::default());
        // Zones of 1024 sectors.
        dd.set_zone_write_lock(1024, 4);
        dd.insert(rq(1, Ddir::Write, 0, 0), 0);
        dd.insert(rq(2, Ddir::Write, 8, 0), 0);
        dd.insert(rq(3, Ddir::Write, 1024, 0), 0);
        assert_eq!(dd.dispatch(0), Some(1));
        // Zone 0 is locked: request 2 waits, zone 1's write goes.
        assert_eq!(dd.dispatch(0), Some(3));
        assert_eq!(
            dd.dispatch(0),
            None,
            "only a write to a locked zone is left"
        );
        assert!(dd.has_work());
        dd.insert(rq(4, Ddir::Read, 16, 0), 0);
        assert_eq!(dd.dispatch(0), Some(4), "reads are never locked");
        dd.finish(0, 0);
        dd.completed(rq(1, Ddir::Write, 0, 0), 0, 0, 0);
        assert_eq!(dd.dispatch(0), Some(2));
        // Without zone locking both writes of zone 0 go at once.
        let mut free = MqDeadline::new(DeadlineTunables::default());
        free.insert(rq(1, Ddir::Write, 0, 0), 0);
        free.insert(rq(2, Ddir::Write, 8, 0), 0);
        assert_eq!((free.dispatch(0), free.dispatch(0)), (Some(1), Some(2)));
    }

    /// A read left below the scan position while newer reads keep the
    /// sorted scan going upward waits for its deadline, then goes at the
    /// next direction check: its wait is read_expire plus at most one
    /// fifo_batch of dispatches.
    #[test]
    fn a_passed_over_read_waits_its_read_expire_and_no_longer() {
        for read_expire in [100 * MS, 500 * MS] {
            let t = DeadlineTunables {
                read_expire,
                ..Default::default()
            };
            let mut dd = MqDeadline::new(t);
            dd.insert(rq(0, Ddir::Read, 1_000, 0), 0);
            assert_eq!(tick(&mut dd, 0), Some(0));
            // The victim, below latest_pos.
            dd.insert(rq(1, Ddir::Read, 10, 0), 0);
            let mut sector = 1_001;
            let mut key = 2;
            let mut served = None;
            for i in 1..2_000u64 {
                let now = i * MS;
                // Two new reads above the scan per tick: the queue never
                // runs dry above latest_pos.
                for _ in 0..2 {
                    dd.insert(rq(key, Ddir::Read, sector, 0), now);
                    key += 1;
                    sector += 8;
                }
                if tick(&mut dd, now) == Some(1) {
                    served = Some(now);
                    break;
                }
            }
            let at = served.expect("the expired read is served");
            assert!(at >= read_expire, "served at {at} before its deadline");
            assert!(
                at <= read_expire + u64::from(t.fifo_batch) * MS,
                "served at {at}, more than a batch after its deadline"
            );
        }
    }

    /// Reads are preferred, but a queued write goes after writes_starved
    /// read batches pass it over (each batch is fifo_batch reads).
    #[test]
    fn writes_go_after_writes_starved_read_batches() {
        for starved in [0u32, 2, 5] {
            let t = DeadlineTunables {
                writes_starved: starved,
                ..Default::default()
            };
            let mut dd = MqDeadline::new(t);
            for k in 1..1_000 {
                dd.insert(rq(k, Ddir::Read, 100 + u64::from(k) * 8, 0), 0);
            }
            // A read batch is under way (one read of it out) when the
            // write arrives.
            assert_eq!(tick(&mut dd, 1), Some(1));
            dd.insert(rq(0, Ddir::Write, 5, 0), 1);
            let reads_before = (2..).take_while(|&i| tick(&mut dd, i) != Some(0)).count() as u32;
            // The rest of the batch, then `starved` whole read batches.
            assert_eq!(reads_before, t.fifo_batch - 1 + starved * t.fifo_batch);
        }
    }

    /// RT requests go before BE ones, and a BE request does not go while
    /// RT requests are in the driver (dd_queued counts them).
    #[test]
    fn rt_requests_go_first_and_hold_back_be_while_in_flight() {
        let rt = ioprio_value(IOPRIO_CLASS_RT, 0);
        let mut dd = MqDeadline::new(DeadlineTunables::default());
        for k in 0..8 {
            dd.insert(rq(k, Ddir::Read, u64::from(k) * 8, 0), 0);
        }
        for k in 8..12 {
            dd.insert(rq(k, Ddir::Read, 1_000 + u64::from(k) * 8, rt), 0);
        }
        let first: Vec<u32> = (0..4).map(|_| dd.dispatch(MS).unwrap()).collect();
        assert_eq!(first, vec![8, 9, 10, 11]);
        // All four RT requests are in the driver: BE waits.
        assert_eq!(dd.dispatch(2 * MS), None);
        for _ in 0..3 {
            dd.finish(rt, 3 * MS);
        }
        assert_eq!(dd.dispatch(3 * MS), None);
        dd.finish(rt, 4 * MS);
        assert_eq!(dd.dispatch(4 * MS), Some(0));
    }

    /// Under a flood of RT requests always in flight, a BE request goes
    /// once it is prio_aging_expire old, not before.
    #[test]
    fn an_aged_be_request_goes_despite_rt_in_flight() {
        let rt = ioprio_value(IOPRIO_CLASS_RT, 0);
        let t = DeadlineTunables {
            prio_aging_expire: 50 * MS,
            ..Default::default()
        };
        let mut dd = MqDeadline::new(t);
        dd.insert(rq(0, Ddir::Read, 0, 0), 0);
        let mut served = None;
        for (key, i) in (1u32..).zip(0..200u64) {
            let now = i * MS;
            dd.insert(rq(key, Ddir::Read, u64::from(key) * 8, rt), now);
            // One RT request stays in flight the whole time.
            match dd.dispatch(now) {
                Some(0) => {
                    served = Some(now);
                    break;
                }
                Some(_) if i > 0 => dd.finish(rt, now),
                _ => {}
            }
        }
        assert_eq!(served, Some(50 * MS));
    }
}
