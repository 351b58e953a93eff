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

use super::{DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverEvent, DriverRq};
use crate::error::{InputError, Result};
use crate::profile::Profile;
use crate::sim::Ns;

pub struct VirtioBlk {
    name: String,
    capacity: u64,
    queue_size: u32,
    num_queues: u32,
    host_fixed: Ns,
    /// Host copy rate, bytes per ns.
    host_bytes_per_ns: f64,
    irq_inject: Ns,
    cpu: DriverCpuCosts,
    /// When the host I/O thread is free again.
    host_free_at: Ns,
    kicks: u64,
    completed: u64,
    host_busy_ns: u64,
}

impl VirtioBlk {
    pub fn from_profile(p: &Profile) -> Result<VirtioBlk> {
        let queue_size = p.count("device.queue_size")? as u32;
        let num_queues = p.count("device.num_queues")? as u32;
        if queue_size == 0 || num_queues == 0 {
            return Err(InputError::new(
                p.files.last().cloned().unwrap_or_default(),
                None,
                "device.queue_size and device.num_queues must be at least 1",
            ));
        }
        let rate = p.rate("device.host_rate")?;
        if rate <= 0.0 {
            return Err(InputError::new(
                p.files.last().cloned().unwrap_or_default(),
                None,
                "device.host_rate must be positive",
            ));
        }
        // The kick's VM exit stalls the submitting vCPU: part of queue_rq.
        let submit = p.ns("driver.queue_rq")? + p.ns("driver.kick_vmexit")?;
        Ok(VirtioBlk {
            name: "vda".into(),
            capacity: p.bytes("device.capacity")?,
            queue_size,
            num_queues,
            host_fixed: p.ns("device.host_fixed")?,
            host_bytes_per_ns: rate / 1e9,
            irq_inject: p.ns("device.irq_inject")?,
            cpu: DriverCpuCosts {
                submit,
                irq_handler: p.ns("driver.irq_handler")?,
                poll_iteration: 0,
            },
            host_free_at: 0,
            kicks: 0,
            completed: 0,
            host_busy_ns: 0,
        })
    }

    /// The host's service time of one request.
    pub fn service_ns(&self, len: u32) -> Ns {
        self.host_fixed + (f64::from(len) / self.host_bytes_per_ns).ceil() as Ns
    }
}

impl<E> Driver<E> for VirtioBlk {
    fn info(&self) -> DiskInfo {
        DiskInfo {
            hw_queues: self.num_queues,
            ..DiskInfo::single_queue(&self.name, self.capacity, self.queue_size, self.cpu)
        }
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        self.kicks += 1;
        let now = ctx.now();
        let start = now.max(self.host_free_at);
        let service = self.service_ns(rq.len);
        self.host_free_at = start + service;
        self.host_busy_ns += service;
        self.completed += 1;
        ctx.complete(self.host_free_at + self.irq_inject, rq.tag);
    }
    fn on_event(&mut self, _event: DriverEvent, _ctx: &mut DriverCtx<'_, E>) {}
    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "virtio-blk",
            "kicks": self.kicks,
            "completed": self.completed,
            "host_busy_ns": self.host_busy_ns,
        })
    }
}
