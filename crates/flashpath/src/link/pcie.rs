//! PCI Express as an NVMe device sees it: posted memory writes (doorbell
//! MMIO, completion entries, MSI-X messages, read data) arrive one link
//! latency after they leave; a non-posted read (the device fetching a
//! submission entry) costs a round trip; payload moves at the lanes' rate
//! less the TLP framing of each max-payload-sized packet.

use crate::profile::limits::COST;
use crate::profile::{range, Profile};
use crate::sim::Ns;

/// Bytes of framing, sequence number, 3-DW header plus 64-bit addressing
/// and LCRC around each TLP's payload (PCIe base spec: STP 1 + seq 2 +
/// header 16 + LCRC 4 + END 1).
pub const TLP_OVERHEAD_BYTES: u32 = 24;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pcie {
    /// Raw payload rate of all lanes after line coding, bytes/s.
    pub lane_bytes_per_s: f64,
    pub lanes: u32,
    /// One-way latency of a posted write (root complex to endpoint or
    /// back), ns.
    pub latency: Ns,
    pub max_payload: u32,
}

crate::params! {
    /// The PCIe link between the root complex and the NVMe controller.
    pub struct PcieParams {
        /// The PCIe generation: its lane rate and line coding.
        gen: u64 = required count("link.pcie.gen", range(1.0, 4.0, "PCIe generations 1 to 4 are modelled")),
        /// Lanes of the link.
        lanes: u32 = required count_u32("link.pcie.lanes", range(1.0, 32.0, "a PCIe link has 1 to 32 lanes")),
        /// Max_Payload_Size: the largest TLP payload.
        max_payload: u64 = required bytes(
            "link.pcie.max_payload",
            range(
                128.0,
                4096.0,
                "PCIe Max_Payload_Size is 128 to 4096 bytes (Device Control register)",
            )
        ),
        /// One-way latency of a posted write (root complex to endpoint or
        /// back).
        latency: Ns = required ns("link.pcie.latency", COST),
    }
}

impl Pcie {
    pub fn from_profile(p: &Profile) -> crate::Result<Pcie> {
        let pp = PcieParams::read(p)?;
        // Per lane after line coding: gen1 2.5 GT/s 8b/10b, gen2 5 GT/s
        // 8b/10b, gen3 8 GT/s 128b/130b, gen4 16 GT/s 128b/130b.
        let lane = match pp.gen {
            1 => 2.5e9 * 0.8 / 8.0,
            2 => 5e9 * 0.8 / 8.0,
            3 => 8e9 * 128.0 / 130.0 / 8.0,
            4 => 16e9 * 128.0 / 130.0 / 8.0,
            _ => unreachable!("the range holds generations 1 to 4"),
        };
        Ok(Pcie {
            lane_bytes_per_s: lane,
            lanes: pp.lanes,
            latency: pp.latency,
            max_payload: pp.max_payload as u32,
        })
    }

    /// Time to move `bytes` of payload (serialisation only).
    pub fn transfer_ns(&self, bytes: u32) -> Ns {
        let tlps = bytes.div_ceil(self.max_payload).max(1);
        let wire = f64::from(bytes) + f64::from(tlps * TLP_OVERHEAD_BYTES);
        (wire * 1e9 / (self.lane_bytes_per_s * f64::from(self.lanes))).round() as Ns
    }

    /// A posted write (doorbell, completion entry, MSI-X message) arrives.
    pub fn posted(&self) -> Ns {
        self.latency
    }

    /// A non-posted read of a small entry: request there, completion back.
    pub fn read_round_trip(&self) -> Ns {
        2 * self.latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gen3_x4_moves_4k_in_about_a_microsecond() {
        let l = Pcie {
            lane_bytes_per_s: 8e9 * 128.0 / 130.0 / 8.0,
            lanes: 4,
            latency: 500,
            max_payload: 256,
        };
        // 4096 + 16 * 24 = 4480 bytes at 3.938 GB/s = 1137.6 ns.
        assert_eq!(l.transfer_ns(4096), 1138);
        assert_eq!(l.read_round_trip(), 1000);
    }
}
