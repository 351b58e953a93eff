//! eMMC bus (JESD84-B51 structure): one CMD line and eight DAT lines.
//!
//! * CMD line: always single data rate, one bit per clock. A command is a
//!   48-bit frame (start, direction, 6-bit index, 32-bit argument, CRC7,
//!   end); an R1/R1b response is another 48-bit frame, `ncr` clocks after
//!   the command (NCR: 2..64 clocks). A command round trip therefore holds
//!   the CMD line for `48 + ncr + 48` clocks.
//! * DAT lines: 8 bits wide; HS200 is single data rate (200 MHz -> 200 MB/s),
//!   HS400 double data rate (200 MHz -> 400 MB/s). Every 512-byte block adds
//!   a start bit, a CRC16 per line (two interleaved in DDR, still 16
//!   clocks) and an end bit: `block_overhead` clocks; a read block starts
//!   `nac` clocks after its command or previous block (NAC, card's access
//!   time on the bus; the card's own NAND time is modelled in the device).
//!
//! The two are separate timelines, so a host controller that allows it
//! (software command queuing needs it) can send commands during a data
//! transfer. R1b busy (DAT0 held low) is a DAT-line booking.

use crate::error::{InputError, Result};
use crate::profile::{range, Profile};
use crate::sim::timeline::Timeline;
use crate::sim::Ns;

/// Bits in a command or an R1/R1b response frame.
pub const CMD_FRAME_BITS: u64 = 48;
/// eMMC data block size on the bus.
pub const BUS_BLOCK: u64 = 512;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmmcBusParams {
    /// Bus clock, Hz (200 MHz for HS200 and HS400).
    pub clock_hz: f64,
    /// DAT lines (1, 4 or 8).
    pub width: u32,
    /// Double data rate on DAT (HS400, DDR52).
    pub ddr: bool,
    /// Clocks from the end of a command to its response (NCR).
    pub ncr: u32,
    /// Clocks each 512 B block adds on DAT (start + CRC16 + end).
    pub block_overhead: u32,
}

crate::choice_enum! {
    /// `mmc.bus.timing`: the bus timing mode.
    pub enum EmmcTiming {
        /// HS200: single data rate.
        Hs200 = "hs200",
        /// HS400: double data rate on DAT.
        Hs400 = "hs400",
    }
}

crate::params! {
    /// The eMMC bus (JESD84-B51).
    pub struct EmmcBusKeys {
        /// The bus clock.
        clock: f64 = required hz(
            "mmc.bus.clock",
            range(1.0, 200e6, "the eMMC bus clock, at most HS200/HS400's 200 MHz (JESD84-B51)")
        ),
        /// DAT lines (1, 4 or 8).
        width: u32 = required count_u32("mmc.bus.width", range(1.0, 8.0, "eMMC data lines")),
        /// The timing mode: HS400 moves data on both clock edges.
        timing: EmmcTiming = required choice("mmc.bus.timing", EmmcTiming),
        /// Clocks from the end of a command to its response (NCR).
        ncr: u32 = required count_u32(
            "mmc.bus.ncr",
            range(2.0, 64.0, "NCR, clocks from command to response (JESD84-B51)")
        ),
        /// Clocks each 512 B block adds on DAT (start + CRC16 + end, busy).
        block_overhead: u32 = required count_u32(
            "mmc.bus.block_overhead",
            range(
                0.0,
                4096.0,
                "bus clocks of framing per data block (start bit, CRC, end bit, busy)",
            )
        ),
    }
}

impl EmmcBusParams {
    /// `mmc.bus.*`, checked together.
    pub fn from_profile(p: &Profile) -> Result<EmmcBusParams> {
        let k = EmmcBusKeys::read(p)?;
        let bp = EmmcBusParams {
            clock_hz: k.clock,
            width: k.width,
            ddr: k.timing == EmmcTiming::Hs400,
            ncr: k.ncr,
            block_overhead: k.block_overhead,
        };
        bp.validate(&p.file_of("mmc.bus.width"))?;
        Ok(bp)
    }

    pub fn validate(&self, file: &str) -> Result<()> {
        let bad = |m: String| Err(InputError::new(file.to_string(), None, m));
        if self.clock_hz.is_nan() || self.clock_hz <= 0.0 || self.clock_hz > 200e6 {
            return bad(format!(
                "mmc.bus.clock must be in (0, 200] MHz (HS200/HS400 maximum), not {} Hz",
                self.clock_hz
            ));
        }
        if ![1, 4, 8].contains(&self.width) {
            return bad(format!(
                "mmc.bus.width must be 1, 4 or 8, not {}",
                self.width
            ));
        }
        if !(2..=64).contains(&self.ncr) {
            return bad(format!(
                "mmc.bus.ncr must be 2..64 clocks (NCR), not {}",
                self.ncr
            ));
        }
        Ok(())
    }

    pub fn clock_ns(&self, clocks: u64) -> Ns {
        (clocks as f64 * 1e9 / self.clock_hz).ceil() as Ns
    }

    /// CMD line occupation of one command with its R1/R1b response.
    pub fn cmd_ns(&self) -> Ns {
        self.clock_ns(2 * CMD_FRAME_BITS + u64::from(self.ncr))
    }

    /// DAT payload rate, bytes per second.
    pub fn bytes_per_sec(&self) -> f64 {
        self.clock_hz * f64::from(self.width) * if self.ddr { 2.0 } else { 1.0 } / 8.0
    }

    /// DAT occupation of a `bytes` transfer (whole 512 B blocks).
    pub fn data_ns(&self, bytes: u64) -> Ns {
        let blocks = bytes.div_ceil(BUS_BLOCK).max(1);
        let bits_per_clock = u64::from(self.width) * if self.ddr { 2 } else { 1 };
        let data_clocks = (blocks * BUS_BLOCK * 8).div_ceil(bits_per_clock);
        self.clock_ns(data_clocks + blocks * u64::from(self.block_overhead))
    }
}

/// The bus: CMD and DAT timelines.
pub struct EmmcBus {
    pub p: EmmcBusParams,
    cmd: Timeline,
    dat: Timeline,
    cmd_ns: Ns,
    pub commands: u64,
    pub data_bytes: u64,
}

impl EmmcBus {
    pub fn new(p: EmmcBusParams) -> EmmcBus {
        EmmcBus {
            cmd_ns: p.cmd_ns(),
            p,
            cmd: Timeline::new(),
            dat: Timeline::new(),
            commands: 0,
            data_bytes: 0,
        }
    }

    pub fn prune(&mut self, now: Ns) {
        self.cmd.prune(now);
        self.dat.prune(now);
    }

    /// Send a command no earlier than `at`; returns when its response has
    /// been received.
    pub fn command(&mut self, at: Ns) -> Ns {
        self.commands += 1;
        self.cmd.reserve(at, self.cmd_ns) + self.cmd_ns
    }

    /// Move `bytes` on DAT no earlier than `at`; returns (start, end).
    pub fn data(&mut self, at: Ns, bytes: u64) -> (Ns, Ns) {
        let d = self.p.data_ns(bytes);
        self.data_bytes += bytes;
        let s = self.dat.reserve(at, d);
        (s, s + d)
    }

    /// Hold DAT0 busy (R1b) from `at` to `until`.
    pub fn busy(&mut self, at: Ns, until: Ns) -> Ns {
        if until > at {
            let s = self.dat.reserve(at, until - at);
            s + (until - at)
        } else {
            at
        }
    }

    pub fn dat_busy_until(&self) -> Ns {
        self.dat.busy_until()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// HS400: 200 MHz DDR on 8 lines (also the mmc driver's test bus).
    pub(crate) fn hs400() -> EmmcBusParams {
        EmmcBusParams {
            clock_hz: 200e6,
            width: 8,
            ddr: true,
            ncr: 8,
            block_overhead: 18,
        }
    }

    #[test]
    fn rates_closed_form() {
        let p = hs400();
        assert_eq!(p.bytes_per_sec(), 400e6);
        let hs200 = EmmcBusParams { ddr: false, ..p };
        assert_eq!(hs200.bytes_per_sec(), 200e6);
        // 48 + 8 + 48 = 104 clocks at 5 ns.
        assert_eq!(p.cmd_ns(), 520);
        // 4 KiB in HS400: 8 blocks x (512 data clocks... 4096*8/16 = 2048
        // clocks) + 8 x 18 = 2192 clocks = 10960 ns.
        assert_eq!(p.data_ns(4096), 10_960);
        assert_eq!(hs200.data_ns(4096), (4096 + 8 * 18) * 5);
    }

    #[test]
    fn commands_overlap_data() {
        let mut bus = EmmcBus::new(hs400());
        let (s, e) = bus.data(0, 4096);
        assert_eq!((s, e), (0, 10_960));
        // The CMD line is free while DAT moves data.
        assert_eq!(bus.command(100), 620);
        // But two commands serialize.
        assert_eq!(bus.command(100), 1140);
        // And a second transfer waits for DAT.
        assert_eq!(bus.data(0, 512).0, 10_960);
    }
}
