//! The SD bus (SD Physical Layer Simplified Specification, UHS-I) and a
//! microSD card behind it, as a service-time model.
//!
//! Bus: `width` data lines clocked at `clock`, data on one edge (SDR) or
//! both (DDR). A data block of 512 bytes carries a start bit, a CRC16 and
//! an end bit per line, so per block `512 * 8 / width / edges` data clocks
//! plus 18 framing clocks. Each request is a command (CMD18/CMD25 with
//! CMD23, 48-bit token plus response and turnaround) costing `cmd` on the
//! bus.
//!
//! Card: per request an access time (the controller's FTL lookup and
//! NAND read, or the program of a write) plus the bytes at the card's
//! internal rate, overlapped with nothing (one request at a time, as the
//! legacy mmc block path issues them). A1 cards promise at least 1500
//! random 4 KiB read IOPS and 500 random write IOPS, class 10 at least 10
//! MB/s sustained sequential writes: the profile's numbers are chosen to
//! meet those minimums and the unit tests check that they do.

use crate::error::{InputError, Result};
use crate::profile::limits::{COST, RATE};
use crate::profile::{range, Profile};
use crate::sim::Ns;
use crate::workload::Ddir;

/// SD block size on the bus.
pub const SD_BLOCK: u64 = 512;
/// Framing per block and line: start bit, CRC16, end bit.
const BLOCK_FRAMING_CLOCKS: u64 = 18;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SdBus {
    pub clock_hz: f64,
    pub width: u32,
    pub ddr: bool,
    /// Command, response and turnaround per request.
    pub cmd: Ns,
}

impl SdBus {
    pub fn from_profile(p: &Profile) -> Result<SdBus> {
        let mode = p.choice("link.mode", &["SDR25", "SDR50", "DDR50", "SDR104"])?;
        let width = p.count_u32("link.width", range(1.0, 4.0, "SD data lines"))?;
        if ![1, 4].contains(&width) {
            return Err(InputError::new(
                p.file_of("link.width"),
                None,
                "link.width must be 1 or 4 data lines",
            ));
        }
        let (clock_hz, ddr) = match mode.as_str() {
            "SDR25" => (50e6, false),
            "SDR50" => (100e6, false),
            "DDR50" => (50e6, true),
            _ => (208e6, false),
        };
        Ok(SdBus {
            clock_hz,
            width,
            ddr,
            cmd: p.ns("link.cmd", COST)?,
        })
    }

    /// Bus time of moving `bytes` of data (whole blocks).
    pub fn data_ns(&self, bytes: u64) -> Ns {
        let blocks = bytes.div_ceil(SD_BLOCK);
        let edges = if self.ddr { 2 } else { 1 };
        let clocks = blocks * (SD_BLOCK * 8 / u64::from(self.width) / edges + BLOCK_FRAMING_CLOCKS);
        (clocks as f64 * 1e9 / self.clock_hz).ceil() as Ns
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SdCard {
    pub read_access: Ns,
    pub write_access: Ns,
    /// Internal rates, bytes per second.
    pub read_rate: f64,
    pub write_rate: f64,
}

impl SdCard {
    pub fn from_profile(p: &Profile) -> Result<SdCard> {
        let card = SdCard {
            read_access: p.ns("device.read_access", COST)?,
            write_access: p.ns("device.write_access", COST)?,
            read_rate: p.rate("device.read_rate", RATE)?,
            write_rate: p.rate("device.write_rate", RATE)?,
        };
        Ok(card)
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

/// One request end to end on bus and card: command, then the card's work
/// and the data transfer (reads: card then bus; writes: bus then program).
pub fn request_ns(bus: &SdBus, card: &SdCard, ddir: Ddir, bytes: u64) -> Ns {
    bus.cmd + card.card_ns(ddir, bytes) + bus.data_ns(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pi4() -> (SdBus, SdCard) {
        let p = Profile::load("rpi4-sdcard").unwrap();
        (
            SdBus::from_profile(&p).unwrap(),
            SdCard::from_profile(&p).unwrap(),
        )
    }

    #[test]
    fn ddr50_four_lines_moves_a_block_in_about_ten_microseconds() {
        let bus = SdBus {
            clock_hz: 50e6,
            width: 4,
            ddr: true,
            cmd: 0,
        };
        // 512 clocks of data + 18 framing at 20 ns.
        assert_eq!(bus.data_ns(512), 530 * 20);
    }

    #[test]
    fn the_profile_card_meets_a1_and_class_10() {
        let (bus, card) = pi4();
        let read_iops = 1e9 / request_ns(&bus, &card, Ddir::Read, 4096) as f64;
        let write_iops = 1e9 / request_ns(&bus, &card, Ddir::Write, 4096) as f64;
        assert!(read_iops >= 1500.0, "{read_iops}");
        assert!(write_iops >= 500.0, "{write_iops}");
        let seq = (4u64 << 20) as f64 * 1e9 / request_ns(&bus, &card, Ddir::Write, 4 << 20) as f64;
        assert!(seq >= 10e6, "{seq}");
    }
}
