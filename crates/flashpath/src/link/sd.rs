//! The SD bus (SD Physical Layer Simplified Specification, UHS-I), as a
//! service-time model (the card behind it is [`crate::device::sd`]).
//!
//! Bus: `width` data lines clocked at `clock`, data on one edge (SDR) or
//! both (DDR). A data block of 512 bytes carries a start bit, a CRC16 and
//! an end bit per line, so per block `512 * 8 / width / edges` data clocks
//! plus 18 framing clocks. Each request is a command (CMD18/CMD25 with
//! CMD23, 48-bit token plus response and turnaround) costing `cmd` on the
//! bus.

use crate::error::{InputError, Result};
use crate::profile::limits::COST;
use crate::profile::{range, Profile};
use crate::sim::Ns;

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

crate::choice_enum! {
    /// `link.mode`: the UHS-I bus speed mode.
    pub enum SdBusMode {
        /// High speed: 50 MHz, one edge.
        Sdr25 = "SDR25",
        /// 100 MHz, one edge.
        Sdr50 = "SDR50",
        /// 50 MHz, both edges.
        Ddr50 = "DDR50",
        /// 208 MHz, one edge.
        Sdr104 = "SDR104",
    }
}

crate::params! {
    /// The SD bus (SD Physical Layer Simplified Specification, UHS-I).
    pub struct SdBusParams {
        /// The bus speed mode: its clock and whether data moves on both
        /// edges.
        mode: SdBusMode = required choice("link.mode", SdBusMode),
        /// Data lines: 1 or 4.
        width: u32 = required count_u32("link.width", range(1.0, 4.0, "SD data lines")),
        /// Command, response and turnaround per request (CMD18/CMD25 with
        /// CMD23).
        cmd: Ns = required ns("link.cmd", COST),
    }
}

impl SdBus {
    pub fn from_profile(p: &Profile) -> Result<SdBus> {
        let b = SdBusParams::read(p)?;
        if ![1, 4].contains(&b.width) {
            return Err(InputError::new(
                p.file_of("link.width"),
                None,
                "link.width must be 1 or 4 data lines",
            ));
        }
        let (clock_hz, ddr) = match b.mode {
            SdBusMode::Sdr25 => (50e6, false),
            SdBusMode::Sdr50 => (100e6, false),
            SdBusMode::Ddr50 => (50e6, true),
            SdBusMode::Sdr104 => (208e6, false),
        };
        Ok(SdBus {
            clock_hz,
            width: b.width,
            ddr,
            cmd: b.cmd,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
