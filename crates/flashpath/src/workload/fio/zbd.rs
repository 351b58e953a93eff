//! fio 3.33's `zonemode=zbd` (zbd.c): the zone state fio keeps for a
//! file, shared by every job on the same file (zbd_init_zone_info), and
//! how it moves each I/O (zbd_adjust_block): writes go to a zone's write
//! pointer, a random write picks an open zone (zbd_convert_to_open_zone)
//! within `max_open_zones` / `job_max_open_zones`, a full zone is reset
//! before it is written again (zbd_reset_zone), and so is one picked by
//! `zone_reset_threshold` / `zone_reset_frequency`; reads stay below the
//! write pointer unless `read_beyond_wp`; a trim resets its zone
//! (zbd_do_io_u_trim).
//!
//! The zones come from the device's report (parse_zone_info) when the disk
//! is zoned, else fio emulates them over the file (init_zone_info: every
//! zone sequential and empty, nothing sent to the device). fio advances a
//! zone's write pointer when it queues a write (zbd_queue_io) and closes a
//! zone a write filled when the write completes (zbd_end_zone_io).
//!
//! fio holds a zone's mutex from zbd_adjust_block until the I/O is put
//! (zbd_put_io; it is recursive, so one job may have several I/Os in
//! flight to a zone): another job that wants the zone waits. Here a job
//! that finds the zone held by another quiesces (async engines,
//! zone_lock's io_u_quiesce) and then looks again every
//! [`ZONE_LOCK_RECHECK_NS`] (an assumption: pthread_mutex_lock wakes the
//! waiter when the holder lets go, within a scheduler wake-up).

use super::{JobFile, JobSpec, ZoneMode};
use crate::error::{InputError, Result};
use crate::types::{BlkZone, BlkZoneCond, Ddir, IoUnit};
use std::cell::RefCell;
use std::rc::Rc;

/// zbd.h ZBD_MAX_OPEN_ZONES.
pub const ZBD_MAX_OPEN_ZONES: u32 = 4096;

/// How often a job waiting for a zone another job holds looks again
/// (ns): an assumption for the wake-up of pthread_mutex_lock's waiter.
pub const ZONE_LOCK_RECHECK_NS: u64 = 1_000;

/// zbd_types.h `enum zbd_zoned_model`: what the file is to fio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZbdModel {
    /// A regular file or a conventional disk: fio emulates the zones.
    None,
    /// A host-managed zoned disk: fio's resets go to the device
    /// (BLKRESETZONE).
    HostManaged,
}

/// One zone as fio tracks it (zbd.h `struct fio_zone_info`).
#[derive(Clone, Copy, Debug)]
pub struct ZbdZone {
    pub start: u64,
    pub capacity: u64,
    pub wp: u64,
    pub has_wp: bool,
    pub open: bool,
    pub offline: bool,
    /// Who holds the zone's mutex (NONE: nobody) and how many times.
    owner: u32,
    depth: u32,
    reset_zone: bool,
}

const NONE: u32 = u32::MAX;

impl ZbdZone {
    fn cap_end(&self) -> u64 {
        self.start + self.capacity
    }
}

/// A file's zone state (zbd.h `struct zoned_block_device_info`), shared by
/// the jobs on it.
#[derive(Debug)]
pub struct ZbdInfo {
    pub model: ZbdModel,
    pub zone_size: u64,
    /// The zones, then a sentinel whose start is the end of the last.
    zones: Vec<ZbdZone>,
    pub max_open_zones: u32,
    open_zones: Vec<u32>,
    sectors_with_data: u64,
    wp_sectors_with_data: u64,
    /// Writes left until the next reset zone_reset_frequency asks for.
    write_cnt: u32,
    /// The most zones open at once (the property tests watch it).
    pub max_open_seen: u32,
    /// I/Os accepted and not yet put, over every job on the file (fio's
    /// any_io_in_flight looks at every job's io_u_in_flight).
    in_flight: u32,
}

pub type SharedZbd = Rc<RefCell<ZbdInfo>>;

impl ZbdInfo {
    /// init_zone_info: `nr` emulated zones of `zone_size` bytes (capacity
    /// `capacity`) from `base`, every one sequential and empty.
    pub fn emulated(base: u64, file_size: u64, zone_size: u64, capacity: u64) -> ZbdInfo {
        let nr = file_size.div_ceil(zone_size);
        let zones = (0..nr)
            .map(|i| zone(base + i * zone_size, capacity, base + i * zone_size, true))
            .collect();
        ZbdInfo::with(ZbdModel::None, zone_size, zones, base + nr * zone_size)
    }

    /// parse_zone_info: the zones of the device's report (conventional
    /// zones have no write pointer; a full one's is at its capacity), as
    /// many as cover `file_size` bytes.
    pub fn reported(report: &[BlkZone], file_size: u64) -> ZbdInfo {
        let zone_size = report[0].len;
        let nr = (file_size.div_ceil(zone_size) as usize).min(report.len());
        let zones = report[..nr]
            .iter()
            .map(|z| {
                let wp = match z.cond {
                    BlkZoneCond::NotWp | BlkZoneCond::Full => z.start + z.capacity,
                    _ => z.wp,
                };
                let mut fz = zone(z.start, z.capacity, wp, !z.conventional);
                fz.offline = z.cond == BlkZoneCond::Offline;
                fz
            })
            .collect();
        let end = report[nr - 1].start + zone_size;
        ZbdInfo::with(ZbdModel::HostManaged, zone_size, zones, end)
    }

    fn with(model: ZbdModel, zone_size: u64, mut zones: Vec<ZbdZone>, end: u64) -> ZbdInfo {
        zones.push(zone(end, 0, end, false));
        ZbdInfo {
            model,
            zone_size,
            zones,
            max_open_zones: 0,
            open_zones: Vec::new(),
            sectors_with_data: 0,
            wp_sectors_with_data: 0,
            write_cnt: 0,
            max_open_seen: 0,
            in_flight: 0,
        }
    }

    pub fn nr_zones(&self) -> u32 {
        (self.zones.len() - 1) as u32
    }

    /// zbd_zone_idx: the zone of `offset` (the sentinel past the end).
    pub fn zone_idx(&self, offset: u64) -> u32 {
        let base = self.zones[0].start;
        (offset.saturating_sub(base) / self.zone_size).min(u64::from(self.nr_zones())) as u32
    }

    pub fn zone(&self, z: u32) -> &ZbdZone {
        &self.zones[z as usize]
    }

    /// The zones open now (fio's open_zones[]).
    pub fn open_zones(&self) -> &[u32] {
        &self.open_zones
    }

    fn zone_full(&self, z: u32, required: u64) -> bool {
        let zn = &self.zones[z as usize];
        zn.has_wp && zn.wp + required > zn.cap_end()
    }

    /// zbd_close_zone.
    fn close_zone(&mut self, z: u32) -> bool {
        match self.open_zones.iter().position(|o| *o == z) {
            Some(i) => {
                self.open_zones.remove(i);
                self.zones[z as usize].open = false;
                true
            }
            None => false,
        }
    }

    fn held_by_other(&self, z: u32, owner: u32) -> bool {
        let o = self.zones[z as usize].owner;
        o != NONE && o != owner
    }

    fn lock(&mut self, z: u32, owner: u32) {
        let zn = &mut self.zones[z as usize];
        zn.owner = owner;
        zn.depth += 1;
    }

    fn unlock(&mut self, z: u32, owner: u32) {
        let zn = &mut self.zones[z as usize];
        if zn.owner == owner && zn.depth > 0 {
            zn.depth -= 1;
            if zn.depth == 0 {
                zn.owner = NONE;
            }
        }
    }
}

fn zone(start: u64, capacity: u64, wp: u64, has_wp: bool) -> ZbdZone {
    ZbdZone {
        start,
        capacity,
        wp,
        has_wp,
        open: false,
        offline: false,
        owner: NONE,
        depth: 0,
        reset_zone: false,
    }
}

/// What zbd_adjust_block made of an I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adjust {
    /// Issue it (moved and trimmed as fio does).
    Accept(IoUnit),
    /// Wait for the job's I/O in flight first (io_u_quiesce), then ask
    /// again.
    Quiesce,
    /// Another job holds the zone: wait, then ask again.
    Locked,
    /// Reset zone `zone` on the device first (BLKRESETZONE), then ask
    /// again: the zone is held meanwhile.
    Reset { zone: u32 },
    /// A trim that is zone `zone`'s reset (zbd_do_io_u_trim): on a zoned
    /// disk a BLKRESETZONE, on emulated zones nothing reaches the device;
    /// either way the trim completes with it.
    TrimReset {
        zone: u32,
        unit: IoUnit,
        device: bool,
    },
    /// io_u_eof: the job has nothing more it can do, with fio's error
    /// (errno, td_verror's text) when it is one.
    Eof(Option<(i32, &'static str)>),
}

/// One job's view of a zoned file (the fields of thread_data and fio_file
/// zbd.c reads).
#[derive(Debug)]
pub struct ZbdJob {
    pub info: SharedZbd,
    owner: u32,
    file_offset: u64,
    io_size: u64,
    min_zone: u32,
    max_zone: u32,
    random: bool,
    /// td_rw: a job that both reads and writes.
    rw: bool,
    min_bs: [u64; 3],
    read_beyond_wp: bool,
    job_max_open_zones: u32,
    num_open_zones: u32,
    /// zone_reset_threshold and zone_reset_frequency.
    zrt: f64,
    zrf: f64,
    /// td->ts.nr_zone_resets.
    pub resets: u64,
}

/// A job's zone parameters.
#[derive(Clone, Copy, Debug)]
pub struct ZbdJobParams {
    pub owner: u32,
    pub file_offset: u64,
    pub io_size: u64,
    pub random: bool,
    pub rw: bool,
    pub min_bs: [u64; 3],
    pub read_beyond_wp: bool,
    pub job_max_open_zones: u32,
    pub reset_threshold: f64,
    pub reset_frequency: f64,
}

impl ZbdJob {
    /// zbd_setup_files for one job: its zones are those its area covers
    /// (min_zone .. max_zone).
    pub fn new(info: SharedZbd, p: ZbdJobParams) -> ZbdJob {
        let (min_zone, max_zone) = {
            let i = info.borrow();
            (
                i.zone_idx(p.file_offset),
                i.zone_idx(p.file_offset + p.io_size),
            )
        };
        let mut j = ZbdJob {
            info,
            owner: p.owner,
            file_offset: p.file_offset,
            io_size: p.io_size,
            min_zone,
            max_zone: max_zone.max(min_zone + 1),
            random: p.random,
            rw: p.rw,
            min_bs: p.min_bs,
            read_beyond_wp: p.read_beyond_wp,
            job_max_open_zones: p.job_max_open_zones,
            num_open_zones: 0,
            zrt: p.reset_threshold,
            zrf: p.reset_frequency,
            resets: 0,
        };
        j.file_reset();
        j
    }

    /// zbd_file_reset: the bytes written in the job's zones, and the
    /// countdown to the next frequency reset (_zbd_reset_write_cnt).
    fn file_reset(&mut self) {
        let mut i = self.info.borrow_mut();
        let (mut swd, mut wp_swd) = (0, 0);
        for z in self.min_zone..self.max_zone {
            let zn = i.zones[z as usize];
            let d = zn.wp - zn.start;
            swd += d;
            if zn.has_wp {
                wp_swd += d;
            }
        }
        i.sectors_with_data = swd;
        i.wp_sectors_with_data = wp_swd;
        i.write_cnt = if self.zrf > 0.0 {
            (1.0 / self.zrf).min(f64::from(u32::MAX)) as u32
        } else {
            u32::MAX
        };
    }

    fn valid(&self, offset: u64) -> bool {
        offset.wrapping_sub(self.file_offset) < self.io_size
    }

    /// pick_random_zone_idx: an index into the open zones from the I/O's
    /// place in the job's area.
    fn pick_random_zone_idx(&self, i: &ZbdInfo, offset: u64) -> usize {
        let n = i.open_zones.len() as u128;
        (u128::from(offset.saturating_sub(self.file_offset)) * n / u128::from(self.io_size.max(1)))
            as usize
    }

    /// zbd_open_zone: whether the job may write zone `z` (open already, or
    /// opened now within the limits).
    fn open_zone(&mut self, i: &mut ZbdInfo, z: u32) -> bool {
        let zn = i.zones[z as usize];
        if zn.offline {
            return false;
        }
        if i.max_open_zones == 0 {
            return true;
        }
        if i.open_zones.contains(&z) {
            // Open and about to be filled by writes in flight: full.
            return zn.wp < zn.cap_end();
        }
        if self.job_max_open_zones > 0 && self.num_open_zones >= self.job_max_open_zones {
            return false;
        }
        if i.open_zones.len() as u32 >= i.max_open_zones {
            return false;
        }
        i.open_zones.push(z);
        i.max_open_seen = i.max_open_seen.max(i.open_zones.len() as u32);
        self.num_open_zones += 1;
        i.zones[z as usize].open = true;
        true
    }

    fn close_zone(&mut self, i: &mut ZbdInfo, z: u32) {
        if i.close_zone(z) {
            self.num_open_zones = self.num_open_zones.saturating_sub(1);
        }
    }

    /// zbd_convert_to_open_zone: an open zone (or one it may open) with
    /// room for `min_bs`, for a write that does not go to an open zone.
    /// Ok(None): no zone (io_u_eof).
    fn convert_to_open_zone(
        &mut self,
        i: &mut ZbdInfo,
        offset: u64,
        min_bs: u64,
        busy: bool,
    ) -> std::result::Result<Option<u32>, Adjust> {
        let limited = i.max_open_zones > 0 || self.job_max_open_zones > 0;
        let mut zone_idx = if limited {
            let k = self.pick_random_zone_idx(i, offset);
            // fio reads open_zones[] unlocked, whatever it holds.
            i.open_zones.get(k).copied().unwrap_or(0)
        } else {
            i.zone_idx(offset)
        };
        zone_idx = zone_idx.clamp(self.min_zone, self.max_zone - 1);
        let mut other = false;
        loop {
            let zn = i.zones[zone_idx as usize];
            if zn.has_wp && i.held_by_other(zone_idx, self.owner) {
                return Err(Adjust::Locked);
            }
            if zn.has_wp {
                if !zn.offline && !limited {
                    break;
                }
                if i.open_zones.is_empty() {
                    other = true;
                    break;
                }
            }
            let n = i.open_zones.len();
            let start = self.pick_random_zone_idx(i, offset);
            let found = (0..n)
                .map(|k| (start + k) % n)
                .find(|k| (self.min_zone..self.max_zone).contains(&i.open_zones[*k]));
            let Some(k) = found else {
                return Ok(None);
            };
            let cand = i.open_zones[k];
            if cand == zone_idx {
                break;
            }
            zone_idx = cand;
        }
        if !other {
            let zn = i.zones[zone_idx as usize];
            if zn.wp + min_bs <= zn.cap_end() {
                return Ok(Some(zone_idx));
            }
        }
        // open_other_zone: at a limit, wait for the job's writes in
        // flight (they may close zones), then look for another.
        let n_open = i.open_zones.len() as u32;
        let wait_zone_close = n_open == self.max_zone - self.min_zone
            || (i.max_open_zones > 0 && n_open == i.max_open_zones)
            || (self.job_max_open_zones > 0 && self.num_open_zones == self.job_max_open_zones);
        if wait_zone_close && busy {
            return Err(Adjust::Quiesce);
        }
        let mut z = zone_idx;
        for _ in 0..self.io_size / i.zone_size {
            z += 1;
            if !self.valid(i.zones[z as usize].start) {
                z = self.min_zone;
            }
            if !i.zones[z as usize].has_wp {
                continue;
            }
            if i.held_by_other(z, self.owner) {
                return Err(Adjust::Locked);
            }
            if i.zones[z as usize].open {
                continue;
            }
            if self.open_zone(i, z) {
                return Ok(Some(z));
            }
        }
        // Whether the write fits in a zone open already.
        for k in 0..i.open_zones.len() {
            let z = i.open_zones[k];
            if z < self.min_zone || z >= self.max_zone {
                continue;
            }
            if i.held_by_other(z, self.owner) {
                return Err(Adjust::Locked);
            }
            let zn = i.zones[z as usize];
            if zn.wp + min_bs <= zn.cap_end() {
                return Ok(Some(z));
            }
        }
        // fio 3.33: with I/O in flight, its completions may close zones:
        // quiesce and try again (the job's own), or wait for the other
        // jobs' (any_io_in_flight).
        if busy {
            return Err(Adjust::Quiesce);
        }
        if i.in_flight > 0 {
            return Err(Adjust::Locked);
        }
        Ok(None)
    }

    /// zbd_find_zone: the next zone after `zb` (and, random, before it)
    /// with `min_bytes` written.
    fn find_zone(
        &self,
        i: &ZbdInfo,
        zb: u32,
        min_bytes: u64,
    ) -> std::result::Result<Option<u32>, Adjust> {
        let zl = self.max_zone as i64;
        let zf = self.min_zone as i64;
        let (mut z1, mut z2) = (i64::from(zb) + 1, i64::from(zb) - 1);
        while z1 < zl || z2 >= zf {
            if z1 < zl && !i.zones[z1 as usize].offline {
                let zn = i.zones[z1 as usize];
                if zn.has_wp && i.held_by_other(z1 as u32, self.owner) {
                    return Err(Adjust::Locked);
                }
                if zn.start + min_bytes <= zn.wp {
                    return Ok(Some(z1 as u32));
                }
            } else if !self.random {
                break;
            }
            if self.random && z2 >= zf && !i.zones[z2 as usize].offline {
                let zn = i.zones[z2 as usize];
                if zn.has_wp && i.held_by_other(z2 as u32, self.owner) {
                    return Err(Adjust::Locked);
                }
                if zn.start + min_bytes <= zn.wp {
                    return Ok(Some(z2 as u32));
                }
            }
            z1 += 1;
            z2 -= 1;
        }
        Ok(None)
    }

    /// zbd_adjust_ddir: a mixed job's first reads are writes until the
    /// zones hold data.
    pub fn adjust_ddir(&self, ddir: Ddir) -> Ddir {
        if ddir != Ddir::Read || !self.rw {
            return ddir;
        }
        if self.info.borrow().sectors_with_data > 0 || self.read_beyond_wp {
            Ddir::Read
        } else {
            Ddir::Write
        }
    }

    /// zbd_adjust_block, then zbd_queue_io for an accepted write (the
    /// write pointer moves when fio queues it). `busy`: the job has I/O in
    /// flight or unreaped (what io_u_quiesce would wait for).
    pub fn adjust(&mut self, unit: IoUnit, busy: bool) -> Adjust {
        let info = self.info.clone();
        let mut i = info.borrow_mut();
        let mut u = unit;
        let min_bs = self.min_bs[u.ddir.index()].max(1);
        if !self.valid(u.offset) {
            return Adjust::Eof(None);
        }
        let zb = i.zone_idx(u.offset);
        let zbn = i.zones[zb as usize];
        if !zbn.has_wp {
            if u.ddir != Ddir::Write {
                return Adjust::Accept(u);
            }
            // A write in a conventional zone must not cross into a
            // sequential one.
            let next = i.zones[zb as usize + 1];
            if !next.has_wp || u.offset + u64::from(u.len) <= next.start {
                return Adjust::Accept(u);
            }
            let new_len = if u.offset + min_bs > next.start {
                u.offset = zbn.start + next.start - u.offset;
                u64::from(u.len).min(next.start - u.offset)
            } else {
                next.start - u.offset
            };
            u.len = (new_len / min_bs * min_bs) as u32;
            return Adjust::Accept(u);
        }
        if !zbn.offline && u.ddir == Ddir::Read && self.read_beyond_wp {
            return Adjust::Accept(u);
        }
        if i.held_by_other(zb, self.owner) {
            return Adjust::Locked;
        }
        let z = match u.ddir {
            Ddir::Read => {
                let mut z = zb;
                let mut range = if zbn.offline { 0 } else { zbn.wp - zbn.start };
                if range < min_bs || (!self.random && u.offset + min_bs > zbn.wp) {
                    match self.find_zone(&i, zb, min_bs) {
                        Err(a) => return a,
                        Ok(None) => return Adjust::Eof(None),
                        Ok(Some(f)) => {
                            z = f;
                            let zn = i.zones[z as usize];
                            range = zn.wp - zn.start;
                            if !self.random {
                                u.offset = zn.start;
                            }
                        }
                    }
                }
                let zn = i.zones[z as usize];
                let len = u64::from(u.len);
                if range <= len {
                    u.offset = zn.start;
                } else if self.random {
                    u.offset =
                        zn.start + ((u.offset - zbn.start) % (range - len)) / min_bs * min_bs;
                }
                if !zn.has_wp {
                    return Adjust::Accept(u);
                }
                let new_len = len.min(zn.wp - u.offset) / min_bs * min_bs;
                if new_len < len {
                    u.len = new_len as u32;
                }
                z
            }
            Ddir::Write => {
                if u64::from(u.len) > i.zone_size {
                    return Adjust::Eof(Some((libc_einval(), "I/O buflen exceeds zone size")));
                }
                let mut z = zb;
                if !self.open_zone(&mut i, zb) {
                    match self.convert_to_open_zone(&mut i, u.offset, min_bs, busy) {
                        Err(a) => return a,
                        Ok(None) => return Adjust::Eof(None),
                        Ok(Some(c)) => z = c,
                    }
                    u.offset = i.zones[z as usize].start;
                }
                // The zone reset threshold (counted per write past it).
                if self.zrf > 0.0 && i.wp_sectors_with_data as f64 >= self.io_size as f64 * self.zrt
                {
                    if busy && i.write_cnt <= 1 {
                        // The countdown ends here: fio's reset quiesces
                        // first, so count it once, after.
                        return Adjust::Quiesce;
                    }
                    i.write_cnt = i.write_cnt.saturating_sub(1);
                    if i.write_cnt == 0 {
                        i.write_cnt = (1.0 / self.zrf).min(f64::from(u32::MAX)) as u32;
                        i.zones[z as usize].reset_zone = true;
                    }
                }
                if i.zones[z as usize].reset_zone || i.zone_full(z, min_bs) {
                    // A reset goes out synchronously after what is in
                    // flight (io_u_quiesce).
                    if busy {
                        return Adjust::Quiesce;
                    }
                    i.zones[z as usize].reset_zone = false;
                    if i.model == ZbdModel::HostManaged
                        && i.zones[z as usize].wp != i.zones[z as usize].start
                    {
                        i.lock(z, self.owner);
                        return Adjust::Reset { zone: z };
                    }
                    self.reset_zone_state(&mut i, z);
                    if i.zones[z as usize].capacity < min_bs {
                        return Adjust::Eof(Some((libc_einval(), "ZCAP is less min_bs")));
                    }
                }
                let zn = i.zones[z as usize];
                u.offset = zn.wp;
                if !self.valid(u.offset) {
                    return Adjust::Eof(Some((libc_einval(), "invalid WP value")));
                }
                let new_len = u64::from(u.len).min(zn.cap_end() - u.offset) / min_bs * min_bs;
                if new_len < min_bs {
                    return Adjust::Eof(Some((5, "zone remainder too small")));
                }
                u.len = new_len as u32;
                // zbd_queue_io: the write pointer moves as fio queues it.
                let end = (u.offset + new_len).min(zn.cap_end());
                if zn.wp <= end {
                    i.sectors_with_data += end - zn.wp;
                    i.wp_sectors_with_data += end - zn.wp;
                }
                i.zones[z as usize].wp = end;
                z
            }
            Ddir::Trim => {
                let mut z = zb;
                if self.random && zbn.wp <= zbn.start {
                    match self.find_zone(&i, zb, 1) {
                        Err(a) => return a,
                        Ok(None) => return Adjust::Eof(None),
                        Ok(Some(f)) => z = f,
                    }
                    u.offset = i.zones[z as usize].start;
                }
                if !i.zones[z as usize].has_wp {
                    return Adjust::Accept(u);
                }
                if u.offset != i.zones[z as usize].start {
                    return Adjust::Eof(Some((libc_einval(), "Trim offset not at zone start")));
                }
                i.lock(z, self.owner);
                let zn = i.zones[z as usize];
                let device = i.model == ZbdModel::HostManaged && zn.wp != zn.start;
                if !device {
                    self.reset_zone_state(&mut i, z);
                }
                return Adjust::TrimReset {
                    zone: z,
                    unit: u,
                    device,
                };
            }
        };
        i.lock(z, self.owner);
        i.in_flight += 1;
        Adjust::Accept(u)
    }

    /// zbd_reset_zone's bookkeeping once the zone is reset: its data is
    /// gone and its write pointer at its start.
    fn reset_zone_state(&mut self, i: &mut ZbdInfo, z: u32) {
        let zn = i.zones[z as usize];
        let data = zn.wp - zn.start;
        if data == 0 {
            return;
        }
        i.sectors_with_data = i.sectors_with_data.saturating_sub(data);
        i.wp_sectors_with_data = i.wp_sectors_with_data.saturating_sub(data);
        i.zones[z as usize].wp = zn.start;
        self.resets += 1;
    }

    /// Zone `zone`'s start and length (what BLKRESETZONE is given).
    pub fn zone_extent(&self, zone: u32) -> (u64, u64) {
        let i = self.info.borrow();
        let z = &i.zones[zone as usize];
        (z.start, i.zones[zone as usize + 1].start - z.start)
    }

    /// The device reset zone `zone` (BLKRESETZONE returned): the zone's
    /// state follows and the job lets it go.
    pub fn reset_done(&mut self, zone: u32) {
        let info = self.info.clone();
        let mut i = info.borrow_mut();
        self.reset_zone_state(&mut i, zone);
        i.unlock(zone, self.owner);
    }

    /// The device's reset failed: the zone is let go unchanged.
    pub fn reset_failed(&mut self, zone: u32) {
        self.info.borrow_mut().unlock(zone, self.owner);
    }

    /// zbd_put_io when fio is done with an I/O it accepted: a write that
    /// reached the zone's capacity closes the zone (zbd_end_zone_io), and
    /// the job lets the zone go.
    pub fn put_io(&mut self, unit: IoUnit, ok: bool) {
        let info = self.info.clone();
        let mut i = info.borrow_mut();
        let z = i.zone_idx(unit.offset);
        // A trim that reset its zone let it go with the reset.
        if unit.ddir == Ddir::Trim || z >= i.nr_zones() || !i.zones[z as usize].has_wp {
            return;
        }
        if unit.ddir == Ddir::Read && self.read_beyond_wp {
            return;
        }
        i.in_flight = i.in_flight.saturating_sub(1);
        if ok
            && unit.ddir == Ddir::Write
            && unit.offset + u64::from(unit.len) >= i.zones[z as usize].cap_end()
        {
            self.close_zone(&mut i, z);
        }
        i.unlock(z, self.owner);
    }

    /// Where a sequential job goes on after `unit` (fio's last_pos, which
    /// get_io_u sets from the adjusted I/O), with setup_zbd_zone_mode's
    /// jump from a zone's capacity to its end; None for a random job.
    pub fn seq_pos(&self, unit: IoUnit) -> Option<u64> {
        if self.random {
            return None;
        }
        Some(self.next_pos(unit))
    }

    fn next_pos(&self, unit: IoUnit) -> u64 {
        let end = unit.offset + u64::from(unit.len);
        let i = self.info.borrow();
        if unit.ddir == Ddir::Write && !self.random {
            let z = i.zone_idx(unit.offset);
            let zn = i.zones[z as usize];
            if zn.capacity < i.zone_size && end >= zn.cap_end() {
                return i.zones[z as usize + 1].start;
            }
        }
        end
    }
}

/// What the run knows of its disk's zones: its report (empty for a
/// conventional disk) and its `max_open_zones` queue limit (0: none).
#[derive(Clone, Debug, Default)]
pub struct DiskZones {
    pub report: Vec<BlkZone>,
    pub max_open_zones: u32,
}

impl DiskZones {
    fn zone_size(&self) -> Option<u64> {
        self.report.first().map(|z| z.len)
    }
}

fn err(jobs: &JobFile, spec: &JobSpec, what: String) -> InputError {
    InputError::new(
        jobs.path.clone(),
        Some(spec.line),
        format!("job '{}': {what}", spec.name),
    )
}

fn file_name(spec: &JobSpec, clone: u32) -> String {
    match &spec.filename {
        Some(f) => f.split(':').next().unwrap_or(f).to_string(),
        None => format!("{}.{}.0", spec.name, clone),
    }
}

fn raw_device(spec: &JobSpec) -> bool {
    spec.filename
        .as_deref()
        .is_some_and(|f| f.starts_with("/dev/"))
}

/// Before the files are laid out: sizes given in zones become bytes
/// (zbd_recalc_options_with_zone_granularity, with the job's zonesize or,
/// for zonemode=zbd on a zoned disk, the disk's), and a writing zbd job's
/// offset and size are aligned to zones as zbd_zone_align_file_sizes does
/// (its log_info lines go to the job file's fio messages). Only the first
/// clone's area is aligned: a clone placed by offset_increment keeps its
/// own (an approximation; fio aligns each file of each clone).
pub fn resolve_sizes(jobs: &mut JobFile, disk: &DiskZones, capacity: u64) -> Result<()> {
    for k in 0..jobs.jobs.len() {
        let spec = &jobs.jobs[k];
        if spec.zones.mode == ZoneMode::Strided && spec.rw.is_random() {
            return Err(err(
                jobs,
                spec,
                "zonemode=strided with random offsets (confined to each zone's range) is not \
                 modelled by flashpath"
                    .into(),
            ));
        }
        let zbd = spec.zones.mode == ZoneMode::Zbd;
        let on_zoned = zbd && raw_device(spec) && !disk.report.is_empty();
        let zs = if on_zoned {
            disk.zone_size().unwrap_or(0)
        } else {
            spec.zones.size
        };
        if spec.zones.nz.any() && zs == 0 {
            return Err(err(
                jobs,
                spec,
                "a size in zones (Nz) without a zone size (zonesize, or zonemode=zbd on a zoned \
                 disk) is not modelled by flashpath"
                    .into(),
            ));
        }
        jobs.jobs[k].resolve_zone_counts(zs);
        let spec = &jobs.jobs[k];
        if !zbd || zs == 0 || (on_zoned && spec.zones.size != 0 && spec.zones.size != zs) {
            continue;
        }
        let name = file_name(spec, 0);
        if !spec.zones.skip.is_multiple_of(zs) {
            return Err(err(
                jobs,
                spec,
                format!(
                    "{name}: zoneskip {} is not a multiple of the device zone size {zs}. \
                     (fio: zbd.c zbd_zone_align_file_sizes)",
                    spec.zones.skip
                ),
            ));
        }
        let real = if raw_device(spec) {
            capacity
        } else {
            spec.filesize
                .or(spec.size)
                .unwrap_or(0)
                .saturating_add(spec.offset)
        };
        let mut offset = spec.offset;
        if offset >= real {
            continue;
        }
        let mut io_size = spec.size.unwrap_or(real - offset).min(real - offset);
        let reads_only =
            spec.rw.has(Ddir::Read) && !spec.rw.has(Ddir::Write) && !spec.rw.has(Ddir::Trim);
        if reads_only {
            continue;
        }
        let mut msgs = Vec::new();
        if !offset.is_multiple_of(zs) {
            let new_offset = (offset / zs + 1) * zs;
            if new_offset >= offset + io_size {
                return Err(err(
                    jobs,
                    spec,
                    format!("{name}: io_size must be at least one zone"),
                ));
            }
            msgs.push(format!(
                "{name}: rounded up offset from {offset} to {new_offset}"
            ));
            io_size -= new_offset - offset;
            offset = new_offset;
        }
        let new_end = (offset + io_size) / zs * zs;
        if offset + io_size != new_end {
            if new_end <= offset {
                return Err(err(
                    jobs,
                    spec,
                    format!("{name}: io_size must be at least one zone"),
                ));
            }
            msgs.push(format!(
                "{name}: rounded down io_size from {io_size} to {}",
                new_end - offset
            ));
            io_size = new_end - offset;
        }
        if !msgs.is_empty() {
            let s = &mut jobs.jobs[k];
            s.offset = offset;
            s.size = Some(io_size);
            jobs.fio_messages.extend(msgs);
        }
    }
    Ok(())
}

/// zbd_init_files and zbd_setup_files for every zonemode=zbd clone: the
/// zone state of each file (shared by the clones on it), with the checks
/// fio makes and its messages. `regions[job][clone]` is where each
/// clone's file lies on the disk.
pub fn setup(
    jobs: &JobFile,
    regions: &[Vec<(u64, u64)>],
    disk: &DiskZones,
) -> Result<Vec<Vec<Option<ZbdJob>>>> {
    let mut files: Vec<(u64, SharedZbd)> = Vec::new();
    let mut out = Vec::with_capacity(jobs.jobs.len());
    let mut owner = 0u32;
    for (k, spec) in jobs.jobs.iter().enumerate() {
        let mut per_clone = Vec::new();
        for clone in 0..spec.numjobs.max(1) {
            if spec.zones.mode != ZoneMode::Zbd {
                per_clone.push(None);
                continue;
            }
            let (start, len) = regions[k][clone as usize];
            let name = file_name(spec, clone);
            let info = match files.iter().find(|(s, _)| *s == start) {
                Some((_, i)) => i.clone(),
                None => {
                    let i = Rc::new(RefCell::new(create_zone_info(
                        jobs, spec, &name, start, len, disk,
                    )?));
                    files.push((start, i.clone()));
                    i
                }
            };
            setup_job(jobs, spec, &name, &info)?;
            let min_bs = std::array::from_fn(|d| spec.bs[d].bounds().0);
            let file_offset = start + spec.clone_offset(clone);
            let io_size = spec
                .size
                .unwrap_or(len.saturating_sub(file_offset - start))
                .min(len.saturating_sub(file_offset - start));
            per_clone.push(Some(ZbdJob::new(
                info,
                ZbdJobParams {
                    owner,
                    file_offset,
                    io_size,
                    random: spec.rw.is_random(),
                    rw: spec.rw.has(Ddir::Read) && spec.rw.has(Ddir::Write),
                    min_bs,
                    read_beyond_wp: spec.zones.read_beyond_wp,
                    job_max_open_zones: spec.zones.job_max_open_zones,
                    reset_threshold: spec.zones.reset_threshold,
                    reset_frequency: spec.zones.reset_frequency,
                },
            )));
            owner += 1;
        }
        out.push(per_clone);
    }
    Ok(out)
}

/// zbd_create_zone_info: the zones of the disk's report
/// (parse_zone_info) or emulated over the file (init_zone_info), and the
/// open limit (zbd_set_max_open_zones).
fn create_zone_info(
    jobs: &JobFile,
    spec: &JobSpec,
    name: &str,
    start: u64,
    len: u64,
    disk: &DiskZones,
) -> Result<ZbdInfo> {
    let at = |what: String| err(jobs, spec, what);
    let o = &spec.zones;
    let mut info = if disk.report.is_empty() {
        // init_zone_info (zbd.c): a regular file or a conventional disk.
        if o.size == 0 {
            return Err(at(format!(
                "{name}: Specifying the zone size is mandatory for regular file/block device \
                 with --zonemode=zbd"
            )));
        }
        if o.size < 512 {
            return Err(at(format!(
                "{name}: zone size must be at least 512 bytes for --zonemode=zbd"
            )));
        }
        let capacity = if o.capacity == 0 { o.size } else { o.capacity };
        if capacity > o.size {
            return Err(at(format!(
                "{name}: job parameter zonecapacity {} is larger than zone size {}",
                o.capacity, o.size
            )));
        }
        if len < o.size {
            return Err(at(format!(
                "{name}: file/device size {len} is smaller than zone size {}",
                o.size
            )));
        }
        ZbdInfo::emulated(start, len, o.size, capacity)
    } else {
        if !raw_device(spec) {
            return Err(at(format!(
                "{name}: zonemode=zbd on a file of a zoned disk needs a zoned file system, \
                 which flashpath does not model: use the disk itself (filename=/dev/...)"
            )));
        }
        // parse_zone_info.
        let zs = disk.report[0].len;
        if o.size != 0 && o.size != zs {
            return Err(at(format!(
                "fio: {name} job parameter zonesize {} does not match disk zone size {zs}.",
                o.size
            )));
        }
        ZbdInfo::reported(&disk.report, len)
    };
    // zbd_set_max_open_zones.
    // Only a host-managed disk has a limit (a conventional one, or
    // ignore_zone_limits, and a disk without one: the job's).
    info.max_open_zones = if info.model != ZbdModel::HostManaged
        || o.ignore_zone_limits
        || disk.max_open_zones == 0
    {
        o.max_open_zones
    } else if o.max_open_zones == 0 {
        disk.max_open_zones
    } else if o.max_open_zones <= disk.max_open_zones {
        o.max_open_zones
    } else {
        return Err(at(format!(
            "Specified --max_open_zones ({}) is larger than max ({})",
            o.max_open_zones, disk.max_open_zones
        )));
    };
    if info.max_open_zones > ZBD_MAX_OPEN_ZONES {
        return Err(at(format!(
            "'max_open_zones' value is larger than {ZBD_MAX_OPEN_ZONES}"
        )));
    }
    Ok(info)
}

/// zbd_setup_files' checks for one job on a file's zones.
fn setup_job(jobs: &JobFile, spec: &JobSpec, name: &str, info: &SharedZbd) -> Result<()> {
    let at = |what: String| err(jobs, spec, what);
    let i = info.borrow();
    let writes = spec.rw.has(Ddir::Write) || spec.rw.has(Ddir::Trim);
    // zbd_using_direct_io.
    if i.model == ZbdModel::HostManaged && writes && !spec.direct {
        return Err(at(
            "Using direct I/O is mandatory for writing to ZBD drives".into(),
        ));
    }
    // zbd_verify_bs.
    if spec.rw.has(Ddir::Trim) {
        let (lo, hi) = spec.bs[Ddir::Trim.index()].bounds();
        if lo != hi || matches!(spec.bs[Ddir::Trim.index()], super::BlockSize::Split(_)) {
            return Err(at(
                "bsrange and bssplit are not allowed for trim with zonemode=zbd".into(),
            ));
        }
        if lo != i.zone_size {
            return Err(at(format!(
                "{name}: trim block size {lo} is not the zone size {}",
                i.zone_size
            )));
        }
    }
    if spec.verify.is_some() {
        for b in &spec.bs {
            let bs = b.bounds().0;
            if !i.zone_size.is_multiple_of(bs) {
                return Err(at(format!(
                    "{name}: block size {bs} is not a divisor of the zone size {}",
                    i.zone_size
                )));
            }
        }
        return Err(at(
            "verify with zonemode=zbd (zbd_replay_write_order) is not modelled by flashpath".into(),
        ));
    }
    if spec.zones.max_open_zones > 0 && i.max_open_zones != spec.zones.max_open_zones {
        return Err(at("Different 'max_open_zones' values".into()));
    }
    if spec.zones.job_max_open_zones > 0 && i.max_open_zones == 0 {
        return Err(at(
            "'job_max_open_zones' cannot be used without a global open zones limit".into(),
        ));
    }
    Ok(())
}

/// EINVAL (asm-generic/errno-base.h).
fn libc_einval() -> i32 {
    22
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn job(info: &SharedZbd, owner: u32, size: u64, random: bool, max_open: u32) -> ZbdJob {
        info.borrow_mut().max_open_zones = max_open;
        ZbdJob::new(
            info.clone(),
            ZbdJobParams {
                owner,
                file_offset: 0,
                io_size: size,
                random,
                rw: false,
                min_bs: [4096, 256 << 10, 4096],
                read_beyond_wp: false,
                job_max_open_zones: 0,
                reset_threshold: 0.0,
                reset_frequency: 0.0,
            },
        )
    }

    fn w(offset: u64) -> IoUnit {
        IoUnit {
            ddir: Ddir::Write,
            offset,
            len: 256 << 10,
        }
    }

    /// Random writes land at their zone's write pointer, and never more
    /// zones are open than max_open_zones.
    #[test]
    fn random_writes_go_to_write_pointers_within_the_open_limit() {
        let info: SharedZbd = Rc::new(RefCell::new(ZbdInfo::emulated(0, 16 * MB, MB, MB)));
        let mut j = job(&info, 0, 16 * MB, true, 3);
        let mut x = 12345u64;
        let mut wp = [0u64; 16];
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let off = (x >> 33) % (16 * MB) / 4096 * 4096;
            let resets = j.resets;
            match j.adjust(w(off), false) {
                Adjust::Accept(u) => {
                    let z = (u.offset / MB) as usize;
                    // A full zone is reset (emulated: in fio's books only)
                    // and written from its start.
                    if j.resets > resets {
                        assert_eq!(wp[z], MB, "only a full zone is reset");
                        wp[z] = 0;
                    }
                    assert_eq!(u.offset, z as u64 * MB + wp[z], "write off its zone's wp");
                    wp[z] += u64::from(u.len);
                    assert!(wp[z] <= MB);
                    j.put_io(u, true);
                }
                other => panic!("{other:?}"),
            }
            assert!(info.borrow().open_zones().len() <= 3);
        }
        assert_eq!(info.borrow().max_open_seen, 3);
        // 2000 writes of 256 KiB into zones of 1 MiB: every zone filled
        // is reset before it is written again.
        assert!(j.resets >= 2000 / 4 - 16, "{}", j.resets);
    }

    /// zonecapacity below zonesize: a sequential writer jumps from the
    /// capacity to the next zone (the real fio 3.33's offsets in
    /// tests/fixtures/zbd/seq-write-zcap.log).
    #[test]
    fn sequential_writes_skip_from_capacity_to_zone_end() {
        let info: SharedZbd = Rc::new(RefCell::new(ZbdInfo::emulated(0, 8 * MB, MB, 768 << 10)));
        let mut j = job(&info, 0, 8 * MB, false, 0);
        let mut pos = 0;
        let mut got = Vec::new();
        while pos < 8 * MB {
            let Adjust::Accept(u) = j.adjust(w(pos), false) else {
                panic!()
            };
            got.push(u.offset >> 10);
            j.put_io(u, true);
            pos = j.next_pos(u);
        }
        let want: Vec<u64> = (0..8)
            .flat_map(|z| [0, 256, 512].map(|k| z * 1024 + k))
            .collect();
        assert_eq!(got, want);
        assert_eq!(j.resets, 0);
    }

    /// zone_reset_threshold / zone_reset_frequency: past the threshold,
    /// one write in 1/frequency resets its zone first.
    #[test]
    fn frequency_resets_past_the_threshold() {
        let info: SharedZbd = Rc::new(RefCell::new(ZbdInfo::emulated(0, 8 * MB, MB, MB)));
        let mut j = job(&info, 0, 8 * MB, false, 0);
        j.zrt = 0.5;
        j.zrf = 0.25;
        j.file_reset();
        let mut resets_at = Vec::new();
        let mut pos = 0;
        for n in 0..32 {
            let before = j.resets;
            let Adjust::Accept(u) = j.adjust(w(pos % (8 * MB)), false) else {
                panic!()
            };
            if j.resets > before {
                resets_at.push(n);
            }
            j.put_io(u, true);
            pos = j.next_pos(u);
        }
        // 4 MiB (16 writes of 256 KiB) reach the threshold; from then every
        // fourth write resets its zone (a zone holding data).
        assert_eq!(resets_at.first(), Some(&19));
        assert!(
            resets_at.windows(2).all(|p| p[1] - p[0] == 4),
            "{resets_at:?}"
        );
    }

    /// A zone another job holds makes the job wait (zone_lock).
    #[test]
    fn a_zone_held_by_another_job_waits() {
        let info: SharedZbd = Rc::new(RefCell::new(ZbdInfo::emulated(0, 4 * MB, MB, MB)));
        let mut a = job(&info, 0, 4 * MB, false, 0);
        let mut b = job(&info, 1, 4 * MB, false, 0);
        let Adjust::Accept(u) = a.adjust(w(0), false) else {
            panic!()
        };
        assert_eq!(b.adjust(w(0), false), Adjust::Locked);
        a.put_io(u, true);
        assert_eq!(
            b.adjust(w(0), false),
            Adjust::Accept(IoUnit {
                offset: 256 << 10,
                ..w(0)
            })
        );
    }

    /// Reads stay below the write pointer (read_beyond_wp=0): a
    /// sequential reader skips to the next zone holding data and stops
    /// when none is left.
    #[test]
    fn reads_stay_below_the_write_pointer() {
        let info: SharedZbd = Rc::new(RefCell::new(ZbdInfo::emulated(0, 4 * MB, MB, MB)));
        info.borrow_mut().zones[0].wp = 512 << 10;
        info.borrow_mut().zones[2].wp = 2 * MB + (256 << 10);
        let mut j = job(&info, 0, 4 * MB, false, 0);
        let r = |offset| IoUnit {
            ddir: Ddir::Read,
            offset,
            len: 256 << 10,
        };
        let mut pos = 0;
        let mut got = Vec::new();
        loop {
            match j.adjust(r(pos), false) {
                Adjust::Accept(u) => {
                    got.push(u.offset >> 10);
                    j.put_io(u, true);
                    pos = j.next_pos(u);
                }
                Adjust::Eof(None) => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got, vec![0, 256, 2048]);
    }
}
