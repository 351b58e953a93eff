//! null_blk (drivers/block/null_blk): a block device that does no I/O and
//! completes each request after a fixed time. Module parameters as the
//! kernel names them (Documentation/block/null_blk.rst): `completion_nsec`,
//! `hw_queue_depth`, `submit_queues`, `irqmode`, `mbps`, `gb`.

use super::{
    BlkStatus, CompletionSignal, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverEvent, DriverRq,
};
use crate::device::ram::RamDevice;
use crate::device::{BadBlocks, BlockBackend, CapacityParams, Completion};
use crate::profile::limits::{COST, QUEUES, QUEUE_DEPTH};
use crate::profile::{range, Profile};
use crate::sim::{Ns, NS_PER_SEC};

/// null_blk.h: TICKS_PER_SEC = 50, TIMER_INTERVAL = NSEC_PER_SEC / 50: the
/// bandwidth limit refills its byte budget every 20 ms.
const TICKS_PER_SEC: u64 = 50;
const TIMER_INTERVAL: Ns = NS_PER_SEC / TICKS_PER_SEC;

/// null_blk's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The bandwidth timer (`nullb_bwtimer_fn`) refilled the budget:
    /// restart the throttled requests.
    RetryThrottled,
}

pub struct NullBlk {
    name: String,
    /// The device side: `completion_nsec` after submission (the timer).
    dev: RamDevice,
    hw_queue_depth: u32,
    submit_queues: u32,
    irqmode: u32,
    /// mb_per_tick(mbps) = (1 << 20) / TICKS_PER_SEC * mbps; 0 = unlimited.
    bytes_per_tick: u64,
    /// Budget left in the current tick and the tick it belongs to.
    cur_bytes: u64,
    cur_tick: u64,
    /// Requests waiting for the next tick's budget (the kernel stops the
    /// queue and requeues them: BLK_STS_DEV_RESOURCE).
    throttled: std::collections::VecDeque<DriverRq>,
    cpu: DriverCpuCosts,
    completed: u64,
    throttle_waits: u64,
    /// The configfs `badblocks` attribute (`device.badblocks`).
    badblocks: BadBlocks,
}

crate::params! {
    /// null_blk's module parameters (Documentation/block/null_blk.rst).
    pub struct NullBlkParams {
        /// irqmode: how a request completes: 0 inline in the submission,
        /// 1 by softirq, 2 by a timer after completion_nsec.
        irqmode: u32 = required count_u32(
            "device.irqmode",
            range(0.0, 2.0, "null_blk's irqmode: 0 (none), 1 (softirq) or 2 (timer)")
        ),
        /// hw_queue_depth: tags per hardware queue.
        hw_queue_depth: u32 = required count_u32("device.hw_queue_depth", QUEUE_DEPTH),
        /// submit_queues: hardware queues.
        submit_queues: u32 = required count_u32("device.submit_queues", QUEUES),
        /// mbps: the bandwidth limit in MiB/s (0: none), refilled every
        /// 20 ms (null_blk.h TICKS_PER_SEC).
        mbps: u64 = required count(
            "device.mbps",
            range(
                0.0,
                u32::MAX as f64,
                "null_blk's mbps module parameter, an unsigned int of MiB/s (0: no limit)",
            )
        ),
        /// completion_nsec: the timer's delay with irqmode=2.
        completion_nsec: Ns = required ns("device.completion_nsec", COST),
    }
}

impl NullBlk {
    pub fn from_profile(p: &Profile) -> crate::Result<NullBlk> {
        let np = NullBlkParams::read(p)?;
        let depth = np.hw_queue_depth;
        Ok(NullBlk {
            name: "nullb0".into(),
            dev: RamDevice::fixed(CapacityParams::read(p)?.capacity, np.completion_nsec),
            hw_queue_depth: depth,
            submit_queues: np.submit_queues,
            irqmode: np.irqmode,
            bytes_per_tick: (1u64 << 20) / TICKS_PER_SEC * np.mbps,
            cur_bytes: 0,
            cur_tick: u64::MAX,
            throttled: std::collections::VecDeque::with_capacity(depth as usize),
            cpu: DriverCpuCosts::from_profile(p, true)?,
            completed: 0,
            throttle_waits: 0,
            badblocks: BadBlocks::from_profile(p)?,
        })
    }

    /// null_handle_throttled: take the request's bytes from this tick's
    /// budget, or refuse it until the timer refills the budget.
    fn admit(&mut self, now: Ns, len: u64) -> bool {
        if self.bytes_per_tick == 0 {
            return true;
        }
        let tick = now / TIMER_INTERVAL;
        if tick != self.cur_tick {
            self.cur_tick = tick;
            self.cur_bytes = self.bytes_per_tick;
        }
        if self.cur_bytes == 0 {
            return false;
        }
        // The kernel lets the last request of a tick overdraw (atomic
        // subtraction, checked before): one request always goes through.
        self.cur_bytes = self.cur_bytes.saturating_sub(len);
        true
    }

    fn start(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, impl Sized>) {
        // irqmode=2 (NULL_IRQ_TIMER): an hrtimer fires completion_nsec
        // after submission. Modes 0 and 1 complete at once (inline, or from
        // the submitting CPU's softirq): the host path adds those costs.
        let now = ctx.now();
        let cmd = rq.command();
        let done = if self.irqmode == 2 {
            self.dev.submit(now, &cmd)
        } else {
            Completion::ok(now)
        };
        // null_handle_cmd: a command over a bad block ends with
        // BLK_STS_IOERR (null_handle_badblocks), still completed by the
        // irqmode's path.
        let done = self.badblocks.outcome(&cmd, done);
        self.completed += 1;
        ctx.complete(done.at, rq.tag, BlkStatus::from_device(done.status));
    }
}

impl<E> Driver<E> for NullBlk {
    fn info(&self) -> DiskInfo {
        DiskInfo {
            name: self.name.clone(),
            capacity: self.dev.capacity(),
            queue_depth: self.hw_queue_depth,
            hw_queues: self.submit_queues,
            // null_blk gained poll_queues in 5.13; with irqmode=2 a poller
            // simply finds the completion once the timer has fired.
            can_poll: true,
            cpu_costs: self.cpu,
            completion_signal: match self.irqmode {
                0 => CompletionSignal::Inline,
                1 => CompletionSignal::Softirq,
                _ => CompletionSignal::Interrupt,
            },
        }
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        if !self.throttled.is_empty() || !self.admit(ctx.now(), u64::from(rq.len)) {
            self.throttle_waits += 1;
            if self.throttled.is_empty() {
                let next_tick = (ctx.now() / TIMER_INTERVAL + 1) * TIMER_INTERVAL;
                ctx.schedule(next_tick, Event::RetryThrottled);
            }
            self.throttled.push_back(rq);
            return;
        }
        self.start(rq, ctx);
    }
    fn on_event(&mut self, event: DriverEvent, ctx: &mut DriverCtx<'_, E>) {
        debug_assert_eq!(event, DriverEvent::NullBlk(Event::RetryThrottled));
        // nullb_bwtimer_fn: refill and restart the stopped queue.
        while let Some(rq) = self.throttled.front().copied() {
            if !self.admit(ctx.now(), u64::from(rq.len)) {
                let next_tick = (ctx.now() / TIMER_INTERVAL + 1) * TIMER_INTERVAL;
                ctx.schedule(next_tick, Event::RetryThrottled);
                return;
            }
            self.throttled.pop_front();
            self.start(rq, ctx);
        }
    }
    /// null_blk sets a discard limit only with `discard=1` on a
    /// memory-backed device (null_config_discard: "discard option is
    /// ignored without memory backing"); the device modelled here has no
    /// memory backing, so it cannot discard.
    fn max_discard_sectors(&self) -> u64 {
        0
    }
    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "driver": "null_blk",
            "completed": self.completed,
            "throttle_waits": self.throttle_waits,
        })
    }
}
