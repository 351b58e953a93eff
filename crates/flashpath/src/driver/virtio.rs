//! virtio-blk (drivers/block/virtio_blk.c) in a KVM guest, with the host's
//! QEMU device model behind it.
//!
//! Guest side: `virtio_queue_rq` puts the request's descriptors on the
//! virtqueue (descriptor ring of `queue_size` entries, which is also the
//! blk-mq queue depth: one request per indirect descriptor) and kicks the
//! device (`virtqueue_notify`: an MMIO/PIO write that traps, a VM exit,
//! paid on the submitting vCPU). Host side: one I/O thread pops requests in
//! ring order and serves each from RAM in `host_fixed + bytes / host_rate`,
//! one at a time. It then pushes the used-ring entry and injects the
//! completion interrupt, which reaches the guest `irq_inject` later; the
//! guest's `virtblk_done` runs as the driver's interrupt handler.

use super::{DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverRq};
use crate::device::ram::RamDevice;
use crate::device::{BlockBackend, Command};
use crate::error::Result;
use crate::profile::limits::{CAPACITY, COST, QUEUES, RATE};
use crate::profile::{range, Profile};
use crate::sim::Ns;

pub struct VirtioBlk {
    name: String,
    queue_size: u32,
    num_queues: u32,
    /// The host's I/O thread over the RAM image: one request at a time,
    /// `host_fixed + bytes / host_rate` each.
    host: RamDevice,
    irq_inject: Ns,
    cpu: DriverCpuCosts,
    kicks: u64,
    completed: u64,
}

impl VirtioBlk {
    pub fn from_profile(p: &Profile) -> Result<VirtioBlk> {
        let queue_size = p.count_u32(
            "device.queue_size",
            range(
                1.0,
                32768.0,
                "a virtqueue's size: at most 32768 entries (virtio 1.x, split virtqueues)",
            ),
        )?;
        let num_queues = p.count_u32("device.num_queues", QUEUES)?;
        let rate = p.rate("device.host_rate", RATE)?;
        // The kick's VM exit stalls the submitting vCPU: part of queue_rq.
        let submit = p.ns("driver.queue_rq", COST)? + p.ns("driver.kick_vmexit", COST)?;
        Ok(VirtioBlk {
            name: "vda".into(),
            queue_size,
            num_queues,
            host: RamDevice::serial(
                p.bytes("device.capacity", CAPACITY)?,
                p.ns("device.host_fixed", COST)?,
                rate,
            ),
            irq_inject: p.ns("device.irq_inject", COST)?,
            cpu: DriverCpuCosts {
                submit,
                irq_handler: p.ns("driver.irq_handler", COST)?,
                poll_iteration: 0,
            },
            kicks: 0,
            completed: 0,
        })
    }
}

impl<E> Driver<E> for VirtioBlk {
    fn info(&self) -> DiskInfo {
        DiskInfo {
            hw_queues: self.num_queues,
            ..DiskInfo::single_queue(&self.name, self.host.capacity(), self.queue_size, self.cpu)
        }
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        self.kicks += 1;
        let served = self
            .host
            .submit(ctx.now(), &Command::new(rq.ddir, rq.offset, rq.len));
        self.completed += 1;
        ctx.complete(served.at + self.irq_inject, rq.tag);
    }
    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "virtio-blk",
            "kicks": self.kicks,
            "completed": self.completed,
            "host_busy_ns": self.host.busy_ns,
        })
    }
}
