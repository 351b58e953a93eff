//! A microSD card as a service-time model: per request an access time
//! (the controller's FTL lookup and NAND read, or the program of a write) plus the bytes at the card's
//! internal rate, overlapped with nothing (one request at a time, as the
//! legacy mmc block path issues them). A1 cards promise at least 1500
//! random 4 KiB read IOPS and 500 random write IOPS, class 10 at least 10
//! MB/s sustained sequential writes: the profile's numbers are chosen to
//! meet those minimums and the unit tests check that they do.

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
            Op::WriteZeroes | Op::ZoneMgmt(_) | Op::ZoneAppend => {
                return Completion::unsupported(at)
            }
        };
        Completion::ok(at + self.card_ns(ddir, u64::from(cmd.len)))
    }
}
