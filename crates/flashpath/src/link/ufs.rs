//! UFS interconnect: MIPI M-PHY (gears, rate series, lanes, line coding)
//! under MIPI UniPro (data-link frames), carrying UPIUs.
//!
//! Rates: HS-G1 Rate A 1248 Mbit/s per lane, Rate B 1457.6 Mbit/s; every
//! further gear doubles it (G2 2496/2915.2, G3 4992/5830.4, G4
//! 9984/11660.8, G5 19968/23321.6). G1–G4 use 8b10b coding (80% payload),
//! HS-G5 128b/130b. Lanes carry the bytes of a frame striped, so a
//! direction's byte rate is lanes × lane rate × coding efficiency / 8.
//!
//! UniPro framing: a data-link frame carries at most `frame_payload` bytes
//! of UPIU (DL_MTU 288 B less the 1 B L3 and 1 B L4 short headers) and adds
//! `frame_overhead` bytes (SOF and EOF control symbols, CRC-16, the L3/L4
//! headers). Flow-control (AFC/NAC) frames and skip symbols are not
//! modelled.
//!
//! The link is full duplex: host→device (COMMAND, DATA OUT) and
//! device→host (RTT, DATA IN, RESPONSE) are separate timelines.

use crate::error::{InputError, Result};
use crate::sim::timeline::Timeline;
use crate::sim::Ns;

/// UPIU sizes (JESD220 UFS 2.1 §10.7): every UPIU has a 12 B basic header
/// and 20 B of transaction-specific fields; COMMAND carries its 16 B CDB in
/// them.
pub const UPIU_HEADER_BYTES: u64 = 32;
/// Sense data segment of a RESPONSE UPIU carrying HPB recommendations
/// (data segment length 0x14: ufshpb `struct utp_hpb_rsp`).
pub const HPB_SENSE_BYTES: u64 = 20;

/// M-PHY HS-G1 lane rate, bits per second: Rate A 1248 Mbit/s, Rate B
/// 1457.6 Mbit/s (M-PHY 3.0/4.1).
pub fn lane_bits_per_sec(gear: u32, rate_b: bool) -> f64 {
    let g1 = if rate_b { 1457.6e6 } else { 1248.0e6 };
    g1 * f64::from(1u32 << (gear - 1))
}

/// Share of line bits that carry data: 8b10b up to HS-G4, 128b/130b for G5.
pub fn coding_efficiency(gear: u32) -> f64 {
    if gear >= 5 {
        128.0 / 130.0
    } else {
        0.8
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UfsLinkParams {
    pub gear: u32,
    pub rate_b: bool,
    pub lanes: u32,
    /// UPIU bytes per UniPro data-link frame.
    pub frame_payload: u32,
    /// Bytes a frame adds around its payload.
    pub frame_overhead: u32,
}

impl UfsLinkParams {
    pub fn validate(&self, file: &str) -> Result<()> {
        let bad = |m: String| Err(InputError::new(file.to_string(), None, m));
        if !(1..=5).contains(&self.gear) {
            return bad(format!(
                "ufs.link.gear must be 1..5 (HS-G1..HS-G5), not {}",
                self.gear
            ));
        }
        if !(1..=2).contains(&self.lanes) {
            return bad(format!("ufs.link.lanes must be 1 or 2, not {}", self.lanes));
        }
        if self.frame_payload == 0 {
            return bad("ufs.link.frame_payload must be at least 1 byte".into());
        }
        Ok(())
    }

    /// Data bytes per second in one direction.
    pub fn bytes_per_sec(&self) -> f64 {
        lane_bits_per_sec(self.gear, self.rate_b) * coding_efficiency(self.gear) / 8.0
            * f64::from(self.lanes)
    }

    /// Bytes on the wire for a UPIU of `upiu_bytes` (framed by UniPro).
    pub fn wire_bytes(&self, upiu_bytes: u64) -> u64 {
        let frames = upiu_bytes.div_ceil(u64::from(self.frame_payload)).max(1);
        upiu_bytes + frames * u64::from(self.frame_overhead)
    }

    /// Time to send a UPIU of `upiu_bytes`, ns (rounded up).
    pub fn xfer_ns(&self, upiu_bytes: u64) -> Ns {
        (self.wire_bytes(upiu_bytes) as f64 * 1e9 / self.bytes_per_sec()).ceil() as Ns
    }
}

/// Both directions of one link.
pub struct UfsLink {
    pub p: UfsLinkParams,
    /// Host → device.
    down: Timeline,
    /// Device → host.
    up: Timeline,
    pub bytes_down: u64,
    pub bytes_up: u64,
    /// Memo: transfer time of the last few sizes (the hot path repeats them).
    memo: [(u64, Ns); 4],
}

impl UfsLink {
    pub fn new(p: UfsLinkParams) -> UfsLink {
        UfsLink {
            p,
            down: Timeline::new(),
            up: Timeline::new(),
            bytes_down: 0,
            bytes_up: 0,
            memo: [(u64::MAX, 0); 4],
        }
    }

    fn dur(&mut self, bytes: u64) -> Ns {
        let slot = (bytes as usize) & 3;
        if self.memo[slot].0 == bytes {
            return self.memo[slot].1;
        }
        let d = self.p.xfer_ns(bytes);
        self.memo[slot] = (bytes, d);
        d
    }

    /// Send a UPIU host → device no earlier than `at`; returns when it has
    /// arrived.
    pub fn send_down(&mut self, at: Ns, upiu_bytes: u64) -> Ns {
        let d = self.dur(upiu_bytes);
        self.bytes_down += upiu_bytes;
        self.down.reserve(at, d) + d
    }

    /// Send a UPIU device → host no earlier than `at`; returns arrival.
    pub fn send_up(&mut self, at: Ns, upiu_bytes: u64) -> Ns {
        let d = self.dur(upiu_bytes);
        self.bytes_up += upiu_bytes;
        self.up.reserve(at, d) + d
    }

    /// A power mode change to HS gear `gear` (clock scaling).
    pub fn set_gear(&mut self, gear: u32) {
        if gear != self.p.gear {
            self.p.gear = gear;
            self.memo = [(u64::MAX, 0); 4];
        }
    }

    pub fn prune(&mut self, now: Ns) {
        self.down.prune(now);
        self.up.prune(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hs_g3_x2_4k_data_in_closed_form() {
        let p = UfsLinkParams {
            gear: 3,
            rate_b: true,
            lanes: 2,
            frame_payload: 286,
            frame_overhead: 8,
        };
        // DATA IN UPIU: 32 B header + 4096 B; ceil(4128/286) = 15 frames of
        // 8 B overhead -> 4248 B. HS-G3B 5830.4 Mbit/s x 0.8 / 8 = 583.04
        // MB/s per lane, 1166.08 MB/s on two lanes.
        let wire = 4128 + 15 * 8;
        assert_eq!(p.wire_bytes(4128), wire);
        let ns = (wire as f64 / 1166.08e6 * 1e9).ceil() as u64;
        assert_eq!(ns, 3643);
        assert_eq!(p.xfer_ns(UPIU_HEADER_BYTES + 4096), ns);
        let mut link = UfsLink::new(p);
        assert_eq!(link.send_up(1000, 4128), 1000 + ns);
        // The direction is busy: the next transfer queues behind it.
        assert_eq!(link.send_up(1000, 4128), 1000 + 2 * ns);
        // The other direction is free.
        assert_eq!(link.send_down(1000, 32), 1000 + p.xfer_ns(32));
    }

    #[test]
    fn gear_rates() {
        assert_eq!(lane_bits_per_sec(1, false), 1248e6);
        assert_eq!(lane_bits_per_sec(4, true), 11660.8e6);
        assert!((coding_efficiency(5) - 0.984_615).abs() < 1e-5);
    }
}
