//! Host-side garbage collection over a zoned device: a log-structured
//! host layer (what ZenFS or F2FS does on a ZNS SSD) between a workload's
//! logical writes and the zones, as an [`IoSource`]. Every I/O it makes is
//! an ordinary I/O of the job: the data writes and the reads and writes
//! that copy valid data out of a victim zone. The victim is reset when a
//! stream next writes it: fio's `zonemode=zbd` resets a full zone before
//! writing it again (zbd.c zbd_adjust_block -> zbd_reset_zone, after
//! io_u_quiesce), as a Zone Management Send through the whole path. So
//! host GC costs the host CPU, the block layer, the link and the device
//! what it costs them, and the device sees only sequential zone writes
//! (no device-side GC).
//!
//! The host layer, as a log-structured file system keeps it:
//!
//! - A map from each logical unit (the job's block size) of the stream to
//!   the zone slot holding its latest copy, and per zone the count of
//!   valid units and each slot's logical unit (the reverse map GC walks).
//! - One open zone per stream (the stream's write frontier); a logical
//!   write appends there. Its GC copies append there too (F2FS and ZenFS
//!   also keep a stream's moved data with the stream). Streams share the
//!   free zones ([`ZonePool`]) and own the zones they filled.
//! - Foreground GC (F2FS's f2fs_balance_fs: the writer itself collects
//!   when free sections run low): before each logical write made while
//!   fewer than `reserve` zones are free, the stream collects one of its
//!   own full zones, the one with the fewest valid units (greedy, as
//!   F2FS's foreground GC and ZenFS's GC pick), reading its valid runs,
//!   appending them at its frontier; the zone then joins the free zones,
//!   to be reset by its next writer.
//!
//! Each stream's zones are read and written by its own job only, in the
//! order the source gives its I/Os; a collected zone joins the pool once
//! every copy read of it has been given (so each is accepted by fio, which
//! holds the zone's lock until the read is done: another job's reset of
//! the zone waits for it). A stream that finds no free zone ends (its
//! logical stream is cut short), counted as `starved`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::workload::{Ddir, IoSource, IoUnit};

/// No slot / no logical unit.
const NONE: u32 = u32::MAX;

/// The largest copy I/O GC issues: 128 KiB, a common MDTS (a larger one
/// would be split by the block layer anyway).
const MAX_COPY_BYTES: u64 = 128 * 1024;

/// What the host layer of one stream did, in units of its block size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostGcStats {
    /// Logical units the workload wrote.
    pub user_units: u64,
    /// Units GC copied (read from a victim and written to the frontier).
    pub copy_units: u64,
    /// Read I/Os and write I/Os GC issued.
    pub copy_reads: u64,
    pub copy_writes: u64,
    /// Zones GC collected.
    pub victims: u64,
    /// Collected zones the stream took to write again (fio resets each
    /// before its first write).
    pub resets: u64,
    /// The stream needed a zone and none was free: it ended early.
    pub starved: bool,
    /// Logical units outside the stream's space (not placed).
    pub outside_units: u64,
}

/// The zones of a device shared by the streams of a host layer: the free
/// ones, and each stream's statistics.
#[derive(Debug)]
pub struct ZonePool {
    free: VecDeque<u32>,
    /// Per zone: collected and not yet written again (full on the device).
    dirty: Vec<bool>,
    /// Per stream.
    pub stats: Vec<HostGcStats>,
}

impl ZonePool {
    /// Zones `0..zones` all free (empty), for `streams` streams.
    pub fn new(zones: u32, streams: usize) -> Rc<RefCell<ZonePool>> {
        Rc::new(RefCell::new(ZonePool {
            free: (0..zones).collect(),
            dirty: vec![false; zones as usize],
            stats: vec![HostGcStats::default(); streams],
        }))
    }

    pub fn free_zones(&self) -> usize {
        self.free.len()
    }
}

/// The zones' geometry as the host sees it (the device's zone report).
#[derive(Clone, Copy, Debug)]
pub struct ZoneLayout {
    /// Bytes from one zone's start to the next's.
    pub zone_size: u64,
    /// Writable bytes of a zone.
    pub zone_capacity: u64,
    pub zones: u32,
}

/// One stream of the host layer: see the module docs.
pub struct HostGc {
    logical: Box<dyn IoSource>,
    pool: Rc<RefCell<ZonePool>>,
    stream: usize,
    z: ZoneLayout,
    unit: u64,
    upz: u32,
    /// The logical offset of the stream's first unit.
    base: u64,
    reserve: usize,
    /// Logical unit -> global slot (zone * upz + index), or NONE.
    map: Vec<u32>,
    /// Global slot -> logical unit (NONE: stale or unwritten), for the
    /// zones this stream owns.
    rev: Vec<u32>,
    valid: Vec<u32>,
    /// Full zones the stream owns.
    full: Vec<u32>,
    /// The open zone and its next slot.
    frontier: Option<(u32, u32)>,
    queue: VecDeque<IoUnit>,
    /// Queue entries before this index are not extended by a new write
    /// (a logical write never merges into a GC copy).
    merge_from: usize,
    /// The zone collected last: free once its copy reads are all given.
    release: Option<u32>,
    stats: HostGcStats,
}

impl HostGc {
    /// Stream `stream` of a host layer over the zones of `pool`: its
    /// logical writes (`logical`, units of `unit` bytes over `len` bytes
    /// from `base`) are placed in zones of layout `z`; GC keeps `reserve`
    /// zones free. Refused (a message) when the unit does not divide the
    /// zone capacity or the stream's logical space does not fit the map.
    pub fn new(
        logical: Box<dyn IoSource>,
        pool: Rc<RefCell<ZonePool>>,
        stream: usize,
        z: ZoneLayout,
        unit: u64,
        (base, len): (u64, u64),
        reserve: usize,
    ) -> Result<HostGc, String> {
        if unit == 0 || !z.zone_capacity.is_multiple_of(unit) || z.zone_capacity > z.zone_size {
            return Err(format!(
                "host GC: a unit of {unit} bytes must divide the zone capacity {} (<= the zone \
                 size {})",
                z.zone_capacity, z.zone_size
            ));
        }
        let upz = z.zone_capacity / unit;
        let slots = u64::from(z.zones) * upz;
        if slots >= u64::from(NONE) || len / unit >= u64::from(NONE) {
            return Err("host GC: too many units for 32-bit slot numbers".into());
        }
        if stream >= pool.borrow().stats.len() {
            return Err(format!("host GC: stream {stream} has no statistics slot"));
        }
        Ok(HostGc {
            logical,
            pool,
            stream,
            z,
            unit,
            upz: upz as u32,
            base,
            reserve: reserve.max(1),
            map: vec![NONE; len.div_ceil(unit) as usize],
            rev: vec![NONE; slots as usize],
            valid: vec![0; z.zones as usize],
            full: Vec::new(),
            frontier: None,
            queue: VecDeque::new(),
            merge_from: 0,
            release: None,
            stats: HostGcStats::default(),
        })
    }

    fn offset_of(&self, slot: u32) -> u64 {
        let (zone, i) = (slot / self.upz, slot % self.upz);
        u64::from(zone) * self.z.zone_size + u64::from(i) * self.unit
    }

    /// The next slot of the frontier, taking a free zone when it is full
    /// (None: no zone is free).
    fn next_slot(&mut self) -> Option<u32> {
        if let Some((zone, next)) = self.frontier {
            if next < self.upz {
                self.frontier = Some((zone, next + 1));
                return Some(zone * self.upz + next);
            }
            self.full.push(zone);
        }
        let zone = {
            let mut pool = self.pool.borrow_mut();
            let zone = pool.free.pop_front()?;
            if std::mem::take(&mut pool.dirty[zone as usize]) {
                self.stats.resets += 1;
            }
            zone
        };
        self.frontier = Some((zone, 1));
        Some(zone * self.upz)
    }

    /// Put logical unit `lu` in the next slot; the write I/O extends the
    /// last queued write when contiguous in the same zone (up to `max`
    /// bytes: a write never crosses into the next zone, which fio would
    /// cut at the zone's capacity).
    fn place(&mut self, lu: u32, max: u64) -> bool {
        let Some(slot) = self.next_slot() else {
            self.stats.starved = true;
            return false;
        };
        let old = self.map[lu as usize];
        if old != NONE {
            self.rev[old as usize] = NONE;
            self.valid[(old / self.upz) as usize] -= 1;
        }
        self.map[lu as usize] = slot;
        self.rev[slot as usize] = lu;
        self.valid[(slot / self.upz) as usize] += 1;
        let off = self.offset_of(slot);
        let mergeable = self.queue.len() > self.merge_from;
        match self.queue.back_mut() {
            Some(w)
                if mergeable
                    && w.ddir == Ddir::Write
                    && w.offset + u64::from(w.len) == off
                    && w.offset / self.z.zone_size == off / self.z.zone_size
                    && u64::from(w.len) + self.unit <= max =>
            {
                w.len += self.unit as u32;
            }
            _ => self.queue.push_back(IoUnit {
                ddir: Ddir::Write,
                offset: off,
                len: self.unit as u32,
            }),
        }
        true
    }

    /// Collect the stream's full zone with the fewest valid units (ties:
    /// the lowest zone), if it holds any stale unit.
    fn collect(&mut self) -> bool {
        let Some((pos, &victim)) = self
            .full
            .iter()
            .enumerate()
            .min_by_key(|&(_, &z)| (self.valid[z as usize], z))
        else {
            return false;
        };
        if self.valid[victim as usize] >= self.upz {
            return false;
        }
        self.full.swap_remove(pos);
        let first = victim * self.upz;
        let mut i = 0;
        while i < self.upz {
            if self.rev[(first + i) as usize] == NONE {
                i += 1;
                continue;
            }
            // A run of valid slots, read as one I/O of up to MAX_COPY_BYTES.
            let mut n = 0;
            while i + n < self.upz
                && self.rev[(first + i + n) as usize] != NONE
                && u64::from(n + 1) * self.unit <= MAX_COPY_BYTES
            {
                n += 1;
            }
            self.queue.push_back(IoUnit {
                ddir: Ddir::Read,
                offset: self.offset_of(first + i),
                len: (u64::from(n) * self.unit) as u32,
            });
            self.stats.copy_reads += 1;
            for k in 0..n {
                let lu = self.rev[(first + i + k) as usize];
                if !self.place(lu, MAX_COPY_BYTES) {
                    return false;
                }
                self.stats.copy_units += 1;
            }
            i += n;
        }
        debug_assert_eq!(self.valid[victim as usize], 0);
        self.release = Some(victim);
        self.stats.victims += 1;
        true
    }

    fn publish(&self) {
        self.pool.borrow_mut().stats[self.stream] = self.stats;
    }
}

impl IoSource for HostGc {
    fn next_io(&mut self) -> Option<IoUnit> {
        if self.queue.is_empty() {
            if let Some(z) = self.release.take() {
                let mut pool = self.pool.borrow_mut();
                pool.free.push_back(z);
                pool.dirty[z as usize] = true;
            }
        }
        if self.queue.is_empty() && !self.stats.starved {
            let free = self.pool.borrow().free.len();
            if free < self.reserve {
                self.collect();
            }
            let copies = self.queue.iter().filter(|u| u.ddir == Ddir::Write).count();
            self.stats.copy_writes += copies as u64;
            self.merge_from = self.queue.len();
            if let Some(w) = self.logical.next_io() {
                // Whole units of the stream's space (the caller's job has a
                // fixed block size equal to the unit).
                let first = w.offset.wrapping_sub(self.base) / self.unit;
                let n = u64::from(w.len).div_ceil(self.unit);
                for lu in first..first + n {
                    if w.ddir != Ddir::Write || w.offset < self.base || lu >= self.map.len() as u64
                    {
                        self.stats.outside_units += 1;
                        continue;
                    }
                    if !self.place(lu as u32, u64::from(w.len)) {
                        break;
                    }
                    self.stats.user_units += 1;
                }
            }
        }
        self.publish();
        self.queue.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A logical stream of given unit offsets.
    struct Units(VecDeque<u64>, u64);
    impl IoSource for Units {
        fn next_io(&mut self) -> Option<IoUnit> {
            let o = self.0.pop_front()?;
            Some(IoUnit {
                ddir: Ddir::Write,
                offset: o * self.1,
                len: self.1 as u32,
            })
        }
    }

    /// Drain a stream, checking the zone rules a device would: writes at
    /// each zone's write pointer, reads below it, resets only of full
    /// zones, a write at a full zone's start resetting it first (fio's
    /// zbd_adjust_block); returns the I/Os and the resets.
    fn drain(mut h: HostGc, z: ZoneLayout) -> (Vec<IoUnit>, u64) {
        let mut wp: Vec<u64> = (0..z.zones).map(|i| u64::from(i) * z.zone_size).collect();
        let mut out = Vec::new();
        let mut resets = 0;
        while let Some(u) = h.next_io() {
            let zone = (u.offset / z.zone_size) as usize;
            let start = zone as u64 * z.zone_size;
            match u.ddir {
                Ddir::Write => {
                    if u.offset == start && wp[zone] == start + z.zone_capacity {
                        // fio resets a full zone before writing it again.
                        resets += 1;
                        wp[zone] = start;
                    }
                    assert_eq!(u.offset, wp[zone], "write off the write pointer");
                    wp[zone] += u64::from(u.len);
                    assert!(wp[zone] <= start + z.zone_capacity);
                }
                Ddir::Read => assert!(u.offset + u64::from(u.len) <= wp[zone]),
                Ddir::Trim => panic!("the host layer issues no trim"),
            }
            out.push(u);
        }
        (out, resets)
    }

    /// Rewrites of a few units fill zones with stale data; GC copies the
    /// valid units out and resets, so the stream runs far past the
    /// device's capacity; the accounting adds up: every written unit is a
    /// user unit or a copy, every reset follows its victim's copies.
    /// Zones with a capacity below their size and zones written to their
    /// end (where a copy run could otherwise run on into the next zone).
    #[test]
    fn gc_keeps_a_rewriting_stream_going_within_the_zone_rules() {
        for (capacity, zones) in [(48 * 1024, 8), (64 * 1024, 6)] {
            gc_run(ZoneLayout {
                zone_size: 64 * 1024,
                zone_capacity: capacity,
                zones,
            });
        }
    }

    fn gc_run(z: ZoneLayout) {
        let unit = 4096;
        // 60 units (62 % of the 96 slots of either layout): 20 written once (cold), 40
        // rewritten 30 times over at random (a 64-bit LCG, Knuth's MMIX
        // constants), so victims still hold valid units that GC must copy.
        let mut seq: VecDeque<u64> = (0..20).collect();
        let mut x: u64 = 3;
        for _ in 0..1200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seq.push_back(20 + (x >> 33) % 40);
        }
        let pool = ZonePool::new(z.zones, 1);
        let h = HostGc::new(
            Box::new(Units(seq, unit)),
            pool.clone(),
            0,
            z,
            unit,
            (0, 60 * unit),
            2,
        )
        .unwrap();
        let (ios, resets) = drain(h, z);
        let s = pool.borrow().stats[0];
        assert!(!s.starved);
        assert_eq!(s.user_units, 1220);
        assert!(s.victims > 0 && s.copy_units > 0);
        // Every zone taken again after GC is reset by its first write; the
        // ones still free at the end are not.
        assert_eq!(resets, s.resets);
        assert!(s.resets <= s.victims && s.victims - s.resets <= u64::from(z.zones));
        let written: u64 = ios
            .iter()
            .filter(|u| u.ddir == Ddir::Write)
            .map(|u| u64::from(u.len) / unit)
            .sum();
        let read: u64 = ios
            .iter()
            .filter(|u| u.ddir == Ddir::Read)
            .map(|u| u64::from(u.len) / unit)
            .sum();
        assert_eq!(written, s.user_units + s.copy_units);
        assert_eq!(read, s.copy_units);
        assert_eq!(s.outside_units, 0);
    }

    /// Data that is all valid cannot be collected: the stream stops,
    /// counted as starved, rather than loop or reset live data.
    #[test]
    fn a_stream_with_no_stale_data_starves_cleanly() {
        let z = ZoneLayout {
            zone_size: 16 * 1024,
            zone_capacity: 16 * 1024,
            zones: 4,
        };
        let seq: VecDeque<u64> = (0..20).collect();
        let pool = ZonePool::new(z.zones, 1);
        let h = HostGc::new(
            Box::new(Units(seq, 4096)),
            pool.clone(),
            0,
            z,
            4096,
            (0, 20 * 4096),
            1,
        )
        .unwrap();
        let (ios, resets) = drain(h, z);
        let s = pool.borrow().stats[0];
        assert!(s.starved);
        assert_eq!(s.user_units, 16);
        assert_eq!((s.victims, s.resets, resets), (0, 0, 0));
        assert!(ios.iter().all(|u| u.ddir == Ddir::Write));
    }
}
