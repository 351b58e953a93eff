//! A disk whose device side is a queueing model ([`QueueDevice`]): for a
//! device whose inside is unknown and whose parameters are fitted to fio
//! runs (`flashpath calibrate`, docs/calibrate.md). The driver is a plain
//! blk-mq driver: `hw_queues` queues of `queue_depth` tags, `queue_rq`
//! hands the command to the device, and the device's completion raises an
//! interrupt whose handler costs `irq_handler`; no polling. Whatever the
//! real driver does beyond that (a virtio kick's VM exit, a SCSI HBA's
//! firmware) is either in these two costs or in the device's fitted
//! service time.

use super::{BlkStatus, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverEvent, DriverRq};
use crate::device::queue::{Dispatch, Policy, QueueDevice, QueueParams};
use crate::device::{BadBlocks, BlockBackend, CapacityParams, Status};
use crate::error::Result;
use crate::profile::limits::{CAPACITY, COST, QUEUES, QUEUE_DEPTH, RATE};
use crate::profile::{range, Profile};
use crate::sim::Ns;

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

/// The generic device's events (a device that keeps a queue only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A server came free or the throttle let a command in: start what
    /// can start.
    Dispatch,
}

pub struct Generic {
    dev: QueueDevice,
    queue_depth: u32,
    hw_queues: u32,
    cpu: DriverCpuCosts,
    badblocks: BadBlocks,
}

crate::choice_enum! {
    /// `device.dispatch`: how a command finds its server.
    pub enum DispatchName {
        /// One queue before all servers: the first free server takes it.
        Shared = "shared",
        /// The server its address hashes to.
        ByAddress = "by-address",
    }
}

crate::choice_enum! {
    /// `device.queue_policy`: which waiting command a free server takes.
    pub enum PolicyName {
        /// Arrival order (every profile's before the key existed).
        Fifo = "fifo",
        /// Reads before waiting writes, up to `writes_starved` reads
        /// passing one (block/mq-deadline.c's rule).
        ReadsFirst = "reads-first",
    }
}

crate::params! {
    /// The generic device's queueing model (device/queue.rs) and its
    /// driver's queues, fitted by `flashpath calibrate`.
    pub struct GenericParams {
        /// Commands the device serves at once.
        servers: u32 = required count_u32(
            "device.servers",
            range(
                1.0,
                65536.0,
                "commands the device serves at once: 1 to 65536 (NVMe's largest queue)",
            )
        ),
        /// Commands per second the throttle lets in; 0: no cap.
        iops_cap: u64 = required count("device.iops_cap", CAP),
        /// Per-command time of a read, whatever its size.
        read_fixed: Ns = required ns("device.read_fixed", COST),
        /// Per-command time of a write, whatever its size.
        write_fixed: Ns = required ns("device.write_fixed", COST),
        /// Bytes per second a server moves: the per-byte part of a command.
        transfer_rate: f64 = required rate("device.transfer_rate", RATE),
        /// How a command finds its server.
        dispatch: DispatchName = required choice("device.dispatch", DispatchName),
        /// Coefficient of variation of the service time.
        service_cv: f64 = required ratio(
            "device.service_cv",
            range(
                0.0,
                1.0,
                "the service time's coefficient of variation: 0 (fixed) to 1 (exponential)",
            )
        ),
        /// Bytes per second the throttle lets in; 0: no cap.
        bandwidth_cap: f64 = required rate("device.bandwidth_cap", CAP),
        /// Tags per hardware queue.
        queue_depth: u32 = required count_u32("device.queue_depth", QUEUE_DEPTH),
        /// Hardware queues.
        hw_queues: u32 = required count_u32("device.hw_queues", QUEUES),
        /// The log-normal sigma of the service time's variable part (same
        /// mean). 0: the shifted exponential of `service_cv`.
        service_tail: f64 = default(0.0) ratio(
            "device.service_tail",
            range(
                0.0,
                3.0,
                "the log-normal sigma of the service time's variable part: 0 (exponential) to 3",
            )
        ),
        /// Extra time when a server switches between reads and writes.
        turnaround: Ns = default(0) ns("device.turnaround", COST),
        /// Time a command of the other direction than its server's previous
        /// one waits after admission before it can start, overlapping the
        /// server's queued work (no server time). 0: none.
        switch_delay: Ns = default(0) ns("device.switch_delay", COST),
        /// Bytes written between write-backs of the write-back cache. 0: no
        /// cache.
        writeback_bytes: u64 = default(0) bytes("device.writeback_bytes", CAPACITY_OR_NONE),
        /// The time a write-back holds the write that filled the cache.
        writeback_flush: Ns = default(0) ns("device.writeback_flush", COST),
        /// The log-normal sigma of a write-back's time. 0: always the same.
        writeback_spread: f64 = default(0.0) ratio(
            "device.writeback_spread",
            range(
                0.0,
                3.0,
                "the log-normal sigma of a write-back's time: 0 (always the same) to 3",
            )
        ),
        /// Which waiting command a free server takes.
        queue_policy: PolicyName = default(PolicyName::Fifo) choice(
            "device.queue_policy",
            PolicyName
        ),
        /// Under `reads-first`: reads that may pass a waiting write before
        /// it is taken (mq-deadline's `writes_starved`, 2 by default).
        writes_starved: u32 = default(2) count_u32(
            "device.writes_starved",
            range(
                0.0,
                1e6,
                "reads that may pass a waiting write: 0 (writes first) to 1000000",
            )
        ),
    }
}

impl Generic {
    pub fn from_profile(p: &Profile) -> Result<Generic> {
        let g = GenericParams::read(p)?;
        let params = QueueParams {
            capacity: CapacityParams::read(p)?.capacity,
            read_fixed: g.read_fixed,
            write_fixed: g.write_fixed,
            transfer_rate: g.transfer_rate,
            servers: g.servers,
            dispatch: match g.dispatch {
                DispatchName::Shared => Dispatch::Shared,
                DispatchName::ByAddress => Dispatch::ByAddress,
            },
            service_cv: g.service_cv,
            iops_cap: g.iops_cap as f64,
            bandwidth_cap: g.bandwidth_cap,
            // The tail, the turnaround and the write-back cache are later
            // parameters (docs/calibrate.md): their declared defaults (0)
            // give a profile without them none, as every profile fitted
            // before them had.
            service_tail: g.service_tail,
            turnaround: g.turnaround,
            switch_delay: g.switch_delay,
            writeback_bytes: g.writeback_bytes,
            writeback_flush: g.writeback_flush,
            writeback_spread: g.writeback_spread,
            policy: match g.queue_policy {
                PolicyName::Fifo => Policy::Fifo,
                PolicyName::ReadsFirst => Policy::ReadsFirst,
            },
            writes_starved: g.writes_starved,
        };
        let mut dev = QueueDevice::new(params);
        // At most every tag of every queue waits at once.
        dev.reserve(g.queue_depth as usize * g.hw_queues as usize);
        Ok(Generic {
            dev,
            queue_depth: g.queue_depth,
            hw_queues: g.hw_queues,
            cpu: DriverCpuCosts::from_profile(p, false)?,
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
        let cmd = rq.command();
        if self.dev.queued() {
            if !cmd.op.conventional() {
                ctx.complete(
                    ctx.now(),
                    rq.tag,
                    BlkStatus::from_device(Status::Unsupported),
                );
                return;
            }
            let admitted = self.dev.enqueue(ctx.now(), &cmd, rq.tag);
            if admitted > ctx.now() {
                ctx.schedule(admitted, Event::Dispatch);
            } else {
                self.dispatch(ctx);
            }
            return;
        }
        let done = self
            .badblocks
            .outcome(&cmd, self.dev.submit(ctx.now(), &cmd));
        ctx.complete(done.at, rq.tag, BlkStatus::from_device(done.status));
    }
    fn on_event(&mut self, event: DriverEvent, ctx: &mut DriverCtx<'_, E>) {
        debug_assert_eq!(event, DriverEvent::Generic(Event::Dispatch));
        self.dispatch(ctx);
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
        if p.switch_delay > 0 {
            c["switch_waits"] = self.dev.switch_waits.into();
            c["switch_wait_ns"] = self.dev.switch_wait_ns.into();
        }
        if p.policy == Policy::ReadsFirst {
            c["reads_passed"] = self.dev.reads_passed.into();
        }
        c
    }
}

impl Generic {
    /// Start every waiting command a free server can take now; each
    /// started command's completion is posted, and its server's freeing
    /// scheduled to start the next.
    fn dispatch<E>(&mut self, ctx: &mut DriverCtx<'_, E>) {
        let now = ctx.now();
        while let Some(s) = self.dev.start_next(now) {
            let done = self.badblocks.outcome(&s.cmd, s.done);
            ctx.complete(done.at, s.tag, BlkStatus::from_device(done.status));
            ctx.schedule(s.free_at, Event::Dispatch);
        }
    }
}
