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

pub mod hpb;

use self::hpb::{HpbDevice, HpbParams, HpbRsp};
use super::nand::Timeline;
use super::{FlashDevice, Ppn, UNIT};
use crate::error::Result;
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

pub struct UfsDevice {
    /// Firmware time to decode one command.
    fw_cmd: Ns,
    /// The firmware's controller core: one command at a time.
    fw: Timeline,
    /// The back end: FTL over NAND.
    pub ftl: FlashDevice,
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
    pub fn from_profile(p: &Profile, seed: u64, hpb: Option<HpbParams>) -> Result<UfsDevice> {
        let ftl = super::flash::flash_device_from_profile(p, seed)?;
        Ok(UfsDevice {
            fw_cmd: UfsDeviceParams::read(p)?.fw_cmd,
            fw: Timeline::new(),
            hpb: hpb.map(|hp| HpbDevice::new(hp, ftl.user_lpns())),
            ftl,
        })
    }

    pub fn capacity(&self) -> u64 {
        self.ftl.user_lpns() * UNIT
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

    /// A normal READ of `blocks` units at `lpn`, decoded at `t`.
    pub fn read(&mut self, t: Ns, lpn: u64, blocks: u32) -> ReadStart {
        if let Some(h) = &mut self.hpb {
            h.normal_read(lpn);
        }
        let mp = self.ftl.map_page_of(lpn);
        if !self.ftl.map_page_cached(mp).0 {
            return ReadStart::MapMiss {
                map_ready: self.ftl.read_map_page(t, mp),
            };
        }
        ReadStart::Done(self.ftl.read(t, lpn, blocks))
    }

    /// The data read of a normal READ whose map page has arrived at `now`.
    pub fn read_mapped(&mut self, now: Ns, lpn: u64, blocks: u32) -> Ns {
        self.ftl.read(now, lpn, blocks)
    }

    /// An HPB READ of `lpn` with the host's `ppn`, decoded at `t`: returns
    /// when the data is read and whether the PPN was current.
    pub fn hpb_read(&mut self, t: Ns, lpn: u64, ppn: Ppn) -> (Ns, bool) {
        let done = self.ftl.read_with_ppn(t, lpn, ppn);
        if let Some(h) = &mut self.hpb {
            h.hpb_read(lpn);
        }
        done
    }

    /// A WRITE whose DATA OUT has arrived at `at`: buffered by.
    pub fn write(&mut self, at: Ns, lpn: u64, blocks: u32) -> Ns {
        if let Some(h) = &mut self.hpb {
            h.write(lpn, blocks);
        }
        self.ftl.write(at, lpn, blocks)
    }

    /// SYNCHRONIZE CACHE decoded at `t`: when everything buffered is on
    /// NAND (the device's write buffer is its volatile cache).
    pub fn flush(&mut self, t: Ns) -> Ns {
        self.ftl.flush(t)
    }

    /// An UNMAP decoded at `t`.
    pub fn trim(&mut self, t: Ns, lpn: u64, blocks: u32) -> Ns {
        if let Some(h) = &mut self.hpb {
            h.write(lpn, blocks);
        }
        self.ftl.trim(t, lpn, blocks)
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
            let first = self.ftl.map_page_of(start);
            let last = self.ftl.map_page_of(start + n - 1);
            for mp in first..=last {
                ready = ready.max(self.ftl.read_map_page(t, mp));
            }
        }
        ready
    }
}
