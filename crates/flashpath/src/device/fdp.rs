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
//! - **Isolation.** Initially isolated handles: the device's own garbage
//!   collection still runs (greedy or cost-benefit victims, per die, as
//!   the page FTL's), and the valid data it moves from any handle's blocks
//!   goes to one shared GC frontier, so data of different handles may mix
//!   after a move (the spec's "initially isolated" type; persistently
//!   isolated handles, which keep moved data with its handle, are not
//!   modelled).
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
    /// The handle the command being decoded selected.
    current: usize,
    stats: FdpStats,
}

impl Fdp {
    /// `ruhs` reclaim unit handles over the page FTL `ftl`.
    pub fn new(mut ftl: FlashDevice, ruhs: u32) -> Fdp {
        ftl.set_streams(ruhs as usize);
        Fdp {
            ftl,
            ruhs,
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
        check_spare(&fp, k.ruhs)
            .map_err(|m| InputError::new(p.file_of("device.fdp.ruhs"), None, m))?;
        let mut ftl = flash_device_from_profile(p, seed)?;
        ftl.load_whole_map();
        Ok(Fdp::new(ftl, k.ruhs))
    }

    pub fn ftl(&self) -> &FlashDevice {
        &self.ftl
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
/// frontier and an open block per handle.
fn check_spare(fp: &FlashParams, ruhs: u32) -> std::result::Result<(), String> {
    let g = fp.geometry;
    let slots_per_block =
        u64::from(g.pages_per_block) * u64::from(g.planes_per_die) * u64::from(fp.units_per_page());
    let per_die = fp.user_units().div_ceil(u64::from(g.dies()));
    let needed =
        per_die.div_ceil(slots_per_block) + u64::from(fp.gc_high_free_blocks) + 1 + u64::from(ruhs);
    if needed > u64::from(g.blocks_per_plane) {
        return Err(format!(
            "device.fdp.ruhs = {ruhs}: each handle keeps an open block on every die, and a die \
             then needs {needed} blocks (data, GC reserve, GC frontier, {ruhs} handles) but has \
             {}; use fewer handles or more over-provisioning",
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
                "ruh_type": "initially isolated",
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
        Fdp::new(FlashDevice::new(&p, 1).unwrap(), ruhs)
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
