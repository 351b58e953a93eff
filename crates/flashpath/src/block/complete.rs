//! The completion side of blk-mq (block/blk-mq.c): the device posted a
//! request's completion; the block layer accounts the disk, puts the tag
//! (a request waiting for it is issued, or restarted on the completing
//! CPU's queue run), and completes the request where the driver signals
//! it: a hard interrupt on the CPU its vector targets (idle exit, handler,
//! `blk_mq_complete_request`), a softirq or inline on the submitting CPU,
//! or to the task that polls for it. The DMA mapping is undone there
//! (`dma_unmap_sg`: swiotlb's copy back and release).

use super::flush::flush_policy;
use super::{BlkCtx, BlockEvent, BlockLayer, RqKind};
use crate::driver::{BlkStatus, CompletionSignal, DeviceSignal, DriverRq};
use crate::host::task::{Host, TaskState};
use crate::sim::Ns;
use crate::types::{Ddir, IrqCpu, Op};

/// Where a completed request went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Its submitter polls for it (spinning, or asleep in hybrid polling's
    /// first sleep): the poller finds it.
    Polled { thread: u32 },
    /// Completed by the interrupt (or softirq, or inline) path on `cpu`,
    /// whose work began at `start` and ended at `at`: whoever waits for
    /// the request (its task, or the page cache for `kind`) is woken from
    /// there.
    Signalled {
        kind: RqKind,
        thread: u32,
        cpu: u32,
        start: Ns,
        at: Ns,
    },
    /// Not over yet: its data is written, and the flush that follows a
    /// FUA write on a cache without FUA went to the driver (blk-flush.c's
    /// REQ_FSEQ_POSTFLUSH); the request completes with the flush.
    PostFlush,
}

/// EOPNOTSUPP, EIO, EOVERFLOW, ETOOMANYREFS and EREMOTEIO
/// (include/uapi/asm-generic/errno*.h).
pub const EOPNOTSUPP: i32 = 95;
pub const EIO: i32 = 5;
pub const EOVERFLOW: i32 = 75;
pub const ETOOMANYREFS: i32 = 109;
pub const EREMOTEIO: i32 = 121;

/// The errno of a request's status, as block/blk-core.c's `blk_errors`
/// table gives it (`blk_status_to_errno`, negated: the positive errno a
/// system call or an io_event's `res` carries).
pub fn blk_status_to_errno(status: BlkStatus) -> i32 {
    match status {
        BlkStatus::Ok => 0,
        BlkStatus::NotSupp => EOPNOTSUPP,
        BlkStatus::IoErr => EIO,
        BlkStatus::ZoneOpenResource => ETOOMANYREFS,
        BlkStatus::ZoneActiveResource => EOVERFLOW,
        BlkStatus::Target => EREMOTEIO,
    }
}

impl BlockLayer {
    /// The requests a completion's restart run handed out that still need
    /// their DMA mapping: mapped and issued by that run, queued from
    /// `cpu` at `at` (`restart_dispatch`).
    pub(super) fn restart_mapped<E>(&mut self, cpu: u32, at: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        for i in 0..self.to_map.len() {
            let next = self.to_map[i];
            self.restart_dispatch(next, cpu, at, ctx);
        }
        self.to_map.clear();
    }

    /// The CPU that takes the completion interrupt of a request submitted
    /// on `rq_cpu`, raised at `at`.
    pub(super) fn irq_target(&self, rq_cpu: u32, host: &mut Host, at: Ns) -> u32 {
        match self.irq_cpu {
            IrqCpu::Submitter => rq_cpu,
            IrqCpu::Fixed(c) => c.min(host.ncpus() - 1),
            IrqCpu::OneOfN(mask) => host.one_of_n_target(mask, at),
        }
    }

    /// The device posted the completion of request `key` at `now`, ended
    /// with `status` (blk_mq_end_request: the status becomes the errno the
    /// submitter sees).
    pub fn complete<E>(
        &mut self,
        key: u32,
        status: BlkStatus,
        now: Ns,
        ctx: &mut BlkCtx<'_, E>,
    ) -> Completion
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let (fua, has_data, rq_cpu) = {
            let rq = self.rqs.get(key);
            (rq.fua, rq.unit.len > 0, rq.cpu)
        };
        if fua
            && status == BlkStatus::Ok
            && flush_policy(self.write_cache, has_data, false, true).postflush
        {
            // blk_flush_complete_seq after REQ_FSEQ_DATA: the post-flush
            // goes to the driver (blk_kick_flush; the flush request
            // borrows the data request's tag) before the request ends.
            self.rqs.get_mut(key).fua = false;
            let drq = DriverRq {
                tag: key,
                op: Op::Flush,
                fua: false,
                ddir: Ddir::Write,
                offset: 0,
                len: 0,
                polled: false,
                cpu: rq_cpu,
                // blk_kick_flush's flush request carries no priority.
                ioprio: 0,
                hint: crate::types::Hint::None,
            };
            let (driver, mut dctx) = ctx.driver_call();
            driver.queue_rq(drq, &mut dctx);
            let ran_on = dctx.ran_on();
            ctx.driver_ran_on(ran_on);
            return Completion::PostFlush;
        }
        // A Zone Append's completion carries the LBA the device wrote
        // (nvme_uring_cmd_end_io puts the result in the big CQE); fio
        // keeps io_u->offset, the write pointer zbd.c chose, and reads no
        // result (engines/io_uring.c fio_ioring_cmd_event): counted where
        // the two differ.
        if self.rqs.get(key).write_op == Op::ZoneAppend && status == BlkStatus::Ok {
            let (driver, _) = ctx.driver_call();
            if let Some(lba) = driver.take_result(key) {
                self.zone_appends += 1;
                if lba != self.rqs.get(key).bio.offset {
                    self.appends_moved += 1;
                }
            }
        }
        // Every fio I/O merged into the request ends with its status
        // (blk_update_request -> bio_endio of each bio).
        let errno = blk_status_to_errno(status);
        let mut k = key;
        while k != super::merge::NO_BIO {
            let rq = self.rqs.get_mut(k);
            rq.error = errno;
            k = rq.next_bio;
        }
        let sent = self.dev_start[key as usize];
        let (tid, hctx, polled, rq_cpu, ddir, blk_start, kind, ioprio, passthrough) = {
            let rq = self.rqs.get(key);
            (
                rq.thread,
                rq.hctx,
                rq.polled,
                rq.cpu,
                rq.unit.ddir,
                rq.blk_start,
                rq.kind,
                rq.ioprio,
                rq.passthrough,
            )
        };
        if kind == RqKind::Fio {
            ctx.breakdown.device_ns += u128::from(now - sent);
        }
        if !kind.kernel_wait() && !passthrough {
            self.disk_account(now, -1);
            let disk = &mut self.disk.util;
            match ddir {
                Ddir::Read => {
                    disk.read_ios += 1;
                    disk.read_ticks += now - blk_start;
                }
                _ => {
                    disk.write_ios += 1;
                    disk.write_ticks += now - blk_start;
                }
            }
        }
        // A zone's next plugged write is submitted by the plug's work
        // (blk_zone_write_plug_finish_request -> disk_zone_wplug_unplug_bio).
        if ddir == Ddir::Write && kind != RqKind::ZoneReset {
            let offset = self.rqs.get(key).unit.offset;
            if let Some(next) = self.zone_plugs.as_mut().and_then(|p| p.unplug(key, offset)) {
                ctx.schedule(now, BlockEvent::Dispatch(next));
            }
        }
        // The tag is free again: a waiting request goes to the driver. With
        // swiotlb it still has to be mapped, on the CPU of the queue run
        // that the completion starts (below, once the completion's own work
        // is done).
        if let Some(next) = self.tags.put_tag(hctx as usize) {
            if ctx.dma.is_some() && !self.rqs.get(next).mapped {
                self.to_map.push(next);
            } else {
                self.issue_to_driver(next, now, ctx);
            }
        }
        if !kind.kernel_wait() && !passthrough && self.elevator.is_some() {
            let srq = self.sched_rq(key);
            if let Some(e) = self.elevator.as_deref_mut() {
                // __blk_mq_end_request -> completed_request, then
                // blk_mq_free_request -> finish_request, then the restart
                // run of the queue (blk_mq_sched_restart), and the runs of
                // queues that waited for what the request held.
                e.completed(srq, blk_start, sent, now);
                e.finish(ioprio, now);
            }
            self.run_queue(hctx as usize, now, ctx);
            while let Some(h) = self.elevator.as_deref_mut().and_then(|e| e.woken_hctx()) {
                self.run_queue(h, now, ctx);
            }
            self.arm_sched_timer(ctx);
        }
        // Page cache requests complete by interrupt (nobody polls them).
        let polled_now = kind == RqKind::Fio
            && match ctx.host.task_state(tid) {
                TaskState::Polling(_) | TaskState::HybridSleep => polled,
                _ => false,
            };
        if polled_now {
            // The poller's CPU finds the completion; the restart is queued
            // from there.
            self.restart_mapped(rq_cpu, now, ctx);
            return Completion::Polled { thread: tid };
        }
        let costs = ctx.host.costs();
        let drv = self.drv_costs;
        // Interrupt (or inline/softirq completion on the submitting CPU).
        let (irq_cpu, irq_start, at) = match self.signal {
            CompletionSignal::Interrupt => {
                // MSI-X delivery, then the core leaves its idle state.
                let arrive = now + self.irq_delay;
                let c = self.irq_target(rq_cpu, ctx.host, arrive);
                let exit = ctx.host.wake_cpu(c, arrive);
                ctx.breakdown.cstate_exit_ns += u128::from(exit);
                let cost = costs.irq_entry + drv.irq_handler + costs.blk_complete;
                let start = arrive + exit;
                let mut end = ctx.host.run_irq(c, start, cost);
                if let Some(dma) = ctx.dma.as_deref_mut() {
                    end = dma.unmap(ctx.host, c, key, end);
                }
                ctx.breakdown.irq_ns += u128::from(end - now - exit);
                (c, start, end)
            }
            CompletionSignal::Softirq | CompletionSignal::Inline => {
                let cost = if self.signal == CompletionSignal::Softirq {
                    costs.blk_complete
                } else {
                    0
                };
                let mut end = ctx.host.run_irq(rq_cpu, now, cost);
                if let Some(dma) = ctx.dma.as_deref_mut() {
                    end = dma.unmap(ctx.host, rq_cpu, key, end);
                }
                ctx.breakdown.irq_ns += u128::from(end - now);
                (rq_cpu, now, end)
            }
        };
        self.restart_mapped(irq_cpu, at, ctx);
        Completion::Signalled {
            kind,
            thread: tid,
            cpu: irq_cpu,
            start: irq_start,
            at,
        }
    }
}
