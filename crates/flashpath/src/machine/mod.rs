//! The simulated machine: fio job threads on host CPUs, the block layer,
//! and a driver with its device, wired together by one event loop.
//!
//! A request's life (docs/design.md, "A request's life"): the thread
//! prepares an I/O (fio user time) and enters the kernel (syscall, block
//! layer submit, driver queue_rq), all on its core; the request takes a
//! hardware-queue tag and goes to the driver; the device posts its
//! completion; the host takes the interrupt (idle exit, handler, block
//! completion, wake-up, IPI, context switch) or a polling thread finds it;
//! fio reaps it and records its latencies.
//!
//! Each layer owns its state and logic: fio's loop
//! (`workload::fio::FioThread`), the cores and tasks (`host::task::Host`),
//! the block layer (`block::BlockLayer`), the DMA path, the driver, the
//! page cache (`buffered.rs`). The machine pops events and forwards them
//! (`Machine::run`), and carries a fio thread's steps out on the host
//! (`thread.rs`).

mod buffered;
mod defrag;
mod offload;
mod overlap;
mod sqpoll;
mod thread;

use crate::mm::buffered::{BufferedOp, CacheParts, CacheState, CacheWait};

use crate::block::Breakdown;
use crate::block::{BlockEvent, BlockLayer, QueueSettings};
use crate::dma::bounce::SwiotlbPath;
use crate::driver::{DeviceSignal, Driver, DriverCtx};
use crate::host::config::BackgroundWakeups;
use crate::host::cpu::{Cpu, HostCosts};
use crate::host::idle::IdleConfig;
use crate::host::sched::WakePlacement;
use crate::host::task::{Host, Task};
use crate::mm::thp::ThpMode;
use crate::report::{DiskUtil, JobResult};
use crate::sim::hist::LatencyHist;
use crate::sim::queue::EventQueue;
use crate::sim::rng::RngStream;
use crate::sim::Ns;
use crate::types::IrqCpu;
use crate::workload::fio::steadystate::SS_TICK;
use crate::workload::fio::thread::PREALLOC_DEPTH;
use crate::workload::fio::{FioThread, IoEngine, JobSpec, ThreadPlan};

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A thread starts (after its startdelay).
    Start(u32),
    /// A thread continues its loop (after a wake-up or a timer).
    Run(u32),
    /// A thread goes on submitting after its previous submission's CPU work
    /// (one submission per event keeps every layer's calls in time order).
    Submit(u32),
    /// A hybrid poller's sleep timer fired.
    HybridWake(u32),
    /// A thread's sleep timer fired (thinktime, a rate limit, flow_sleep,
    /// a replay's timing).
    TimerWake(u32),
    /// A replay's wait for its next I/O's time ended (fio 3.36's
    /// iolog_delay, which reaps while it waits).
    PaceWake(u32),
    /// The flusher's kworker runs a writeback pass.
    Flush,
    /// The periodic writeback timer (expired dirty data).
    FlushTimer,
    /// A background wake-up of a CPU (`host.background_wakeups`).
    Background(u32),
    /// fio's helper thread checks steady state (once a second).
    SteadyTick,
    /// The io-wq worker running a thread's io_uring buffered write is done
    /// (io_uring/io-wq.c io_worker_handle_work): it posts the CQE.
    IowqDone(u32),
    /// An offloaded request's submit worker runs its engine
    /// (io_submit_mode=offload, `offload.rs`).
    OffloadRun(u32),
    /// An offloaded request's worker reaps it.
    OffloadReap(u32),
    /// The block layer's own work (dispatch, issue, dev_freq_work).
    Block(BlockEvent),
    Device(DeviceSignal),
}

impl From<BlockEvent> for Ev {
    fn from(e: BlockEvent) -> Ev {
        Ev::Block(e)
    }
}

impl From<DeviceSignal> for Ev {
    fn from(s: DeviceSignal) -> Ev {
        Ev::Device(s)
    }
}

/// The block layer's context over the machine's parts (the host, the
/// queue, the DMA path, the driver, the breakdown), borrowed beside
/// `$m.block`.
macro_rules! blk_ctx {
    ($m:expr) => {
        &mut crate::block::BlkCtx {
            host: &mut $m.host,
            queue: &mut $m.queue,
            dma: $m.dma.as_mut(),
            driver: &mut *$m.driver,
            breakdown: &mut $m.breakdown,
        }
    };
}
use blk_ctx;

/// A fio job clone on the host: fio's side (its loop and statistics; its
/// task is `Host::tasks[tid]`), and its page-cache state.
struct Thread {
    fio: FioThread,
    /// Hybrid poll: a completion posted (request, time) while the thread
    /// slept.
    hybrid_ready: Option<(u32, Ns)>,
    /// A replay's reaping wait: until when it spins, if it spins now, and
    /// the wake-up already scheduled (one event per wait, however often a
    /// completion interrupts it).
    pace_spin: Option<Ns>,
    pace_timer: Option<Ns>,
    /// The open file's readahead state.
    ra: crate::mm::FileRa,
    /// The buffered call in progress, and what it sleeps on.
    bop: Option<BufferedOp>,
    cache_wait: Option<CacheWait>,
    /// An fsync waits for the page cache's writeback; once it is over,
    /// blkdev_fsync goes on to blkdev_issue_flush (block/fops.c).
    flush_after_writeback: bool,
    /// A zone reset it waited for completed, with this errno (0: done).
    zone_reset_done: Option<i32>,
    /// Its start is scheduled (a `wait_for` job starts when its waitee
    /// ends, once).
    start_scheduled: bool,
    /// fio's iodepth_batch_submit where its engine hands the kernel a
    /// batch per call (libaio's io_submit, io_uring_enter), 0 where each
    /// I/O goes in by itself; and the I/Os queued since the last commit
    /// (fio's `io_u_queued`), which the kernel has not seen yet.
    batch_submit: usize,
    batch: Vec<u32>,
    /// io_uring on buffered I/O (Linux 6.12 io_uring/rw.c): the CPU of the
    /// io-wq worker that runs the thread's buffered call, while one does
    /// (`buffered::iowq_submit`); and when io_uring_enter returned for a
    /// read that waits for its pages (-EIOCBQUEUED), if it did.
    iowq_cpu: Option<u32>,
    uring_returned: Option<Ns>,
    /// io_uring's sqthread_poll (`sqpoll.rs`): the SQ thread's CPU, when it
    /// last did work (its idle timeout runs from then), and whether fio
    /// spins on the CQ ring now.
    sq_cpu: Option<u32>,
    sq_last: Ns,
    cq_spin: bool,
    /// e4defrag's inplace=1: each move is bracketed by the donor's
    /// fallocate and ftruncate (`defrag.rs`).
    defrag_inplace: bool,
}

/// What io_uring's buffered I/O did (the `"flashpath"` section's
/// `io_uring_buffered`): calls done inline in io_uring_enter, reads that
/// waited for their pages through the page-unlock callback and task_work,
/// writes punted to an io-wq worker, and the workers' CPU time.
#[derive(Clone, Copy, Debug, Default)]
struct UringBuffered {
    inline: u64,
    async_reads: u64,
    iowq_punts: u64,
    iowq_cpu_ns: u64,
}

pub struct Machine {
    queue: EventQueue<Ev>,
    host: Host,
    block: BlockLayer,
    driver: Box<dyn Driver<Ev>>,
    /// swiotlb bouncing (`swiotlb=...,force`), or direct mapping.
    dma: Option<SwiotlbPath>,
    threads: Vec<Thread>,
    current_wave: u32,
    /// A job has `exitall`: then every job's end terminates others (fio's
    /// global exitall_on_terminate, set by any job's exitall).
    exitall: bool,
    threads_done: usize,
    pub breakdown: Breakdown,
    /// Completed I/Os (for the conservation check and benchmarks).
    pub completed_ios: u64,
    pub submitted_ios: u64,
    /// The page cache, when a job does buffered I/O.
    cache: Option<CacheState>,
    /// Background wake-ups, their random intervals, and how many ran.
    background: Option<(BackgroundWakeups, RngStream, u64)>,
    /// io_uring's buffered I/O, when a job does it.
    uring_buffered: Option<UringBuffered>,
    /// CPU ns of io_submit_mode=offload's submit workers, when a job has
    /// them.
    offload_worker_ns: u64,
    offload: bool,
    /// fio's `overlap_check` over the serialize_overlap offload jobs'
    /// I/O, when a job has it (`overlap.rs`).
    overlap: Option<overlap::OverlapCheck>,
    /// The SQ threads of each CPU (sqthread_poll), when a job has them.
    sqpoll: Vec<sqpoll::SqCpu>,
}

pub struct MachineParts {
    pub cpus: Vec<Cpu>,
    /// The cpuidle model of every core.
    pub idle: IdleConfig,
    /// The cores' frequency governor (`host.cpufreq.*`), if any.
    pub cpufreq: Option<crate::host::cpufreq::CpuFreqConfig>,
    pub costs: HostCosts,
    pub irq_cpu: IrqCpu,
    /// Where a thread woken by a completion runs (`host.wake_placement`).
    pub wake_placement: WakePlacement,
    /// Wake-ups the jobs do not cause (`host.background_wakeups`).
    pub background: Option<BackgroundWakeups>,
    pub settings: QueueSettings,
    pub driver: Box<dyn Driver<Ev>>,
    pub dma: Option<SwiotlbPath>,
    /// Transparent huge pages (`host.thp`): with `dma`, how contiguous
    /// fio's buffers are, so how many mappings a request takes.
    pub thp: ThpMode,
    /// The page cache's parameters, when a job does buffered I/O.
    pub cache: Option<CacheParts>,
}

/// I/Os in flight the machine reserves room for before it runs (a thread's
/// completions, the request slab, the event queue); more grow on demand.
const PREALLOCATED_INFLIGHT: usize = 1 << 16;

impl Machine {
    pub fn new(
        parts: MachineParts,
        specs: &[JobSpec],
        plans: Vec<ThreadPlan>,
        seed: u64,
    ) -> Machine {
        let probed = parts.driver.info();
        let cache = parts.cache.map(CacheState::new);
        let mut threads = Vec::with_capacity(plans.len());
        let mut tasks = Vec::with_capacity(plans.len());
        for mut plan in plans {
            let spec = &specs[plan.spec_index as usize];
            // Polled completion: the queue allows it (io_poll=1), the
            // driver can poll, and the submission asks for it (hipri with
            // pvsync2's RWF_HIPRI or io_uring's IOPOLL). Linux's aio clears
            // IOCB_HIPRI ("no one is going to poll for this I/O", fs/aio.c),
            // so libaio with hipri completes by interrupt.
            let polled = spec.hipri
                && parts.settings.io_poll
                && probed.can_poll
                && matches!(
                    spec.ioengine,
                    IoEngine::Pvsync2 | IoEngine::IoUring | IoEngine::IoUringCmd
                );
            // fio's td_io_queue commits once iodepth_batch_submit I/Os are
            // queued (ioengines.c); only the engines with a commit hook
            // batch (libaio, io_uring). Not modelled with polled
            // completion, swiotlb bouncing or a bio-based disk (each I/O
            // goes in alone).
            let batch_submit = if matches!(spec.ioengine, IoEngine::Libaio | IoEngine::IoUring)
                && spec.direct
                && !polled
                && parts.dma.is_none()
                && !parts.driver.bio_based()
                && spec.iodepth_batch_submit > 1
            {
                spec.iodepth_batch_submit as usize
            } else {
                0
            };
            tasks.push(Task::new(plan.cpu, std::mem::take(&mut plan.allowed)));
            let sq_cpu = plan.sq_cpu;
            threads.push(Thread {
                defrag_inplace: spec.inplace,
                fio: FioThread::new(spec, plan, polled, parts.thp, seed),
                hybrid_ready: None,
                pace_spin: None,
                pace_timer: None,
                ra: match cache.as_ref() {
                    Some(c) => c.open_file(spec.fadvise_advice()),
                    None => crate::mm::FileRa::new(0, 0, crate::mm::readahead::Advice::Normal),
                },
                bop: None,
                cache_wait: None,
                flush_after_writeback: false,
                zone_reset_done: None,
                start_scheduled: false,
                batch_submit,
                batch: Vec::with_capacity(batch_submit.min(PREALLOC_DEPTH as usize)),
                iowq_cpu: None,
                uring_returned: None,
                sq_cpu,
                sq_last: 0,
                cq_spin: false,
            });
        }
        // Room reserved up front for the I/O in flight, capped: fio takes
        // iodepth up to 2^31 - 1, and memory must grow with the I/O that
        // is actually in flight, not with what a job may ask for.
        let max_inflight: usize = threads
            .iter()
            .map(|t| t.fio.depth.min(PREALLOC_DEPTH) as usize)
            .sum::<usize>()
            .min(PREALLOCATED_INFLIGHT);
        let mut settings = parts.settings;
        if settings.scheduler_default {
            settings.scheduler =
                crate::block::Scheduler::kernel_default(probed.hw_queues, parts.driver.bio_based());
        }
        let mut block = BlockLayer::new(
            &probed,
            settings,
            parts.irq_cpu,
            parts.driver.polled_irq(),
            parts.driver.irq_delay(),
            max_inflight,
        );
        block.max_discard_sectors = parts.driver.max_discard_sectors();
        block.init_plugs(
            threads.len(),
            threads.iter().map(|t| t.batch_submit).max().unwrap_or(0),
            parts.dma.is_some() || parts.driver.bio_based(),
        );
        // Linux 6.10+ plugs each zone's writes in the block layer; older
        // kernels lock zones in mq-deadline instead.
        if let Some(z) = parts.driver.zoned() {
            match parts.settings.zoned_writes {
                crate::block::ZonedWrites::Plugging => {
                    block.zone_plugs =
                        Some(crate::block::zoned::ZoneWritePlugs::new(&z, max_inflight));
                }
                crate::block::ZonedWrites::Locking => block.set_zone_write_lock(&z),
            }
        }
        block.write_cache = parts.driver.write_cache();
        let serialized: usize = threads
            .iter()
            .filter(|t| t.fio.serialize_overlap)
            .map(|t| t.fio.depth.min(PREALLOC_DEPTH) as usize)
            .sum();
        let overlap = threads
            .iter()
            .any(|t| t.fio.serialize_overlap)
            .then(|| overlap::OverlapCheck::new(serialized.min(PREALLOCATED_INFLIGHT)));
        let sqpoll = if threads.iter().any(|t| t.sq_cpu.is_some()) {
            vec![sqpoll::SqCpu::default(); parts.cpus.len()]
        } else {
            Vec::new()
        };
        Machine {
            queue: EventQueue::with_capacity(4 * max_inflight + 16),
            host: Host::new(
                parts.cpus,
                &parts.idle,
                parts.costs,
                parts.wake_placement,
                tasks,
                parts.cpufreq,
            ),
            block,
            driver: parts.driver,
            dma: parts.dma,
            threads,
            current_wave: 0,
            exitall: specs.iter().any(|s| s.exitall),
            threads_done: 0,
            breakdown: Breakdown::default(),
            completed_ios: 0,
            submitted_ios: 0,
            cache,
            background: parts
                .background
                .map(|b| (b, RngStream::new(seed, "host.background_wakeups"), 0)),
            uring_buffered: specs
                .iter()
                .any(|s| s.ioengine == IoEngine::IoUring && !s.direct)
                .then(UringBuffered::default),
            offload_worker_ns: 0,
            offload: specs.iter().any(|s| s.io_submit_offload),
            overlap,
            sqpoll,
        }
    }

    /// The next background wake-up of `cpu` after `now`.
    fn schedule_background(&mut self, cpu: u32, now: Ns) {
        if let Some((b, rng, _)) = self.background.as_mut() {
            let gap = rng.exponential(1e9 / b.rate_hz).round().max(1.0) as Ns;
            self.queue.schedule(now + gap, Ev::Background(cpu));
        }
    }

    /// A background wake-up reaches `cpu` at `now`: an idle core leaves
    /// its state (paying what that costs, which its governor sees), runs
    /// the handler (preempting whatever runs there) and may idle again.
    fn background_wake(&mut self, cpu: u32, now: Ns) {
        let Some((b, _, n)) = self.background.as_mut() else {
            return;
        };
        *n += 1;
        let cost = b.cost;
        let exit = self.host.wake_cpu(cpu, now);
        let end = self.host.run_irq(cpu, now + exit, cost);
        self.cpu_idle(cpu, end);
        self.schedule_background(cpu, now);
    }

    /// Call the driver with its context; a core it ran code on goes idle
    /// again afterwards if nothing else runs there.
    fn driver_call(&mut self, call: impl FnOnce(&mut dyn Driver<Ev>, &mut DriverCtx<'_, Ev>)) {
        let mut ctx = DriverCtx::new(&mut self.queue, Ev::from, Some(&mut self.host));
        call(&mut *self.driver, &mut ctx);
        if let Some(c) = ctx.ran_on() {
            let done = self.host.busy_until(c);
            self.host.cpu_idle(c, done, &*self.driver);
        }
    }

    pub fn events_handled(&self) -> u64 {
        self.queue.events_popped()
    }

    /// Run to the end: every thread done and nothing in flight.
    pub fn run(&mut self) {
        // Every core starts idle; a thread's start wakes its core.
        for c in 0..self.host.ncpus() {
            self.host.cpu_idle(c, 0, &*self.driver);
        }
        if let Some(mask) = self.background.as_ref().map(|(b, _, _)| b.mask) {
            for c in (0..self.host.ncpus().min(64)).filter(|c| mask & (1u64 << c) != 0) {
                self.schedule_background(c, 0);
            }
        }
        self.start_wave(0, 0);
        if self.threads.iter().any(|t| t.fio.ss.is_some()) {
            self.steadystate_setup();
            self.queue.schedule(SS_TICK, Ev::SteadyTick);
        }
        self.driver_call(|driver, ctx| driver.start(ctx));
        while let Some((now, ev)) = self.queue.pop() {
            // Periodic device work (devfreq) does not keep a finished run
            // alive; the PM QoS work ends by itself (the request drops).
            let finished = self.threads_done == self.threads.len() && self.block.rqs.is_empty();
            if finished
                && matches!(
                    ev,
                    Ev::Device(DeviceSignal::Driver(_))
                        | Ev::Background(_)
                        | Ev::Block(BlockEvent::SchedTimer)
                )
            {
                continue;
            }
            match ev {
                Ev::Start(t) => self.thread_start(t, now),
                Ev::Run(t) => self.thread_run(t, now, true),
                Ev::Submit(t) => self.thread_run(t, now, false),
                Ev::HybridWake(t) => self.hybrid_wake(t, now),
                Ev::TimerWake(t) => self.timer_wake(t, now),
                Ev::PaceWake(t) => self.pace_wake(t, now),
                Ev::Flush => self.flush_work(now),
                Ev::FlushTimer => self.flush_timer(now),
                Ev::Background(c) => self.background_wake(c, now),
                Ev::SteadyTick => self.steady_tick(now),
                Ev::IowqDone(t) => self.iowq_done(t, now),
                Ev::OffloadRun(k) => self.offload_run(k, now),
                Ev::OffloadReap(k) => self.offload_reap(k, now),
                Ev::Block(BlockEvent::Dispatch(rq)) => self.block.dispatch(rq, now, blk_ctx!(self)),
                Ev::Block(BlockEvent::Issue(rq)) => {
                    self.block.issue_to_driver(rq, now, blk_ctx!(self))
                }
                Ev::Block(BlockEvent::DevFreqWork) => self.block.dev_freq_work(now, blk_ctx!(self)),
                Ev::Block(BlockEvent::SchedTimer) => self.block.sched_timer(now, blk_ctx!(self)),
                Ev::Device(DeviceSignal::Driver(e)) => {
                    self.driver_call(|driver, ctx| driver.on_event(e, ctx))
                }
                Ev::Device(DeviceSignal::Completed { tag, status }) => {
                    self.device_completed(tag, status, now)
                }
            }
        }
        debug_assert!(self.block.rqs.is_empty(), "requests left in flight");
    }

    /// Request `key` leaves its submitter on `cpu` at `at` for the block
    /// layer; returns when the submitter is done (its DMA mapping).
    fn submit_rq(&mut self, key: u32, cpu: u32, at: Ns) -> Ns {
        self.block.map_and_dispatch(key, cpu, at, blk_ctx!(self))
    }

    /// Core `cpu` has nothing runnable from `at`: it may go idle.
    fn cpu_idle(&mut self, cpu: u32, at: Ns) {
        self.host.cpu_idle(cpu, at, &*self.driver);
    }

    /// Results per job clone, the disk's statistics, and the model's
    /// counters.
    pub fn results(mut self) -> (Vec<JobResult>, DiskUtil, serde_json::Value, Ns) {
        let end = self.threads.iter().map(|t| t.fio.end).max().unwrap_or(0);
        // (Readahead still in flight when the last job ended completes
        // after it.)
        let disk = self.block.disk_util(end);
        let mut jobs = Vec::with_capacity(self.threads.len());
        let mut lateness = Vec::new();
        for (tid, t) in self.threads.into_iter().enumerate() {
            let (spec, clone) = (t.fio.spec, t.fio.clone);
            let (usr, sys, nvcsw) = self.host.rusage(tid as u32);
            let (res, late) = t.fio.into_result(usr, sys, nvcsw);
            lateness.push(serde_json::json!({
                "job": res.name, "clone": clone, "spec": spec,
                "rate_lateness_mean_ns": late,
            }));
            jobs.push(res);
        }
        // The latency histograms the results hold: slat, clat and lat of
        // each direction, the per-priority clats, and the sync latencies.
        let hist_bytes = jobs
            .iter()
            .map(|j| j.dirs.iter().map(|d| 3 + d.prios.len()).sum::<usize>() + 1)
            .sum::<usize>()
            * LatencyHist::BUCKET_BYTES;
        let per_io = |x: u128| {
            if self.breakdown.ios == 0 {
                0.0
            } else {
                x as f64 / self.breakdown.ios as f64
            }
        };
        let b = self.breakdown;
        let cpus = self.host.cpu_counters(end);
        let restarts = self.block.restarts;
        let mut extra = serde_json::json!({
            "breakdown_ns_per_io": {
                "submit": per_io(b.submit_ns),
                "tag_wait": per_io(b.tag_wait_ns),
                "device": per_io(b.device_ns),
                "cstate_exit": per_io(b.cstate_exit_ns),
                "irq": per_io(b.irq_ns),
                "wakeup": per_io(b.wakeup_ns),
                "poll": per_io(b.poll_ns),
                "reap": per_io(b.reap_ns),
            },
            "block": self.block.counters(),
            "core_wait_ns": self.host.core_wait_ns() as u64,
            "wake_migrations": self.host.wake_migrations(),
            "driver": self.driver.counters(),
            "swiotlb": self.dma.as_ref().map(|d| {
                let mut c = d.counters();
                c["restart_maps"] = serde_json::json!(restarts);
                c
            }),
            "page_cache": self.cache.as_ref().map(|c| c.counters()),
            "cpus": cpus,
            "jobs": lateness,
            "events": self.queue.events_popped(),
        });
        let device_bytes = model_bytes_in(&extra["driver"]);
        let queue_bytes = self.queue.model_bytes();
        extra["model_bytes"] = serde_json::json!({
            "device": device_bytes,
            "event_queue": queue_bytes,
            "latency_histograms": hist_bytes,
            "total": device_bytes + queue_bytes as u64 + hist_bytes as u64,
        });
        if let Some((_, _, n)) = &self.background {
            extra["background_wakeups"] = serde_json::json!(n);
        }
        if self.offload {
            extra["offload"] = serde_json::json!({ "worker_cpu_ns": self.offload_worker_ns });
            if let Some(o) = &self.overlap {
                extra["offload"]["overlap_waits"] = serde_json::json!(o.waits);
                extra["offload"]["overlap_spin_ns"] = serde_json::json!(o.spin_ns);
            }
        }
        if !self.sqpoll.is_empty() {
            let per_cpu: Vec<serde_json::Value> = self
                .sqpoll
                .iter()
                .enumerate()
                .filter(|(_, s)| s.busy_ns > 0 || s.sqes > 0)
                .map(|(cpu, s)| {
                    serde_json::json!({
                        "cpu": cpu, "busy_ns": s.busy_ns, "spin_ns": s.spin_ns,
                        "sqes": s.sqes, "wakeups": s.wakeups,
                    })
                })
                .collect();
            extra["io_uring_sqpoll"] = serde_json::json!(per_cpu);
        }
        if let Some(u) = self.uring_buffered {
            extra["io_uring_buffered"] = serde_json::json!({
                "inline": u.inline,
                "async_read_retries": u.async_reads,
                "iowq_punts": u.iowq_punts,
                "iowq_cpu_ns": u.iowq_cpu_ns,
            });
        }
        if let Some(qos) = self.block.dev_freq_qos.counters() {
            extra["dev_freq_qos"] = qos;
        }
        (jobs, disk, extra, end)
    }
}

/// The device model's own bytes in a driver's counters: the sum of the
/// `total` of every `model_bytes` object in them (one per FTL the device
/// has; the drivers and front ends without an FTL have none). Read from
/// the counters so that no layer's interface grows a method for it.
fn model_bytes_in(v: &serde_json::Value) -> u64 {
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .map(|(k, x)| {
                if k == "model_bytes" {
                    x["total"].as_u64().unwrap_or(0)
                } else {
                    model_bytes_in(x)
                }
            })
            .sum(),
        serde_json::Value::Array(a) => a.iter().map(model_bytes_in).sum(),
        _ => 0,
    }
}
