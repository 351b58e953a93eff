//! A disk whose device side is a queueing model ([`QueueDevice`]): for a
//! device whose inside is unknown and whose parameters are fitted to fio
//! runs (`flashpath calibrate`, docs/calibrate.md). The driver is a plain
//! blk-mq driver: `hw_queues` queues of `queue_depth` tags, `queue_rq`
//! hands the command to the device, and the device's completion raises an
//! interrupt whose handler costs `irq_handler`; no polling. Whatever the
//! real driver does beyond that (a virtio kick's VM exit, a SCSI HBA's
//! firmware) is either in these two costs or in the device's fitted
//! service time.

use super::{BlkStatus, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverRq};
use crate::device::queue::{Dispatch, QueueDevice, QueueParams};
use crate::device::{BadBlocks, BlockBackend, Command};
use crate::error::Result;
use crate::profile::limits::{CAPACITY, COST, QUEUES, QUEUE_DEPTH, RATE};
use crate::profile::{range, Profile};

/// A cap's range: 0 (no cap) or a rate the gate divides by.
const CAP: crate::profile::Range = range(
    0.0,
    1e12,
    "a throttle's cap: 0 for none, at most 1 T per second (commands or bytes)",
);

/// The write-back cache's size: 0 (no cache) up to a device's capacity.
const CAPACITY_OR_NONE: crate::profile::Range = range(
    0.0,
    CAPACITY.max,
    "bytes written between write-backs: 0 for no cache, at most a device's capacity",
);

/// A time key that a profile may leave out (then 0).
fn optional_ns(p: &Profile, key: &str) -> Result<u64> {
    if p.has(key) {
        p.ns(key, COST)
    } else {
        Ok(0)
    }
}

pub struct Generic {
    dev: QueueDevice,
    queue_depth: u32,
    hw_queues: u32,
    cpu: DriverCpuCosts,
    badblocks: BadBlocks,
}

impl Generic {
    pub fn from_profile(p: &Profile) -> Result<Generic> {
        let servers = p.count_u32(
            "device.servers",
            range(
                1.0,
                65536.0,
                "commands the device serves at once: 1 to 65536 (NVMe's largest queue)",
            ),
        )?;
        let iops_cap = p.count("device.iops_cap", CAP)? as f64;
        let params = QueueParams {
            capacity: p.bytes("device.capacity", CAPACITY)?,
            read_fixed: p.ns("device.read_fixed", COST)?,
            write_fixed: p.ns("device.write_fixed", COST)?,
            transfer_rate: p.rate("device.transfer_rate", RATE)?,
            servers,
            dispatch: match p
                .choice("device.dispatch", &["shared", "by-address"])?
                .as_str()
            {
                "shared" => Dispatch::Shared,
                _ => Dispatch::ByAddress,
            },
            service_cv: p.ratio(
                "device.service_cv",
                range(
                    0.0,
                    1.0,
                    "the service time's coefficient of variation: 0 (fixed) to 1 (exponential)",
                ),
            )?,
            iops_cap,
            bandwidth_cap: p.rate("device.bandwidth_cap", CAP)?,
            // The tail, the turnaround and the write-back cache are later
            // parameters (docs/calibrate.md): a profile without them has
            // none, as every profile fitted before them was.
            service_tail: if p.has("device.service_tail") {
                p.ratio(
                    "device.service_tail",
                    range(
                        0.0,
                        3.0,
                        "the log-normal σ of the service time's variable part: 0 (exponential) to 3",
                    ),
                )?
            } else {
                0.0
            },
            turnaround: optional_ns(p, "device.turnaround")?,
            writeback_bytes: if p.has("device.writeback_bytes") {
                p.bytes("device.writeback_bytes", CAPACITY_OR_NONE)?
            } else {
                0
            },
            writeback_flush: optional_ns(p, "device.writeback_flush")?,
            writeback_spread: if p.has("device.writeback_spread") {
                p.ratio(
                    "device.writeback_spread",
                    range(
                        0.0,
                        3.0,
                        "the log-normal σ of a write-back's time: 0 (always the same) to 3",
                    ),
                )?
            } else {
                0.0
            },
        };
        Ok(Generic {
            dev: QueueDevice::new(params),
            queue_depth: p.count_u32("device.queue_depth", QUEUE_DEPTH)?,
            hw_queues: p.count_u32("device.hw_queues", QUEUES)?,
            cpu: DriverCpuCosts {
                submit: p.ns("driver.queue_rq", COST)?,
                irq_handler: p.ns("driver.irq_handler", COST)?,
                poll_iteration: 0,
            },
            badblocks: BadBlocks::from_profile(p)?,
        })
    }
}

impl<E> Driver<E> for Generic {
    fn info(&self) -> DiskInfo {
        DiskInfo {
            hw_queues: self.hw_queues,
            ..DiskInfo::single_queue("sda", self.dev.capacity(), self.queue_depth, self.cpu)
        }
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        let cmd = Command::new(rq.ddir, rq.offset, rq.len);
        let done = self
            .badblocks
            .outcome(&cmd, self.dev.submit(ctx.now(), &cmd));
        ctx.complete(done.at, rq.tag, BlkStatus::from_device(done.status));
    }
    fn counters(&self) -> serde_json::Value {
        let mut c = serde_json::json!({
            "kind": "generic",
            "commands": self.dev.commands,
            "device_busy_ns": self.dev.busy_ns,
            "throttled_ns": self.dev.throttled_ns,
        });
        // Counted only for a device that has the mechanism, so a profile
        // without it reports what it did before the mechanism existed.
        let p = self.dev.params();
        if p.writeback_bytes > 0 {
            c["writebacks"] = self.dev.writebacks.into();
        }
        if p.turnaround > 0 {
            c["turnarounds"] = self.dev.turnarounds.into();
        }
        c
    }
}
