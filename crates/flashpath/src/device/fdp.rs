//! NVMe Flexible Data Placement (TP4146, ratified 2022; NVMe Base
//! Specification 2.1, "Flexible Data Placement") as a translation layer
//! behind the NVMe front end: the page-mapping FTL of [`crate::device::ftl`]
//! whose host writes go to the reclaim unit the write's placement handle
//! selects.
//!
//! The model, in the specification's terms:
//!
//! - **Reclaim unit handles.** `device.fdp.ruhs` handles, each a host write
//!   stream of the FTL ([`FlashDevice::set_streams`]): a handle's units are
//!   buffered and programmed with its own only, so each handle fills
//!   reclaim units of its own. Handle 0 is the default: a write without a
//!   placement directive goes there (QEMU's hw/nvme/ctrl.c
//!   nvme_do_write_fdp uses placement handle 0 when the directive is
//!   absent).
//! - **Reclaim groups and reclaim units.** `device.fdp.reclaim_groups`
//!   groups, each a run of `dies / groups` consecutive dies (die numbering
//!   is channel-fastest, so a group of at least `channels` dies spans every
//!   channel; TP4146 leaves what a reclaim group is to the device, "for
//!   example a set of dies"). Every handle has a reclaim unit in every
//!   group: a write's data goes to the group its placement identifier
//!   names, on the group's die for the LPN's stripe
//!   ([`FlashDevice::write_placed`]), and GC, which runs per die, never
//!   moves data out of its die, so never out of its group. A reclaim unit
//!   is one multi-plane erase block on each die of the group (its open
//!   block of the handle there), so its size is `dies / groups` x block
//!   bytes. With one group (`nvme-fdp-like`) the data of an LPN stays on
//!   its static die, as in the page FTL.
//! - **Placement identifiers.** A PID is 16 bits: the reclaim group in the
//!   upper RGIF bits (RGIF, the FDP configuration's Reclaim Group
//!   Identifier Format, here the fewest bits that hold `groups - 1`: 0
//!   with one group, so the PID is the handle), the placement handle in
//!   the rest (QEMU's hw/nvme/ctrl.c nvme_make_pid). The Reclaim Unit
//!   Handle Status (I/O Management Receive, fio's "fetch ruhs") lists one
//!   descriptor per handle and group, handle by handle and group within
//!   handle (QEMU's nvme_io_mgmt_recv_ruhs): fio's placement index `i`
//!   is the PID of handle `i / groups` in group `i % groups`.
//! - **Isolation** (`device.fdp.isolation`, the Reclaim Unit Handle Type
//!   of each handle in the FDP configuration: TP4146, the Reclaim Unit
//!   Handle Descriptor's RUHT field, 1h "Initially Isolated", 2h
//!   "Persistently Isolated"). The device's own garbage collection runs in
//!   both (greedy or cost-benefit victims, per die, as the page FTL's);
//!   what differs is where the valid data it moves goes. Initially
//!   isolated: to one GC frontier shared by every handle, so data written
//!   through different handles may share a reclaim unit after a move.
//!   Persistently isolated: to a GC frontier of the handle that wrote the
//!   victim, so a reclaim unit only ever holds one handle's data (the
//!   spec: data moved by GC from a persistently isolated handle's units
//!   stays in units of that handle); it costs one more open block per
//!   handle on every die.
//! - **Invalid placement identifier.** A placement identifier naming a
//!   reclaim group or a handle the namespace does not have is not an
//!   error: the controller places the data itself (here: handle 0 of group
//!   0) and logs an "Invalid Placement Identifier" event (NVMe Base
//!   Specification 2.1, the Flexible Data Placement section on the Write
//!   command's placement identifier; QEMU's nvme_do_write_fdp, whose
//!   nvme_parse_pid checks both fields; FDP event type 03h of the events
//!   log page 23h); the event count is in the JSON. (Only the Reclaim Unit
//!   Handle Update command aborts on an invalid identifier, and it is not
//!   modelled.)
//! - **Statistics.** The FDP Statistics log page (22h): Host Bytes with
//!   Metadata Written (bytes the host wrote, counted at arrival), Media
//!   Bytes with Metadata Written (units programmed for the host, moved by
//!   GC, and the padding of partial rows, which is programmed media too),
//!   Media Bytes Erased; their ratio is the write amplification. The same
//!   three per reclaim group (by the group's dies; host bytes by the group
//!   the write named), and per handle: its host bytes, the units flushed
//!   for it and their padding, and the units GC moved out of the blocks
//!   its frontiers opened. With initially isolated handles GC's own blocks
//!   mix every handle's data: what GC moves out of them again is counted
//!   apart (`gc_bytes_moved_shared`), so the handles' media bytes and it
//!   add up to the device's.
//!
//! What it leaves out: I/O Management Send (Reclaim Unit Handle Update) and
//! so the "Reclaim Unit Not Fully Written" event; reclaim unit time limits;
//! GC that picks whole reclaim units across dies (the page FTL reclaims
//! per die, so a reclaim unit's blocks are freed die by die); a group
//! asked to hold more than its dies can goes on in other groups' dies (a
//! spill, counted: [`FlashDevice::spilled`]), where a device might fail
//! the write.

use std::any::Any;

use super::flash::{flash_device_from_profile, FlashParams};
use super::ftl::layer::{units, BufferCounters, ReadDone, TranslationLayer};
use super::ftl::FlashDevice;
use super::{Completion, Hint, UNIT};
use crate::error::{InputError, Result};
use crate::profile::{range, Profile};

crate::choice_enum! {
    /// `device.fdp.isolation`: the reclaim unit handle type of every
    /// handle (TP4146 RUHT).
    pub enum Isolation {
        /// 1h: GC may move data of different handles into one unit.
        Initially = "initial",
        /// 2h: GC keeps each handle's moved data in units of that handle.
        Persistently = "persistent",
    }
}

impl Isolation {
    /// The type as the FDP configuration names it.
    pub fn ruh_type(self) -> &'static str {
        match self {
            Isolation::Initially => "initially isolated",
            Isolation::Persistently => "persistently isolated",
        }
    }
}
use crate::sim::Ns;

crate::params! {
    /// Flexible Data Placement (`device.fdp.*`), with `device.flash.layer = "fdp"`.
    pub struct FdpKeys {
        /// Reclaim unit handles of the namespace (its placement handles 0..ruhs-1).
        pub ruhs: u32 = required count_u32(
            "device.fdp.ruhs",
            range(
                1.0,
                128.0,
                "reclaim unit handles: 1 to 128 (FDP configurations published have 8 to 16; \
                 each handle holds an open block on every die)",
            )
        ),
        /// The reclaim unit handle type of every handle: `initial` (GC may
        /// mix handles' data) or `persistent` (GC keeps each handle's data
        /// in its own reclaim units).
        pub isolation: Isolation = required choice("device.fdp.isolation", Isolation),
        /// Reclaim groups (NRG): the dies split into this many runs of
        /// consecutive dies, each with a reclaim unit per handle; must
        /// divide the die count.
        pub reclaim_groups: u32 = default(1) count_u32(
            "device.fdp.reclaim_groups",
            range(
                1.0,
                4096.0,
                "reclaim groups: 1 (every die) to one per die; must divide the die count",
            )
        ),
    }
}

/// What the layer counts beyond the page FTL's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FdpStats {
    /// Host units written through each reclaim unit handle.
    pub host_units: Vec<u64>,
    /// Host units written to each reclaim group (the one the placement
    /// named, or group 0).
    pub group_units: Vec<u64>,
    /// Writes whose placement identifier named no handle of the namespace
    /// (event 03h); their data went to handle 0.
    pub invalid_pid: u64,
    /// Writes that carried a placement directive.
    pub placed_writes: u64,
}

/// The FDP layer: the page FTL with one host stream per reclaim unit
/// handle.
pub struct Fdp {
    ftl: FlashDevice,
    ruhs: u32,
    isolation: Isolation,
    /// Reclaim groups (NRG).
    groups: u32,
    /// Reclaim Group Identifier Format: the PID's upper bits naming the
    /// group.
    rgif: u32,
    /// The handle and group the command being decoded selected.
    current: usize,
    current_group: u32,
    stats: FdpStats,
}

impl Fdp {
    /// `ruhs` reclaim unit handles of type `isolation` in one reclaim group
    /// over the page FTL `ftl`.
    pub fn new(ftl: FlashDevice, ruhs: u32, isolation: Isolation) -> Fdp {
        Fdp::with_groups(ftl, ruhs, isolation, 1)
    }

    /// `ruhs` handles in each of `groups` reclaim groups (`groups` divides
    /// the die count, and the FTL has the spare [`check_spare`] asks for).
    pub fn with_groups(mut ftl: FlashDevice, ruhs: u32, isolation: Isolation, groups: u32) -> Fdp {
        ftl.set_streams(ruhs as usize);
        if isolation == Isolation::Persistently {
            ftl.set_gc_per_stream();
        }
        let (_, cap) = die_budget(ftl.params(), ruhs, isolation, groups);
        ftl.set_die_groups(groups, cap);
        Fdp {
            ftl,
            ruhs,
            isolation,
            groups,
            rgif: rgif(groups),
            current: 0,
            current_group: 0,
            stats: FdpStats {
                host_units: vec![0; ruhs as usize],
                group_units: vec![0; groups as usize],
                ..FdpStats::default()
            },
        }
    }

    /// `device.fdp.*` over the page FTL of `device.flash.*` (preconditioned
    /// as the profile says: that data is in handle 0's blocks).
    pub fn from_profile(p: &Profile, seed: u64) -> Result<Fdp> {
        let k = FdpKeys::read(p)?;
        let fp = FlashParams::from_profile(p)?;
        let dies = fp.geometry.dies();
        if k.reclaim_groups > dies || !dies.is_multiple_of(k.reclaim_groups) {
            return Err(InputError::new(
                p.file_of("device.fdp.reclaim_groups"),
                None,
                format!(
                    "device.fdp.reclaim_groups = {}: a reclaim group is a set of whole dies, \
                     and the {dies} dies cannot be split into {} equal groups",
                    k.reclaim_groups, k.reclaim_groups
                ),
            ));
        }
        check_spare(&fp, k.ruhs, k.isolation, k.reclaim_groups)
            .map_err(|m| InputError::new(p.file_of("device.fdp.ruhs"), None, m))?;
        let mut ftl = flash_device_from_profile(p, seed)?;
        ftl.load_whole_map();
        Ok(Fdp::with_groups(ftl, k.ruhs, k.isolation, k.reclaim_groups))
    }

    /// The placement identifier of handle `ph` in group `rg`.
    pub fn pid(&self, rg: u32, ph: u32) -> u16 {
        if self.rgif == 0 {
            ph as u16
        } else {
            ((rg << (16 - self.rgif)) | ph) as u16
        }
    }

    /// (group, handle) of a placement identifier, if the namespace has
    /// both.
    pub fn parse_pid(&self, pid: u16) -> Option<(u32, u32)> {
        let pid = u32::from(pid);
        let (rg, ph) = if self.rgif == 0 {
            (0, pid)
        } else {
            (pid >> (16 - self.rgif), pid & ((1 << (16 - self.rgif)) - 1))
        };
        (rg < self.groups && ph < self.ruhs).then_some((rg, ph))
    }

    pub fn reclaim_groups(&self) -> u32 {
        self.groups
    }

    pub fn ftl(&self) -> &FlashDevice {
        &self.ftl
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    pub fn stats(&self) -> &FdpStats {
        &self.stats
    }

    /// Host Bytes with Metadata Written (FDP statistics log page 22h).
    pub fn host_bytes_written(&self) -> u64 {
        self.ftl.stats().host_write_units * UNIT
    }

    /// Media Bytes with Metadata Written (log page 22h): host data, GC
    /// moves and row padding programmed.
    pub fn media_bytes_written(&self) -> u64 {
        let f = self.ftl.stats();
        (f.units_programmed_host + f.units_programmed_gc + f.units_padded) * UNIT
    }

    /// Media Bytes Erased (log page 22h).
    pub fn media_bytes_erased(&self) -> u64 {
        self.ftl.stats().nand_erases * self.block_bytes()
    }

    /// Write amplification as the statistics log gives it: media bytes
    /// written per host byte (1.0 before any write).
    pub fn waf(&self) -> f64 {
        let host = self.host_bytes_written();
        if host == 0 {
            1.0
        } else {
            self.media_bytes_written() as f64 / host as f64
        }
    }

    /// Bytes of one multi-plane erase block.
    fn block_bytes(&self) -> u64 {
        let g = self.ftl.params().geometry;
        u64::from(g.planes_per_die) * u64::from(g.page_bytes) * u64::from(g.pages_per_block)
    }

    /// Bytes of one reclaim unit: an erase block on every die of a group.
    pub fn ru_bytes(&self) -> u64 {
        u64::from(self.ftl.params().geometry.dies() / self.groups) * self.block_bytes()
    }

    /// Media bytes written on reclaim group `rg`'s dies (host data, GC
    /// moves, padding) and erased there.
    pub fn group_media_bytes(&self, rg: u32) -> (u64, u64) {
        let k = (self.ftl.params().geometry.dies() / self.groups) as usize;
        let dies = &self.ftl.die_units()[rg as usize * k..(rg as usize + 1) * k];
        let written: u64 = dies.iter().map(|u| u.host + u.gc + u.padded).sum();
        let erased: u64 = dies.iter().map(|u| u.erases).sum();
        (written * UNIT, erased * self.block_bytes())
    }

    /// Media bytes programmed for handle `ph` (its data flushed, the
    /// padding of its rows, GC's moves out of its blocks).
    pub fn handle_media_bytes(&self, ph: usize) -> u64 {
        let u = self.ftl.stream_units()[ph];
        (u.host + u.padded + u.gc_moved) * UNIT
    }
}

/// RGIF: the fewest bits that hold a group number below `groups`.
fn rgif(groups: u32) -> u32 {
    32 - (groups - 1).leading_zeros()
}

/// Ratio, 1.0 with nothing written.
fn ratio(media: u64, host: u64) -> f64 {
    if host == 0 {
        1.0
    } else {
        media as f64 / host as f64
    }
}

/// Blocks each die needs (its share of user data, the GC reserve, the GC
/// frontier(s), an open block per handle and, with several groups, the
/// write buffer's units, whose old copies may stay valid on another die
/// until they are programmed), and the LPNs a die may then hold (`die_cap`
/// of [`FlashDevice::set_die_groups`]).
fn die_budget(fp: &FlashParams, ruhs: u32, isolation: Isolation, groups: u32) -> (u64, u64) {
    let g = fp.geometry;
    let slots_per_block =
        u64::from(g.pages_per_block) * u64::from(g.planes_per_die) * u64::from(fp.units_per_page());
    let per_die = fp.user_units().div_ceil(u64::from(g.dies()));
    let gc_frontiers = match isolation {
        Isolation::Initially => 1,
        Isolation::Persistently => u64::from(ruhs),
    };
    let buffer = if groups > 1 {
        u64::from(fp.write_buffer_units).div_ceil(slots_per_block)
    } else {
        0
    };
    let overhead = u64::from(fp.gc_high_free_blocks) + gc_frontiers + u64::from(ruhs) + buffer;
    let needed = per_die.div_ceil(slots_per_block) + overhead;
    let cap = u64::from(g.blocks_per_plane).saturating_sub(overhead) * slots_per_block;
    (needed, cap)
}

/// Every die must hold its share of user data, the GC reserve, the GC
/// frontier (one per handle when persistently isolated), an open block per
/// handle, and with several groups the write buffer's worth of stale
/// copies.
fn check_spare(
    fp: &FlashParams,
    ruhs: u32,
    isolation: Isolation,
    groups: u32,
) -> std::result::Result<(), String> {
    let (needed, _) = die_budget(fp, ruhs, isolation, groups);
    let gc_frontiers = match isolation {
        Isolation::Initially => 1,
        Isolation::Persistently => ruhs,
    };
    let blocks = fp.geometry.blocks_per_plane;
    if needed > u64::from(blocks) {
        let buffer = if groups > 1 {
            ", the write buffer's stale copies"
        } else {
            ""
        };
        return Err(format!(
            "device.fdp.ruhs = {ruhs}: each handle keeps an open block on every die, and a die \
             then needs {needed} blocks (data, GC reserve, {gc_frontiers} GC frontier(s), \
             {ruhs} handles{buffer}) but has {blocks}; use fewer handles or more \
             over-provisioning"
        ));
    }
    Ok(())
}

impl TranslationLayer for Fdp {
    fn user_bytes(&self) -> u64 {
        self.ftl.user_lpns() * UNIT
    }

    /// The Data Placement directive (DTYPE 2h, DSPEC the placement
    /// identifier): its group and handle take the command's writes; none,
    /// or another directive type, selects handle 0 of group 0.
    fn placement(&mut self, hint: Hint) {
        (self.current_group, self.current) = match hint {
            Hint::Placement(pid) => {
                self.stats.placed_writes += 1;
                match self.parse_pid(pid) {
                    Some((rg, ph)) => (rg, ph as usize),
                    None => {
                        self.stats.invalid_pid += 1;
                        (0, 0)
                    }
                }
            }
            Hint::None | Hint::Lifetime(_) => (0, 0),
        };
    }

    /// The Reclaim Unit Handle Status descriptors' PIDs, in QEMU's order
    /// (nvme_io_mgmt_recv_ruhs: handle by handle, each handle's groups in
    /// turn).
    fn placement_ids(&self) -> Option<Vec<u16>> {
        Some(
            (0..self.ruhs)
                .flat_map(|ph| (0..self.groups).map(move |rg| (rg, ph)))
                .map(|(rg, ph)| self.pid(rg, ph))
                .collect(),
        )
    }

    fn read(&mut self, t: Ns, offset: u64, len: u32) -> ReadDone {
        TranslationLayer::read(&mut self.ftl, t, offset, len)
    }

    fn write(&mut self, t: Ns, offset: u64, len: u32) -> Completion {
        let (lpn, n) = units(offset, len);
        self.stats.host_units[self.current] += u64::from(n);
        self.stats.group_units[self.current_group as usize] += u64::from(n);
        Completion::ok(
            self.ftl
                .write_placed(t, lpn, n, self.current, self.current_group),
        )
    }

    fn trim(&mut self, t: Ns, offset: u64, len: u32) -> Completion {
        TranslationLayer::trim(&mut self.ftl, t, offset, len)
    }

    fn flush(&mut self, t: Ns) -> Ns {
        TranslationLayer::flush(&mut self.ftl, t)
    }

    fn nand(&self) -> &super::nand::Nand {
        self.ftl.nand()
    }

    fn buffer_counters(&self) -> BufferCounters {
        self.ftl.buffer_counters()
    }

    fn counters(&self, out: &mut serde_json::Map<String, serde_json::Value>) {
        self.ftl.counters(out);
        let per_ruh: Vec<serde_json::Value> = (0..self.ruhs as usize)
            .map(|h| {
                let host = self.stats.host_units[h] * UNIT;
                let media = self.handle_media_bytes(h);
                serde_json::json!({
                    "placement_handle": h,
                    "host_bytes": host,
                    "media_bytes": media,
                    "gc_bytes_moved": self.ftl.stream_units()[h].gc_moved * UNIT,
                    "waf": ratio(media, host),
                })
            })
            .collect();
        let k = self.ftl.params().geometry.dies() / self.groups;
        let per_group: Vec<serde_json::Value> = (0..self.groups)
            .map(|rg| {
                let host = self.stats.group_units[rg as usize] * UNIT;
                let (media, erased) = self.group_media_bytes(rg);
                serde_json::json!({
                    "reclaim_group": rg,
                    "dies": [rg * k, (rg + 1) * k - 1],
                    "host_bytes_with_metadata_written": host,
                    "media_bytes_with_metadata_written": media,
                    "media_bytes_erased": erased,
                    "waf": ratio(media, host),
                })
            })
            .collect();
        out.insert(
            "fdp".into(),
            serde_json::json!({
                "reclaim_unit_handles": self.ruhs,
                "ruh_type": self.isolation.ruh_type(),
                "reclaim_groups": self.groups,
                "rgif": self.rgif,
                "reclaim_unit_bytes": self.ru_bytes(),
                "statistics": {
                    "host_bytes_with_metadata_written": self.host_bytes_written(),
                    "media_bytes_with_metadata_written": self.media_bytes_written(),
                    "media_bytes_erased": self.media_bytes_erased(),
                },
                "waf": self.waf(),
                "placed_writes": self.stats.placed_writes,
                "events": { "invalid_placement_identifier": self.stats.invalid_pid },
                "per_handle": per_ruh,
                "gc_bytes_moved_shared": self.ftl.gc_moved_shared() * UNIT,
                "per_group": per_group,
                "spilled_bytes": self.ftl.spilled() * UNIT,
            }),
        );
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small FTL: 2 dies, few blocks, so GC runs within a short test.
    fn small(ruhs: u32) -> Fdp {
        let mut p = FlashParams::small(1, 2, 64, 16);
        p.prefilled = false;
        Fdp::new(FlashDevice::new(&p, 1).unwrap(), ruhs, Isolation::Initially)
    }

    /// Hot data (a small range rewritten over and over) and cold data (a
    /// large range written once) on an empty device: first one cold and
    /// one hot write in turn until the cold range is written, then hot
    /// writes only, as much again as the device holds. `separate`: the hot
    /// writes carry placement handle 1, the cold ones none (handle 0).
    fn hot_cold(separate: bool) -> Fdp {
        let mut f = small(2);
        let user = f.user_bytes() / UNIT;
        let (cold, hot) = (user * 8 / 10, user / 20);
        let hot_hint = if separate {
            Hint::Placement(1)
        } else {
            Hint::None
        };
        let mut t = 0;
        let mut h = 0;
        let mut put = |f: &mut Fdp, hint: Hint, lpn: u64| {
            f.placement(hint);
            t = f.write(t, lpn * UNIT, UNIT as u32).at;
        };
        for c in 0..cold {
            put(&mut f, Hint::None, c);
            put(&mut f, hot_hint, cold + h % hot);
            h += 1;
        }
        for _ in 0..user {
            put(&mut f, hot_hint, cold + h % hot);
            h += 1;
        }
        f
    }

    /// The mechanism FDP exists for. Mixed in one handle, every block
    /// written while the cold range was written holds cold units (about
    /// half of it), which GC must move before it can erase the block; the
    /// device (1.25 x the user space) cannot hold the 2.6 x user space of
    /// writes without erasing them. In two handles the hot handle's blocks
    /// are wholly rewritten before GC needs them (the hot range is 1/20 of
    /// the space) and the cold handle's are never picked: GC erases
    /// without moving anything, WAF is exactly 1 (rows are one unit here,
    /// so there is no padding either).
    #[test]
    fn separating_hot_from_cold_lowers_write_amplification() {
        let mixed = hot_cold(false);
        let separated = hot_cold(true);
        assert_eq!(
            mixed.host_bytes_written(),
            separated.host_bytes_written(),
            "the same host writes"
        );
        assert!(
            mixed.ftl().stats().gc_victims > 0,
            "the mixed run must run GC"
        );
        assert!(
            separated.ftl().stats().gc_victims > 0,
            "the separated run must run GC"
        );
        assert_eq!(separated.ftl().stats().units_programmed_gc, 0);
        assert_eq!(separated.waf(), 1.0);
        assert!(
            mixed.waf() > 1.2,
            "hot and cold mixed in one handle: WAF {} (GC moved {} units)",
            mixed.waf(),
            mixed.ftl().stats().units_programmed_gc
        );
    }

    /// Which blocks hold valid data of both ranges `[0, split)` and
    /// `[split, ..)`: reclaim units mixing two handles' data.
    fn mixed_blocks(f: &Fdp, split: u64) -> usize {
        let ftl = f.ftl();
        let dies = ftl.params().geometry.dies();
        (0..dies)
            .flat_map(|d| (0..ftl.blocks_per_die()).map(move |b| (d, b)))
            .filter(|&(d, b)| {
                let l = ftl.valid_lpns(d, b);
                l.iter().any(|&x| x < split) && l.iter().any(|&x| x >= split)
            })
            .count()
    }

    /// Two handles whose data both get collected: handle 0 rewrites half
    /// of the space at random, handle 1 a fifth of it twice as often, for
    /// six times the device's user space. GC picks victims of both
    /// handles. Initially isolated, what it moves goes to the one shared
    /// GC frontier, so blocks come to hold both handles' data; persistently
    /// isolated, each handle's moved data goes to that handle's own GC
    /// frontier and no block ever holds data of two handles.
    #[test]
    fn persistent_isolation_keeps_moved_data_with_its_handle() {
        let run = |iso: Isolation| {
            let mut p = FlashParams::small(1, 2, 64, 16);
            p.prefilled = false;
            let mut f = Fdp::new(FlashDevice::new(&p, 1).unwrap(), 2, iso);
            let user = f.user_bytes() / UNIT;
            let (a, b) = (user / 2, user / 5);
            // A 64-bit LCG (Knuth's MMIX constants): deterministic offsets.
            let mut x: u64 = 1;
            let mut next = |n: u64| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) % n
            };
            let mut t = 0;
            for i in 0..6 * user {
                let (h, lpn) = if i % 3 == 0 {
                    (0, next(a))
                } else {
                    (1, a + next(b))
                };
                f.placement(Hint::Placement(h));
                t = f.write(t, lpn * UNIT, UNIT as u32).at;
            }
            let mixed = mixed_blocks(&f, a);
            (f, mixed)
        };
        let (initial, mixed_initial) = run(Isolation::Initially);
        let (persistent, mixed_persistent) = run(Isolation::Persistently);
        for f in [&initial, &persistent] {
            assert!(f.ftl().stats().units_programmed_gc > 0, "GC must move data");
        }
        assert_eq!(persistent.ftl().gc_frontiers(), 2);
        assert_eq!(initial.ftl().gc_frontiers(), 1);
        assert!(
            mixed_initial > 0,
            "initially isolated: GC mixes the handles' data"
        );
        assert_eq!(
            mixed_persistent, 0,
            "persistently isolated: no block holds two handles' data"
        );
        let mut out = serde_json::Map::new();
        persistent.counters(&mut out);
        assert_eq!(out["fdp"]["ruh_type"], "persistently isolated");
    }

    /// A placement identifier past the handles goes to handle 0 and counts
    /// the Invalid Placement Identifier event; valid ones count per handle.
    #[test]
    fn invalid_placement_identifier_goes_to_the_default_handle() {
        let mut f = small(4);
        f.placement(Hint::Placement(3));
        f.write(0, 0, 8192);
        f.placement(Hint::Placement(4));
        f.write(0, 8192, 4096);
        f.placement(Hint::None);
        f.write(0, 12288, 4096);
        assert_eq!(f.stats().host_units, vec![2, 0, 0, 2]);
        assert_eq!(f.stats().invalid_pid, 1);
        assert_eq!(f.stats().placed_writes, 2);
        assert_eq!(f.host_bytes_written(), 4 * UNIT);
    }

    /// 4 dies in 2 reclaim groups of 2 (dies 0-1 and 2-3), 2 handles,
    /// empty; the oracle checks every read.
    fn grouped(isolation: Isolation) -> Fdp {
        let mut p = FlashParams::small(2, 2, 128, 16);
        p.prefilled = false;
        Fdp::with_groups(FlashDevice::new(&p, 1).unwrap(), 2, isolation, 2)
    }

    /// A deterministic LCG (Knuth's MMIX constants): offsets below `n`.
    fn lcg(x: &mut u64, n: u64) -> u64 {
        *x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*x >> 33) % n
    }

    /// The LPNs whose data is on each die.
    fn lpns_on(f: &Fdp, die: u32) -> Vec<u64> {
        let ftl = f.ftl();
        (0..ftl.blocks_per_die())
            .flat_map(|b| ftl.valid_lpns(die, b))
            .collect()
    }

    /// Writes through group 0 rewrite the lower half of the space at
    /// random, writes through group 1 the upper half, both handles each,
    /// for four times the device's user space: GC runs on every die. Each
    /// group's dies hold only its half (the data was placed there and GC
    /// moved it within its die), the map audit holds, and every unit reads
    /// back its latest version (the integrity oracle, on).
    #[test]
    fn each_groups_data_stays_on_its_dies_through_gc() {
        for iso in [Isolation::Initially, Isolation::Persistently] {
            let mut f = grouped(iso);
            let user = f.user_bytes() / UNIT;
            let half = user / 2;
            let (mut x, mut t) = (7u64, 0);
            for i in 0..4 * user {
                let rg = (i % 2) as u32;
                let ph = ((i / 2) % 2) as u32;
                let pid = f.pid(rg, ph);
                f.placement(Hint::Placement(pid));
                let lpn = u64::from(rg) * half + lcg(&mut x, half);
                t = f.write(t, lpn * UNIT, UNIT as u32).at;
            }
            t = f.flush(t);
            assert_eq!(f.ftl().spilled(), 0, "{iso:?}: each half fits its group");
            for die in 0..4 {
                let g = u64::from(die / 2);
                let lpns = lpns_on(&f, die);
                assert!(!lpns.is_empty());
                assert!(
                    lpns.iter().all(|&l| l / half == g),
                    "{iso:?}: die {die} of group {g} holds another group's data"
                );
                let u = f.ftl().die_units()[die as usize];
                assert!(u.gc > 0 && u.erases > 0, "{iso:?}: die {die}: GC must run");
            }
            f.ftl().audit().unwrap();
            for l in 0..user {
                f.ftl.read(t, l, 1);
            }
            let written: usize = (0..4).map(|d| lpns_on(&f, d).len()).sum();
            assert_eq!(f.ftl().stats().integrity_checks, written as u64);
        }
    }

    /// An LPN written through one group and then through the other moves:
    /// its data leaves the first group's dies (even while the first copy
    /// is still in the write buffer), trims and reads follow it, and each
    /// die's count of LPNs it holds matches its blocks.
    #[test]
    fn rewriting_through_another_group_moves_the_data() {
        let mut f = grouped(Isolation::Initially);
        let mut t = 0;
        let pids = [f.pid(0, 0), f.pid(1, 1)];
        // 0..200 through group 0, then 100..200 through group 1 twice
        // (the second time while the first copies may be buffered).
        for (rg, range) in [(0, 0..200u64), (1, 100..200), (1, 100..200)] {
            for l in range {
                f.placement(Hint::Placement(pids[rg]));
                t = f.write(t, l * UNIT, UNIT as u32).at;
            }
        }
        f.placement(Hint::Placement(pids[0]));
        t = f.write(t, 150 * UNIT, UNIT as u32).at;
        f.trim(t, 199 * UNIT, UNIT as u32);
        t = f.flush(t);
        let mut on: Vec<(u32, u64)> = (0..4)
            .flat_map(|d| lpns_on(&f, d).into_iter().map(move |l| (d, l)))
            .collect();
        on.sort_by_key(|&(_, l)| l);
        assert_eq!(on.len(), 199, "every LPN once, 199 trimmed");
        for &(d, l) in &on {
            let want_group = u32::from((100..199).contains(&l) && l != 150);
            assert_eq!(d / 2, want_group, "lpn {l} on die {d}");
        }
        let claimed = f.ftl().claimed();
        for d in 0..4 {
            assert_eq!(claimed[d as usize], lpns_on(&f, d).len() as u64, "die {d}");
        }
        f.ftl().audit().unwrap();
        for l in 0..200 {
            f.ftl.read(t, l, 1);
        }
        assert_eq!(f.ftl().stats().integrity_checks, 199);
    }

    /// Every write through group 0 of 2: the group cannot hold the whole
    /// space, so once its dies are at their share the rest goes to group
    /// 1's dies (spilled, counted), no die goes past its cap, GC keeps
    /// working and every unit reads back.
    #[test]
    fn a_full_group_spills_to_the_others() {
        let mut f = grouped(Isolation::Initially);
        let user = f.user_bytes() / UNIT;
        let (mut x, mut t) = (3u64, 0);
        let pid = f.pid(0, 1);
        for l in 0..user {
            f.placement(Hint::Placement(pid));
            t = f.write(t, l * UNIT, UNIT as u32).at;
        }
        for _ in 0..2 * user {
            f.placement(Hint::Placement(pid));
            t = f.write(t, lcg(&mut x, user) * UNIT, UNIT as u32).at;
        }
        t = f.flush(t);
        assert!(f.ftl().spilled() > 0);
        let (_, cap) = die_budget(f.ftl().params(), 2, Isolation::Initially, 2);
        let on: Vec<u64> = (0..4).map(|d| lpns_on(&f, d).len() as u64).collect();
        assert_eq!(on.iter().sum::<u64>(), user);
        assert!(on.iter().all(|&n| n <= cap), "{on:?} > {cap}");
        assert!(on[0] + on[1] > on[2] + on[3], "group 0 holds the most");
        f.ftl().audit().unwrap();
        for l in 0..user {
            f.ftl.read(t, l, 1);
        }
        assert_eq!(f.ftl().stats().integrity_checks, user);
    }

    /// Placement identifiers with reclaim groups: the group in the upper
    /// RGIF bits (RGIF = 2 for 3 groups), the handle below; a group or a
    /// handle the namespace lacks is the Invalid Placement Identifier event
    /// and goes to handle 0 of group 0; the RUH status lists handle by
    /// handle, groups within.
    #[test]
    fn placement_identifiers_carry_the_group_in_the_upper_bits() {
        let mut p = FlashParams::small(3, 2, 64, 16);
        p.prefilled = false;
        let mut f = Fdp::with_groups(FlashDevice::new(&p, 1).unwrap(), 2, Isolation::Initially, 3);
        assert_eq!(f.rgif, 2);
        assert_eq!(f.pid(2, 1), 0x8001);
        assert_eq!(f.parse_pid(0x8001), Some((2, 1)));
        assert_eq!(f.parse_pid(0x4000), Some((1, 0)));
        assert_eq!(f.parse_pid(0xC000), None, "group 3 of 3");
        assert_eq!(f.parse_pid(0x0002), None, "handle 2 of 2");
        assert_eq!(
            f.placement_ids().unwrap(),
            vec![0x0000, 0x4000, 0x8000, 0x0001, 0x4001, 0x8001]
        );
        for (pid, lpn) in [(0x8001, 0), (0xC000, 1), (0x0002, 2), (0x4000, 3)] {
            f.placement(Hint::Placement(pid));
            f.write(0, lpn * UNIT, UNIT as u32);
        }
        assert_eq!(f.stats().invalid_pid, 2);
        assert_eq!(f.stats().group_units, vec![2, 1, 1]);
        assert_eq!(f.stats().host_units, vec![3, 1]);
        assert_eq!(rgif(1), 0);
        assert_eq!(rgif(2), 1);
        assert_eq!(rgif(4), 2);
        assert_eq!(rgif(5), 3);
    }

    /// The per-group and per-handle media bytes add up to the statistics
    /// log's: groups by their dies, handles plus what GC moved out of its
    /// own (shared) blocks. Persistently isolated, nothing is shared and a
    /// handle's media bytes are its host data, its padding and its own
    /// data moved.
    #[test]
    fn per_group_and_per_handle_bytes_add_up_to_the_log() {
        for iso in [Isolation::Initially, Isolation::Persistently] {
            let mut f = grouped(iso);
            let user = f.user_bytes() / UNIT;
            let (mut x, mut t) = (11u64, 0);
            for i in 0..3 * user {
                let ph = u32::from(i % 3 == 0);
                let pid = f.pid((i % 2) as u32, ph);
                f.placement(Hint::Placement(pid));
                // Handle 1 rewrites a small range: hot; handle 0 all of it.
                let lpn = if ph == 1 {
                    lcg(&mut x, user / 10)
                } else {
                    lcg(&mut x, user)
                };
                t = f.write(t, lpn * UNIT, UNIT as u32).at;
            }
            f.flush(t);
            let mut out = serde_json::Map::new();
            f.counters(&mut out);
            let j = &out["fdp"];
            let total = j["statistics"]["media_bytes_with_metadata_written"]
                .as_u64()
                .unwrap();
            let erased = j["statistics"]["media_bytes_erased"].as_u64().unwrap();
            let sum = |k: &str, key: &str| -> u64 {
                j[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x[key].as_u64().unwrap())
                    .sum()
            };
            assert_eq!(sum("per_group", "media_bytes_with_metadata_written"), total);
            assert_eq!(sum("per_group", "media_bytes_erased"), erased);
            assert_eq!(
                sum("per_group", "host_bytes_with_metadata_written"),
                f.host_bytes_written()
            );
            let shared = j["gc_bytes_moved_shared"].as_u64().unwrap();
            assert_eq!(sum("per_handle", "media_bytes") + shared, total, "{iso:?}");
            assert_eq!(sum("per_handle", "host_bytes"), f.host_bytes_written());
            assert!(f.ftl().stats().units_programmed_gc > 0, "{iso:?}: GC ran");
            match iso {
                Isolation::Initially => assert!(shared > 0),
                Isolation::Persistently => {
                    assert_eq!(shared, 0);
                    assert_eq!(
                        sum("per_handle", "gc_bytes_moved"),
                        f.ftl().stats().units_programmed_gc * UNIT
                    );
                }
            }
            assert_eq!(j["reclaim_groups"], 2);
            assert_eq!(j["per_group"][1]["dies"], serde_json::json!([2, 3]));
            assert_eq!(j["reclaim_unit_bytes"], 2 * 16 * 4096);
        }
    }
}
