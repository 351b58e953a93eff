//! The submit side of blk-mq (block/blk-mq.c): a request reaches its
//! hardware queue (`blk_mq_submit_bio`), takes a tag or waits for one, is
//! mapped for DMA in the driver's `queue_rq` (`dma_map_sg`) on the CPU that
//! dispatches it, and goes to the driver. A tag freed by a completion hands
//! the next waiting request on through a restart run of the hardware queue.

use super::flush::flush_policy;
use super::{BlkCtx, BlockEvent, BlockLayer, RqKind};
use crate::dma::bounce::RqData;
use crate::driver::{BlkStatus, DeviceSignal, DriverRq};
use crate::sim::Ns;
use crate::types::Ddir;
use crate::types::{Op, ZoneAction};

impl BlockLayer {
    /// The checks a request fails before it is queued, with the status it
    /// ends with: a discard on a disk whose driver set no discard limit
    /// (`bdev_max_discard_sectors(bdev) == 0`) fails with BLK_STS_NOTSUPP
    /// in submit_bio_noacct (block/blk-core.c); BLKDISCARD, fio's trim,
    /// returns EOPNOTSUPP even earlier, in blk_ioctl_discard
    /// (block/ioctl.c). `None`: the request goes on.
    pub fn fails_at_submit(&self, ddir: Ddir) -> Option<BlkStatus> {
        (ddir == Ddir::Trim && self.max_discard_sectors == 0).then_some(BlkStatus::NotSupp)
    }

    /// Request `key` leaves its submitter on `cpu` at `at`: with swiotlb,
    /// `dma_map_sg` in the driver's queue_rq runs inline on that core (in
    /// time order: the submitter holds its core) when the request will get
    /// a tag at once; one that will wait for a tag is mapped when it is
    /// dispatched, by the run that hands it the tag (`restart_dispatch`).
    /// Returns when the submitter is done.
    pub fn map_and_dispatch<E>(&mut self, key: u32, cpu: u32, at: Ns, ctx: &mut BlkCtx<'_, E>) -> Ns
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let end = self.map_for_dispatch(key, cpu, at, ctx);
        ctx.schedule(end, BlockEvent::Dispatch(key));
        end
    }

    /// `map_and_dispatch` without the dispatch: the caller dispatches the
    /// request at the returned time (by a `Dispatch` event it schedules
    /// next, or, when that event would be the next one popped, by calling
    /// `dispatch` at once).
    pub fn map_for_dispatch<E>(&mut self, key: u32, cpu: u32, at: Ns, ctx: &mut BlkCtx<'_, E>) -> Ns
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let hctx = self.tags.hctx_of_cpu(cpu);
        match ctx.dma.as_deref_mut() {
            Some(dma) if self.tags.tag_free(hctx) && !self.elevator_has_work() => {
                let data = self.mark_mapped(key);
                dma.map(ctx.host, cpu, key, data, at)
            }
            _ => at,
        }
    }

    /// The submit path of request `key` reaches its hardware queue at
    /// `now`: it takes a tag and goes to the driver, or waits for a tag.
    pub fn dispatch<E>(&mut self, key: u32, now: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        // A passthrough request (SG_IO: drivers/scsi/scsi_ioctl.c sg_io,
        // block/scsi_ioctl.c before 5.16: blk_mq_alloc_request,
        // blk_rq_map_user, blk_execute_rq) is not made from a bio: no
        // zone plug, no elevator (blk_mq_insert_request puts a
        // passthrough request on the dispatch list), not in the disk's
        // statistics (blk_do_io_stat); it takes a tag and goes to the
        // driver.
        if self.rqs.get(key).passthrough {
            self.passthrough += 1;
            let rq = self.rqs.get_mut(key);
            let hctx = self.tags.hctx_of_cpu(rq.cpu);
            rq.hctx = hctx as u32;
            rq.blk_start = now;
            if self.tags.get_tag(hctx, key) {
                if ctx.dma.is_some() && !self.rqs.get(key).mapped {
                    let cpu = self.rqs.get(key).cpu;
                    self.map_then_issue(key, cpu, now, ctx);
                } else {
                    self.issue_to_driver(key, now, ctx);
                }
            }
            return;
        }
        // blk_mq_submit_bio -> blk_mq_attempt_bio_merge: a bio that
        // merges with a request the elevator holds makes no request.
        // (A request flushed from a plug tried when it was plugged;
        // dd_insert_request's insert merge of a whole request is not
        // modelled.)
        if self.elevator.is_some() && !self.rqs.get(key).plugged && self.elv_bio_merge(key) {
            return;
        }
        // blk_mq_submit_bio -> blk_zone_plug_bio: a write to a zone with
        // a write in flight waits in the zone's plug.
        if let Some(plugs) = self.zone_plugs.as_mut() {
            let (unit, kind) = (self.rqs.get(key).unit, self.rqs.get(key).kind);
            // A zone reset is never plugged (blk_zone_plug_bio handles
            // REQ_OP_ZONE_RESET apart: blk_zone_wplug_handle_reset_or_finish).
            if unit.ddir == Ddir::Write && kind != RqKind::ZoneReset && plugs.plug(key, unit.offset)
            {
                return;
            }
        }
        // blk_mq_submit_bio: a READ or REQ_SYNC bio (fio's direct I/O is
        // REQ_SYNC) records its time for the dev_freq_timeout_ms work.
        if self.rqs.get(key).unit.ddir != Ddir::Trim {
            if let Some(at) = self.dev_freq_qos.submit(now) {
                ctx.queue.arm(
                    &mut self.dev_freq_timer,
                    at,
                    E::from(BlockEvent::DevFreqWork),
                );
            }
        }
        let rq = self.rqs.get_mut(key);
        let hctx = self.tags.hctx_of_cpu(rq.cpu);
        rq.hctx = hctx as u32;
        rq.blk_start = now;
        // The flush machinery's requests are not in the disk's statistics
        // (blk-flush.c's flush_rq has no RQF_IO_STAT: blk_account_io_start
        // skips it).
        let kind = rq.kind;
        if !kind.kernel_wait() {
            self.disk_account(now, 1);
        }
        if !kind.kernel_wait() && self.elevator.is_some() {
            // blk_mq_submit_bio -> blk_mq_insert_request: into the
            // elevator, then a run of the queue on the submitting CPU.
            let srq = self.sched_rq(key);
            if let Some(e) = self.elevator.as_deref_mut() {
                e.insert(srq, now);
            }
            self.elv_inserted(key);
            self.run_queue(hctx, now, ctx);
            self.arm_sched_timer(ctx);
            for i in 0..self.to_map.len() {
                let k = self.to_map[i];
                let cpu = self.rqs.get(k).cpu;
                self.map_then_issue(k, cpu, now, ctx);
            }
            self.to_map.clear();
            return;
        }
        if self.tags.get_tag(hctx, key) {
            let rq = self.rqs.get(key);
            if ctx.dma.is_some() && !rq.mapped {
                // A tag came free between the submit's check and now: the
                // submitter maps it inline after all.
                let cpu = rq.cpu;
                self.map_then_issue(key, cpu, now, ctx);
            } else {
                self.issue_to_driver(key, now, ctx);
            }
        }
    }

    /// A zoned disk of `limits` whose kernel locks zones in the scheduler
    /// (`ZonedWrites::Locking`): the elevator, if it supports zones, gets
    /// them.
    pub fn set_zone_write_lock(&mut self, limits: &crate::driver::ZonedLimits) {
        self.zoned_lock = true;
        if let Some(e) = self.elevator.as_deref_mut() {
            e.set_zone_write_lock(limits.chunk_sectors, limits.nr_zones);
        }
    }

    /// Whether the elevator holds requests.
    pub(super) fn elevator_has_work(&self) -> bool {
        self.elevator.as_deref().is_some_and(|e| e.has_work())
    }

    /// A run of hardware queue `hctx` with an elevator at `now`
    /// (`blk_mq_sched_dispatch_requests`): while the queue has a free
    /// driver tag and nothing on its dispatch list (a request there is
    /// served first, by the next freed tag), requests the elevator hands
    /// out take tags and go to the driver, until it holds back. One whose
    /// own hardware queue has no tag (mq-deadline is queue-wide) waits on
    /// that queue's dispatch list. Requests still to be mapped for DMA are
    /// left in `to_map` for the caller, which knows the CPU the run is on.
    pub(super) fn run_queue<E>(&mut self, hctx: usize, now: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        while self.tags.tag_free(hctx) {
            let Some(e) = self.elevator.as_deref_mut() else {
                return;
            };
            let Some(key) = e.dispatch_from(hctx, now) else {
                break;
            };
            self.elv_removed(key);
            let h = self.rqs.get(key).hctx as usize;
            if !self.tags.try_tag(h) {
                self.tags.park(h, key);
                continue;
            }
            if ctx.dma.is_some() && !self.rqs.get(key).mapped {
                self.to_map.push(key);
            } else {
                self.issue_to_driver(key, now, ctx);
            }
        }
    }

    /// The elevator's timer follows what it asks for now.
    pub(super) fn arm_sched_timer<E>(&mut self, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let Some(e) = self.elevator.as_deref() else {
            return;
        };
        match e.timer_at() {
            Some(at) if ctx.queue.expires(&self.sched_timer) != Some(at) => {
                ctx.queue
                    .arm(&mut self.sched_timer, at, E::from(BlockEvent::SchedTimer));
            }
            Some(_) => {}
            None => ctx.queue.cancel(&self.sched_timer),
        }
    }

    /// The elevator's timer fired at `now` (BFQ's `bfq_idle_slice_timer`
    /// -> `bfq_schedule_dispatch`): every hardware queue is run, by
    /// kblockd (`blk_mq_run_hw_queues(q, true)`), on CPU 0's queue run
    /// (an assumption: the timer's CPU only matters for where swiotlb maps).
    pub fn sched_timer<E>(&mut self, now: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let Some(e) = self.elevator.as_deref_mut() else {
            return;
        };
        e.timer(now);
        for h in 0..self.tags.hctx_count() {
            self.run_queue(h, now, ctx);
        }
        self.arm_sched_timer(ctx);
        self.restart_mapped(0, now, ctx);
    }

    /// Request `key` is mapped now: what `dma_map_sg` maps of it.
    fn mark_mapped(&mut self, key: u32) -> RqData {
        let rq = self.rqs.get_mut(key);
        rq.mapped = true;
        RqData {
            ddir: rq.unit.ddir,
            len: u64::from(rq.unit.len),
            contiguous: rq.contiguous,
        }
    }

    /// `dma_map_sg` of request `key` on `cpu` from `at`, then the driver.
    fn map_then_issue<E>(&mut self, key: u32, cpu: u32, at: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let data = self.mark_mapped(key);
        let dma = ctx.dma.as_deref_mut().expect("only swiotlb runs map");
        let end = dma.map(ctx.host, cpu, key, data, at);
        ctx.schedule(end, BlockEvent::Issue(key));
    }

    /// A request that waited for a tag is dispatched by the run of its
    /// hardware queue that the freed tag starts: `__blk_mq_free_request`
    /// -> `blk_mq_sched_restart` -> `blk_mq_run_hw_queue(hctx, true)`, a
    /// kblockd work item (block/blk-mq.c, block/blk-mq-sched.c) on the CPU
    /// `async_run_cpu` names. Its `queue_rq`, and so its `dma_map_sg`, runs
    /// there, after the completion that freed the tag (`at`, on
    /// `from_cpu`). (The driver's own submit cost stays booked on the
    /// submitting thread.)
    pub(super) fn restart_dispatch<E>(
        &mut self,
        key: u32,
        from_cpu: u32,
        at: Ns,
        ctx: &mut BlkCtx<'_, E>,
    ) where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let hctx = self.rqs.get(key).hctx as usize;
        let ncpus = ctx.host.ncpus();
        let c = self.tags.async_run_cpu(hctx, from_cpu, ncpus);
        self.restarts += 1;
        if c != from_cpu {
            let exit = ctx.host.wake_cpu(c, at);
            self.map_then_issue(key, c, at + exit, ctx);
            let busy = ctx.host.busy_until(c);
            ctx.host.cpu_idle(c, busy, &*ctx.driver);
        } else {
            self.map_then_issue(key, c, at, ctx);
        }
    }

    /// Request `key` goes to the driver at `now` (its `queue_rq`).
    pub fn issue_to_driver<E>(&mut self, key: u32, now: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let rq = self.rqs.get(key);
        ctx.breakdown.tag_wait_ns += u128::from(now - rq.blk_start);
        // blk-flush.c: REQ_FUA reaches the driver where the device honours
        // it, and is dropped where there is no volatile cache. On a cache
        // without FUA (an eMMC card's cache without reliable writes) the
        // write goes as a plain one and `complete` sends the post-flush.
        let seq = flush_policy(self.write_cache, rq.unit.len > 0, false, rq.fua);
        let op = match rq.kind {
            RqKind::Flush => Op::Flush,
            RqKind::ZoneReset => Op::ZoneMgmt(ZoneAction::Reset),
            _ if rq.unit.ddir == Ddir::Write => rq.write_op,
            _ => Op::of_ddir(rq.unit.ddir),
        };
        // A Zone Append names its zone by the zone's start: fio's
        // io_uring_cmd sends it there (engines/nvme.c
        // fio_nvme_uring_cmd_prep, fio commit ebf4b46d: `io_u->offset &
        // ~(zone_size - 1)`), the device picks the LBA.
        let offset = match (op, &self.zone_plugs) {
            (Op::ZoneAppend, Some(p)) => p.zone_start(rq.unit.offset),
            _ => rq.unit.offset,
        };
        let drq = DriverRq {
            tag: key,
            op,
            fua: seq.fua,
            ddir: rq.unit.ddir,
            offset,
            len: rq.unit.len,
            polled: rq.polled,
            cpu: rq.cpu,
            ioprio: rq.ioprio,
            hint: rq.hint,
        };
        if self.dev_start.len() <= key as usize {
            self.dev_start.resize(key as usize + 1, 0);
        }
        self.dev_start[key as usize] = now;
        let (driver, mut dctx) = ctx.driver_call();
        driver.queue_rq(drq, &mut dctx);
        let ran_on = dctx.ran_on();
        let stolen = dctx.stolen();
        ctx.driver_ran_on(ran_on);
        if let (Some((cpu, from, len)), Some(dma)) = (stolen, ctx.dma.as_deref_mut()) {
            dma.vcpu_preempted(cpu, from, len);
        }
    }

    /// Seed 3's `dev_freq_work` fires at `now`: the disk's frequency
    /// request changes (the driver hears of it), and the work is queued
    /// again when it has to run.
    pub fn dev_freq_work<E>(&mut self, now: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let driver = &mut *ctx.driver;
        if let Some(next) = self
            .dev_freq_qos
            .dev_freq_work(now, |khz| driver.set_disk_min_freq_qos(khz))
        {
            ctx.queue.arm(
                &mut self.dev_freq_timer,
                next,
                E::from(BlockEvent::DevFreqWork),
            );
        }
    }
}
