//! The UFS device behind ufshcd: its firmware's controller core, which
//! decodes one COMMAND UPIU at a time (`ufs.device.fw_cmd` each), the FTL
//! and NAND behind it, and the HPB device side ([`hpb`]). The host
//! controller and the UniPro link are the driver's
//! ([`crate::driver::ufs`], [`crate::link::ufs`]): the driver moves the
//! UPIUs, the device says when it has done the work each one asks for.
//!
//! A normal read looks its L2P entry up in the map cache; on a miss the
//! firmware reads the map page from NAND first and issues the data read
//! once it has arrived ([`ReadStart::MapMiss`]: the driver comes back
//! then, so the die sees reads in time order). An HPB READ carries the
//! host's PPN and skips the lookup when that PPN is still current.
//!
//! # Zoned UFS
//!
//! With `device.flash.layer = "zns"` the logical unit is a host-managed
//! zoned block device (JEDEC JESD220-5, Zoned Storage for UFS, which
//! takes its commands from SCSI ZBC-2): the zoned translation layer of
//! [`super::zns`] with ZBC's rules ([`ZoneRules::Zbc`]) instead of the
//! page FTL, so there is no map cache (a sequential zone's units are
//! where its write pointer put them; only the conventional zones have a
//! map, small enough for the controller's SRAM) and no HPB. Zone actions
//! are ZBC OUT (0x94: CLOSE, FINISH, OPEN ZONE, RESET WRITE POINTER).

pub mod hpb;

use self::hpb::{HpbDevice, HpbParams, HpbRsp};
pub use super::ftl::layer::ReadStart;
use super::ftl::layer::{layer_from_profile, FrontEnd, MappedLayer, TranslationLayer};
use super::nand::Timeline;
use super::{Completion, Op, Ppn, Status, ZoneAction, UNIT};
use crate::error::{InputError, Result};
use crate::profile::limits::COST;
use crate::profile::Profile;
use crate::sim::Ns;

pub struct UfsDevice {
    /// Firmware time to decode one command.
    fw_cmd: Ns,
    /// The firmware's controller core: one command at a time.
    fw: Timeline,
    /// The back end: the translation layer the profile names over NAND.
    layer: Box<dyn TranslationLayer>,
    /// The HPB device side, when HPB is enabled.
    pub hpb: Option<HpbDevice>,
}

crate::params! {
    /// The UFS device's front end.
    pub struct UfsDeviceParams {
        /// Device firmware from a COMMAND UPIU's arrival to its NAND work.
        fw_cmd: Ns = required ns("ufs.device.fw_cmd", COST),
    }
}

impl UfsDevice {
    /// `ufs.device.*` over the translation layer `device.flash.*` names
    /// ([`layer_from_profile`]), preconditioned as the profile says; with
    /// HPB when `hpb` is given.
    /// A layer without an L2P map (a zoned LU, `device.flash.layer =
    /// "zns"`) takes no HPB: HPB caches the page FTL's map on the host.
    pub fn from_profile(p: &Profile, seed: u64, hpb: Option<HpbParams>) -> Result<UfsDevice> {
        let fw_cmd = UfsDeviceParams::read(p)?.fw_cmd;
        let layer = layer_from_profile(p, seed, FrontEnd::Ufs)?;
        let hpb = match (hpb, layer.mapped()) {
            (None, _) => None,
            (Some(hp), Some(m)) => Some(HpbDevice::new(hp, m.user_lpns())),
            (Some(_), None) => {
                return Err(InputError::new(
                    p.file_of("ufs.hpb.enabled"),
                    None,
                    format!(
                        "ufs.hpb.enabled with device.flash.layer = \"{}\": HPB caches the page \
                         FTL's L2P map on the host, and a zoned UFS LU has none (nor does any \
                         layer without an L2P map; set ufs.hpb.enabled = false)",
                        super::ftl::layer::LayerParams::read(p)?
                            .layer
                            .map_or("page", |k| k.name())
                    ),
                ))
            }
        };
        Ok(UfsDevice {
            fw_cmd,
            fw: Timeline::new(),
            layer,
            hpb,
        })
    }

    pub fn capacity(&self) -> u64 {
        self.layer.user_bytes()
    }

    /// The translation layer.
    pub fn layer(&self) -> &dyn TranslationLayer {
        self.layer.as_ref()
    }

    /// The translation layer as its concrete type, if it is one (`None`
    /// for another layer): for tests and reports that need its own view.
    pub fn layer_as<L: 'static>(&self) -> Option<&L> {
        self.layer.as_any().downcast_ref::<L>()
    }

    /// The layer's L2P map (HPB, READ BUFFER and the map-cache path use
    /// it: a layer without one has HPB refused at probe and no map-cache
    /// misses).
    pub fn mapped(&self) -> &dyn MappedLayer {
        self.layer
            .mapped()
            .expect("the L2P map of a layer without one: HPB is refused for it")
    }

    fn mapped_mut(&mut self) -> &mut dyn MappedLayer {
        self.layer
            .mapped_mut()
            .expect("the L2P map of a layer without one: HPB is refused for it")
    }

    /// The rules of a zoned LU on a command before its data moves (the
    /// firmware answers CHECK CONDITION instead of READY TO TRANSFER); a
    /// page FTL takes every command.
    pub fn admit(&mut self, op: Op, offset: u64, len: u32) -> Status {
        self.layer.admit(op, offset, len)
    }

    /// A ZBC OUT zone action on the zone at `offset`, decoded at `t`.
    pub fn zone_mgmt(&mut self, t: Ns, action: ZoneAction, offset: u64) -> Completion {
        self.layer.zone_mgmt(t, action, offset, false)
    }

    /// The write pointer of the zone holding `offset` (a zoned LU's zone
    /// report; `None` for a conventional zone or the page FTL).
    pub fn write_pointer(&self, offset: u64) -> Option<u64> {
        self.layer.write_pointer(offset)
    }

    /// The back end's sections of the driver's JSON: the FTL's and
    /// NAND's, or the zoned layer's. The UFS JSON has always shown the
    /// page FTL's GC in `ftl` (`gc_runs`, `waf`) without the `gc` section
    /// the NVMe front end shows; it is left out so the outputs stay as
    /// they were.
    pub fn counters(&self, out: &mut serde_json::Map<String, serde_json::Value>) {
        self.layer.counters(out);
        if self.layer.mapped().is_some() {
            out.remove("gc");
        }
    }

    /// Forget firmware-core reservations that ended before `now`.
    pub fn prune(&mut self, now: Ns) {
        self.fw.prune(now);
    }

    /// A COMMAND UPIU arrived at `arrived`: the firmware core decodes it
    /// when it is free. Returns (decode start, decode end).
    pub fn decode(&mut self, arrived: Ns) -> (Ns, Ns) {
        let start = self.fw.reserve(arrived, self.fw_cmd);
        (start, start + self.fw_cmd)
    }

    /// A normal READ of `len` bytes at `offset`, decoded at `t`: through
    /// the map cache of a page-mapped layer, else the layer's read.
    #[inline]
    pub fn read(&mut self, t: Ns, offset: u64, len: u32) -> ReadStart {
        let lpn = offset / UNIT;
        let blocks = u64::from(len).div_ceil(UNIT) as u32;
        let Some(map) = self.layer.mapped_mut() else {
            return ReadStart::Done(self.layer.read(t, offset, len).done.at);
        };
        if let Some(h) = &mut self.hpb {
            h.normal_read(lpn);
        }
        map.read_or_miss(t, lpn, blocks)
    }

    /// The data read of a normal READ whose map page has arrived at `now`.
    pub fn read_mapped(&mut self, now: Ns, lpn: u64, blocks: u32) -> Ns {
        self.mapped_mut().read_units(now, lpn, blocks)
    }

    /// An HPB READ of `lpn` with the host's `ppn`, decoded at `t`: returns
    /// when the data is read and whether the PPN was current.
    pub fn hpb_read(&mut self, t: Ns, lpn: u64, ppn: Ppn) -> (Ns, bool) {
        let done = self.mapped_mut().read_with_ppn(t, lpn, ppn);
        if let Some(h) = &mut self.hpb {
            h.hpb_read(lpn);
        }
        done
    }

    /// A WRITE of `len` bytes at `offset` whose DATA OUT has arrived at
    /// `at`: buffered by, and how it ended.
    #[inline]
    pub fn write(&mut self, at: Ns, offset: u64, len: u32) -> Completion {
        if let Some(h) = &mut self.hpb {
            let (lpn, blocks) = (offset / UNIT, u64::from(len).div_ceil(UNIT) as u32);
            h.write(lpn, blocks);
        }
        self.layer.write(at, offset, len)
    }

    /// SYNCHRONIZE CACHE decoded at `t`: when everything buffered is on
    /// NAND (the device's write buffer is its volatile cache).
    pub fn flush(&mut self, t: Ns) -> Ns {
        self.layer.flush(t)
    }

    /// An UNMAP decoded at `t`.
    pub fn trim(&mut self, t: Ns, offset: u64, len: u32) -> Ns {
        if let Some(h) = &mut self.hpb {
            let (lpn, blocks) = (offset / UNIT, u64::from(len).div_ceil(UNIT) as u32);
            h.write(lpn, blocks);
        }
        self.layer.trim(t, offset, len).at
    }

    /// The HPB sense data of the next RESPONSE UPIU (empty without HPB).
    pub fn take_rsp(&mut self) -> HpbRsp {
        match &mut self.hpb {
            Some(h) => h.take_rsp(),
            None => HpbRsp::default(),
        }
    }

    /// READ BUFFER of the entries [start, start + n), decoded at `t`: the
    /// map pages that hold them are read; returns when they are in.
    pub fn read_buffer(&mut self, t: Ns, start: u64, n: u64) -> Ns {
        self.mapped_mut().read_map_pages(t, start, n)
    }
}
