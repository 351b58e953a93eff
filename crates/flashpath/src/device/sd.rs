//! A microSD card, in one of two forms ([`SdDevice`]):
//!
//! - a service-time model ([`SdCard`]): per request an access time (the
//!   controller's FTL lookup and NAND read, or the program of a write)
//!   plus the bytes at the card's internal rate, overlapped with nothing
//!   (one request at a time, as the legacy mmc block path issues them). A1
//!   cards promise at least 1500 random 4 KiB read IOPS and 500 random
//!   write IOPS, class 10 at least 10 MB/s sustained sequential writes: the
//!   profile's numbers are chosen to meet those minimums and the unit tests
//!   check that they do.
//! - with a `[device.flash]` section, a front end over the shared
//!   controller core ([`SdFlashCard`]): the card's firmware decodes one
//!   command at a time (`sd.card.fw_cmd` each, as the legacy mmc path
//!   issues them: the SD command set has no command queue the mmc block
//!   driver uses) and hands it to the translation layer the profile names
//!   ([`super::ftl::layer`]: the page FTL with its map cache, write buffer
//!   and GC). A zoned layer is refused: the SD command set has no zones.

use super::flash::has_flash_back_end;
use super::ftl::layer::{layer_from_profile, FrontEnd, TranslationLayer};
use super::{BlockBackend, Command, Completion, Op};
use crate::error::Result;
use crate::profile::limits::{COST, RATE};
use crate::profile::Profile;
use crate::sim::Ns;
use crate::types::Ddir;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SdCard {
    pub capacity: u64,
    pub read_access: Ns,
    pub write_access: Ns,
    /// Internal rates, bytes per second.
    pub read_rate: f64,
    pub write_rate: f64,
}

crate::params! {
    /// The microSD card's service times.
    pub struct SdCardParams {
        /// A read's access time: the controller's FTL lookup and NAND read.
        read_access: Ns = required ns("device.read_access", COST),
        /// A write's access time: the program.
        write_access: Ns = required ns("device.write_access", COST),
        /// The card's internal read rate.
        read_rate: f64 = required rate("device.read_rate", RATE),
        /// The card's internal write rate.
        write_rate: f64 = required rate("device.write_rate", RATE),
    }
}

impl SdCard {
    pub fn from_profile(p: &Profile) -> Result<SdCard> {
        let c = SdCardParams::read(p)?;
        Ok(SdCard {
            capacity: super::CapacityParams::read(p)?.capacity,
            read_access: c.read_access,
            write_access: c.write_access,
            read_rate: c.read_rate,
            write_rate: c.write_rate,
        })
    }

    /// The card's own time for one request (bus excluded).
    pub fn card_ns(&self, ddir: Ddir, bytes: u64) -> Ns {
        let (access, rate) = match ddir {
            Ddir::Read => (self.read_access, self.read_rate),
            _ => (self.write_access, self.write_rate),
        };
        access + (bytes as f64 * 1e9 / rate).ceil() as Ns
    }
}

impl BlockBackend for SdCard {
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion {
        let ddir = match cmd.op {
            Op::Read => Ddir::Read,
            Op::Write | Op::Trim | Op::Flush => Ddir::Write,
            Op::WriteZeroes
            | Op::ZoneMgmt(_)
            | Op::ZoneAppend
            | Op::Verify { .. }
            | Op::WriteSame { .. }
            | Op::WriteVerify => return Completion::unsupported(at),
        };
        Completion::ok(at + self.card_ns(ddir, u64::from(cmd.len)))
    }
}

crate::params! {
    /// The flash-backed SD card's controller (`sd.card.*`).
    pub struct SdFlashParams {
        /// Card firmware from a command's arrival (a write's: its data's)
        /// to its NAND work.
        fw_cmd: Ns = required ns("sd.card.fw_cmd", COST),
    }
}

/// An SD card's controller over the shared core: one command at a time,
/// each decoded by the firmware, then the translation layer's work.
pub struct SdFlashCard {
    fw_cmd: Ns,
    layer: Box<dyn TranslationLayer>,
}

impl SdFlashCard {
    /// `sd.card.*` over the translation layer `device.flash.*` names,
    /// fresh (a card's FTL is not preconditioned, as the eMMC card's).
    pub fn from_profile(p: &Profile, seed: u64) -> Result<SdFlashCard> {
        Ok(SdFlashCard {
            fw_cmd: SdFlashParams::read(p)?.fw_cmd,
            layer: layer_from_profile(p, seed, FrontEnd::Sd)?,
        })
    }

    /// The translation layer.
    pub fn layer(&self) -> &dyn TranslationLayer {
        self.layer.as_ref()
    }

    /// The translation layer as its concrete type, if it is one: for
    /// tests and reports that need its own view.
    pub fn layer_as<L: 'static>(&self) -> Option<&L> {
        self.layer.as_any().downcast_ref::<L>()
    }
}

impl BlockBackend for SdFlashCard {
    fn capacity(&self) -> u64 {
        self.layer.user_bytes()
    }

    /// The command reached the card at `at` (a write: its data has): the
    /// firmware decodes it, then the layer does its work. A write ends
    /// once the layer has taken it into its write buffer: the card reports
    /// no volatile cache (the SD 6.0 cache is not modelled), so the block
    /// layer sends it neither a flush nor FUA (blk_queue_write_cache in
    /// drivers/mmc/core/block.c sets FUA only for eMMC reliable writes).
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion {
        let t = at + self.fw_cmd;
        match cmd.op {
            Op::Read => self.layer.read(t, cmd.offset, cmd.len).done,
            Op::Write => self.layer.write(t, cmd.offset, cmd.len),
            Op::Trim => self.layer.trim(t, cmd.offset, cmd.len),
            Op::Flush => Completion::ok(self.layer.flush(t)),
            Op::WriteZeroes
            | Op::ZoneMgmt(_)
            | Op::ZoneAppend
            | Op::Verify { .. }
            | Op::WriteSame { .. }
            | Op::WriteVerify => Completion::unsupported(t),
        }
    }
}

/// The SD card a profile describes: over the shared flash core when it
/// has a `[device.flash]` section, else the service-time model.
pub enum SdDevice {
    Service(SdCard),
    Flash(Box<SdFlashCard>),
}

impl SdDevice {
    /// The probe builds devices without the run seed (as the UFS device),
    /// and the FTL is deterministic.
    pub fn from_profile(p: &Profile) -> Result<SdDevice> {
        if has_flash_back_end(p) {
            Ok(SdDevice::Flash(Box::new(SdFlashCard::from_profile(p, 0)?)))
        } else {
            Ok(SdDevice::Service(SdCard::from_profile(p)?))
        }
    }

    pub fn capacity(&self) -> u64 {
        match self {
            SdDevice::Service(c) => c.capacity,
            SdDevice::Flash(c) => c.capacity(),
        }
    }
}
