//! Polled completion (block/blk-mq.c `blk_poll`, `blk_mq_poll_hybrid_sleep`
//! in v4.10 to v6.3): the submitter spins in the driver's poll function on
//! its own core until its request's completion shows up; with hybrid
//! polling (`io_poll_delay` >= 0) it first sleeps, a fixed time or half the
//! mean completion time of the request's size bucket.

use super::{BlkCtx, BlockEvent, BlockLayer, PollStats};
use crate::driver::DeviceSignal;
use crate::sim::Ns;
use crate::types::{Ddir, IoUnit};

impl BlockLayer {
    /// How long a poller sleeps before it spins at `now` for the request
    /// of `unit` it just submitted (`None`: none was just submitted, so no
    /// sleep): `io_poll_delay` us, or with 0 the adaptive time
    /// (`blk_mq_poll_nsecs`); 0 means classic polling.
    pub fn hybrid_sleep(&mut self, now: Ns, unit: Option<IoUnit>) -> Ns {
        let delay = self.settings.io_poll_delay;
        let sleep = match (delay, unit) {
            (d, Some(_)) if d > 0 => d as Ns * 1_000,
            (0, Some(u)) => PollStats::bucket(u.ddir != Ddir::Read, u.len)
                .map(|b| self.poll_stats.sleep_ns(now, b))
                .unwrap_or(0),
            _ => 0,
        };
        if sleep > 0 {
            self.hybrid_sleeps += 1;
            self.hybrid_sleep_ns += u128::from(sleep);
        }
        sleep
    }

    /// Task `tid`, spinning since `since`, finds request `key`, posted by
    /// the device at `posted`: blk_poll calls the driver's poll every
    /// poll_iteration and notices the completion at the end of the first
    /// call that starts after it was posted; then the request is unmapped
    /// and completed, and the task returns from its system call. Returns
    /// when it is back in user space.
    pub fn poll_complete<E>(
        &mut self,
        tid: u32,
        key: u32,
        posted: Ns,
        since: Ns,
        ctx: &mut BlkCtx<'_, E>,
    ) -> Ns
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let costs = ctx.host.costs();
        let drv = self.drv_costs;
        let t_cpu = ctx.host.task_cpu(tid);
        let iter = ctx.host.cpu(t_cpu).scaled(drv.poll_iteration).max(1);
        let polls = (posted.saturating_sub(since)).div_ceil(iter).max(1);
        let mut seen = since + polls * iter;
        let spin_from = since;
        if self.polled_irq {
            // v4.4 classic poll on an interrupt-driven queue: the MSI-X
            // interrupt fires too and runs its handler (which finds the
            // entry or races the poller for it); on the poller's own core
            // it preempts the spin and delays the poll that notices.
            let irq_at = posted + self.irq_delay;
            let ic = self.irq_target(self.rqs.get(key).cpu, ctx.host, irq_at);
            let cost = costs.irq_entry + drv.irq_handler;
            if ic == t_cpu {
                ctx.host.spin_task(tid, spin_from, irq_at.min(seen));
                let end = ctx.host.run_irq(t_cpu, irq_at, cost);
                if irq_at < seen {
                    ctx.breakdown.irq_ns += u128::from(end - irq_at);
                    seen += end - irq_at;
                }
            } else {
                let exit = ctx.host.wake_cpu(ic, irq_at);
                let end = ctx.host.run_irq(ic, irq_at + exit, cost);
                ctx.host.cpu_idle(ic, end, &*ctx.driver);
            }
        }
        self.poll_stats_add(key, seen);
        ctx.host.spin_task(tid, spin_from, seen);
        ctx.host.account_sys(tid, seen - since);
        ctx.breakdown.poll_ns += u128::from(seen - posted);
        // dma_unmap (swiotlb copy back and release) in the poller's
        // completion path, before the block completion.
        let seen = match ctx.dma.as_deref_mut() {
            Some(dma) => {
                let unmapped = dma.unmap(ctx.host, t_cpu, key, seen);
                ctx.host.account_sys(tid, unmapped - seen);
                unmapped
            }
            None => seen,
        };
        let work = costs.blk_complete + costs.syscall_exit;
        let done = ctx.host.run_on(t_cpu, seen, 0, work);
        let booked = ctx.host.cpu(t_cpu).scaled(work);
        ctx.host.account_sys(tid, booked);
        ctx.breakdown.reap_ns += u128::from(done - seen);
        done
    }

    /// Hybrid polling's statistics: the request's time from the driver to
    /// its completion (blk_stat_add with io_start_time_ns).
    fn poll_stats_add(&mut self, key: u32, at: Ns) {
        if self.settings.io_poll_delay == 0 {
            let rq = self.rqs.get(key);
            if let Some(b) = PollStats::bucket(rq.unit.ddir != Ddir::Read, rq.unit.len) {
                let started = self.dev_start[key as usize];
                self.poll_stats.add(at, b, at - started);
            }
        }
    }
}
