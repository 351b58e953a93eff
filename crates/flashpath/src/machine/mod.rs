//! The simulated machine: fio job threads on host CPUs, the block layer,
//! and a driver with its device, wired together by one event loop.
//!
//! A request's life (DESIGN.md, "A request's life"): the thread prepares an
//! I/O (fio user time) and enters the kernel (syscall, block layer submit,
//! driver queue_rq), all on its core; the request takes a hardware-queue
//! tag and goes to the driver; the device posts its completion; the host
//! takes the interrupt (idle exit, handler, block completion, wake-up, IPI,
//! context switch) or a polling thread finds it; fio reaps it and records
//! its latencies.
//!
//! A core with nothing runnable idles in the state its menu governor picks
//! (`host::idle::CoreIdle`: next timer = a sleeping thread's timer or the
//! tick, I/O waiters = its threads asleep on I/O); whatever wakes it pays
//! that state's exit latency. A polling thread holds its core in C0: work
//! that becomes runnable there waits until the poller's request completes.
//! Hybrid polling (`io_poll_delay` >= 0) sleeps on a timer first.

mod buffered;

use buffered::{BufferedOp, CacheState, CacheWait};
pub use buffered::{CacheCosts, CacheParts};

use crate::block::{BlkMq, DevFreqQos, PollStats, QosAction, QueueSettings};
use crate::dma::bounce::SwiotlbPath;
use crate::driver::{CompletionSignal, DeviceSignal, Driver, DriverCpuCosts, DriverCtx, DriverRq};
use crate::host::cpu::{Cpu, HostCosts};
use crate::host::idle::{CoreIdle, IdleConfig};
use crate::host::sched::{select_task_rq, RunQueues, WakePlacement, Wakee};
use crate::mm::thp::ThpMode;
use crate::report::{DiskUtil, JobResult};
use crate::sim::queue::EventQueue;
use crate::sim::slab::Slab;
use crate::sim::Ns;
use crate::workload::fio::thread::PREALLOC_DEPTH;
pub use crate::workload::fio::ThreadPlan;
use crate::workload::fio::{FioThread, IoEngine, JobSpec, Step};
use crate::workload::{Ddir, IoUnit};

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A thread starts (after its startdelay).
    Start(u32),
    /// A thread continues its loop (after a wake-up or a timer).
    Run(u32),
    /// A thread goes on submitting after its previous submission's CPU work
    /// (one submission per event keeps every layer's calls in time order).
    Submit(u32),
    /// The submit path of request `rq` reached the driver.
    Dispatch(u32),
    /// Request `rq`, mapped for DMA where it was dispatched, goes to the
    /// driver (its `queue_rq` after `dma_map_sg`).
    Issue(u32),
    /// A hybrid poller's sleep timer fired.
    HybridWake(u32),
    /// Seed 3's `dev_freq_work` (block.dev_freq_timeout_ms).
    DevFreqWork,
    /// The flusher's kworker runs a writeback pass.
    Flush,
    /// The periodic writeback timer (expired dirty data).
    FlushTimer,
    Device(DeviceSignal),
}

fn wrap_device(s: DeviceSignal) -> Ev {
    Ev::Device(s)
}

/// Which CPU takes a device's completion interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqCpu {
    /// The CPU that submitted the request (per-CPU completion queues with
    /// matching MSI-X affinity, as NVMe sets up).
    Submitter,
    /// A fixed CPU (a single-vector controller).
    Fixed(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    NotStarted,
    Running,
    /// Asleep in the kernel waiting for completions.
    WaitIo,
    /// Spinning in the driver's poll loop since the given time.
    Polling(Ns),
    /// Asleep on a timer (thinktime, rate limit).
    Timer,
    /// Hybrid polling: asleep on the poll-delay timer before spinning.
    HybridSleep,
    Done,
}

/// Who a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RqKind {
    /// A fio I/O (direct, or the system call of a buffered one).
    Fio,
    /// Pages read into the page cache (readahead, read_pages).
    CacheRead,
    /// Dirty pages written back.
    Writeback,
}

struct Rq {
    kind: RqKind,
    thread: u32,
    unit: IoUnit,
    /// fio's start_time (get_io_u) and issue_time.
    start: Ns,
    issue: Ns,
    /// Entered the block layer / device posted completion.
    blk_start: Ns,
    hctx: u32,
    polled: bool,
    cpu: u32,
    /// Its buffer is mapped for DMA (swiotlb runs only).
    mapped: bool,
}

impl Rq {
    /// A fio I/O of thread `thread` on `cpu`: fio's start and issue times,
    /// and when it entered the block layer.
    fn fio(
        thread: u32,
        unit: IoUnit,
        cpu: u32,
        start: Ns,
        issue: Ns,
        blk_start: Ns,
        polled: bool,
    ) -> Rq {
        Rq {
            kind: RqKind::Fio,
            thread,
            unit,
            start,
            issue,
            blk_start,
            hctx: 0,
            polled,
            cpu,
            mapped: false,
        }
    }
}

/// A fio job clone on the host: fio's side (its loop and statistics), the
/// task the scheduler runs, and its page-cache state.
struct Thread {
    fio: FioThread,
    /// The CPU it runs on (or slept on): `task_cpu(p)`.
    cpu: u32,
    /// `p->cpus_ptr`; empty means all CPUs.
    allowed: Vec<u32>,
    /// `p->recent_used_cpu`, for `select_idle_sibling`.
    recent_used_cpu: Option<u32>,
    /// When its CPU has run the work booked before its last I/O sleep (the
    /// sleep is recorded at the event's time, the CPU may still be busy
    /// with it): until then it has not scheduled out.
    asleep_at: Ns,
    state: State,
    usr_ns: Ns,
    sys_ns: Ns,
    ctx: u64,
    /// The timer a sleeping thread armed (thinktime, rate, hybrid poll).
    timer_at: Option<Ns>,
    /// Hybrid poll: a completion posted (request, time) while the thread
    /// slept.
    hybrid_ready: Option<(u32, Ns)>,
    /// The open file's readahead state.
    ra: crate::mm::FileRa,
    /// The buffered call in progress, and what it sleeps on.
    bop: Option<BufferedOp>,
    cache_wait: Option<CacheWait>,
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

pub struct Machine {
    queue: EventQueue<Ev>,
    cpus: Vec<Cpu>,
    idle: Vec<CoreIdle>,
    poll_stats: PollStats,
    polled_irq: bool,
    irq_delay: Ns,
    /// A spinning poller holds its core: the thread, per core.
    held: Vec<Option<u32>>,
    /// Threads that became runnable on a held core: they run when the
    /// poller lets go (thread, reference-ns of kernel work first).
    /// The time it became ready, for a woken one.
    deferred: Vec<Vec<(u32, Ns, Option<Ns>)>>,
    /// Time woken threads waited for their core (busy or held by a poller).
    core_wait_ns: u128,
    hybrid_sleeps: u64,
    /// Requests mapped and dispatched by a restart run (`restart_dispatch`).
    restarts: u64,
    hybrid_sleep_ns: u128,
    costs: HostCosts,
    drv_costs: DriverCpuCosts,
    signal: CompletionSignal,
    irq_cpu: IrqCpu,
    wake_placement: WakePlacement,
    /// Completion wake-ups that put the thread on another CPU.
    wake_migrations: u64,
    settings: QueueSettings,
    blk: BlkMq,
    driver: Box<dyn Driver<Ev>>,
    rqs: Slab<Rq>,
    threads: Vec<Thread>,
    current_wave: u32,
    /// Per-request timestamps in flight: device completion time.
    dev_done: Vec<Ns>,
    pub breakdown: Breakdown,
    disk: DiskUtil,
    disk_inflight: u32,
    disk_last_change: Ns,
    /// Completed I/Os (for the conservation check and benchmarks).
    pub completed_ios: u64,
    pub submitted_ios: u64,
    /// swiotlb bouncing (`swiotlb=...,force`), or direct mapping.
    dma: Option<SwiotlbPath>,
    dev_freq_qos: DevFreqQos,
    threads_done: usize,
    /// Tags per hardware queue.
    tag_depth: u32,
    /// The page cache, when a job does buffered I/O.
    cache: Option<CacheState>,
}

pub struct MachineParts {
    pub cpus: Vec<Cpu>,
    /// The cpuidle model of every core.
    pub idle: IdleConfig,
    pub costs: HostCosts,
    pub irq_cpu: IrqCpu,
    /// Where a thread woken by a completion runs (`host.wake_placement`).
    pub wake_placement: WakePlacement,
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
        let depth = probed.queue_depth.min(parts.settings.nr_requests.max(1));
        let blk = BlkMq::new(probed.hw_queues, depth);
        let can_poll = probed.can_poll;
        let cache = parts.cache.map(CacheState::new);
        let mut threads = Vec::with_capacity(plans.len());
        for mut plan in plans {
            let spec = &specs[plan.spec_index as usize];
            // Polled completion: the queue allows it (io_poll=1), the
            // driver can poll, and the submission asks for it (hipri with
            // pvsync2's RWF_HIPRI or io_uring's IOPOLL). Linux's aio clears
            // IOCB_HIPRI ("no one is going to poll for this I/O", fs/aio.c),
            // so libaio with hipri completes by interrupt.
            let polled = spec.hipri
                && parts.settings.io_poll
                && can_poll
                && matches!(spec.ioengine, IoEngine::Pvsync2 | IoEngine::IoUring);
            let (cpu, allowed) = (plan.cpu, std::mem::take(&mut plan.allowed));
            threads.push(Thread {
                fio: FioThread::new(spec, plan, polled, parts.thp, seed),
                cpu,
                allowed,
                recent_used_cpu: None,
                asleep_at: 0,
                state: State::NotStarted,
                usr_ns: 0,
                sys_ns: 0,
                ctx: 0,
                timer_at: None,
                hybrid_ready: None,
                ra: match cache.as_ref() {
                    Some(c) => c.open_file(spec.fadvise_advice()),
                    None => crate::mm::FileRa::new(0, 0, crate::mm::readahead::Advice::Normal),
                },
                bop: None,
                cache_wait: None,
            });
        }
        let disk = DiskUtil {
            name: probed.name.clone(),
            ..DiskUtil::default()
        };
        // Room reserved up front for the I/O in flight, capped: fio takes
        // iodepth up to 2^31 - 1, and memory must grow with the I/O that
        // is actually in flight, not with what a job may ask for.
        let max_inflight: usize = threads
            .iter()
            .map(|t| t.fio.depth.min(PREALLOC_DEPTH) as usize)
            .sum::<usize>()
            .min(PREALLOCATED_INFLIGHT);
        Machine {
            queue: EventQueue::with_capacity(4 * max_inflight + 16),
            drv_costs: probed.cpu_costs,
            signal: probed.completion_signal,
            idle: parts
                .cpus
                .iter()
                .enumerate()
                .map(|(i, _)| CoreIdle::for_cpu(&parts.idle, i))
                .collect(),
            poll_stats: PollStats::default(),
            polled_irq: parts.driver.polled_irq(),
            held: vec![None; parts.cpus.len()],
            deferred: vec![Vec::new(); parts.cpus.len()],
            core_wait_ns: 0,
            hybrid_sleeps: 0,
            restarts: 0,
            hybrid_sleep_ns: 0,
            irq_delay: parts.driver.irq_delay(),
            cpus: parts.cpus,
            costs: parts.costs,
            irq_cpu: parts.irq_cpu,
            wake_placement: parts.wake_placement,
            wake_migrations: 0,
            settings: parts.settings,
            blk,
            driver: parts.driver,
            rqs: Slab::with_capacity(max_inflight),
            threads,
            current_wave: 0,
            dev_done: Vec::with_capacity(max_inflight),
            breakdown: Breakdown::default(),
            disk,
            disk_inflight: 0,
            disk_last_change: 0,
            completed_ios: 0,
            submitted_ios: 0,
            dma: parts.dma,
            dev_freq_qos: DevFreqQos {
                timeout: parts.settings.dev_freq_timeout,
                ..DevFreqQos::default()
            },
            threads_done: 0,
            tag_depth: depth,
            cache,
        }
    }

    pub fn events_handled(&self) -> u64 {
        self.queue.events_popped()
    }

    /// Run to the end: every thread done and nothing in flight.
    pub fn run(&mut self) {
        // Every core starts idle; a thread's start wakes its core.
        for c in 0..self.cpus.len() as u32 {
            self.cpu_idle(c, 0);
        }
        self.start_wave(0, 0);
        {
            let mut ctx = DriverCtx {
                queue: &mut self.queue,
                wrap: wrap_device,
            };
            self.driver.start(&mut ctx);
        }
        while let Some((now, ev)) = self.queue.pop() {
            // Periodic device work (devfreq) does not keep a finished run
            // alive; the PM QoS work ends by itself (the request drops).
            let finished = self.threads_done == self.threads.len() && self.rqs.is_empty();
            if finished && matches!(ev, Ev::Device(DeviceSignal::Driver(_))) {
                continue;
            }
            match ev {
                Ev::Start(t) => self.thread_start(t, now),
                Ev::Run(t) => self.thread_run(t, now, true),
                Ev::Submit(t) => self.thread_run(t, now, false),
                Ev::HybridWake(t) => self.hybrid_wake(t, now),
                Ev::DevFreqWork => self.dev_freq_work(now),
                Ev::Flush => self.flush_work(now),
                Ev::FlushTimer => self.flush_timer(now),
                Ev::Dispatch(rq) => self.dispatch(rq, now),
                Ev::Issue(rq) => self.issue_to_driver(rq, now),
                Ev::Device(DeviceSignal::Driver(e)) => {
                    let mut ctx = DriverCtx {
                        queue: &mut self.queue,
                        wrap: wrap_device,
                    };
                    self.driver.on_event(e, &mut ctx);
                }
                Ev::Device(DeviceSignal::Completed { tag }) => self.device_completed(tag, now),
            }
        }
        debug_assert!(self.rqs.is_empty(), "requests left in flight");
    }

    fn start_wave(&mut self, wave: u32, now: Ns) {
        self.current_wave = wave;
        for (i, t) in self.threads.iter().enumerate() {
            if t.fio.wave == wave && t.state == State::NotStarted {
                self.queue
                    .schedule(now + t.fio.startdelay, Ev::Start(i as u32));
            }
        }
    }

    fn thread_start(&mut self, tid: u32, now: Ns) {
        let t = &mut self.threads[tid as usize];
        t.state = State::Running;
        t.fio.start(now);
        if t.fio.buffered && t.fio.invalidate {
            // fio's file_invalidate_cache at open: BLKFLSBUF on a block
            // device drops its clean cached pages.
            if let Some(c) = self.cache.as_mut() {
                c.cache.invalidate_clean();
            }
        }
        let t = &mut self.threads[tid as usize];
        let cpu = t.cpu;
        self.cpus[cpu as usize].runnable += 1;
        self.wake_cpu(cpu, now);
        self.thread_run(tid, now, true);
    }

    /// A core that was idle is woken at `at` (by an interrupt or IPI):
    /// returns the exit latency it pays. (The idle governor chose the state
    /// when the core went idle.)
    fn wake_cpu(&mut self, cpu: u32, at: Ns) -> Ns {
        self.wake_cpu_by(cpu, at, false)
    }

    fn wake_cpu_by(&mut self, cpu: u32, at: Ns, by_timer: bool) -> Ns {
        let c = cpu as usize;
        let since = self.cpus[c].idle_since;
        match self.cpus[c].leave_idle(at) {
            Some(_) => {
                let iowait = self.iowaiters(cpu);
                self.idle[c].exit(at, by_timer, iowait)
            }
            None => {
                if since.is_some() {
                    // Woken before the core finished its last work: it
                    // never reached the idle state.
                    self.idle[c].cancel();
                }
                0
            }
        }
    }

    /// Threads of `cpu` asleep in I/O wait (`nr_iowait_cpu()`).
    fn iowaiters(&self, cpu: u32) -> u32 {
        self.threads
            .iter()
            .filter(|t| t.cpu == cpu && matches!(t.state, State::WaitIo | State::HybridSleep))
            .count() as u32
    }

    /// The core has nothing runnable from `at` (after its queued work): it
    /// goes idle and the governor picks a state, with the earliest timer
    /// a sleeping thread of the core armed (else the tick) and its I/O
    /// waiters.
    fn cpu_idle(&mut self, cpu: u32, at: Ns) {
        let c = cpu as usize;
        if self.cpus[c].runnable > 0 || self.cpus[c].idle_since.is_some() {
            return;
        }
        self.cpus[c].enter_idle(at);
        let since = self.cpus[c].idle_since.unwrap_or(at);
        let timer = self
            .threads
            .iter()
            .filter(|t| t.cpu == cpu)
            .filter_map(|t| t.timer_at)
            .min();
        let iowait = self.iowaiters(cpu);
        // A driver's CPU PM QoS request (ufs-qcom's vote) bounds the exit
        // latency the governor may pick.
        let limit = self.driver.cpu_latency_limit(cpu, since);
        self.idle[c].enter_limited(since, timer, iowait, limit);
    }

    /// The thread runs fio's loop from `now` (after reaping what is ready
    /// when `reap_first`), carrying out each step on its core until it
    /// sleeps, spins, or hands the next submission to a later event.
    fn thread_run(&mut self, tid: u32, now: Ns, reap_first: bool) {
        let ti = tid as usize;
        if self.threads[ti].state == State::Done {
            return;
        }
        let cpu_id = self.threads[ti].cpu as usize;
        if self.held[cpu_id].is_some_and(|p| p != tid) {
            // Another thread spins on this core: wait until it lets go.
            self.threads[ti].state = State::Running;
            self.deferred[cpu_id].push((tid, 0, None));
            return;
        }
        self.threads[ti].state = State::Running;
        let mut now = now;
        if reap_first && !self.threads[ti].fio.done.is_empty() {
            now = self.reap(tid, now, false);
        }
        // Back from an fsync=N sync it slept in.
        self.threads[ti].fio.sync_returned(now);
        if self.threads[ti].bop.is_some() {
            // Back in a buffered call it slept in.
            if let Some(end) = self.buffered_step(tid, now) {
                self.queue.schedule(end, Ev::Submit(tid));
            }
            return;
        }
        let mut last_unit: Option<IoUnit> = None;
        let stop = loop {
            let t = &mut self.threads[ti];
            match t.fio.next(now) {
                Step::Think { spin, sleep } => {
                    let cpu = &mut self.cpus[t.cpu as usize];
                    let spun = cpu.spin_until(now, now + spin);
                    t.sys_ns += spin;
                    if sleep > 0 {
                        self.sleep_timer(tid, spun, spun + sleep);
                        return;
                    }
                    now = spun;
                }
                Step::Sync => match self.fsync_call(tid, now) {
                    Some(end) => now = end,
                    None => return,
                },
                Step::SleepUntil(at) => {
                    self.sleep_timer(tid, now, at);
                    return;
                }
                Step::Submit(unit) => {
                    if t.fio.buffered {
                        t.fio.count_think();
                        if let Some(end) = self.buffered_submit(tid, unit, now) {
                            // One call per event keeps the cache's changes
                            // in time order.
                            self.queue.schedule(end, Ev::Submit(tid));
                        }
                        return;
                    }
                    if t.fio.engine == IoEngine::Null {
                        now = self.null_submit(tid, unit, now);
                        continue;
                    }
                    now = self.direct_submit(tid, unit, now);
                    last_unit = Some(unit);
                    let fio = &mut self.threads[ti].fio;
                    if !fio.sync {
                        self.queue.schedule(now, Ev::Submit(tid));
                        return;
                    }
                    break fio.stop();
                }
                stop @ (Step::Reap | Step::Wait | Step::Done { .. }) => break stop,
            }
        };
        self.thread_stop(tid, now, stop, last_unit);
    }

    /// fio's fsync=N sync from `now`: the call and the page cache's
    /// writeback on the thread's core. Returns when it returned, or None if
    /// the thread sleeps in it.
    fn fsync_call(&mut self, tid: u32, now: Ns) -> Option<Ns> {
        let costs = self.costs;
        let t = &mut self.threads[tid as usize];
        let cpu = &mut self.cpus[t.cpu as usize];
        let entered = cpu.run(now, costs.fio_submit, costs.syscall_entry);
        t.usr_ns += cpu.scaled(costs.fio_submit);
        t.sys_ns += cpu.scaled(costs.syscall_entry);
        t.fio.sync_started(now);
        if !self.buffered_fsync(tid, entered) {
            return None;
        }
        let t = &mut self.threads[tid as usize];
        let cpu = &mut self.cpus[t.cpu as usize];
        let end = cpu.run(entered, 0, costs.syscall_exit);
        t.sys_ns += cpu.scaled(costs.syscall_exit);
        t.fio.sync_returned(end);
        Some(end)
    }

    /// fio's null engine: the I/O completes in user space, no kernel.
    /// Returns when fio is done with it.
    fn null_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Ns {
        let costs = self.costs;
        let t = &mut self.threads[tid as usize];
        let cpu = &mut self.cpus[t.cpu as usize];
        let end = cpu.run(now, costs.fio_submit, 0);
        t.usr_ns += cpu.scaled(costs.fio_submit);
        let key = self
            .rqs
            .insert(Rq::fio(tid, unit, t.cpu, now, end, end, false));
        t.fio.completed_inline(key);
        self.submitted_ios += 1;
        end
    }

    /// A direct I/O from `now`: fio's user-space work, then the system
    /// call into the block layer and the driver's queue_rq on the thread's
    /// core. Returns when the submitter is done.
    fn direct_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Ns {
        let costs = self.costs;
        let t = &mut self.threads[tid as usize];
        let sync = t.fio.sync;
        let sys = costs.syscall_entry
            + costs.blk_submit
            + self.drv_costs.submit
            + if sync { 0 } else { costs.syscall_exit };
        let cpu = &mut self.cpus[t.cpu as usize];
        let usr_end = cpu.run(now, costs.fio_submit, 0);
        let end = cpu.run(usr_end, 0, sys);
        t.usr_ns += cpu.scaled(costs.fio_submit);
        t.sys_ns += cpu.scaled(sys);
        let issue = if sync { usr_end } else { end };
        let key = self
            .rqs
            .insert(Rq::fio(tid, unit, t.cpu, now, issue, usr_end, t.fio.polled));
        t.fio.queued();
        self.submitted_ios += 1;
        t.fio.count_think();
        // dma_map_sg in the driver's queue_rq, inline on the thread's core
        // at the event's time (the thread holds its core, so the allocator
        // is called in time order) when the request will get a tag at once.
        // One that will wait for a tag is mapped when it is dispatched, by
        // the run that hands it the tag (`restart_dispatch`).
        let cpu = t.cpu;
        let mapped = self.map_and_dispatch(key, cpu, end);
        self.threads[tid as usize].sys_ns += mapped - end;
        self.breakdown.submit_ns += u128::from(mapped - now);
        mapped
    }

    /// fio's loop stopped submitting at `now`: reap what is ready, wait for
    /// the I/O in flight (asleep in the kernel, polling, or hybrid polling:
    /// `last_unit`, a synchronous call's I/O, picks the sleep), or end.
    fn thread_stop(&mut self, tid: u32, now: Ns, stop: Step, last_unit: Option<IoUnit>) {
        let costs = self.costs;
        let ti = tid as usize;
        let t = &mut self.threads[ti];
        match stop {
            Step::Reap => {
                // Completions are ready: fio's getevents returns at once
                // (the null engine reaps in user space, without a system
                // call). (A sync engine's buffered call already returned to
                // user space: nothing more to reap by system call.)
                let syscall = t.fio.engine != IoEngine::Null && !t.fio.sync;
                let end = self.reap(tid, now, syscall);
                self.queue.schedule(end, Ev::Submit(tid));
            }
            Step::Wait if t.fio.polled => {
                // Hybrid polling (io_poll_delay >= 0): sleep first, once
                // per request, then spin (blk_mq_poll_hybrid_sleep).
                let delay = self.settings.io_poll_delay;
                let sleep = match (delay, last_unit) {
                    (d, Some(_)) if d > 0 => d as Ns * 1_000,
                    (0, Some(u)) => PollStats::bucket(u.ddir != Ddir::Read, u.len)
                        .map(|b| self.poll_stats.sleep_ns(now, b))
                        .unwrap_or(0),
                    _ => 0,
                };
                let t = &mut self.threads[ti];
                if sleep > 0 {
                    t.state = State::HybridSleep;
                    t.ctx += 1;
                    self.hybrid_sleeps += 1;
                    self.hybrid_sleep_ns += u128::from(sleep);
                    t.timer_at = Some(now + sleep);
                    let cpu = t.cpu;
                    self.cpus[cpu as usize].runnable -= 1;
                    self.cpu_idle(cpu, now);
                    self.queue.schedule(now + sleep, Ev::HybridWake(tid));
                } else {
                    t.state = State::Polling(now);
                    self.held[t.cpu as usize] = Some(tid);
                }
            }
            Step::Wait => {
                t.state = State::WaitIo;
                t.ctx += 1;
                let cpu = t.cpu;
                if !t.fio.sync {
                    // io_getevents: enter the kernel, then sleep in it.
                    let core = &mut self.cpus[cpu as usize];
                    core.run(now, 0, costs.syscall_entry);
                    t.sys_ns += core.scaled(costs.syscall_entry);
                }
                let core = &mut self.cpus[cpu as usize];
                core.runnable -= 1;
                self.threads[ti].asleep_at = core.busy_until.max(now);
                self.cpu_idle(cpu, now);
            }
            Step::Done { end_fsync } => {
                if end_fsync && !self.buffered_fsync(tid, now) {
                    return;
                }
                self.finish(tid, now);
            }
            _ => unreachable!("a stopped loop reaps, waits or ends"),
        }
    }

    /// The hybrid poller's hrtimer fires: the core leaves idle, the thread
    /// is switched back in and spins (or finds the completion that was
    /// posted while it slept at its first poll).
    fn hybrid_wake(&mut self, tid: u32, now: Ns) {
        let ti = tid as usize;
        let cpu_id = self.threads[ti].cpu;
        self.threads[ti].timer_at = None;
        let exit = self.wake_cpu_by(cpu_id, now, true);
        let cpu = &mut self.cpus[cpu_id as usize];
        cpu.runnable += 1;
        let resumed = cpu.run(now + exit, 0, self.costs.context_switch);
        let t = &mut self.threads[ti];
        t.sys_ns += resumed - now - exit;
        t.state = State::Polling(resumed);
        self.held[cpu_id as usize] = Some(tid);
        if let Some((key, posted)) = t.hybrid_ready.take() {
            self.poll_complete(tid, key, posted, resumed);
        }
    }

    /// A polling thread (spinning since `since`) finds request `key`,
    /// posted by the device at `posted`: blk_poll calls the driver's poll
    /// every poll_iteration and notices the completion at the end of the
    /// first call that starts after it was posted.
    fn poll_complete(&mut self, tid: u32, key: u32, posted: Ns, since: Ns) {
        let costs = self.costs;
        let drv = self.drv_costs;
        let ti = tid as usize;
        let t_cpu = self.threads[ti].cpu;
        let c = t_cpu as usize;
        let iter = self.cpus[c].scaled(drv.poll_iteration).max(1);
        let polls = (posted.saturating_sub(since)).div_ceil(iter).max(1);
        let mut seen = since + polls * iter;
        let spin_from = since;
        if self.polled_irq {
            // v4.4 classic poll on an interrupt-driven queue: the MSI-X
            // interrupt fires too and runs its handler (which finds the
            // entry or races the poller for it); on the poller's own core
            // it preempts the spin and delays the poll that notices.
            let irq_at = posted + self.irq_delay;
            let ic = self.irq_target(self.rqs.get(key).cpu);
            let cost = costs.irq_entry + drv.irq_handler;
            if ic == t_cpu {
                self.cpus[c].spin_until(spin_from, irq_at.min(seen));
                let end = self.cpus[c].run_irq(irq_at, cost);
                if irq_at < seen {
                    self.breakdown.irq_ns += u128::from(end - irq_at);
                    seen += end - irq_at;
                }
            } else {
                let exit = self.wake_cpu(ic, irq_at);
                let end = self.cpus[ic as usize].run_irq(irq_at + exit, cost);
                self.cpu_idle(ic, end);
            }
        }
        self.poll_stats_add(key, seen);
        let cpu = &mut self.cpus[c];
        cpu.spin_until(spin_from, seen);
        let t = &mut self.threads[ti];
        t.sys_ns += seen - since;
        self.breakdown.poll_ns += u128::from(seen - posted);
        // dma_unmap (swiotlb copy back and release) in the poller's
        // completion path, before the block completion.
        let seen = match self.dma.as_mut() {
            Some(dma) => {
                let unmapped = dma.unmap(cpu, key, seen);
                t.sys_ns += unmapped - seen;
                unmapped
            }
            None => seen,
        };
        let done = cpu.run(seen, 0, costs.blk_complete + costs.syscall_exit);
        t.sys_ns += cpu.scaled(costs.blk_complete + costs.syscall_exit);
        self.breakdown.reap_ns += u128::from(done - seen);
        t.fio.io_completed(key);
        t.state = State::Running;
        // The poller lets go of its core: threads that became runnable
        // meanwhile are switched in first, then the poller continues.
        self.held[c] = None;
        let mut next = done;
        let waiting = std::mem::take(&mut self.deferred[c]);
        for &(other, cost, ready) in &waiting {
            let resumed = self.cpus[c].run(done, 0, cost);
            let switch = self.cpus[c].scaled(cost);
            self.threads[other as usize].sys_ns += switch;
            if let Some(ready) = ready {
                self.core_wait_ns += u128::from(resumed - ready - switch);
                self.breakdown.wakeup_ns += u128::from(resumed - ready);
            }
            self.queue.schedule(resumed, Ev::Run(other));
            next = next.max(resumed);
        }
        self.deferred[c] = waiting;
        self.deferred[c].clear();
        self.queue.schedule(next, Ev::Run(tid));
    }

    /// Hybrid polling's statistics: the request's time from the driver to
    /// its completion (blk_stat_add with io_start_time_ns).
    fn poll_stats_add(&mut self, key: u32, at: Ns) {
        if self.settings.io_poll_delay == 0 {
            let rq = self.rqs.get(key);
            if let Some(b) = PollStats::bucket(rq.unit.ddir != Ddir::Read, rq.unit.len) {
                let started = self.dev_done[key as usize];
                self.poll_stats.add(at, b, at - started);
            }
        }
    }

    fn irq_target(&self, rq_cpu: u32) -> u32 {
        match self.irq_cpu {
            IrqCpu::Submitter => rq_cpu,
            IrqCpu::Fixed(c) => c.min(self.cpus.len() as u32 - 1),
        }
    }

    fn sleep_timer(&mut self, tid: u32, now: Ns, wake: Ns) {
        // fio's usec_sleep is a nanosleep: the timer fires at the end of
        // its slack range.
        let wake = wake + self.costs.timer_slack;
        let t = &mut self.threads[tid as usize];
        t.state = State::Timer;
        t.ctx += 1;
        t.timer_at = Some(wake);
        let cpu_id = t.cpu;
        self.cpus[cpu_id as usize].runnable -= 1;
        self.cpu_idle(cpu_id, now);
        // The timer fires on the thread's core: it pays the idle exit and
        // the switch back to the thread before fio continues.
        self.threads[tid as usize].timer_at = None;
        let exit = self.wake_cpu_by(cpu_id, wake, true);
        let cpu = &mut self.cpus[cpu_id as usize];
        cpu.runnable += 1;
        let resumed = cpu.run(wake + exit, 0, self.costs.context_switch);
        let switch = cpu.scaled(self.costs.context_switch);
        self.threads[tid as usize].sys_ns += switch;
        // Back from a sleep, fio goes on submitting: nothing is reaped
        // before the queue is full (a rate or thinktime sleep came after a
        // quiesce, so only a paced replay has completions waiting).
        self.queue.schedule(resumed, Ev::Submit(tid));
    }

    /// Seed 3's `dev_freq_work`: add or drop the disk's MIN_FREQUENCY
    /// request (at FREQ_QOS_MAX_DEFAULT_VALUE kHz) and tell the driver.
    fn dev_freq_work(&mut self, now: Ns) {
        if self.dev_freq_qos.work_at != Some(now) {
            return;
        }
        match self.dev_freq_qos.work(now) {
            QosAction::Add => self
                .driver
                .set_disk_min_freq_qos(Some(crate::device::devfreq::FREQ_QOS_MAX_DEFAULT_VALUE)),
            QosAction::Remove => self.driver.set_disk_min_freq_qos(None),
            QosAction::Rearm => {}
        }
        if let Some(t) = self.dev_freq_qos.work_at {
            self.queue.schedule(t, Ev::DevFreqWork);
        }
    }

    fn dispatch(&mut self, key: u32, now: Ns) {
        // blk_mq_submit_bio: a READ or REQ_SYNC bio (fio's direct I/O is
        // REQ_SYNC) records its time for the dev_freq_timeout_ms work.
        if self.rqs.get(key).unit.ddir != Ddir::Trim {
            if let Some(at) = self.dev_freq_qos.submit(now) {
                self.queue.schedule(at, Ev::DevFreqWork);
            }
        }
        let rq = self.rqs.get_mut(key);
        let hctx = self.blk.hctx_of_cpu(rq.cpu);
        rq.hctx = hctx as u32;
        rq.blk_start = now;
        self.disk_account(now, 1);
        if self.blk.get_tag(hctx, key) {
            let rq = self.rqs.get(key);
            if self.dma.is_some() && !rq.mapped {
                // A tag came free between the submit's check and now: the
                // submitter maps it inline after all.
                let cpu = rq.cpu;
                self.map_then_issue(key, cpu, now);
            } else {
                self.issue_to_driver(key, now);
            }
        }
    }

    /// Request `key` leaves its submitter on `cpu` at `at`: with swiotlb,
    /// `dma_map_sg` in the driver's queue_rq runs inline on that core (in
    /// time order: the submitter holds its core) when the request will get
    /// a tag at once; one that will wait for a tag is mapped when it is
    /// dispatched, by the run that hands it the tag (`restart_dispatch`).
    /// Returns when the submitter is done.
    fn map_and_dispatch(&mut self, key: u32, cpu: u32, at: Ns) -> Ns {
        let hctx = self.blk.hctx_of_cpu(cpu);
        let end = match self.dma.as_mut() {
            Some(dma) if self.blk.tag_free(hctx) => {
                let rq = self.rqs.get_mut(key);
                rq.mapped = true;
                let (ddir, len) = (rq.unit.ddir, u64::from(rq.unit.len));
                let contiguous = Self::contiguous_of(&self.threads, rq);
                dma.map(&mut self.cpus[cpu as usize], key, ddir, len, contiguous, at)
            }
            _ => at,
        };
        self.queue.schedule(end, Ev::Dispatch(key));
        end
    }

    /// The physically contiguous extent of a request's buffer: a fio
    /// thread's I/O buffers, or order-0 page-cache pages.
    fn contiguous_of(threads: &[Thread], rq: &Rq) -> u64 {
        match rq.kind {
            RqKind::Fio => threads[rq.thread as usize].fio.buf_contiguous,
            _ => crate::mm::PAGE_SIZE,
        }
    }

    /// `dma_map_sg` of request `key` on `cpu` from `at`, then the driver.
    fn map_then_issue(&mut self, key: u32, cpu: u32, at: Ns) {
        let rq = self.rqs.get_mut(key);
        rq.mapped = true;
        let (ddir, len) = (rq.unit.ddir, u64::from(rq.unit.len));
        let contiguous = Self::contiguous_of(&self.threads, rq);
        let dma = self.dma.as_mut().expect("only swiotlb runs map");
        let end = dma.map(&mut self.cpus[cpu as usize], key, ddir, len, contiguous, at);
        self.queue.schedule(end, Ev::Issue(key));
    }

    /// A request that waited for a tag is dispatched by the run of its
    /// hardware queue that the freed tag starts: `__blk_mq_free_request`
    /// -> `blk_mq_sched_restart` -> `blk_mq_run_hw_queue(hctx, true)`, a
    /// kblockd work item (block/blk-mq.c, block/blk-mq-sched.c) on the CPU
    /// `async_run_cpu` names. Its `queue_rq`, and so its `dma_map_sg`, runs
    /// there, after the completion that freed the tag (`at`, on
    /// `from_cpu`). (The driver's own submit cost stays booked on the
    /// submitting thread.)
    fn restart_dispatch(&mut self, key: u32, from_cpu: u32, at: Ns) {
        let hctx = self.rqs.get(key).hctx as usize;
        let ncpus = self.cpus.len() as u32;
        let c = self.blk.async_run_cpu(hctx, from_cpu, ncpus);
        self.restarts += 1;
        if c != from_cpu {
            let exit = self.wake_cpu(c, at);
            self.map_then_issue(key, c, at + exit);
            let busy = self.cpus[c as usize].busy_until;
            self.cpu_idle(c, busy);
        } else {
            self.map_then_issue(key, c, at);
        }
    }

    fn issue_to_driver(&mut self, key: u32, now: Ns) {
        let rq = self.rqs.get(key);
        self.breakdown.tag_wait_ns += u128::from(now - rq.blk_start);
        let drq = DriverRq {
            tag: key,
            ddir: rq.unit.ddir,
            offset: rq.unit.offset,
            len: rq.unit.len,
            polled: rq.polled,
            cpu: rq.cpu,
        };
        if self.dev_done.len() <= key as usize {
            self.dev_done.resize(key as usize + 1, 0);
        }
        self.dev_done[key as usize] = now;
        let mut ctx = DriverCtx {
            queue: &mut self.queue,
            wrap: wrap_device,
        };
        self.driver.queue_rq(drq, &mut ctx);
    }

    fn disk_account(&mut self, now: Ns, delta: i32) {
        let span = now - self.disk_last_change;
        if self.disk_inflight > 0 {
            self.disk.busy += span;
        }
        self.disk.in_queue += span * u64::from(self.disk_inflight);
        self.disk_last_change = now;
        self.disk_inflight = (self.disk_inflight as i32 + delta) as u32;
    }

    fn device_completed(&mut self, key: u32, now: Ns) {
        let sent = self.dev_done[key as usize];
        let (tid, hctx, polled, rq_cpu, ddir, blk_start, kind) = {
            let rq = self.rqs.get(key);
            (
                rq.thread,
                rq.hctx,
                rq.polled,
                rq.cpu,
                rq.unit.ddir,
                rq.blk_start,
                rq.kind,
            )
        };
        if kind == RqKind::Fio {
            self.breakdown.device_ns += u128::from(now - sent);
        }
        self.disk_account(now, -1);
        match ddir {
            Ddir::Read => {
                self.disk.read_ios += 1;
                self.disk.read_ticks += now - blk_start;
            }
            _ => {
                self.disk.write_ios += 1;
                self.disk.write_ticks += now - blk_start;
            }
        }
        // The tag is free again: a waiting request goes to the driver. With
        // swiotlb it still has to be mapped, on the CPU of the queue run
        // that the completion starts (below, once the completion's own work
        // is done).
        let mut restart = None;
        if let Some(next) = self.blk.put_tag(hctx as usize) {
            if self.dma.is_some() && !self.rqs.get(next).mapped {
                restart = Some(next);
            } else {
                self.issue_to_driver(next, now);
            }
        }
        let costs = self.costs;
        let drv = self.drv_costs;
        let ti = tid as usize;
        // Page cache requests complete by interrupt (nobody polls them).
        let polled_now = kind == RqKind::Fio
            && match self.threads[ti].state {
                State::Polling(_) | State::HybridSleep => polled,
                _ => false,
            };
        if polled_now {
            // The poller's CPU finds the completion; the restart is queued
            // from there.
            if let Some(next) = restart {
                self.restart_dispatch(next, rq_cpu, now);
            }
            match self.threads[ti].state {
                State::Polling(since) => self.poll_complete(tid, key, now, since),
                _ => self.threads[ti].hybrid_ready = Some((key, now)),
            }
            return;
        }
        // Interrupt (or inline/softirq completion on the submitting CPU).
        let (irq_cpu, irq_start, at) = match self.signal {
            CompletionSignal::Interrupt => {
                let c = self.irq_target(rq_cpu);
                // MSI-X delivery, then the core leaves its idle state.
                let arrive = now + self.irq_delay;
                let exit = self.wake_cpu(c, arrive);
                self.breakdown.cstate_exit_ns += u128::from(exit);
                let cost = costs.irq_entry + drv.irq_handler + costs.blk_complete;
                let start = arrive + exit;
                let mut end = self.cpus[c as usize].run_irq(start, cost);
                if let Some(dma) = self.dma.as_mut() {
                    end = dma.unmap(&mut self.cpus[c as usize], key, end);
                }
                self.breakdown.irq_ns += u128::from(end - now - exit);
                (c, start, end)
            }
            CompletionSignal::Softirq | CompletionSignal::Inline => {
                let cost = if self.signal == CompletionSignal::Softirq {
                    costs.blk_complete
                } else {
                    0
                };
                let mut end = self.cpus[rq_cpu as usize].run_irq(now, cost);
                if let Some(dma) = self.dma.as_mut() {
                    end = dma.unmap(&mut self.cpus[rq_cpu as usize], key, end);
                }
                self.breakdown.irq_ns += u128::from(end - now);
                (rq_cpu, now, end)
            }
        };
        if let Some(next) = restart {
            self.restart_dispatch(next, irq_cpu, at);
        }
        if kind != RqKind::Fio {
            self.cache_rq_done(key, irq_cpu, at);
            return;
        }
        let t = &mut self.threads[ti];
        t.fio.io_completed(key);
        let wake_needed = t.state == State::WaitIo && t.fio.enough_to_wake();
        if !wake_needed {
            self.cpu_idle(irq_cpu, at);
            return;
        }
        let (_, idle_irq_cpu) = self.wake_thread_from(tid, irq_cpu, irq_start, at);
        if idle_irq_cpu {
            let busy = self.cpus[irq_cpu as usize].busy_until;
            self.cpu_idle(irq_cpu, busy);
        }
    }

    /// Wake thread `tid` (asleep in the kernel) from `irq_cpu` at `at`:
    /// returns when the interrupt's CPU is done with it, and whether that
    /// CPU may go idle after.
    fn wake_thread(&mut self, tid: u32, irq_cpu: u32, at: Ns) -> Ns {
        self.wake_thread_from(tid, irq_cpu, at, at).0
    }

    /// (`irq_start`: when the interrupt's work began.)
    fn wake_thread_from(&mut self, tid: u32, irq_cpu: u32, irq_start: Ns, at: Ns) -> (Ns, bool) {
        let costs = self.costs;
        let ti = tid as usize;
        let t_cpu = self.threads[ti].cpu;
        let mut at = at;
        // Wake the thread: try_to_wake_up on the interrupt's CPU picks the
        // CPU it runs on (select_task_rq), an IPI if that is another core
        // (which then leaves idle), and the context switch back into it.
        // (The waiter's own exit latency is counted as C-state exit, not
        // as wake-up: woke_at moves past it.)
        let t_cpu = if self.signal == CompletionSignal::Interrupt {
            self.place_woken(tid, irq_cpu, irq_start, at)
        } else {
            t_cpu
        };
        let mut woke_at = at;
        at = self.cpus[irq_cpu as usize].run_irq(at, costs.wakeup);
        if t_cpu != irq_cpu && self.signal == CompletionSignal::Interrupt {
            at += self.cpus[t_cpu as usize].scaled(costs.ipi);
            let exit = self.wake_cpu(t_cpu, at);
            self.breakdown.cstate_exit_ns += u128::from(exit);
            woke_at += exit;
            at += exit;
        } else {
            self.wake_cpu(t_cpu, at);
        }
        let cpu = &mut self.cpus[t_cpu as usize];
        cpu.runnable += 1;
        let switch = costs.context_switch + costs.syscall_exit;
        if self.held[t_cpu as usize].is_some() {
            // A poller spins on the thread's core: it runs when the
            // poller's request completes (the poll loop does not yield).
            let t = &mut self.threads[ti];
            t.state = State::Running;
            self.deferred[t_cpu as usize].push((tid, switch, Some(at)));
            self.breakdown.wakeup_ns += u128::from(at - woke_at);
            return (self.cpus[irq_cpu as usize].busy_until, false);
        }
        let resumed = cpu.run(at, 0, switch);
        self.core_wait_ns += u128::from(resumed - at - cpu.scaled(switch));
        let t = &mut self.threads[ti];
        t.sys_ns += cpu.scaled(switch);
        self.breakdown.wakeup_ns += u128::from(resumed - woke_at);
        t.state = State::Running;
        self.queue.schedule(resumed, Ev::Run(tid));
        (self.cpus[irq_cpu as usize].busy_until, irq_cpu != t_cpu)
    }

    /// `select_task_rq` in `try_to_wake_up` on `waker` at `at` (the end of
    /// the interrupt work that began at `irq_start`) for thread `tid`,
    /// asleep in I/O wait: the thread's CPU from now on (its later
    /// submissions, and their `dma_map_sg` in `queue_rq`, run there). A
    /// thread whose CPU had not finished the work before its sleep when the
    /// interrupt came is still on its run queue: `try_to_wake_up` only
    /// marks it running (`ttwu_runnable`, kernel/sched/core.c) and it
    /// stays.
    fn place_woken(&mut self, tid: u32, waker: u32, irq_start: Ns, at: Ns) -> u32 {
        let t = &mut self.threads[tid as usize];
        let prev = t.cpu;
        if irq_start < t.asleep_at {
            return prev;
        }
        let cpu = select_task_rq(
            self.wake_placement,
            &RunQueueView {
                cpus: &self.cpus,
                at,
            },
            waker,
            &mut Wakee {
                prev,
                allowed: &t.allowed,
                recent_used_cpu: &mut t.recent_used_cpu,
            },
        );
        if cpu != prev {
            t.cpu = cpu;
            self.wake_migrations += 1;
        }
        cpu
    }

    /// fio reaps the thread's completed I/Os at `now` (one getevents
    /// call's worth; its entry and exit when `syscall`): fio's completion
    /// work on the thread's core, then each I/O's latencies and bytes.
    fn reap(&mut self, tid: u32, now: Ns, syscall: bool) -> Ns {
        let t = &mut self.threads[tid as usize];
        let n = t.fio.reap_batch();
        let sys = if syscall {
            self.costs.syscall_entry + self.costs.syscall_exit
        } else {
            0
        };
        let cpu = &mut self.cpus[t.cpu as usize];
        let end = cpu.run(now, self.costs.fio_complete * n, sys);
        t.usr_ns += cpu.scaled(self.costs.fio_complete * n);
        t.sys_ns += cpu.scaled(sys);
        for _ in 0..n {
            let Some(key) = t.fio.done.pop_front() else {
                break;
            };
            let rq = self.rqs.remove(key);
            self.completed_ios += 1;
            self.breakdown.ios += 1;
            t.fio.record_io(now, rq.unit, rq.start, rq.issue);
        }
        t.fio.sample_bw(now);
        end
    }

    fn finish(&mut self, tid: u32, now: Ns) {
        let t = &mut self.threads[tid as usize];
        t.state = State::Done;
        t.fio.end = now;
        self.threads_done += 1;
        let cpu = t.cpu;
        self.cpus[cpu as usize].runnable -= 1;
        self.cpu_idle(cpu, now);
        let wave = self.current_wave;
        let wave_done = self
            .threads
            .iter()
            .all(|t| t.fio.wave != wave || t.state == State::Done);
        if wave_done {
            if let Some(next) = self
                .threads
                .iter()
                .filter(|t| t.fio.wave > wave)
                .map(|t| t.fio.wave)
                .min()
            {
                self.start_wave(next, now);
            }
        }
    }

    /// Results per job clone, the disk's statistics, and the model's
    /// counters.
    pub fn results(mut self) -> (Vec<JobResult>, DiskUtil, serde_json::Value, Ns) {
        let end = self.threads.iter().map(|t| t.fio.end).max().unwrap_or(0);
        // (Readahead still in flight when the last job ended completes
        // after it.)
        self.disk_account(end.max(self.disk_last_change), 0);
        self.disk.total = end;
        let mut jobs = Vec::with_capacity(self.threads.len());
        let mut lateness = Vec::new();
        for t in self.threads {
            let (spec, clone) = (t.fio.spec, t.fio.clone);
            let (res, late) = t.fio.into_result(t.usr_ns, t.sys_ns, t.ctx);
            lateness.push(serde_json::json!({
                "job": res.name, "clone": clone, "spec": spec,
                "rate_lateness_mean_ns": late,
            }));
            jobs.push(res);
        }
        let per_io = |x: u128| {
            if self.breakdown.ios == 0 {
                0.0
            } else {
                x as f64 / self.breakdown.ios as f64
            }
        };
        let b = self.breakdown;
        // A core still idle at the end: count its last stay.
        for (i, c) in self.cpus.iter_mut().enumerate() {
            if let Some(since) = c.idle_since {
                if c.leave_idle(end.max(since + 1)).is_some() {
                    self.idle[i].exit(end.max(since + 1), false, 0);
                }
            }
        }
        let cpus: Vec<serde_json::Value> = self
            .cpus
            .iter()
            .zip(&self.idle)
            .map(|(c, idle)| {
                serde_json::json!({
                    "cpu": c.id, "usr_ns": c.usr_ns, "sys_ns": c.sys_ns, "irq_ns": c.irq_ns,
                    "idle_ns": c.idle_ns, "wakeups_from_idle": c.wakeups_from_idle,
                    "cstates": idle.report(),
                })
            })
            .collect();
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
            "block": {
                "tag_waits": self.blk.tag_waits, "io_poll": self.settings.io_poll,
                "io_poll_delay": self.settings.io_poll_delay,
                "hybrid_sleeps": self.hybrid_sleeps,
                "hybrid_sleep_ns": self.hybrid_sleep_ns as u64,
            },
            "core_wait_ns": self.core_wait_ns as u64,
            "wake_migrations": self.wake_migrations,
            "driver": self.driver.counters(),
            "swiotlb": self.dma.as_ref().map(|d| {
                let mut c = d.counters();
                c["restart_maps"] = serde_json::json!(self.restarts);
                c
            }),
            "page_cache": self.cache.as_ref().map(|c| c.counters()),
            "cpus": cpus,
            "jobs": lateness,
            "events": self.queue.events_popped(),
        });
        if self.dev_freq_qos.timeout > 0 {
            extra["dev_freq_qos"] = serde_json::json!({
                "timeout_ns": self.dev_freq_qos.timeout,
                "adds": self.dev_freq_qos.adds,
                "removes": self.dev_freq_qos.removes,
                "added": self.dev_freq_qos.added,
                "removed": self.dev_freq_qos.removed,
            });
        }
        (jobs, self.disk, extra, end)
    }
}

/// The run queues as a waker sees them at `at`, the end of its interrupt
/// work: a core's runnable threads (a sleeping thread is not counted; a
/// spinning poller is). A core with work booked past `at` is running
/// something: a thread already recorded asleep (a synchronous thread's
/// sleep is booked at its submission's event time, before its CPU work has
/// run), or, on the waker's core, the work the interrupt preempted (it is
/// pushed back past the handler) or a kblockd run it queued. A core that
/// only ran the interrupt is idle (`idle_cpu()` looks at the run queue).
struct RunQueueView<'a> {
    cpus: &'a [Cpu],
    at: Ns,
}

impl RunQueues for RunQueueView<'_> {
    fn ncpus(&self) -> u32 {
        self.cpus.len() as u32
    }
    fn nr_running(&self, cpu: u32) -> u32 {
        let c = &self.cpus[cpu as usize];
        c.runnable.max(u32::from(c.busy_until > self.at))
    }
}
