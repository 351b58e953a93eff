//! An NVMe SSD as a service-time model: the controller works on up to
//! `device.parallel_units` commands at once (its dies and planes, each
//! with its own timeline); a command takes a fixed time (`read_latency`
//! or `write_latency`) plus its bytes at the media rate on the first unit
//! that is free. The PCIe link in front of it (doorbell, command fetch,
//! data, completion entry) is the driver's ([`crate::link::pcie`]).
//!
//! The fixed part may vary (`device.latency_cv`, its coefficient of
//! variation, 0 to 1): `(1 - cv)` of it fixed plus an exponential part of
//! mean `cv` times it, as the generic queueing device draws its service
//! times ([`super::queue`]); the mean is unchanged.

use super::{BlockBackend, Command, Completion, Op};
use crate::profile::limits::{COST, RATE};
use crate::profile::{range, Profile};
use crate::sim::rng::RngStream;
use crate::sim::Ns;

pub struct NvmeSsd {
    capacity: u64,
    read_latency: Ns,
    write_latency: Ns,
    media_bytes_per_s: f64,
    /// Commands the controller works on at once; each unit is free again
    /// at the given time.
    units: Vec<Ns>,
    latency_cv: f64,
    /// The fixed part's random share; the probe table builds devices
    /// without the run seed, so the stream is the same in every run.
    rng: RngStream,
}

crate::params! {
    /// The NVMe SSD as a service-time model (without `[device.flash]`).
    pub struct NvmeSsdParams {
        /// The device's independently busy flash units (dies and planes).
        parallel_units: u64 = required count(
            "device.parallel_units",
            range(
                1.0,
                65536.0,
                "the device's independently busy flash units (dies and planes); the model \
                 keeps one timeline each, and 65536 is past any SSD",
            )
        ),
        /// The rate a unit moves a command's bytes at.
        media_rate: f64 = required rate("device.media_rate", RATE),
        /// A read's fixed time on its unit.
        read_latency: Ns = required ns("device.read_latency", COST),
        /// A write's fixed time on its unit.
        write_latency: Ns = required ns("device.write_latency", COST),
        /// The coefficient of variation of a command's fixed time.
        latency_cv: f64 = required ratio(
            "device.latency_cv",
            range(
                0.0,
                1.0,
                "the coefficient of variation of a command's fixed time, 0 (fixed) to 1 \
                 (exponential): the shifted exponential keeps its mean",
            )
        ),
    }
}

impl NvmeSsd {
    pub fn from_profile(p: &Profile) -> crate::Result<NvmeSsd> {
        let np = NvmeSsdParams::read(p)?;
        Ok(NvmeSsd {
            capacity: super::CapacityParams::read(p)?.capacity,
            read_latency: np.read_latency,
            write_latency: np.write_latency,
            media_bytes_per_s: np.media_rate,
            units: vec![0; np.parallel_units as usize],
            latency_cv: np.latency_cv,
            rng: RngStream::new(0, "device.nvme.latency"),
        })
    }

    /// A command's time on its unit: the fixed part and the bytes at the
    /// media rate.
    pub fn on_unit_ns(&self, op: Op, len: u32) -> Ns {
        let fixed = if op == Op::Read {
            self.read_latency
        } else {
            self.write_latency
        };
        fixed + (f64::from(len) * 1e9 / self.media_bytes_per_s).round() as Ns
    }
}

impl BlockBackend for NvmeSsd {
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion {
        if !cmd.op.conventional() {
            return Completion::unsupported(at);
        }
        let mut on_unit = self.on_unit_ns(cmd.op, cmd.len);
        if self.latency_cv > 0.0 {
            let fixed = if cmd.op == Op::Read {
                self.read_latency
            } else {
                self.write_latency
            } as f64;
            let cv = self.latency_cv;
            let drawn = ((1.0 - cv) * fixed + self.rng.exponential(cv * fixed)).round() as Ns;
            on_unit = on_unit - fixed as Ns + drawn;
        }
        // The earliest free unit (the first of equals).
        let (i, free) = self
            .units
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(_, t)| t)
            .expect("at least one unit");
        let done = at.max(free) + on_unit;
        self.units[i] = done;
        Completion::ok(done)
    }
}
