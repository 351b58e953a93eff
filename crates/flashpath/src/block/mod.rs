//! The block layer (blk-mq): per-CPU software queues map to hardware
//! queues; a request needs a tag of its hardware queue (the queue depth)
//! before it reaches the driver, and waits on the hardware queue when none
//! is free (blk_mq_get_tag sleeping on the tag wait queue). Queue settings
//! are named as /sys/block/<dev>/queue names them.
//!
//! [`BlockLayer`] owns the request queue's state (tags, requests in
//! flight, poll statistics, the disk's statistics, the dev_freq_timeout_ms
//! request) and its flow, as block/blk-mq.c splits it:
//! * [`submit`]: dispatch to a hardware queue, tag, DMA mapping in the
//!   driver's queue_rq, the restart run that hands a freed tag on, issue to
//!   the driver;
//! * [`complete`]: a completion posted by the device: tag put, disk
//!   accounting, and the interrupt, softirq or inline completion path;
//! * [`poll`]: blk_poll and hybrid polling's sleep.
//!
//! Its methods work over a narrow [`BlkCtx`]: the host's cores and tasks,
//! the event queue, the DMA path and the driver.

pub mod complete;
pub mod elevator;
pub mod flush;
pub mod merge;
pub mod poll;
pub mod sched;
pub mod submit;
pub mod zoned;

use crate::dma::bounce::SwiotlbPath;
use crate::driver::{CompletionSignal, DeviceSignal, DiskInfo, Driver, DriverCpuCosts, DriverCtx};
use crate::host::task::Host;
use crate::profile::limits::{DELAY, QUEUE_DEPTH};
use crate::profile::range;
use crate::sim::queue::{EventQueue, Timer};
use crate::sim::slab::Slab;
use crate::sim::Ns;
use crate::types::{Ddir, IoUnit, IrqCpu};
use crate::types::{Hint, Op};
use std::collections::VecDeque;

pub use crate::host::pm_qos::{DevFreqQos, QosAction};

/// Per-device statistics, as the block layer keeps them for
/// /sys/block/<dev>/stat (block/genhd.c diskstats_show); fio's disk_util
/// reports them.
#[derive(Clone, Debug, Default)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: Ns,
    pub write_ticks: Ns,
    /// Time-weighted queue occupancy integral, ns (in_queue).
    pub in_queue: Ns,
    /// Time the device had at least one request, ns.
    pub busy: Ns,
    /// Length of the run, ns.
    pub total: Ns,
}

/// The block layer's own timed work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockEvent {
    /// The submit path of request `rq` reached the hardware queue.
    Dispatch(u32),
    /// Request `rq`, mapped for DMA where it was dispatched, goes to the
    /// driver (its `queue_rq` after `dma_map_sg`).
    Issue(u32),
    /// Seed 3's `dev_freq_work` (block.dev_freq_timeout_ms).
    DevFreqWork,
    /// The I/O scheduler's timer (BFQ's idle slice timer) fired.
    SchedTimer,
}

/// Who a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqKind {
    /// A task's I/O: a fio direct I/O (or the system call of a buffered
    /// one, which never reaches the device).
    Fio,
    /// Pages read into the page cache (readahead, read_pages).
    CacheRead,
    /// Dirty pages written back.
    Writeback,
    /// A cache flush a task waits for (blkdev_issue_flush from fsync on a
    /// block device: an empty REQ_OP_WRITE | REQ_PREFLUSH bio that
    /// blk-flush.c turns into the flush request the driver sees,
    /// REQ_OP_FLUSH). No data, no DMA.
    Flush,
    /// A zone reset a task waits for (the BLKRESETZONE ioctl:
    /// blkdev_zone_mgmt submits a REQ_OP_ZONE_RESET bio and waits,
    /// submit_bio_wait; block/blk-zoned.c). No data, no DMA.
    ZoneReset,
}

impl RqKind {
    /// A request the kernel makes for a task's system call and the task
    /// waits for (a flush, a zone reset): it bypasses the elevator and the
    /// disk's statistics here. (Linux counts a zone reset in the disk's
    /// write statistics with no sectors and inserts it in the elevator: a
    /// simplification, one request per reset.)
    pub fn kernel_wait(self) -> bool {
        matches!(self, RqKind::Flush | RqKind::ZoneReset)
    }
}

/// One request in flight. Its slab key is its identity everywhere (the
/// driver's tag, the DMA mapping, the completion).
pub struct Request {
    pub kind: RqKind,
    /// The submitting task (a fio thread), for a `RqKind::Fio` request.
    pub thread: u32,
    /// The request's extent (`blk_rq_pos`, `blk_rq_bytes`): its own fio
    /// I/O's, grown by every bio merged into it (block/blk-merge.c).
    pub unit: IoUnit,
    /// The fio I/O this entry carries (its bio): what fio records at its
    /// completion, whatever request it rode in.
    pub bio: IoUnit,
    /// The next fio I/O merged into this request (`merge::NO_BIO`: none),
    /// and the last one: `rq->bio ... rq->biotail`, each a slab entry of
    /// its own that keeps its fio times.
    pub next_bio: u32,
    pub tail_bio: u32,
    /// `rq->nr_phys_segments` once a bio merged in (0: its own bio's).
    pub nr_segs: u32,
    /// REQ_NOMERGE set by `req_set_nomerge`: a merge hit a limit.
    pub nomerge: bool,
    /// It was made under a plug (its bio's merges were tried there).
    pub plugged: bool,
    /// fio's start_time (get_io_u) and issue_time.
    pub start: Ns,
    pub issue: Ns,
    /// When it entered the block layer.
    pub blk_start: Ns,
    pub hctx: u32,
    /// REQ_POLLED: its submitter polls for the completion.
    pub polled: bool,
    /// The CPU that submitted it.
    pub cpu: u32,
    /// Physically contiguous bytes behind its buffer: one DMA segment per
    /// such extent.
    pub contiguous: u64,
    /// Its buffer is mapped for DMA (swiotlb runs only).
    pub mapped: bool,
    /// How it ended, as the errno its submitter sees (0: success;
    /// `complete::blk_status_to_errno` of the driver's status).
    pub error: i32,
    /// REQ_FUA: a write of an O_SYNC / O_DSYNC direct I/O.
    pub fua: bool,
    /// Its I/O priority (`IOPRIO_PRIO_VALUE`, include/uapi/linux/ioprio.h):
    /// the submitter's (ioprio_set) or the command's (fio's cmdprio);
    /// 0 is IOPRIO_CLASS_NONE.
    pub ioprio: u16,
    /// A passthrough request (SG_IO: blk_rq_is_passthrough): no elevator
    /// (blk_mq_insert_request puts it on the dispatch list), no zone write
    /// plug, not in the disk's statistics (blk_do_io_stat).
    pub passthrough: bool,
    /// A passthrough write's command when it is not WRITE (fio's sg
    /// engine's sg_write_mode: VERIFY, WRITE SAME, WRITE AND VERIFY);
    /// `Op::Write` otherwise.
    pub write_op: Op,
    /// The data placement directive its command carries (an
    /// io_uring_cmd's DTYPE and DSPEC, which nvme_uring_cmd_io copies
    /// into the NVMe command's CDW12/13 as given). Linux 6.12's block
    /// path sets none: its `write_hint` reaches no NVMe command.
    pub hint: Hint,
}

impl Request {
    /// A fio I/O of thread `thread` on `cpu`: fio's start and issue times,
    /// and when it entered the block layer.
    #[allow(clippy::too_many_arguments)]
    pub fn fio(
        thread: u32,
        unit: IoUnit,
        cpu: u32,
        start: Ns,
        issue: Ns,
        blk_start: Ns,
        polled: bool,
        contiguous: u64,
    ) -> Request {
        Request {
            kind: RqKind::Fio,
            thread,
            unit,
            bio: unit,
            next_bio: merge::NO_BIO,
            tail_bio: merge::NO_BIO,
            nr_segs: 0,
            nomerge: false,
            plugged: false,
            start,
            issue,
            blk_start,
            hctx: 0,
            polled,
            cpu,
            contiguous,
            mapped: false,
            error: 0,
            fua: false,
            ioprio: 0,
            passthrough: false,
            write_op: Op::Write,
            hint: Hint::None,
        }
    }

    /// The zone reset of task `thread` (its BLKRESETZONE of the zone at
    /// `offset`), submitted on `cpu` at `now`: no data (the command names
    /// the zone by its start).
    pub fn zone_reset(thread: u32, cpu: u32, now: Ns, offset: u64) -> Request {
        let mut rq = Request::flush(thread, cpu, now);
        rq.kind = RqKind::ZoneReset;
        rq.unit.offset = offset;
        rq.bio.offset = offset;
        rq
    }

    /// The flush request of task `thread`'s fsync, submitted on `cpu` at
    /// `now`: no data.
    pub fn flush(thread: u32, cpu: u32, now: Ns) -> Request {
        Request {
            kind: RqKind::Flush,
            ..Request::fio(
                thread,
                IoUnit {
                    ddir: Ddir::Write,
                    offset: 0,
                    len: 0,
                },
                cpu,
                now,
                now,
                now,
                false,
                0,
            )
        }
    }
}

/// Where one I/O's microseconds went, summed over the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Breakdown {
    pub ios: u64,
    /// fio user-space time, syscall and block/driver submit on the CPU.
    pub submit_ns: u128,
    /// Waiting for a hardware-queue tag.
    pub tag_wait_ns: u128,
    /// From reaching the driver to the device posting completion.
    pub device_ns: u128,
    /// Idle-state exit latency paid by the interrupt.
    pub cstate_exit_ns: u128,
    /// Interrupt entry, handler and block completion.
    pub irq_ns: u128,
    /// Wake-up, IPI and context switch back to the thread.
    pub wakeup_ns: u128,
    /// From the device's completion to the poller noticing it.
    pub poll_ns: u128,
    /// Syscall exit and fio's reap on the thread's CPU.
    pub reap_ns: u128,
}

/// What the block layer works with: the host's cores and tasks, the event
/// queue (its own events and the driver's), the DMA path, the driver, and
/// the I/O time breakdown it adds to.
pub struct BlkCtx<'a, E> {
    pub host: &'a mut Host,
    pub queue: &'a mut EventQueue<E>,
    pub dma: Option<&'a mut SwiotlbPath>,
    pub driver: &'a mut dyn Driver<E>,
    pub breakdown: &'a mut Breakdown,
}

impl<E: From<BlockEvent> + From<DeviceSignal>> BlkCtx<'_, E> {
    fn schedule(&mut self, at: Ns, ev: BlockEvent) {
        self.queue.schedule(at, E::from(ev));
    }

    /// The driver's context for one call.
    fn driver_call(&mut self) -> (&mut dyn Driver<E>, DriverCtx<'_, E>) {
        (
            &mut *self.driver,
            DriverCtx::new(&mut *self.queue, E::from, Some(&mut *self.host)),
        )
    }

    /// A core the driver ran code on has nothing else to run once that
    /// code is done: it goes idle again.
    fn driver_ran_on(&mut self, cpu: Option<u32>) {
        if let Some(c) = cpu {
            let done = self.host.busy_until(c);
            self.host.cpu_idle(c, done, &*self.driver);
        }
    }
}

/// The disk's statistics (/sys/block/<dev>/stat) as requests come and go.
struct DiskStats {
    util: DiskUtil,
    inflight: u32,
    last_change: Ns,
}

/// One request queue (a disk's) of the block layer.
pub struct BlockLayer {
    pub settings: QueueSettings,
    tags: BlkMq,
    /// Tags per hardware queue.
    pub tag_depth: u32,
    /// Requests in flight, keyed by their tag.
    pub rqs: Slab<Request>,
    /// When each request in flight reached the driver.
    dev_start: Vec<Ns>,
    poll_stats: PollStats,
    disk: DiskStats,
    /// The disk's MIN_FREQUENCY request kept by dev_freq_timeout_ms.
    pub dev_freq_qos: DevFreqQos,
    /// The queue timer `dev_freq_work` runs on.
    dev_freq_timer: Timer,
    drv_costs: DriverCpuCosts,
    signal: CompletionSignal,
    irq_cpu: IrqCpu,
    /// The driver's `max_discard_sectors` (0: the disk cannot discard).
    pub max_discard_sectors: u64,
    /// The driver's write-cache flags (QUEUE_FLAG_WC / _FUA).
    pub write_cache: crate::driver::WriteCache,
    /// The driver's `polled_irq` and `irq_delay`.
    polled_irq: bool,
    irq_delay: Ns,
    /// Requests mapped and dispatched by a restart run (`restart_dispatch`).
    pub restarts: u64,
    /// A zoned disk's zone write plugs (`None`: a conventional disk).
    pub zone_plugs: Option<zoned::ZoneWritePlugs>,
    /// Passthrough requests issued (SG_IO).
    pub passthrough: u64,
    /// Passthrough Zone Appends completed (io_uring_cmd's
    /// write_mode=zone_append), and those whose LBA the device returned
    /// (the completion's result, io_uring's big CQE) is not the offset fio
    /// chose (zbd.c's write pointer, io_u->offset): fio reads no result.
    pub zone_appends: u64,
    pub appends_moved: u64,
    hybrid_sleeps: u64,
    hybrid_sleep_ns: u128,
    /// The queue's I/O scheduler; `None` is `none` (no elevator).
    elevator: Option<Box<dyn elevator::ElevatorOps>>,
    /// Requests a queue run handed out that still need their DMA mapping
    /// (reused: the hot path allocates nothing).
    to_map: Vec<u32>,
    /// The timer the elevator's own timer (`ElevatorOps::timer_at`) runs on.
    sched_timer: Timer,
    /// The fio threads' plugs (merge.rs).
    plugs: merge::Plugs,
    /// The elevator's request hash (`elv_rqhash`): the mergeable requests
    /// it holds, in insertion order; and `q->last_merge` (`merge::NO_BIO`:
    /// none).
    elv_hash: Vec<u32>,
    last_merge: u32,
    /// A zoned disk whose elevator locks zones (no merging there).
    zoned_lock: bool,
    /// swiotlb bounces this queue's DMA (no merging: merge.rs).
    no_merge_bounce: bool,
}

impl BlockLayer {
    /// The queue of a disk the driver probed (`probed`), with room for
    /// `max_inflight` requests.
    pub fn new(
        probed: &DiskInfo,
        settings: QueueSettings,
        irq_cpu: IrqCpu,
        polled_irq: bool,
        irq_delay: Ns,
        max_inflight: usize,
    ) -> BlockLayer {
        let depth = probed.queue_depth.min(settings.nr_requests.max(1));
        BlockLayer {
            settings,
            tags: BlkMq::new(probed.hw_queues, depth),
            tag_depth: depth,
            rqs: Slab::with_capacity(max_inflight),
            dev_start: Vec::with_capacity(max_inflight),
            poll_stats: PollStats::default(),
            disk: DiskStats {
                util: DiskUtil {
                    name: probed.name.clone(),
                    ..DiskUtil::default()
                },
                inflight: 0,
                last_change: 0,
            },
            dev_freq_qos: DevFreqQos::new(settings.dev_freq_timeout),
            dev_freq_timer: Timer::default(),
            drv_costs: probed.cpu_costs,
            signal: probed.completion_signal,
            irq_cpu,
            max_discard_sectors: u64::from(u32::MAX) >> 9,
            zone_plugs: None,
            passthrough: 0,
            zone_appends: 0,
            appends_moved: 0,
            write_cache: Default::default(),
            polled_irq,
            irq_delay,
            restarts: 0,
            hybrid_sleeps: 0,
            hybrid_sleep_ns: 0,
            elevator: settings.scheduler.elevator(&settings, probed.hw_queues),
            to_map: Vec::with_capacity(max_inflight),
            sched_timer: Timer::default(),
            plugs: merge::Plugs::default(),
            elv_hash: Vec::with_capacity(max_inflight),
            last_merge: merge::NO_BIO,
            zoned_lock: false,
            no_merge_bounce: false,
        }
    }

    /// What the elevator is told of request `key`.
    fn sched_rq(&self, key: u32) -> elevator::SchedRq {
        let rq = self.rqs.get(key);
        elevator::SchedRq {
            sectors: rq.unit.len >> 9,
            // A direct I/O's write is REQ_SYNC (block/fops.c
            // dio_bio_write_op); the flusher's writeback is not.
            sync: rq.kind != RqKind::Writeback,
            task: if rq.kind == RqKind::Fio {
                rq.thread
            } else {
                u32::MAX
            },
            cpu: rq.cpu,
            hctx: rq.hctx,
            ..elevator::SchedRq::new(key, rq.unit.ddir, rq.unit.offset, rq.ioprio)
        }
    }

    /// The driver's CPU costs (its queue_rq is part of the submit path).
    pub fn drv_costs(&self) -> DriverCpuCosts {
        self.drv_costs
    }

    /// The submit path's CPU work for one request on the submitting core,
    /// at the reference clock: blk-mq's (`blk_mq_submit_bio` to the
    /// dispatch) and the driver's `queue_rq`.
    #[inline]
    pub fn submit_work(&self, host: &Host) -> Ns {
        host.costs().blk_submit + self.drv_costs.submit
    }

    /// How completions reach the host.
    pub fn signal(&self) -> CompletionSignal {
        self.signal
    }

    /// The disk's statistics at the end of the run (`end`); requests still
    /// in flight (readahead the last job did not wait for) count to then.
    pub fn disk_util(&mut self, end: Ns) -> DiskUtil {
        self.disk_account(end.max(self.disk.last_change), 0);
        self.disk.util.total = end;
        std::mem::take(&mut self.disk.util)
    }

    /// The `"block"` counters.
    pub fn counters(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "tag_waits": self.tags.tag_waits, "io_poll": self.settings.io_poll,
            "io_poll_delay": self.settings.io_poll_delay,
            "hybrid_sleeps": self.hybrid_sleeps,
            "hybrid_sleep_ns": self.hybrid_sleep_ns as u64,
        });
        // Only a zoned disk shows its zone limits and plugs.
        if let Some(p) = &self.zone_plugs {
            v["zoned"] = p.counters();
        }
        // Only a run that plugged shows its plug flushes.
        if self.plugs.flushes > 0 {
            v["plug_flushes"] = self.plugs.flushes.into();
        }
        if let Some(c) = self.elevator.as_deref().and_then(|e| e.counters()) {
            v["iosched"] = c;
        }
        // Only a run with zone appends shows where they landed.
        if self.zone_appends > 0 {
            v["zone_appends"] = self.zone_appends.into();
            v["appends_off_fio_offset"] = self.appends_moved.into();
        }
        // Only a run with passthrough requests shows them.
        if self.passthrough > 0 {
            v["passthrough_requests"] = self.passthrough.into();
        }
        v
    }

    /// The disk's busy time and queue occupancy up to `now`; `delta`
    /// requests enter (1) or leave (-1) it.
    fn disk_account(&mut self, now: Ns, delta: i32) {
        let d = &mut self.disk;
        let span = now - d.last_change;
        if d.inflight > 0 {
            d.util.busy += span;
        }
        d.util.in_queue += span * u64::from(d.inflight);
        d.last_change = now;
        d.inflight = (d.inflight as i32 + delta) as u32;
    }
}

/// /sys/block/<dev>/queue settings that change the simulated path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSettings {
    /// io_poll: polled completion allowed for REQ_POLLED submissions.
    pub io_poll: bool,
    /// io_poll_delay: -1 classic polling, 0 adaptive hybrid, N>0 sleep N us
    /// then poll (block/blk-mq.c, v4.10 to v6.3).
    pub io_poll_delay: i64,
    /// nr_requests: tags per hardware queue the block layer will use (the
    /// driver's depth caps it).
    pub nr_requests: u32,
    /// Seed 3's per-disk `dev_freq_timeout_ms` (0 = off): sync I/O holds a
    /// MIN_FREQUENCY PM QoS request at the maximum on the disk's device
    /// until this long without block I/O. Profiles without the key: off.
    pub dev_freq_timeout: crate::sim::Ns,
    /// What the kernel does with a polled (REQ_POLLED) submission on a
    /// queue that cannot poll: `true` ends it with EOPNOTSUPP, as
    /// submit_bio_noacct does since the 2024 poll-queue check
    /// (block/blk-core.c, `goto not_supported`); `false` clears the flag
    /// and completes it by interrupt, as older kernels did.
    pub polled_without_poll_fails: bool,
    /// queue/scheduler: the I/O scheduler.
    pub scheduler: Scheduler,
    /// The profile names no scheduler: the kernel's default applies
    /// (`Scheduler::kernel_default`, chosen when the disk is probed).
    pub scheduler_default: bool,
    /// queue/iosched/* of mq-deadline.
    pub deadline: sched::mq_deadline::DeadlineTunables,
    /// queue/iosched/* of kyber.
    pub kyber: sched::kyber::KyberTunables,
    /// queue/iosched/* of BFQ.
    pub bfq: sched::bfq::BfqTunables,
    /// How the kernel keeps a zoned disk's writes in order.
    pub zoned_writes: ZonedWrites,
    /// What may merge into a request (block/blk-merge.c): the limits
    /// and queue/nomerges.
    pub merge: merge::MergeLimits,
}

crate::choice_enum! {
    /// `block.zoned_writes`: how the host's kernel keeps each sequential
    /// zone's writes in write-pointer order.
    pub enum ZonedWrites {
        /// Zone write plugging, Linux 6.10+ (block/blk-zoned.c
        /// blk_zone_plug_bio): one write per zone in flight, whatever the
        /// scheduler.
        Plugging = "plugging",
        /// Zone write locking, kernels before 6.10: mq-deadline dispatches
        /// one write per zone (blk_req_zone_write_trylock in
        /// block/mq-deadline.c); with no scheduler nothing orders them.
        Locking = "locking",
    }
}

crate::choice_enum! {
    /// `block.scheduler`: the queue's I/O scheduler, as
    /// /sys/block/DEV/queue/scheduler names it.
    pub enum Scheduler {
        /// No elevator: requests go for a driver tag in arrival order.
        None = "none",
        /// block/mq-deadline.c.
        MqDeadline = "mq-deadline",
        /// block/kyber-iosched.c.
        Kyber = "kyber",
        /// block/bfq-iosched.c.
        Bfq = "bfq",
    }
}

impl Scheduler {
    /// `elevator_get_default` (block/elevator.c, Linux 6.12; the same rule
    /// since blk-mq became the only path in 5.0): mq-deadline for a queue
    /// with one hardware queue (or tags shared across queues, not
    /// modelled) whose tag set lacks BLK_MQ_F_NO_SCHED_BY_DEFAULT (set by
    /// loop only, not modelled), none for several hardware queues; a
    /// bio-based disk (brd) has no elevator.
    pub fn kernel_default(hw_queues: u32, bio_based: bool) -> Scheduler {
        if !bio_based && hw_queues == 1 {
            Scheduler::MqDeadline
        } else {
            Scheduler::None
        }
    }

    /// The elevator this scheduler puts on a queue with `s` and
    /// `hw_queues` hardware queues.
    fn elevator(self, s: &QueueSettings, hw_queues: u32) -> Option<Box<dyn elevator::ElevatorOps>> {
        match self {
            Scheduler::None => None,
            Scheduler::MqDeadline => {
                Some(Box::new(sched::mq_deadline::MqDeadline::new(s.deadline)))
            }
            Scheduler::Bfq => Some(Box::new(sched::bfq::Bfq::new(s.bfq))),
            Scheduler::Kyber => Some(Box::new(sched::kyber::Kyber::new(
                s.kyber,
                hw_queues as usize,
            ))),
        }
    }
}

crate::choice_enum! {
    /// `block.polled_without_poll_queue`: what the kernel does with a
    /// polled submission on a queue that cannot poll.
    pub enum PolledWithoutPollQueue {
        /// Clear REQ_POLLED and complete by interrupt (kernels before the
        /// 2024 poll-queue check).
        Interrupt = "interrupt",
        /// End it with EOPNOTSUPP (submit_bio_noacct, block/blk-core.c).
        Eopnotsupp = "eopnotsupp",
    }
}

crate::params! {
    /// The request queue's sysfs settings (`block.*`, /sys/block/DEV/queue).
    pub struct BlockParams {
        /// queue/io_poll: polled completion allowed for REQ_POLLED
        /// submissions.
        pub io_poll: bool = required flag("block.io_poll"),
        /// queue/io_poll_delay: -1 classic polling, 0 adaptive hybrid, N>0
        /// sleep N us then poll (block/blk-mq.c, v4.10 to v6.3).
        pub io_poll_delay: i64 = required signed(
            "block.io_poll_delay",
            range(
                -1.0,
                1e6,
                "-1 (classic polling), 0 (adaptive hybrid) or a hybrid sleep in us \
                 (queue_poll_delay_store), at most a second",
            )
        ),
        /// queue/nr_requests: tags per hardware queue the block layer will
        /// use (the driver's depth caps it).
        pub nr_requests: u32 = required count_u32("block.nr_requests", QUEUE_DEPTH),
        /// Seed 3's per-disk dev_freq_timeout_ms: sync I/O holds a
        /// MIN_FREQUENCY PM QoS request at the maximum on the disk's device
        /// until this long without block I/O. Absent: off.
        pub dev_freq_timeout: Option<crate::sim::Ns> =
            optional ns("block.dev_freq_timeout_ms", DELAY),
        /// What the kernel does with a polled submission on a queue that
        /// cannot poll.
        pub polled_without_poll_queue: PolledWithoutPollQueue =
            required choice("block.polled_without_poll_queue", PolledWithoutPollQueue),
        /// queue/max_sectors_kb: a request's largest size. Default: the
        /// queue's, BLK_DEF_MAX_SECTORS_CAP, 2560 sectors
        /// (include/linux/blkdev.h).
        pub max_sectors_kb: u64 = default(1280) count(
            "block.max_sectors_kb",
            range(
                4.0,
                (1u32 << 22) as f64,
                "a request's largest size in KiB: at least a page (queue_max_sectors_store \
                 refuses less), at most 4 GiB",
            )
        ),
        /// queue/max_segments: scatter-gather segments in one request, a
        /// driver's limit (read-only in sysfs). Default: BLK_MAX_SEGMENTS,
        /// 128 (include/linux/blkdev.h, blk_set_default_limits); NVMe PCI
        /// sets NVME_MAX_SEGS (128 in 6.12), SCSI/UFS its sg_tablesize.
        pub max_segments: u64 = default(128) count(
            "block.max_segments",
            range(1.0, 65535.0, "segments per request: 1 to USHRT_MAX")
        ),
        /// queue/max_segment_size: bytes one segment may hold, a driver's
        /// limit. Default: BLK_MAX_SEGMENT_SIZE, 65536
        /// (include/linux/blkdev.h).
        pub max_segment_size: u64 = default(65536) count(
            "block.max_segment_size",
            range(4096.0, 4294967295.0, "bytes per segment: a page (BLK_MIN_SEGMENT_SIZE \
                 in 6.12 is 4096) to UINT_MAX")
        ),
        /// queue/nomerges: 0 merges everywhere, 1 only the plug's and the
        /// elevator's one-hit `last_merge` (QUEUE_FLAG_NOXMERGES), 2 none
        /// (QUEUE_FLAG_NOMERGES; block/blk-sysfs.c queue_nomerges_store).
        /// Default: 0.
        pub nomerges: u64 = default(0) count(
            "block.nomerges",
            range(0.0, 2.0, "0 (all merges), 1 (simple one-hit merges only) or 2 (none)")
        ),
        /// queue/read_ahead_kb: the read-ahead window. Default:
        /// VM_READAHEAD_PAGES, 128 KiB (include/linux/mm.h; the page
        /// cache's DEFAULT_RA_PAGES).
        pub read_ahead_kb: u64 = default(128) count(
            "block.read_ahead_kb",
            range(0.0, (1u32 << 20) as f64, "the read-ahead window in KiB: 0 (off) to 1 GiB")
        ),
        /// queue/scheduler: the I/O scheduler (fio's `ioscheduler=` sets it
        /// for a run). Absent: the kernel's own choice (elevator_get_default
        /// in block/elevator.c: mq-deadline for a queue with one hardware
        /// queue, none for several or a bio-based disk). The shipped host
        /// profiles state none: the setting their runs were calibrated
        /// with.
        pub scheduler: Option<Scheduler> = optional choice("block.scheduler", Scheduler),
        /// queue/iosched/read_expire of mq-deadline: a read's deadline.
        /// Absent: HZ / 2, 500 ms (block/mq-deadline.c).
        pub read_expire: Option<crate::sim::Ns> =
            optional ns("block.iosched.read_expire", DELAY),
        /// queue/iosched/write_expire of mq-deadline: a write's deadline.
        /// Absent: 5 * HZ, 5 s (block/mq-deadline.c).
        pub write_expire: Option<crate::sim::Ns> =
            optional ns("block.iosched.write_expire", DELAY),
        /// queue/iosched/writes_starved of mq-deadline: read batches that
        /// may pass over queued writes. Absent: 2 (block/mq-deadline.c).
        pub writes_starved: Option<u64> = optional count(
            "block.iosched.writes_starved",
            range(0.0, (i32::MAX) as f64, "0 to INT_MAX (the kernel takes negatives too, which \
                 act as 0: starved++ >= writes_starved holds at once)")
        ),
        /// queue/iosched/fifo_batch of mq-deadline: requests dispatched in
        /// sector order before the direction and deadlines are checked.
        /// Absent: 16 (block/mq-deadline.c).
        pub fifo_batch: Option<u64> = optional count(
            "block.iosched.fifo_batch",
            range(0.0, (i32::MAX) as f64, "0 (every dispatch checks direction and deadlines) \
                 to INT_MAX, as deadline_fifo_batch_store takes")
        ),
        /// queue/iosched/prio_aging_expire of mq-deadline: how long a BE or
        /// IDLE request waits behind higher priorities before it goes
        /// first. Absent: 10 * HZ, 10 s (block/mq-deadline.c, 5.19+).
        pub prio_aging_expire: Option<crate::sim::Ns> =
            optional ns("block.iosched.prio_aging_expire", DELAY),
        /// queue/iosched/front_merges of mq-deadline: a bio may merge at
        /// a queued request's front. Absent: 1 (block/mq-deadline.c
        /// dd_init_sched).
        pub front_merges: Option<u64> = optional count(
            "block.iosched.front_merges",
            range(0.0, 1.0, "0 (back merges only) or 1, as deadline_front_merges_store takes")
        ),
        /// queue/iosched/read_lat_nsec of kyber: the read domain's latency
        /// target. Absent: 2 ms (block/kyber-iosched.c
        /// kyber_latency_targets).
        pub read_lat_nsec: Option<crate::sim::Ns> =
            optional ns("block.iosched.read_lat_nsec", DELAY),
        /// queue/iosched/write_lat_nsec of kyber: the write domain's
        /// latency target. Absent: 10 ms (block/kyber-iosched.c).
        pub write_lat_nsec: Option<crate::sim::Ns> =
            optional ns("block.iosched.write_lat_nsec", DELAY),
        /// queue/iosched/slice_idle of BFQ: how long the device is held
        /// for an emptied sync queue's next request. Absent: 8 ms
        /// (block/bfq-iosched.c bfq_slice_idle, NSEC_PER_SEC / 125).
        pub slice_idle: Option<crate::sim::Ns> =
            optional ns("block.iosched.slice_idle", DELAY),
        /// queue/iosched/low_latency of BFQ: weight raising of interactive
        /// queues. Absent: 1 (block/bfq-iosched.c bfq_init_queue).
        pub low_latency: Option<u64> = optional count(
            "block.iosched.low_latency",
            range(0.0, 1.0, "0 (off) or 1 (on), as bfq_low_latency_store takes")
        ),
        /// queue/iosched/max_budget of BFQ, sectors: 0 is the kernel's
        /// auto-tuning, here its start value bfq_default_max_budget (16384;
        /// no peak-rate estimation). Absent: 0.
        pub max_budget: Option<u64> = optional count(
            "block.iosched.max_budget",
            range(0.0, (i32::MAX) as f64, "sectors a queue may be served in one slot, 0 for \
                 the default")
        ),
        /// queue/iosched/timeout_sync of BFQ: a queue's budget timeout.
        /// Absent: HZ / 8, 125 ms (block/bfq-iosched.c bfq_timeout).
        pub timeout_sync: Option<crate::sim::Ns> =
            optional ns("block.iosched.timeout_sync", DELAY),
        /// How the kernel orders a zoned disk's writes: zone write
        /// plugging (6.10+) or mq-deadline's zone write locking (before
        /// 6.10). Absent: plugging.
        pub zoned_writes: Option<ZonedWrites> = optional choice("block.zoned_writes", ZonedWrites),
    }
}

impl QueueSettings {
    pub fn from_params(b: &BlockParams) -> QueueSettings {
        QueueSettings {
            io_poll: b.io_poll,
            io_poll_delay: b.io_poll_delay,
            nr_requests: b.nr_requests,
            dev_freq_timeout: b.dev_freq_timeout.unwrap_or(0),
            polled_without_poll_fails: b.polled_without_poll_queue
                == PolledWithoutPollQueue::Eopnotsupp,
            scheduler: b.scheduler.unwrap_or(Scheduler::None),
            scheduler_default: b.scheduler.is_none(),
            zoned_writes: b.zoned_writes.unwrap_or(ZonedWrites::Plugging),
            merge: merge::MergeLimits {
                max_sectors: b.max_sectors_kb * 2,
                max_segments: b.max_segments as u32,
                max_segment_size: b.max_segment_size,
                nomerges: b.nomerges as u8,
            },
            deadline: {
                let d = sched::mq_deadline::DeadlineTunables::default();
                sched::mq_deadline::DeadlineTunables {
                    read_expire: b.read_expire.unwrap_or(d.read_expire),
                    write_expire: b.write_expire.unwrap_or(d.write_expire),
                    writes_starved: b.writes_starved.map_or(d.writes_starved, |v| v as u32),
                    fifo_batch: b.fifo_batch.map_or(d.fifo_batch, |v| v as u32),
                    prio_aging_expire: b.prio_aging_expire.unwrap_or(d.prio_aging_expire),
                    front_merges: b.front_merges.map_or(d.front_merges, |v| v == 1),
                }
            },
            kyber: {
                let k = sched::kyber::KyberTunables::default();
                sched::kyber::KyberTunables {
                    read_lat_nsec: b.read_lat_nsec.unwrap_or(k.read_lat_nsec),
                    write_lat_nsec: b.write_lat_nsec.unwrap_or(k.write_lat_nsec),
                }
            },
            bfq: {
                let d = sched::bfq::BfqTunables::default();
                sched::bfq::BfqTunables {
                    slice_idle: b.slice_idle.unwrap_or(d.slice_idle),
                    low_latency: b.low_latency.map_or(d.low_latency, |v| v == 1),
                    max_budget: b.max_budget.map_or(d.max_budget, |v| v as u32),
                    timeout_sync: b.timeout_sync.unwrap_or(d.timeout_sync).max(1),
                }
            },
        }
    }
}

struct Hctx {
    free_tags: u32,
    /// Requests waiting for a tag, in arrival order.
    waiting: VecDeque<u32>,
    /// `hctx->next_cpu` and `hctx->next_cpu_batch` of
    /// `blk_mq_hctx_next_cpu` (block/blk-mq.c).
    next_cpu: u32,
    next_cpu_batch: u32,
}

/// `BLK_MQ_CPU_WORK_BATCH` (block/blk-mq.h): an asynchronous run of a
/// hardware queue stays on one CPU of its mask for this many runs.
pub const BLK_MQ_CPU_WORK_BATCH: u32 = 8;

/// Tags and hardware queues.
pub struct BlkMq {
    hctxs: Vec<Hctx>,
    pub tag_waits: u64,
}

impl BlkMq {
    pub fn new(hw_queues: u32, depth: u32) -> BlkMq {
        BlkMq {
            hctxs: (0..hw_queues.max(1))
                .map(|_| Hctx {
                    free_tags: depth,
                    // Grown on demand: a reserve per queue would be
                    // gigabytes with thousands of deep queues.
                    waiting: VecDeque::new(),
                    next_cpu: u32::MAX,
                    next_cpu_batch: 0,
                })
                .collect(),
            tag_waits: 0,
        }
    }

    /// How many hardware queues there are.
    pub fn hctx_count(&self) -> usize {
        self.hctxs.len()
    }

    /// blk_mq_map_queues: CPUs spread over hardware queues in order.
    pub fn hctx_of_cpu(&self, cpu: u32) -> usize {
        cpu as usize % self.hctxs.len()
    }

    /// Whether a request arriving now on `hctx` would get a tag at once.
    pub fn tag_free(&self, hctx: usize) -> bool {
        let h = &self.hctxs[hctx];
        h.free_tags > 0 && h.waiting.is_empty()
    }

    /// The CPU that runs an asynchronous run of `hctx` queued from
    /// `this_cpu` (`blk_mq_run_hw_queue(hctx, true)` ->
    /// `kblockd_mod_delayed_work_on(blk_mq_hctx_next_cpu(hctx), ...)`,
    /// block/blk-mq.c): with one hardware queue `blk_mq_hctx_next_cpu`
    /// returns WORK_CPU_UNBOUND, and `__queue_work` on the per-CPU kblockd
    /// workqueue then takes the queueing CPU (kernel/workqueue.c); with
    /// several it goes round the hctx's CPUs (those `hctx_of_cpu` maps to
    /// it), `BLK_MQ_CPU_WORK_BATCH` runs on each.
    pub fn async_run_cpu(&mut self, hctx: usize, this_cpu: u32, ncpus: u32) -> u32 {
        let n = self.hctxs.len() as u32;
        if n == 1 {
            return this_cpu;
        }
        let h = &mut self.hctxs[hctx];
        if h.next_cpu == u32::MAX {
            // hctx->next_cpu starts at the first CPU of the mask
            // (blk_mq_map_swqueue: blk_mq_first_mapped_cpu).
            h.next_cpu = hctx as u32;
            h.next_cpu_batch = BLK_MQ_CPU_WORK_BATCH;
        }
        h.next_cpu_batch = h.next_cpu_batch.saturating_sub(1);
        if h.next_cpu_batch == 0 {
            // cpumask_next_and(next_cpu, hctx->cpumask, online), wrapping
            // to the first mapped CPU.
            let next = h.next_cpu + n;
            h.next_cpu = if next < ncpus { next } else { hctx as u32 };
            h.next_cpu_batch = BLK_MQ_CPU_WORK_BATCH;
        }
        h.next_cpu
    }

    /// Take a tag for request `rq` on `hctx`; false means it now waits.
    pub fn get_tag(&mut self, hctx: usize, rq: u32) -> bool {
        let h = &mut self.hctxs[hctx];
        if h.free_tags > 0 && h.waiting.is_empty() {
            h.free_tags -= 1;
            true
        } else {
            h.waiting.push_back(rq);
            self.tag_waits += 1;
            false
        }
    }

    /// Take a tag on `hctx` for a request an elevator dispatched, if one
    /// is free and no request waits ahead of it.
    pub fn try_tag(&mut self, hctx: usize) -> bool {
        let ok = self.tag_free(hctx);
        if ok {
            self.hctxs[hctx].free_tags -= 1;
        }
        ok
    }

    /// A request an elevator dispatched found no tag: it goes on the
    /// hardware queue's dispatch list (`hctx->dispatch`,
    /// blk_mq_dispatch_rq_list), the first the next freed tag serves.
    pub fn park(&mut self, hctx: usize, rq: u32) {
        self.hctxs[hctx].waiting.push_back(rq);
    }

    /// Give a tag back; if a request was waiting, it takes the tag and is
    /// returned, to be dispatched.
    pub fn put_tag(&mut self, hctx: usize) -> Option<u32> {
        let h = &mut self.hctxs[hctx];
        match h.waiting.pop_front() {
            Some(rq) => Some(rq),
            None => {
                h.free_tags += 1;
                None
            }
        }
    }
}

/// `BLK_MQ_POLL_STATS_BKTS`: 16 buckets by direction and size.
pub const POLL_STATS_BKTS: usize = 16;
/// The poll statistics window: `blk_stat_activate_msecs(q->poll_cb, 100)`.
pub const POLL_STAT_WINDOW_NS: u64 = 100_000_000;

/// Hybrid polling's completion-time statistics (block/blk-mq.c, v4.10 to
/// v6.3): per bucket, the mean of the last finished 100 ms window.
#[derive(Clone, Debug)]
pub struct PollStats {
    window_start: u64,
    sum: [u64; POLL_STATS_BKTS],
    n: [u64; POLL_STATS_BKTS],
    mean: [u64; POLL_STATS_BKTS],
}

impl Default for PollStats {
    fn default() -> Self {
        PollStats {
            window_start: 0,
            sum: [0; POLL_STATS_BKTS],
            n: [0; POLL_STATS_BKTS],
            mean: [0; POLL_STATS_BKTS],
        }
    }
}

impl PollStats {
    /// blk_mq_poll_stats_bkt: `ddir + 2 * (ilog2(sectors) - 9)`, where the
    /// kernel's `ilog2(bytes) - 9` is ilog2 of 512-byte sectors.
    pub fn bucket(write: bool, bytes: u32) -> Option<usize> {
        let sectors = (bytes >> 9).max(1);
        let b = usize::from(write) + 2 * sectors.ilog2() as usize;
        (b < POLL_STATS_BKTS).then_some(b)
    }

    fn roll(&mut self, now: u64) {
        if now >= self.window_start + POLL_STAT_WINDOW_NS {
            // blk_mq_poll_stats_fn: a bucket with samples takes the
            // window's mean; one without keeps its old value.
            for b in 0..POLL_STATS_BKTS {
                if let Some(mean) = self.sum[b].checked_div(self.n[b]) {
                    self.mean[b] = mean;
                }
                self.sum[b] = 0;
                self.n[b] = 0;
            }
            self.window_start = now - (now - self.window_start) % POLL_STAT_WINDOW_NS;
        }
    }

    /// One completed request of the bucket took `ns`.
    pub fn add(&mut self, now: u64, bucket: usize, ns: u64) {
        self.roll(now);
        self.sum[bucket] += ns;
        self.n[bucket] += 1;
    }

    /// blk_mq_poll_nsecs: `(mean + 1) / 2` of the bucket's last window, 0
    /// (no sleep: classic poll) without statistics yet.
    pub fn sleep_ns(&mut self, now: u64, bucket: usize) -> u64 {
        self.roll(now);
        let m = self.mean[bucket];
        if m == 0 {
            0
        } else {
            m.div_ceil(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_sleep_is_half_the_last_window_mean() {
        let mut s = PollStats::default();
        let b = PollStats::bucket(false, 4096).unwrap();
        assert_eq!(b, 6);
        s.add(1_000, b, 10_000);
        s.add(2_000, b, 20_000);
        // Still the first window: no statistics, classic poll.
        assert_eq!(s.sleep_ns(3_000, b), 0);
        // Next window: mean 15,000 -> sleep (15,000 + 1) / 2.
        assert_eq!(s.sleep_ns(POLL_STAT_WINDOW_NS + 5, b), 7_500);
        assert_eq!(PollStats::bucket(true, 4096), Some(7));
    }

    #[test]
    fn requests_wait_for_tags_in_order() {
        let mut b = BlkMq::new(1, 2);
        assert!(b.get_tag(0, 10));
        assert!(b.get_tag(0, 11));
        assert!(!b.get_tag(0, 12));
        assert!(!b.get_tag(0, 13));
        assert_eq!(b.put_tag(0), Some(12));
        assert_eq!(b.put_tag(0), Some(13));
        assert_eq!(b.put_tag(0), None);
        assert_eq!(b.put_tag(0), None);
        assert!(b.get_tag(0, 14));
        assert!(b.get_tag(0, 15));
        assert!(!b.get_tag(0, 16));
    }
}
