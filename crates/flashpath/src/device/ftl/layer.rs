//! The translation layer seam: what a flash front end (the NVMe
//! controller of [`crate::device::nvme_flash`]) asks of the layer between
//! the host's logical blocks and NAND. The conventional page-mapping FTL
//! ([`FlashDevice`]) is one implementation; a zoned namespace
//! ([`crate::device::zns::Zns`]) is another. MQSim draws the same line
//! (its `NVM_Firmware` holds an `Address_Mapping_Unit` the host interface
//! never sees).
//!
//! The profile chooses the layer with `device.flash.layer`
//! ([`layer_from_profile`]); adding one is a file of its own implementing
//! [`TranslationLayer`], a variant of [`LayerKind`] and one arm in
//! [`layer_from_profile`], and its own `params!` list.
//!
//! A layer is a booking model as every device here: each call reserves the
//! NAND's time from `t` and returns when the work is done. The front end
//! keeps what is the controller's (command slots, cores, MDTS, DMA, DRAM).

use std::any::Any;

use super::super::flash::flash_device_from_profile;
use super::super::{Completion, Hint, Op, Status, ZoneAction, UNIT};
use super::FlashDevice;
use crate::error::Result;
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

    /// The write buffer's counters.
    fn buffer_counters(&self) -> BufferCounters;

    /// The layer's own sections of the run's JSON (`ftl`, `gc`, `nand`
    /// for the page FTL).
    fn counters(&self, out: &mut serde_json::Map<String, serde_json::Value>);

    /// The concrete layer, for tests and reports that need its own view.
    fn as_any(&self) -> &dyn Any;
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
/// own keys. The page FTL is preconditioned as the profile says, and a map
/// cache that holds the whole map starts full (the controller loads the
/// map from NAND at power-on, before the first command).
pub fn layer_from_profile(p: &Profile, seed: u64) -> Result<Box<dyn TranslationLayer>> {
    match LayerParams::read(p)?.layer.unwrap_or(LayerKind::Page) {
        LayerKind::Page => {
            let mut ftl = flash_device_from_profile(p, seed)?;
            ftl.load_whole_map();
            Ok(Box::new(ftl))
        }
        LayerKind::Zns => Ok(Box::new(super::super::zns::Zns::from_profile(p)?)),
        LayerKind::Fdp => Ok(Box::new(super::super::fdp::Fdp::from_profile(p, seed)?)),
    }
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

/// First 4 KiB unit and the number of units of a byte range.
#[inline]
pub fn units(offset: u64, len: u32) -> (u64, u32) {
    (offset / UNIT, u64::from(len).div_ceil(UNIT) as u32)
}
