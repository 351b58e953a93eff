//! Zone write plugging (block/blk-zoned.c, Linux 6.10+): on a zoned disk
//! the block layer keeps at most one write in flight per zone, so that
//! writes reach the device in write-pointer order whatever the dispatch
//! path reorders. `blk_zone_plug_bio` (called from blk_mq_submit_bio
//! before a request is allocated) adds a write to its zone's plug when the
//! plug already has one in flight (BLK_ZONE_WPLUG_PLUGGED); the
//! completion of that write (blk_zone_write_plug_finish_request ->
//! disk_zone_wplug_unplug_bio) submits the next plugged write from the
//! plug's work item. Reads are never plugged.
//!
//! The plug's own check of a write against its cached write pointer offset
//! (blk_zone_wplug_prepare_bio) is left to the device, which fails a
//! write off its write pointer with the same EIO; the work item that
//! resubmits a plugged write runs at the completion's time, its CPU cost
//! not booked (assumptions, stated in docs/model.md).
//!
//! No allocation per request: the plugged writes of a zone are a list
//! threaded through an array indexed by request key.

use crate::driver::ZonedLimits;

const NONE: u32 = u32::MAX;

/// The zone write plugs of a zoned disk.
pub struct ZoneWritePlugs {
    limits: ZonedLimits,
    zone_bytes: u64,
    /// The write in flight of each zone (NONE: the plug is idle).
    owner: Vec<u32>,
    /// Each zone's plugged writes, oldest first: head and tail keys.
    head: Vec<u32>,
    tail: Vec<u32>,
    /// The key after each plugged request in its zone's list.
    next: Vec<u32>,
    /// Writes that waited in a plug.
    pub plugged: u64,
    /// The most writes waiting in plugs at once.
    pub max_waiting: u64,
    waiting: u64,
}

impl ZoneWritePlugs {
    /// The plugs of a disk with `limits`, ready for request keys below
    /// `keys` (more grow the key array, as the request slab grows).
    pub fn new(limits: &ZonedLimits, keys: usize) -> ZoneWritePlugs {
        let zones = limits.nr_zones as usize;
        ZoneWritePlugs {
            limits: *limits,
            zone_bytes: limits.chunk_sectors << 9,
            owner: vec![NONE; zones],
            head: vec![NONE; zones],
            tail: vec![NONE; zones],
            next: vec![NONE; keys],
            plugged: 0,
            max_waiting: 0,
            waiting: 0,
        }
    }

    /// The start of the zone `offset` is in.
    pub fn zone_start(&self, offset: u64) -> u64 {
        offset / self.zone_bytes * self.zone_bytes
    }

    #[inline]
    fn zone(&self, offset: u64) -> usize {
        ((offset / self.zone_bytes) as usize).min(self.owner.len() - 1)
    }

    /// Write request `key` at `offset` reaches the submit path: `true` if
    /// it waits in its zone's plug (another write of the zone is in
    /// flight), `false` if it goes on (it is now the zone's write in
    /// flight).
    pub fn plug(&mut self, key: u32, offset: u64) -> bool {
        let z = self.zone(offset);
        // A conventional zone has no write pointer to keep writes in
        // order for (blk_zone_plug_bio returns false for one).
        if z < self.limits.conventional_zones as usize {
            return false;
        }
        if self.owner[z] == NONE || self.owner[z] == key {
            self.owner[z] = key;
            return false;
        }
        if key as usize >= self.next.len() {
            self.next.resize(key as usize + 1, NONE);
        }
        self.next[key as usize] = NONE;
        if self.tail[z] == NONE {
            self.head[z] = key;
        } else {
            self.next[self.tail[z] as usize] = key;
        }
        self.tail[z] = key;
        self.plugged += 1;
        self.waiting += 1;
        self.max_waiting = self.max_waiting.max(self.waiting);
        true
    }

    /// Write request `key` at `offset` completed: the zone's next plugged
    /// write, which now owns the plug and is to be submitted, if any.
    pub fn unplug(&mut self, key: u32, offset: u64) -> Option<u32> {
        let z = self.zone(offset);
        if self.owner[z] != key {
            return None;
        }
        let n = self.head[z];
        if n == NONE {
            self.owner[z] = NONE;
            return None;
        }
        self.head[z] = self.next[n as usize];
        if self.head[z] == NONE {
            self.tail[z] = NONE;
        }
        self.owner[z] = n;
        self.waiting -= 1;
        Some(n)
    }

    /// The disk's zone limits under their sysfs names, and the plugs'
    /// counters, for the run's JSON.
    pub fn counters(&self) -> serde_json::Value {
        let l = &self.limits;
        serde_json::json!({
            "zoned": "host-managed",
            "nr_zones": l.nr_zones,
            "chunk_sectors": l.chunk_sectors,
            "max_open_zones": l.max_open_zones,
            "max_active_zones": l.max_active_zones,
            "zone_append_max_bytes": l.zone_append_max_bytes,
            "plugged_writes": self.plugged,
            "max_plugged": self.max_waiting,
        })
    }

    /// Writes in flight (one per busy zone).
    pub fn in_flight(&self) -> usize {
        self.owner.iter().filter(|&&o| o != NONE).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits(zones: u32) -> ZonedLimits {
        ZonedLimits {
            nr_zones: zones,
            chunk_sectors: 2048,
            max_open_zones: 0,
            max_active_zones: 0,
            zone_append_max_bytes: 4096,
            conventional_zones: 0,
        }
    }

    proptest! {
        /// Over any interleaving of submissions and completions: at most
        /// one write per zone is ever out of the plug, and plugged writes
        /// leave in the order they came.
        #[test]
        fn one_write_in_flight_per_zone_in_arrival_order(
            ops in prop::collection::vec((0..4u64, any::<bool>()), 1..200),
        ) {
            let mut p = ZoneWritePlugs::new(&limits(4), 4);
            let zb = 2048 << 9;
            let mut next_key = 0u32;
            let mut flying: Vec<Option<u32>> = vec![None; 4];
            let mut queued: Vec<std::collections::VecDeque<u32>> = vec![Default::default(); 4];
            for (zone, submit) in ops {
                let z = zone as usize;
                if submit {
                    let k = next_key;
                    next_key += 1;
                    if p.plug(k, zone * zb + 4096) {
                        prop_assert!(flying[z].is_some());
                        queued[z].push_back(k);
                    } else {
                        prop_assert!(flying[z].is_none(), "two writes in flight in zone {}", z);
                        flying[z] = Some(k);
                    }
                } else if let Some(k) = flying[z] {
                    let n = p.unplug(k, zone * zb);
                    prop_assert_eq!(n, queued[z].pop_front());
                    flying[z] = n;
                    if let Some(n) = n {
                        // The resubmitted write goes on.
                        prop_assert!(!p.plug(n, zone * zb));
                    }
                }
                prop_assert_eq!(p.in_flight(), flying.iter().filter(|f| f.is_some()).count());
            }
        }
    }
}
