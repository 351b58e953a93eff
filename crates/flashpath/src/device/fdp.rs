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
//! - **Reclaim groups and reclaim units.** One reclaim group holding every
//!   die (so the Placement Identifier's reclaim group field has no bits and
//!   the identifier is the placement handle). A reclaim unit is one
//!   multi-plane erase block on each die: the FTL stripes logical pages
//!   over the dies statically, so a handle's current reclaim unit is its
//!   open block on every die, and its size is dies x block bytes.
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
//!   handle the namespace does not have is not an error: the data goes to
//!   placement handle 0 and an "Invalid Placement Identifier" event is
//!   logged (QEMU's nvme_do_write_fdp and FDP event type 03h, as the FDP
//!   events log page 23h lists it); the event count is in the JSON.
//! - **Statistics.** The FDP Statistics log page (22h): Host Bytes with
//!   Metadata Written (bytes the host wrote, counted at arrival), Media
//!   Bytes with Metadata Written (units programmed for the host, moved by
//!   GC, and the padding of partial rows, which is programmed media too),
//!   Media Bytes Erased; their ratio is the write amplification.
//!
//! What it leaves out: I/O Management Send (Reclaim Unit Handle Update) and
//! so the "Reclaim Unit Not Fully Written" event; reclaim unit time limits;
//! several reclaim groups; GC that picks whole reclaim units across dies
//! (the page FTL reclaims per die, so a reclaim unit's blocks are freed
//! die by die).

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
    }
}

/// What the layer counts beyond the page FTL's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FdpStats {
    /// Host units written through each reclaim unit handle.
    pub host_units: Vec<u64>,
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
    /// The handle the command being decoded selected.
    current: usize,
    stats: FdpStats,
}

impl Fdp {
    /// `ruhs` reclaim unit handles of type `isolation` over the page FTL
    /// `ftl`.
    pub fn new(mut ftl: FlashDevice, ruhs: u32, isolation: Isolation) -> Fdp {
        ftl.set_streams(ruhs as usize);
        if isolation == Isolation::Persistently {
            ftl.set_gc_per_stream();
        }
        Fdp {
            ftl,
            ruhs,
            isolation,
            current: 0,
            stats: FdpStats {
                host_units: vec![0; ruhs as usize],
                ..FdpStats::default()
            },
        }
    }

    /// `device.fdp.*` over the page FTL of `device.flash.*` (preconditioned
    /// as the profile says: that data is in handle 0's blocks).
    pub fn from_profile(p: &Profile, seed: u64) -> Result<Fdp> {
        let k = FdpKeys::read(p)?;
        let fp = FlashParams::from_profile(p)?;
        check_spare(&fp, k.ruhs, k.isolation)
            .map_err(|m| InputError::new(p.file_of("device.fdp.ruhs"), None, m))?;
        let mut ftl = flash_device_from_profile(p, seed)?;
        ftl.load_whole_map();
        Ok(Fdp::new(ftl, k.ruhs, k.isolation))
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

    /// Bytes of one reclaim unit: an erase block on every die.
    pub fn ru_bytes(&self) -> u64 {
        u64::from(self.ftl.params().geometry.dies()) * self.block_bytes()
    }
}

/// Every die must hold its share of user data, the GC reserve, the GC
/// frontier (one per handle when persistently isolated) and an open block
/// per handle.
fn check_spare(
    fp: &FlashParams,
    ruhs: u32,
    isolation: Isolation,
) -> std::result::Result<(), String> {
    let g = fp.geometry;
    let slots_per_block =
        u64::from(g.pages_per_block) * u64::from(g.planes_per_die) * u64::from(fp.units_per_page());
    let per_die = fp.user_units().div_ceil(u64::from(g.dies()));
    let gc_frontiers = match isolation {
        Isolation::Initially => 1,
        Isolation::Persistently => u64::from(ruhs),
    };
    let needed = per_die.div_ceil(slots_per_block)
        + u64::from(fp.gc_high_free_blocks)
        + gc_frontiers
        + u64::from(ruhs);
    if needed > u64::from(g.blocks_per_plane) {
        return Err(format!(
            "device.fdp.ruhs = {ruhs}: each handle keeps an open block on every die, and a die \
             then needs {needed} blocks (data, GC reserve, {gc_frontiers} GC frontier(s), \
             {ruhs} handles) but has {}; use fewer handles or more over-provisioning",
            g.blocks_per_plane
        ));
    }
    Ok(())
}

impl TranslationLayer for Fdp {
    fn user_bytes(&self) -> u64 {
        self.ftl.user_lpns() * UNIT
    }

    /// The Data Placement directive (DTYPE 2h, DSPEC the placement
    /// identifier): its handle takes the command's writes; none, or
    /// another directive type, selects handle 0.
    fn placement(&mut self, hint: Hint) {
        self.current = match hint {
            Hint::Placement(pid) => {
                self.stats.placed_writes += 1;
                if u32::from(pid) < self.ruhs {
                    usize::from(pid)
                } else {
                    self.stats.invalid_pid += 1;
                    0
                }
            }
            Hint::None | Hint::Lifetime(_) => 0,
        };
    }

    /// One reclaim group: the placement identifier is the handle.
    fn placement_ids(&self) -> Option<Vec<u16>> {
        Some((0..self.ruhs as u16).collect())
    }

    fn read(&mut self, t: Ns, offset: u64, len: u32) -> ReadDone {
        TranslationLayer::read(&mut self.ftl, t, offset, len)
    }

    fn write(&mut self, t: Ns, offset: u64, len: u32) -> Completion {
        let (lpn, n) = units(offset, len);
        self.stats.host_units[self.current] += u64::from(n);
        Completion::ok(self.ftl.write_stream(t, lpn, n, self.current))
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
        let per_ruh: Vec<serde_json::Value> = self
            .stats
            .host_units
            .iter()
            .enumerate()
            .map(|(h, &u)| serde_json::json!({ "placement_handle": h, "host_bytes": u * UNIT }))
            .collect();
        out.insert(
            "fdp".into(),
            serde_json::json!({
                "reclaim_unit_handles": self.ruhs,
                "ruh_type": self.isolation.ruh_type(),
                "reclaim_groups": 1,
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
}
