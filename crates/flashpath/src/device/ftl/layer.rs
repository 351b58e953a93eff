//! The translation layer seam: what every flash front end (the NVMe
//! controller of [`crate::device::nvme_flash`], the UFS device of
//! [`crate::device::ufs`], the eMMC card of [`crate::device::emmc`], the
//! flash-backed SD card of [`crate::device::sd`]) asks of the layer
//! between the host's logical blocks and NAND. The conventional
//! page-mapping FTL ([`FlashDevice`]) is one implementation; a zoned
//! namespace ([`crate::device::zns::Zns`]) is another. MQSim draws the same
//! line (its `NVM_Firmware` holds an `Address_Mapping_Unit` the host
//! interface never sees).
//!
//! The profile chooses the layer with `device.flash.layer`
//! ([`layer_from_profile`]); adding one is a file of its own implementing
//! [`TranslationLayer`], a variant of [`LayerKind`] and one arm in
//! [`layer_from_profile`], and its own `params!` list. Every front end
//! builds its layer there, so a new layer is behind all of them at once
//! (a zoned one only behind the front ends whose command set has zones:
//! [`FrontEnd::has_zones`]).
//!
//! Beyond commands, one front end needs more of a page-mapped layer: the
//! UFS device's map-cache miss path and its HPB device side look at the
//! L2P map itself. That is the narrow [`MappedLayer`] capability a layer
//! may offer ([`TranslationLayer::mapped`]); a zoned layer offers none.
//!
//! A layer is a booking model as every device here: each call reserves the
//! NAND's time from `t` and returns when the work is done. The front end
//! keeps what is the controller's (command slots, cores, MDTS, DMA, DRAM).

use std::any::Any;

use super::super::flash::{flash_device_from_profile, FlashParams};
use super::super::nand::Nand;
use super::super::zns::{Zns, ZoneRules};
use super::super::{Completion, Hint, Op, Status, ZoneAction, UNIT};
use super::{FactoryLayout, FlashDevice, Ppn};
use crate::error::{InputError, Result};
use crate::profile::Profile;
use crate::sim::Ns;

/// What the layer's write buffer did, for the data cache's JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferCounters {
    /// Writes that overwrote a unit still in the buffer.
    pub coalesced: u64,
    /// Time host writes waited for buffer space.
    pub write_stall_ns: u64,
}

/// A read's answer: the completion, and how many 4 KiB units came from the
/// layer's write buffer (the front end serves those from its DRAM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadDone {
    pub done: Completion,
    pub buffer_hits: u64,
}

/// The zones a zoned layer exposes, as Identify Namespace (ZNS) and the
/// zone report give them; the host's queue limits follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneGeometry {
    /// Zone Size (ZSZE) in bytes: the LBA distance between zone starts.
    pub zone_bytes: u64,
    /// Zone Capacity (ZCAP) in bytes: the writable part of each zone.
    pub capacity_bytes: u64,
    pub zones: u32,
    /// Zones at the start of the LU without a write pointer (SCSI ZBC's
    /// conventional zones; an NVMe ZNS namespace has none).
    pub conventional: u32,
    /// Maximum Open Resources and Maximum Active Resources (MOR + 1,
    /// MAR + 1 of Identify Namespace; 0: no limit).
    pub max_open: u32,
    pub max_active: u32,
    /// Zone Append Size Limit (ZASL) in bytes.
    pub append_max_bytes: u64,
}

/// The layer between a flash front end and NAND.
pub trait TranslationLayer {
    /// Bytes the host can address (the namespace's size).
    fn user_bytes(&self) -> u64;

    /// The command's rules before the controller moves its data (a zoned
    /// layer fails a write off its zone's write pointer here, so no data
    /// is fetched for it). The conventional FTL takes everything.
    fn admit(&mut self, _op: Op, _offset: u64, _len: u32) -> Status {
        Status::Ok
    }

    /// The data placement directive of the command being decoded (an
    /// NVMe write's DTYPE and DSPEC, [`Hint`]), given before its writes: a
    /// placement-aware layer (NVMe FDP, [`crate::device::fdp`]) places
    /// them by it; the others ignore it.
    fn placement(&mut self, _hint: Hint) {}

    /// Read `len` bytes at `offset` from `t`.
    fn read(&mut self, t: Ns, offset: u64, len: u32) -> ReadDone;

    /// Write `len` bytes at `offset`, whose data is in the controller from
    /// `t`: when the layer has taken it.
    fn write(&mut self, t: Ns, offset: u64, len: u32) -> Completion;

    /// Deallocate the range.
    fn trim(&mut self, t: Ns, offset: u64, len: u32) -> Completion;

    /// Everything the layer buffers is on NAND: when.
    fn flush(&mut self, t: Ns) -> Ns;

    /// A zone management command on the zone holding `offset` (`all`: on
    /// every zone, the Select All bit). A conventional layer has no zones.
    fn zone_mgmt(&mut self, t: Ns, _action: ZoneAction, _offset: u64, _all: bool) -> Completion {
        Completion::unsupported(t)
    }

    /// Zone Append of `len` bytes to the zone starting at `offset`, data
    /// in the controller from `t`; the completion's result is the byte
    /// offset the data landed at.
    fn append(&mut self, t: Ns, _offset: u64, _len: u32) -> Completion {
        Completion::unsupported(t)
    }

    /// The placement identifiers the layer takes (Reclaim Unit Handle
    /// Status), for a placement-aware layer.
    fn placement_ids(&self) -> Option<Vec<u16>> {
        None
    }

    /// The zone geometry, for a zoned layer.
    fn zones(&self) -> Option<ZoneGeometry> {
        None
    }

    /// The write pointer of the zone holding `offset` (the zone report's;
    /// `None` for a conventional zone or a layer without zones).
    fn write_pointer(&self, _offset: u64) -> Option<u64> {
        None
    }

    /// The L2P map view, for a page-mapped layer (see [`MappedLayer`]).
    fn mapped(&self) -> Option<&dyn MappedLayer> {
        None
    }

    /// The same, to read through it.
    fn mapped_mut(&mut self) -> Option<&mut dyn MappedLayer> {
        None
    }

    /// The NAND under the layer (its channels' transfer time is the
    /// front end's too: the eMMC card moves received write data over one).
    fn nand(&self) -> &Nand;

    /// The write buffer's counters.
    fn buffer_counters(&self) -> BufferCounters;

    /// The layer's own sections of the run's JSON (`ftl`, `gc`, `nand`
    /// for the page FTL).
    fn counters(&self, out: &mut serde_json::Map<String, serde_json::Value>);

    /// The concrete layer, for tests and reports that need its own view.
    fn as_any(&self) -> &dyn Any;
}

/// How a read through the L2P map starts ([`MappedLayer::read_or_miss`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadStart {
    /// The entry was in the map cache: the data is read by `at`.
    Done(Ns),
    /// Map-cache miss: the map page is in by `map_ready`; the data read is
    /// issued then ([`MappedLayer::read_units`]), so the die sees reads in
    /// time order.
    MapMiss { map_ready: Ns },
}

/// What a page-mapped layer offers beyond commands: its L2P map, cached in
/// controller SRAM by map pages, and reads by 4 KiB unit (LPN). The UFS
/// device's map-cache miss path and HPB (JESD220-3: the host caches L2P
/// entries and sends the PPN with an HPB READ; READ BUFFER fetches a
/// sub-region's entries) use it.
pub trait MappedLayer {
    /// Units (LPNs) the host can address.
    fn user_lpns(&self) -> u64;

    /// A read of `n` units from `lpn` decoded at `t` that stops at a
    /// map-cache miss: then only the map page is read.
    fn read_or_miss(&mut self, t: Ns, lpn: u64, n: u32) -> ReadStart;

    /// A read of `n` units from `lpn` at `t` (the data read after a map
    /// page arrived).
    fn read_units(&mut self, t: Ns, lpn: u64, n: u32) -> Ns;

    /// An HPB READ of `lpn` with the host's `ppn` at `t`: skips the map
    /// lookup when the PPN is current. Returns (done, PPN was current).
    fn read_with_ppn(&mut self, t: Ns, lpn: u64, ppn: Ppn) -> (Ns, bool);

    /// The map pages holding entries `start .. start + n` read into the
    /// map cache from `t` (READ BUFFER): when they are in.
    fn read_map_pages(&mut self, t: Ns, start: u64, n: u64) -> Ns;

    /// The factory layout of a prefilled device, as a rule.
    fn factory_layout(&self) -> Option<FactoryLayout>;

    /// Whether entries `start .. start + n` all still follow the factory
    /// layout.
    fn run_is_factory(&self, start: u64, n: u64) -> bool;

    /// The current PPNs of `start .. start + out.len()` (no timing).
    fn ppns_into(&self, start: u64, out: &mut [Ppn]);
}

/// The front end a layer is built for: its command set decides whether a
/// zoned layer fits behind it and with which zone rules, and each starts
/// its FTL as it always has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontEnd {
    Nvme,
    Ufs,
    Emmc,
    Sd,
}

impl FrontEnd {
    /// The zone rules of the front end's command set: NVMe ZNS, SCSI
    /// ZBC-2 (Zoned Storage for UFS, JESD220-5). The eMMC (JESD84-B51) and
    /// SD (Physical Layer 6.00) command sets have no zone commands and the
    /// mmc block driver registers no zoned disk (drivers/mmc/core/block.c
    /// sets no zoned model), so a zoned layer is refused behind them.
    pub fn zone_rules(self) -> Option<ZoneRules> {
        match self {
            FrontEnd::Nvme => Some(ZoneRules::Zns),
            FrontEnd::Ufs => Some(ZoneRules::Zbc),
            FrontEnd::Emmc | FrontEnd::Sd => None,
        }
    }

    /// Whether the front end takes a zoned layer.
    pub fn has_zones(self) -> bool {
        self.zone_rules().is_some()
    }

    fn name(self) -> &'static str {
        match self {
            FrontEnd::Nvme => "an NVMe controller",
            FrontEnd::Ufs => "a UFS device",
            FrontEnd::Emmc => "an eMMC card",
            FrontEnd::Sd => "an SD card",
        }
    }

    /// How the page FTL starts: preconditioned with
    /// `device.flash.precondition_random_overwrites` (NVMe, UFS; the cards
    /// start fresh, as their profiles have always had them, and read no
    /// such key), and with a map cache that holds the whole map loaded at
    /// power-on (NVMe; UFS starts with it cold, as its goldens were made).
    fn page_start(self) -> (bool, bool) {
        match self {
            FrontEnd::Nvme => (true, true),
            FrontEnd::Ufs => (true, false),
            FrontEnd::Emmc | FrontEnd::Sd => (false, false),
        }
    }
}

crate::choice_enum! {
    /// The translation layer of a flash device, `device.flash.layer`.
    pub enum LayerKind {
        /// The conventional page-mapping FTL with its map cache, write
        /// buffer and garbage collection.
        Page = "page",
        /// Zones of erase blocks written at their write pointers, no
        /// device-side GC ([`crate::device::zns`]): an NVMe Zoned
        /// Namespace behind the NVMe front end, a host-managed SCSI ZBC
        /// logical unit (zoned UFS) behind the UFS one.
        Zns = "zns",
        /// The page FTL with reclaim unit handles chosen by each write's
        /// placement identifier ([`crate::device::fdp`]): NVMe Flexible
        /// Data Placement.
        Fdp = "fdp",
    }
}

crate::params! {
    /// Which translation layer sits between the front end and NAND.
    pub struct LayerParams {
        /// The translation layer (absent: the page-mapping FTL).
        pub layer: Option<LayerKind> = optional choice("device.flash.layer", LayerKind),
    }
}

/// The translation layer a profile's `device.flash.layer` names, from its
/// own keys, behind the front end `front`. The page FTL starts as
/// [`FrontEnd`] says (preconditioned as the profile says; for NVMe a map
/// cache that holds the whole map starts full: the controller loads the
/// map from NAND at power-on, before the first command). A zoned layer
/// behind a front end without zone commands is refused by name.
pub fn layer_from_profile(
    p: &Profile,
    seed: u64,
    front: FrontEnd,
) -> Result<Box<dyn TranslationLayer>> {
    let kind = LayerParams::read(p)?.layer.unwrap_or(LayerKind::Page);
    let layer: Box<dyn TranslationLayer> = match kind {
        LayerKind::Page => {
            let (precondition, load_map) = front.page_start();
            let mut ftl = if precondition {
                flash_device_from_profile(p, seed)?
            } else {
                FlashDevice::new(&FlashParams::from_profile(p)?, seed)?
            };
            if load_map {
                ftl.load_whole_map();
            }
            Box::new(ftl)
        }
        LayerKind::Zns => match front.zone_rules() {
            Some(rules) => Box::new(Zns::from_profile_as(p, rules)?),
            None => return Err(refuse_zoned(p, kind, front)),
        },
        // Placement handles are an NVMe directive (TP4146, directive type
        // 2): no other front end's command set carries one.
        LayerKind::Fdp if front == FrontEnd::Nvme => {
            Box::new(super::super::fdp::Fdp::from_profile(p, seed)?)
        }
        LayerKind::Fdp => {
            return Err(InputError::new(
                p.file_of("device.flash.layer"),
                None,
                format!(
                    "device.flash.layer = \"fdp\" behind {}: Flexible Data Placement is an NVMe \
                     feature (placement handles travel in the write's directive, NVMe TP4146); \
                     use the page FTL (device.flash.layer = \"page\")",
                    front.name()
                ),
            ))
        }
    };
    if layer.zones().is_some() && !front.has_zones() {
        return Err(refuse_zoned(p, kind, front));
    }
    Ok(layer)
}

/// A zoned layer named behind a front end whose command set has no zones.
fn refuse_zoned(p: &Profile, kind: LayerKind, front: FrontEnd) -> InputError {
    InputError::new(
        p.file_of("device.flash.layer"),
        None,
        format!(
            "device.flash.layer = \"{}\" is a zoned layer, and {} has no zone commands (its \
             command set has no zone management and the mmc block driver registers no zoned \
             disk): use the page FTL (device.flash.layer = \"page\") or an NVMe or UFS device",
            kind.name(),
            front.name()
        ),
    )
}

/// The conventional page-mapping FTL as a translation layer.
impl TranslationLayer for FlashDevice {
    fn user_bytes(&self) -> u64 {
        self.user_lpns() * UNIT
    }

    #[inline]
    fn read(&mut self, t: Ns, offset: u64, len: u32) -> ReadDone {
        let (lpn, n) = units(offset, len);
        let hits = self.stats().buffer_read_hits;
        let at = FlashDevice::read(self, t, lpn, n);
        ReadDone {
            done: Completion::ok(at),
            buffer_hits: self.stats().buffer_read_hits - hits,
        }
    }

    #[inline]
    fn write(&mut self, t: Ns, offset: u64, len: u32) -> Completion {
        let (lpn, n) = units(offset, len);
        Completion::ok(FlashDevice::write(self, t, lpn, n))
    }

    fn trim(&mut self, t: Ns, offset: u64, len: u32) -> Completion {
        let (lpn, n) = units(offset, len);
        Completion::ok(FlashDevice::trim(self, t, lpn, n))
    }

    fn flush(&mut self, t: Ns) -> Ns {
        FlashDevice::flush(self, t)
    }

    fn mapped(&self) -> Option<&dyn MappedLayer> {
        Some(self)
    }

    #[inline]
    fn mapped_mut(&mut self) -> Option<&mut dyn MappedLayer> {
        Some(self)
    }

    fn nand(&self) -> &Nand {
        FlashDevice::nand(self)
    }

    fn buffer_counters(&self) -> BufferCounters {
        let f = self.stats();
        BufferCounters {
            coalesced: f.buffer_coalesced,
            write_stall_ns: f.write_stall_ns,
        }
    }

    fn counters(&self, out: &mut serde_json::Map<String, serde_json::Value>) {
        let f = self.stats();
        out.insert("ftl".into(), self.ftl_counters());
        out.insert(
            "gc".into(),
            serde_json::json!({
                "runs": f.gc_runs,
                "victims": f.gc_victims,
                "units_programmed_host": f.units_programmed_host,
                "units_programmed_gc": f.units_programmed_gc,
                "units_padded": f.units_padded,
                "erases": f.nand_erases,
            }),
        );
        out.insert("nand".into(), self.nand_counters(UNIT));
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The page FTL's map, as the UFS device's map-miss path and HPB use it.
impl MappedLayer for FlashDevice {
    fn user_lpns(&self) -> u64 {
        FlashDevice::user_lpns(self)
    }

    #[inline]
    fn read_or_miss(&mut self, t: Ns, lpn: u64, n: u32) -> ReadStart {
        let mp = self.map_page_of(lpn);
        if !self.map_page_cached(mp).0 {
            return ReadStart::MapMiss {
                map_ready: self.read_map_page(t, mp),
            };
        }
        ReadStart::Done(FlashDevice::read(self, t, lpn, n))
    }

    fn read_units(&mut self, t: Ns, lpn: u64, n: u32) -> Ns {
        FlashDevice::read(self, t, lpn, n)
    }

    fn read_with_ppn(&mut self, t: Ns, lpn: u64, ppn: Ppn) -> (Ns, bool) {
        FlashDevice::read_with_ppn(self, t, lpn, ppn)
    }

    fn read_map_pages(&mut self, t: Ns, start: u64, n: u64) -> Ns {
        let mut ready = t;
        if n > 0 {
            let first = self.map_page_of(start);
            let last = self.map_page_of(start + n - 1);
            for mp in first..=last {
                ready = ready.max(self.read_map_page(t, mp));
            }
        }
        ready
    }

    fn factory_layout(&self) -> Option<FactoryLayout> {
        FlashDevice::factory_layout(self)
    }

    fn run_is_factory(&self, start: u64, n: u64) -> bool {
        FlashDevice::run_is_factory(self, start, n)
    }

    fn ppns_into(&self, start: u64, out: &mut [Ppn]) {
        FlashDevice::ppns_into(self, start, out)
    }
}

/// First 4 KiB unit and the number of units of a byte range.
#[inline]
pub fn units(offset: u64, len: u32) -> (u64, u32) {
    (offset / UNIT, u64::from(len).div_ceil(UNIT) as u32)
}
