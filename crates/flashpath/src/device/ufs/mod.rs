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
use super::ftl::layer::{LayerKind, LayerParams, TranslationLayer};
use super::nand::Timeline;
use super::zns::{Zns, ZoneRules};
use super::{Completion, FlashDevice, Op, Ppn, Status, ZoneAction, UNIT};
use crate::error::{InputError, Result};
use crate::profile::limits::COST;
use crate::profile::Profile;
use crate::sim::Ns;

/// How a normal read starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadStart {
    /// The entry was in the map cache: the data is read by `at`.
    Done(Ns),
    /// Map-cache miss: the map page is in by `map_ready`; the data read is
    /// issued then ([`UfsDevice::read_mapped`]).
    MapMiss { map_ready: Ns },
}

/// What holds the logical unit's data. The page FTL stays inline (the
/// size difference lint's concern is moves and copies; a device is built
/// once and never moved after probe, and the page path keeps its one
/// indirection less).
#[allow(clippy::large_enum_variant)]
pub enum Back {
    /// The page-mapping FTL with its map cache.
    Page(FlashDevice),
    /// A host-managed zoned LU (ZBC rules).
    Zoned(Box<Zns>),
}

pub struct UfsDevice {
    /// Firmware time to decode one command.
    fw_cmd: Ns,
    /// The firmware's controller core: one command at a time.
    fw: Timeline,
    /// The back end: FTL or zones over NAND.
    back: Back,
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
    /// `ufs.device.*` over `device.flash.*`, preconditioned as the profile
    /// says; with HPB when `hpb` is given.
    /// A zoned LU (`device.flash.layer = "zns"`) takes no HPB: HPB caches
    /// the page FTL's map, which a zoned LU does not have.
    pub fn from_profile(p: &Profile, seed: u64, hpb: Option<HpbParams>) -> Result<UfsDevice> {
        let fw_cmd = UfsDeviceParams::read(p)?.fw_cmd;
        let back = match LayerParams::read(p)?.layer.unwrap_or(LayerKind::Page) {
            LayerKind::Page => Back::Page(super::flash::flash_device_from_profile(p, seed)?),
            LayerKind::Zns if hpb.is_some() => {
                return Err(InputError::new(
                    p.file_of("ufs.hpb.enabled"),
                    None,
                    "ufs.hpb.enabled with device.flash.layer = \"zns\": HPB caches the page \
                     FTL's L2P map on the host, and a zoned UFS LU has none (set \
                     ufs.hpb.enabled = false)",
                ))
            }
            LayerKind::Zns => Back::Zoned(Box::new(Zns::from_profile_as(p, ZoneRules::Zbc)?)),
            // Any other layer serves another command set (FDP is an NVMe
            // directive: UFS has no placement handles); a new layer needs
            // no arm here.
            other => {
                return Err(InputError::new(
                    p.file_of("device.flash.layer"),
                    None,
                    format!(
                        "device.flash.layer = \"{}\" on a UFS device: the UFS front end takes \
                         \"page\" or \"zns\" (Flexible Data Placement is an NVMe feature)",
                        other.name()
                    ),
                ))
            }
        };
        let hpb = match &back {
            Back::Page(ftl) => hpb.map(|hp| HpbDevice::new(hp, ftl.user_lpns())),
            Back::Zoned(_) => None,
        };
        Ok(UfsDevice {
            fw_cmd,
            fw: Timeline::new(),
            back,
            hpb,
        })
    }

    pub fn capacity(&self) -> u64 {
        match &self.back {
            Back::Page(ftl) => ftl.user_lpns() * UNIT,
            Back::Zoned(z) => z.user_bytes(),
        }
    }

    /// The page FTL (HPB, READ BUFFER and the map-cache path use it: a
    /// zoned LU has HPB refused at probe and no map-cache misses).
    pub fn ftl(&self) -> &FlashDevice {
        match &self.back {
            Back::Page(ftl) => ftl,
            Back::Zoned(_) => unreachable!("the page FTL of a zoned LU: HPB is refused for one"),
        }
    }

    /// The zoned layer of a zoned LU.
    pub fn zoned(&self) -> Option<&Zns> {
        match &self.back {
            Back::Page(_) => None,
            Back::Zoned(z) => Some(z),
        }
    }

    /// The rules of a zoned LU on a command before its data moves (the
    /// firmware answers CHECK CONDITION instead of READY TO TRANSFER); a
    /// page FTL takes every command.
    pub fn admit(&mut self, op: Op, offset: u64, len: u32) -> Status {
        match &mut self.back {
            Back::Page(_) => Status::Ok,
            Back::Zoned(z) => z.admit(op, offset, len),
        }
    }

    /// A ZBC OUT zone action on the zone at `offset`, decoded at `t`.
    pub fn zone_mgmt(&mut self, t: Ns, action: ZoneAction, offset: u64) -> Completion {
        match &mut self.back {
            Back::Page(_) => Completion::unsupported(t),
            Back::Zoned(z) => z.zone_mgmt(t, action, offset, false),
        }
    }

    /// The write pointer of the zone holding `offset` (a zoned LU's zone
    /// report; `None` for a conventional zone or the page FTL).
    pub fn write_pointer(&self, offset: u64) -> Option<u64> {
        let z = self.zoned()?;
        let zone = (offset / z.params().zone_size) as u32;
        let d = z.report(zone);
        (d.state != super::zns::ZoneState::NotWritePointer).then_some(d.wp)
    }

    /// The back end's sections of the driver's JSON: the FTL's and
    /// NAND's, or the zoned layer's.
    pub fn counters(&self, out: &mut serde_json::Map<String, serde_json::Value>) {
        match &self.back {
            Back::Page(ftl) => {
                out.insert("ftl".into(), ftl.ftl_counters());
                out.insert("nand".into(), ftl.nand_counters(UNIT));
            }
            Back::Zoned(z) => z.counters(out),
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

    /// A normal READ of `len` bytes at `offset`, decoded at `t`.
    pub fn read(&mut self, t: Ns, offset: u64, len: u32) -> ReadStart {
        let lpn = offset / UNIT;
        let blocks = u64::from(len).div_ceil(UNIT) as u32;
        let ftl = match &mut self.back {
            Back::Page(ftl) => ftl,
            Back::Zoned(z) => return ReadStart::Done(z.read(t, offset, len).done.at),
        };
        if let Some(h) = &mut self.hpb {
            h.normal_read(lpn);
        }
        let mp = ftl.map_page_of(lpn);
        if !ftl.map_page_cached(mp).0 {
            return ReadStart::MapMiss {
                map_ready: ftl.read_map_page(t, mp),
            };
        }
        ReadStart::Done(ftl.read(t, lpn, blocks))
    }

    /// The data read of a normal READ whose map page has arrived at `now`.
    pub fn read_mapped(&mut self, now: Ns, lpn: u64, blocks: u32) -> Ns {
        self.ftl_mut().read(now, lpn, blocks)
    }

    fn ftl_mut(&mut self) -> &mut FlashDevice {
        match &mut self.back {
            Back::Page(ftl) => ftl,
            Back::Zoned(_) => unreachable!("the page FTL of a zoned LU: HPB is refused for one"),
        }
    }

    /// An HPB READ of `lpn` with the host's `ppn`, decoded at `t`: returns
    /// when the data is read and whether the PPN was current.
    pub fn hpb_read(&mut self, t: Ns, lpn: u64, ppn: Ppn) -> (Ns, bool) {
        let done = self.ftl_mut().read_with_ppn(t, lpn, ppn);
        if let Some(h) = &mut self.hpb {
            h.hpb_read(lpn);
        }
        done
    }

    /// A WRITE of `len` bytes at `offset` whose DATA OUT has arrived at
    /// `at`: buffered by, and how it ended.
    pub fn write(&mut self, at: Ns, offset: u64, len: u32) -> Completion {
        let (lpn, blocks) = (offset / UNIT, u64::from(len).div_ceil(UNIT) as u32);
        if let Some(h) = &mut self.hpb {
            h.write(lpn, blocks);
        }
        match &mut self.back {
            Back::Page(ftl) => Completion::ok(ftl.write(at, lpn, blocks)),
            Back::Zoned(z) => z.write(at, offset, len),
        }
    }

    /// SYNCHRONIZE CACHE decoded at `t`: when everything buffered is on
    /// NAND (the device's write buffer is its volatile cache).
    pub fn flush(&mut self, t: Ns) -> Ns {
        match &mut self.back {
            Back::Page(ftl) => ftl.flush(t),
            Back::Zoned(z) => z.flush(t),
        }
    }

    /// An UNMAP decoded at `t`.
    pub fn trim(&mut self, t: Ns, offset: u64, len: u32) -> Ns {
        let (lpn, blocks) = (offset / UNIT, u64::from(len).div_ceil(UNIT) as u32);
        if let Some(h) = &mut self.hpb {
            h.write(lpn, blocks);
        }
        match &mut self.back {
            Back::Page(ftl) => ftl.trim(t, lpn, blocks),
            Back::Zoned(z) => z.trim(t, offset, len).at,
        }
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
        let mut ready = t;
        if n > 0 {
            let ftl = self.ftl_mut();
            let first = ftl.map_page_of(start);
            let last = ftl.map_page_of(start + n - 1);
            for mp in first..=last {
                ready = ready.max(ftl.read_map_page(t, mp));
            }
        }
        ready
    }
}
