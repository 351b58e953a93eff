//! The threads as the scheduler keeps them on the cores: a [`Task`] per fio
//! job thread (its CPU, run state, timer, rusage) and the [`Host`] that
//! owns the cores, their idle states and the tasks. It wakes cores (paying
//! the exit latency of the state the governor chose), lets a core with
//! nothing runnable go idle (the governor sees the core's next timer and
//! its I/O waiters), places a woken task (`select_task_rq`), and keeps a
//! spinning poller's hold on its core: work that becomes runnable there
//! waits until the poller lets go.

use super::cpu::{Cpu, HostCosts};
use super::cpufreq::{CpuFreq, CpuFreqConfig};
use super::idle::{CoreIdle, IdleConfig};
use super::pm_qos::CpuLatencyQos;
use super::sched::{select_task_rq, RunQueues, WakePlacement, Wakee};
use crate::sim::Ns;

/// Where a task is in its life, as the scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    NotStarted,
    Running,
    /// Asleep in the kernel waiting for completions (TASK_UNINTERRUPTIBLE
    /// in I/O wait: counted by `nr_iowait_cpu`).
    WaitIo,
    /// Spinning in the driver's poll loop since the given time.
    Polling(Ns),
    /// Asleep on a timer (thinktime, rate limit, replay pacing).
    Timer,
    /// Hybrid polling: asleep on the poll-delay timer before spinning
    /// (in I/O wait too).
    HybridSleep,
    Done,
}

/// One thread as the scheduler keeps it (`task_struct`'s share of it).
#[derive(Clone, Debug)]
pub struct Task {
    /// The CPU it runs on (or slept on): `task_cpu(p)`.
    pub cpu: u32,
    /// `p->cpus_ptr`; empty means all CPUs.
    pub allowed: Vec<u32>,
    /// `p->recent_used_cpu`, for `select_idle_sibling`.
    pub recent_used_cpu: Option<u32>,
    /// When its CPU has run the work booked before its last I/O sleep (the
    /// sleep is recorded at the event's time, the CPU may still be busy
    /// with it): until then it has not scheduled out.
    pub asleep_at: Ns,
    pub state: TaskState,
    /// The timer a sleeping task armed (thinktime, rate, hybrid poll).
    pub timer_at: Option<Ns>,
    /// Its rusage as getrusage reports it: user and system time, and
    /// voluntary context switches.
    pub usr_ns: Ns,
    pub sys_ns: Ns,
    pub nvcsw: u64,
}

impl Task {
    pub fn new(cpu: u32, allowed: Vec<u32>) -> Task {
        Task {
            cpu,
            allowed,
            recent_used_cpu: None,
            asleep_at: 0,
            state: TaskState::NotStarted,
            timer_at: None,
            usr_ns: 0,
            sys_ns: 0,
            nvcsw: 0,
        }
    }
}

/// A task that became runnable on a core a poller holds: it runs when the
/// poller lets go, after `switch` reference-ns of kernel work; `ready` is
/// when a woken one became ready (its wait counts as wake-up time).
#[derive(Clone, Copy, Debug)]
struct Deferred {
    task: u32,
    switch: Ns,
    ready: Option<Ns>,
}

/// A task woken from an interrupt (`Host::wake_up`).
#[derive(Clone, Copy, Debug)]
pub struct Woken {
    /// When the waking CPU is done with the wake-up.
    pub waker_done: Ns,
    /// The waking CPU may go idle after it (the task runs elsewhere).
    pub waker_may_idle: bool,
    /// When the task runs again, unless a poller holds its core (then the
    /// poller's release runs it).
    pub runs_at: Option<Ns>,
    /// The idle exit latency the task's core paid (when an IPI woke it).
    pub cstate_exit: Ns,
    /// From the wake-up to the task running (try_to_wake_up, IPI, the
    /// switch into it, and any wait for its core).
    pub wakeup: Ns,
}

/// The cores, their idle states and the tasks on them.
pub struct Host {
    cpus: Vec<Cpu>,
    idle: Vec<CoreIdle>,
    costs: HostCosts,
    tasks: Vec<Task>,
    /// A spinning poller holds its core: the task, per core.
    held: Vec<Option<u32>>,
    /// Tasks that became runnable on a held core, per core.
    deferred: Vec<Vec<Deferred>>,
    /// A task blocked on the core since it was last idle, per core.
    switched_out: Vec<bool>,
    wake_placement: WakePlacement,
    /// Time woken tasks waited for their core (busy or held by a poller).
    core_wait_ns: u128,
    /// Completion wake-ups that put the task on another CPU.
    wake_migrations: u64,
    /// The cores' frequency governor, if the profile gives one (else each
    /// core keeps `host.freq`).
    freq: Option<CpuFreq>,
}

impl Host {
    pub fn new(
        cpus: Vec<Cpu>,
        idle: &IdleConfig,
        costs: HostCosts,
        wake_placement: WakePlacement,
        tasks: Vec<Task>,
        freq: Option<CpuFreqConfig>,
    ) -> Host {
        let n = cpus.len();
        let freq = freq.map(|f| CpuFreq::new(f, n));
        let mut cpus = cpus;
        if let Some(f) = &freq {
            for (i, c) in cpus.iter_mut().enumerate() {
                c.set_hz(f.hz(i));
            }
        }
        Host {
            idle: (0..n).map(|i| CoreIdle::for_cpu(idle, i)).collect(),
            cpus,
            costs,
            tasks,
            held: vec![None; n],
            deferred: vec![Vec::new(); n],
            switched_out: vec![false; n],
            wake_placement,
            core_wait_ns: 0,
            wake_migrations: 0,
            freq,
        }
    }

    /// A task runs on core `cpu` at `at`: its tick runs, and the governor's
    /// samples due by then fire (cpufreq.rs); a new P-state rescales the
    /// work booked from now on.
    #[inline]
    fn freq_task_runs(&mut self, cpu: u32, at: Ns) {
        if let Some(f) = self.freq.as_mut() {
            if let Some(hz) = f.task_runs(cpu as usize, at) {
                self.cpus[cpu as usize].set_hz(hz);
            }
        }
    }

    /// The frequency core `cpu` runs at, and its governor's samples so far
    /// (None without a governor).
    pub fn cpufreq(&self, cpu: u32) -> Option<(f64, u64)> {
        self.freq
            .as_ref()
            .map(|f| (f.hz(cpu as usize), f.core(cpu as usize).samples))
    }

    pub fn ncpus(&self) -> u32 {
        self.cpus.len() as u32
    }

    /// The reference costs of the kernel's and fio's CPU work.
    #[inline]
    pub fn costs(&self) -> HostCosts {
        self.costs
    }

    /// Core `cpu`, to read its clock and bookings.
    #[inline]
    pub fn cpu(&self, cpu: u32) -> &Cpu {
        &self.cpus[cpu as usize]
    }

    /// An interrupt handler (or softirq, or completion work in the
    /// poller's context) of `cost` reference-ns on core `cpu` from `at`:
    /// it preempts what the core runs. Returns when it is done.
    #[inline]
    pub fn run_irq(&mut self, cpu: u32, at: Ns, cost: Ns) -> Ns {
        self.cpus[cpu as usize].run_irq(at, cost)
    }

    /// Core `cpu` burns wall time from `from` until `until` in the kernel
    /// (a spin on a lock, a copy whose time was measured, not scaled):
    /// system time. Returns when it is done (not before its booked work).
    #[inline]
    pub fn burn_sys(&mut self, cpu: u32, from: Ns, until: Ns) -> Ns {
        self.cpus[cpu as usize].spin_until(from, until)
    }

    /// Core `cpu` spent `spent` ns of wall time in interrupt context from
    /// `at` (work measured by its caller, such as swiotlb's unmaps): it
    /// preempts what the core runs.
    #[inline]
    pub fn account_irq(&mut self, cpu: u32, at: Ns, spent: Ns) {
        let c = &mut self.cpus[cpu as usize];
        c.irq_ns += spent;
        c.busy_until = c.busy_until.max(at) + spent;
    }

    /// A thread of the hypervisor holds the physical CPU under vCPU `cpu`
    /// until `until`: work asked of the vCPU meanwhile waits for it. Not
    /// guest CPU time.
    #[inline]
    pub fn occupy_core(&mut self, cpu: u32, until: Ns) {
        let c = &mut self.cpus[cpu as usize];
        c.busy_until = c.busy_until.max(until);
    }

    /// A thread of the hypervisor preempts vCPU `cpu` from `from` for
    /// `len`: its booked work moves back by that time, and work asked of
    /// an idle vCPU waits until `from + len`. Not guest CPU time.
    #[inline]
    pub fn steal_core(&mut self, cpu: u32, from: Ns, len: Ns) {
        let c = &mut self.cpus[cpu as usize];
        c.busy_until = if c.busy_until > from {
            c.busy_until + len
        } else {
            from + len
        };
    }

    /// Book `usr` + `sys` reference-ns of work on core `cpu` from `at`
    /// (after what it already has): returns when it is done.
    #[inline]
    pub fn run_on(&mut self, cpu: u32, at: Ns, usr: Ns, sys: Ns) -> Ns {
        if self.cpus[cpu as usize].runnable > 0 {
            self.freq_task_runs(cpu, at);
        }
        self.cpus[cpu as usize].run(at, usr, sys)
    }

    /// A thread that yields to everything else (io_uring's SQ thread
    /// polling, `machine/sqpoll.rs`) spun `ns` of core `cpu`'s otherwise
    /// free time: system time, which moves no booked work.
    #[inline]
    pub fn book_spin(&mut self, cpu: u32, ns: Ns) {
        self.cpus[cpu as usize].sys_ns += ns;
    }

    /// A user-space spin that yields its core to any other work (fio's
    /// worker spinning on serialize_overlap's mutex, `machine/overlap.rs`)
    /// filled `ns` of core `cpu`'s otherwise free time: user time, which
    /// moves no booked work.
    #[inline]
    pub fn book_user_spin(&mut self, cpu: u32, ns: Ns) {
        self.cpus[cpu as usize].usr_ns += ns;
    }

    /// When core `cpu` is done with the work booked on it.
    #[inline]
    pub fn busy_until(&self, cpu: u32) -> Ns {
        self.cpus[cpu as usize].busy_until
    }

    /// A thread (a task or a kworker) became runnable on core `cpu`.
    #[inline]
    pub fn make_runnable(&mut self, cpu: u32) {
        self.cpus[cpu as usize].runnable += 1;
    }

    /// A thread on core `cpu` stopped being runnable (it ended, or a
    /// kworker's pass ended); a core with none left may idle.
    #[inline]
    pub fn make_unrunnable(&mut self, cpu: u32) {
        let c = &mut self.cpus[cpu as usize];
        c.runnable = c.runnable.saturating_sub(1);
    }

    /// Whether core `cpu` has no runnable thread and no poller holds it
    /// (where the scheduler would place an unbound kworker).
    #[inline]
    pub fn cpu_free(&self, cpu: u32) -> bool {
        self.cpus[cpu as usize].runnable == 0 && !self.is_held(cpu)
    }

    /// The core task `tid` runs on.
    #[inline]
    pub fn task_cpu(&self, tid: u32) -> u32 {
        self.tasks[tid as usize].cpu
    }

    /// Task `tid`'s run state.
    #[inline]
    pub fn task_state(&self, tid: u32) -> TaskState {
        self.tasks[tid as usize].state
    }

    /// Task `tid` runs (it started, or came back to its loop).
    #[inline]
    pub fn set_running(&mut self, tid: u32) {
        self.tasks[tid as usize].state = TaskState::Running;
    }

    /// Task `tid` starts on its core at `now`: it is runnable there and
    /// the core leaves idle.
    pub fn start_task(&mut self, tid: u32, now: Ns) {
        let cpu = self.tasks[tid as usize].cpu;
        self.tasks[tid as usize].state = TaskState::Running;
        self.cpus[cpu as usize].runnable += 1;
        self.wake_cpu(cpu, now);
    }

    /// Task `tid` exits: returns the core it leaves (which may idle).
    pub fn exit_task(&mut self, tid: u32) -> u32 {
        let t = &mut self.tasks[tid as usize];
        t.state = TaskState::Done;
        let cpu = t.cpu;
        self.cpus[cpu as usize].runnable -= 1;
        cpu
    }

    /// Task `tid`, not started, never will (it was terminated).
    pub fn cancel_task(&mut self, tid: u32) {
        self.tasks[tid as usize].state = TaskState::Done;
    }

    /// Task `tid`'s sleep timer (`None`: none armed).
    #[inline]
    pub fn set_timer(&mut self, tid: u32, at: Option<Ns>) {
        self.tasks[tid as usize].timer_at = at;
    }

    /// `ns` of system time on task `tid`'s core, already on the core's
    /// clock (a spin, a DMA mapping inside its system call).
    #[inline]
    pub fn account_sys(&mut self, tid: u32, ns: Ns) {
        self.tasks[tid as usize].sys_ns += ns;
    }

    /// `ns` of user time another thread of task `tid`'s process spent
    /// (getrusage(RUSAGE_SELF) counts every thread of a process).
    pub fn account_usr(&mut self, tid: u32, ns: Ns) {
        self.tasks[tid as usize].usr_ns += ns;
    }

    /// The CPUs task `tid` may run on (its affinity).
    pub fn task_allowed(&self, tid: u32) -> &[u32] {
        &self.tasks[tid as usize].allowed
    }

    /// Task `tid` spins on its core from `now` until `until` (thinktime's
    /// spin, a replay's busy wait): returns when the core is done. The
    /// caller books the spin as system time (`account_sys`) by its rule.
    #[inline]
    pub fn spin_task(&mut self, tid: u32, now: Ns, until: Ns) -> Ns {
        let cpu = self.tasks[tid as usize].cpu;
        self.cpus[cpu as usize].spin_until(now, until)
    }

    /// Task `tid`'s rusage: user and system time, voluntary switches.
    pub fn rusage(&self, tid: u32) -> (Ns, Ns, u64) {
        let t = &self.tasks[tid as usize];
        (t.usr_ns, t.sys_ns, t.nvcsw)
    }

    /// Time woken tasks waited for their core.
    pub fn core_wait_ns(&self) -> u128 {
        self.core_wait_ns
    }

    /// Completion wake-ups that moved a task to another CPU.
    pub fn wake_migrations(&self) -> u64 {
        self.wake_migrations
    }

    /// Task `tid` runs `usr` + `sys` reference-ns on its core from `at`,
    /// booked to its rusage. Returns when it is done.
    pub fn run_task(&mut self, tid: u32, at: Ns, usr: Ns, sys: Ns) -> Ns {
        self.freq_task_runs(self.tasks[tid as usize].cpu, at);
        let t = &mut self.tasks[tid as usize];
        let cpu = &mut self.cpus[t.cpu as usize];
        let end = cpu.run(at, usr, sys);
        t.usr_ns += cpu.scaled(usr);
        t.sys_ns += cpu.scaled(sys);
        end
    }

    /// A core that was idle is woken at `at` (by an interrupt or IPI):
    /// returns the exit latency it pays. (The idle governor chose the state
    /// when the core went idle.)
    pub fn wake_cpu(&mut self, cpu: u32, at: Ns) -> Ns {
        self.wake_cpu_by(cpu, at, false)
    }

    /// `wake_cpu`; `by_timer`: the core's own timer woke it.
    pub fn wake_cpu_by(&mut self, cpu: u32, at: Ns, by_timer: bool) -> Ns {
        let c = cpu as usize;
        let since = self.cpus[c].idle_since;
        match self.cpus[c].leave_idle(at) {
            Some(idle) => {
                let iowait = self.iowaiters(cpu);
                if let Some(f) = self.freq.as_mut() {
                    f.account_idle(c, idle, iowait > 0);
                    if let Some(hz) = f.wakes(c, at) {
                        self.cpus[c].set_hz(hz);
                    }
                }
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

    /// The CPU a 1-of-N interrupt over `mask` (bit c = CPU c) reaches at
    /// `at`: the first CPU of the set that is awake (running, or idle but
    /// not powered down), else the first of the set, which the
    /// distributor wakes. Which awake CPU a GIC-600 picks among several is
    /// implementation defined (Arm GIC-600 TRM); the lowest-numbered is an
    /// assumption.
    pub fn one_of_n_target(&mut self, mask: u64, at: Ns) -> u32 {
        let n = self.cpus.len().min(64) as u32;
        let mut first = None;
        for cpu in (0..n).filter(|c| mask & (1u64 << c) != 0) {
            first.get_or_insert(cpu);
            let c = cpu as usize;
            let idle = matches!(self.cpus[c].idle_since, Some(since) if since <= at);
            if !idle {
                return cpu;
            }
            let iowait = self.iowaiters(cpu);
            if !self.idle[c].powered_down(at, iowait) {
                return cpu;
            }
        }
        first.unwrap_or(0)
    }

    /// Tasks of `cpu` asleep in I/O wait (`nr_iowait_cpu()`).
    fn iowaiters(&self, cpu: u32) -> u32 {
        self.tasks
            .iter()
            .filter(|t| {
                t.cpu == cpu && matches!(t.state, TaskState::WaitIo | TaskState::HybridSleep)
            })
            .count() as u32
    }

    /// The core has nothing runnable from `at` (after its queued work): it
    /// goes idle and the governor picks a state, with the earliest timer
    /// a sleeping task of the core armed (else the tick), its I/O waiters,
    /// and the CPU latency PM QoS limit.
    pub fn cpu_idle<Q: CpuLatencyQos + ?Sized>(&mut self, cpu: u32, at: Ns, qos: &Q) {
        let c = cpu as usize;
        if self.cpus[c].runnable > 0 || self.cpus[c].idle_since.is_some() {
            return;
        }
        // Whether a task blocked since the core last went idle: then it
        // walks the idle path from the task, else it re-enters from the
        // idle loop after an interrupt.
        let from_task = std::mem::take(&mut self.switched_out[c]);
        if let Some(f) = self.freq.as_mut() {
            // The samples due while a task ran fire; then the tick stops
            // (tick_nohz_idle_enter).
            if let Some(hz) = f.idles(c, at.max(self.cpus[c].busy_until)) {
                self.cpus[c].set_hz(hz);
            }
        }
        self.cpus[c].enter_idle(at);
        let since = self.cpus[c].idle_since.unwrap_or(at);
        // One pass over the tasks for both: the earliest timer armed on
        // the core and its I/O waiters (`iowaiters`).
        let mut timer: Option<Ns> = None;
        let mut iowait = 0u32;
        for t in self.tasks.iter().filter(|t| t.cpu == cpu) {
            if let Some(fire) = t.timer_at {
                timer = Some(timer.map_or(fire, |m| m.min(fire)));
            }
            iowait += u32::from(matches!(
                t.state,
                TaskState::WaitIo | TaskState::HybridSleep
            ));
        }
        let limit = qos.cpu_latency_limit(cpu, since);
        if from_task {
            self.idle[c].enter_from_task(since, timer, iowait, limit);
        } else {
            self.idle[c].enter_limited(since, timer, iowait, limit);
        }
    }

    /// Task `tid` blocks at `at` (a voluntary switch): its core may go idle.
    pub fn block<Q: CpuLatencyQos + ?Sized>(
        &mut self,
        tid: u32,
        state: TaskState,
        at: Ns,
        qos: &Q,
    ) {
        let t = &mut self.tasks[tid as usize];
        t.state = state;
        t.nvcsw += 1;
        let cpu = t.cpu;
        self.cpus[cpu as usize].runnable -= 1;
        self.switched_out[cpu as usize] = true;
        self.cpu_idle(cpu, at, qos);
    }

    /// Task `tid` sleeps in I/O wait from `at` until a completion wakes it;
    /// its CPU may still run work booked before (`asleep_at`).
    pub fn block_on_io<Q: CpuLatencyQos + ?Sized>(&mut self, tid: u32, at: Ns, qos: &Q) {
        let t = &mut self.tasks[tid as usize];
        t.state = TaskState::WaitIo;
        t.nvcsw += 1;
        let cpu = t.cpu as usize;
        self.cpus[cpu].runnable -= 1;
        t.asleep_at = self.cpus[cpu].busy_until.max(at);
        self.switched_out[cpu] = true;
        self.cpu_idle(cpu as u32, at, qos);
    }

    /// Task `tid` sleeps on a timer from `now` (fio's usec_sleep, a
    /// nanosleep: it fires at the end of its slack range, `wake` plus the
    /// timer slack). Returns when the timer fires; the machine calls
    /// `timer_fired` then. Until it fires the core is free for its other
    /// tasks, and its armed hrtimer is what a cpuidle governor sees
    /// (kernel/time/hrtimer.c: the timer is queued until it expires).
    pub fn timer_sleep<Q: CpuLatencyQos + ?Sized>(
        &mut self,
        tid: u32,
        now: Ns,
        wake: Ns,
        qos: &Q,
    ) -> Ns {
        let fire = wake + self.costs.timer_slack;
        self.tasks[tid as usize].timer_at = Some(fire);
        self.block(tid, TaskState::Timer, now, qos);
        fire
    }

    /// Task `tid`'s sleep timer fires at `at` on its core: the core pays
    /// the idle exit and the switch back to the task, after whatever the
    /// core runs at that moment. Returns when the task runs. (Booking that
    /// switch when the task went to sleep held the core for the sleeper
    /// and delayed its other tasks' work until after the wake-up.)
    pub fn timer_fired(&mut self, tid: u32, at: Ns) -> Ns {
        self.tasks[tid as usize].timer_at = None;
        let cpu_id = self.tasks[tid as usize].cpu;
        let exit = self.wake_cpu_by(cpu_id, at, true);
        let cpu = &mut self.cpus[cpu_id as usize];
        cpu.runnable += 1;
        let resumed = cpu.run(at + exit, 0, self.costs.context_switch);
        let switch = cpu.scaled(self.costs.context_switch);
        self.tasks[tid as usize].sys_ns += switch;
        resumed
    }

    /// Task `tid` spins on its core from `since`: nothing else runs there
    /// until it lets go (`release`).
    pub fn hold(&mut self, tid: u32, since: Ns) {
        let t = &mut self.tasks[tid as usize];
        t.state = TaskState::Polling(since);
        self.held[t.cpu as usize] = Some(tid);
    }

    /// Whether a poller other than `tid` holds `cpu`.
    pub fn held_by_other(&self, cpu: u32, tid: u32) -> bool {
        self.held[cpu as usize].is_some_and(|p| p != tid)
    }

    /// Whether a poller holds `cpu`.
    pub fn is_held(&self, cpu: u32) -> bool {
        self.held[cpu as usize].is_some()
    }

    /// Task `tid` became runnable on its core, which a poller holds: it
    /// runs when the poller lets go.
    pub fn defer(&mut self, tid: u32, switch: Ns, ready: Option<Ns>) {
        let t = &mut self.tasks[tid as usize];
        t.state = TaskState::Running;
        self.deferred[t.cpu as usize].push(Deferred {
            task: tid,
            switch,
            ready,
        });
    }

    /// The poller on core `c` lets go at `done`: tasks that became runnable
    /// meanwhile are switched in first (`resumed(task, at, ready)` for
    /// each), then the poller continues. Returns when the poller runs.
    pub fn release(
        &mut self,
        c: u32,
        done: Ns,
        mut resumed: impl FnMut(u32, Ns, Option<Ns>),
    ) -> Ns {
        let c = c as usize;
        self.held[c] = None;
        let mut next = done;
        let waiting = std::mem::take(&mut self.deferred[c]);
        for d in &waiting {
            let at = self.cpus[c].run(done, 0, d.switch);
            let switch = self.cpus[c].scaled(d.switch);
            self.tasks[d.task as usize].sys_ns += switch;
            if let Some(ready) = d.ready {
                self.core_wait_ns += u128::from(at - ready - switch);
            }
            resumed(d.task, at, d.ready);
            next = next.max(at);
        }
        // Keep the list's memory for the next hold.
        self.deferred[c] = waiting;
        self.deferred[c].clear();
        next
    }

    /// `select_task_rq` in `try_to_wake_up` on `waker` at `at` (the end of
    /// the interrupt work that began at `irq_start`) for task `tid`,
    /// asleep in I/O wait: the task's CPU from now on (its later
    /// submissions, and their `dma_map_sg` in `queue_rq`, run there). A
    /// task whose CPU had not finished the work before its sleep when the
    /// interrupt came is still on its run queue: `try_to_wake_up` only
    /// marks it running (`ttwu_runnable`, kernel/sched/core.c) and it
    /// stays.
    fn place_woken(&mut self, tid: u32, waker: u32, irq_start: Ns, at: Ns) -> u32 {
        let t = &mut self.tasks[tid as usize];
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

    /// Wake task `tid`, asleep in the kernel, from `waker` at `at` (its
    /// interrupt work began at `irq_start`): try_to_wake_up on the waking
    /// CPU picks the CPU it runs on (`select_task_rq`, when `from_irq`: an
    /// interrupt on another CPU than the task's), an IPI if that is
    /// another core (which then leaves idle), and the context switch back
    /// into the task and out of its system call. (The task's core's own
    /// exit latency is counted as C-state exit, not as wake-up.)
    pub fn wake_up(
        &mut self,
        tid: u32,
        waker: u32,
        irq_start: Ns,
        at: Ns,
        from_irq: bool,
    ) -> Woken {
        let costs = self.costs;
        let t_cpu = if from_irq {
            self.place_woken(tid, waker, irq_start, at)
        } else {
            self.tasks[tid as usize].cpu
        };
        let mut woke_at = at;
        let mut at = self.cpus[waker as usize].run_irq(at, costs.wakeup);
        let mut cstate_exit = 0;
        if t_cpu != waker && from_irq {
            at += self.cpus[t_cpu as usize].scaled(costs.ipi);
            cstate_exit = self.wake_cpu(t_cpu, at);
            woke_at += cstate_exit;
            at += cstate_exit;
        } else {
            self.wake_cpu(t_cpu, at);
        }
        self.cpus[t_cpu as usize].runnable += 1;
        let switch = costs.context_switch + costs.syscall_exit;
        if self.is_held(t_cpu) {
            // A poller spins on the task's core: it runs when the poller's
            // request completes (the poll loop does not yield).
            self.defer(tid, switch, Some(at));
            return Woken {
                waker_done: self.cpus[waker as usize].busy_until,
                waker_may_idle: false,
                runs_at: None,
                cstate_exit,
                wakeup: at - woke_at,
            };
        }
        self.freq_task_runs(t_cpu, at);
        let cpu = &mut self.cpus[t_cpu as usize];
        let resumed = cpu.run(at, 0, switch);
        self.core_wait_ns += u128::from(resumed - at - cpu.scaled(switch));
        let t = &mut self.tasks[tid as usize];
        t.sys_ns += cpu.scaled(switch);
        t.state = TaskState::Running;
        Woken {
            waker_done: self.cpus[waker as usize].busy_until,
            waker_may_idle: waker != t_cpu,
            runs_at: Some(resumed),
            cstate_exit,
            wakeup: resumed - woke_at,
        }
    }

    /// The cores' counters at the end of the run (`end`): a core still idle
    /// counts its last stay first.
    pub fn cpu_counters(&mut self, end: Ns) -> Vec<serde_json::Value> {
        for i in 0..self.cpus.len() {
            let c = &mut self.cpus[i];
            if let Some(since) = c.idle_since {
                if let Some(idle) = c.leave_idle(end.max(since + 1)) {
                    self.idle[i].exit(end.max(since + 1), false, 0);
                    // The last stay counts for ondemand's load before the
                    // samples the tick of a core idle to the end takes.
                    let iowait = self.iowaiters(i as u32) > 0;
                    if let Some(f) = self.freq.as_mut() {
                        f.account_idle(i, idle, iowait);
                    }
                }
            }
            if let Some(f) = self.freq.as_mut() {
                f.wakes(i, end);
            }
        }
        self.cpus
            .iter()
            .zip(&self.idle)
            .map(|(c, idle)| {
                let mut v = serde_json::json!({
                    "cpu": c.id, "usr_ns": c.usr_ns, "sys_ns": c.sys_ns, "irq_ns": c.irq_ns,
                    "idle_ns": c.idle_ns, "wakeups_from_idle": c.wakeups_from_idle,
                    "cstates": idle.report(),
                });
                // Only with a governor: hosts at a fixed clock report as before.
                if let Some(f) = &self.freq {
                    let core = f.core(c.id as usize);
                    v["cpufreq"] = serde_json::json!({
                        "mhz_at_end": (f.hz(c.id as usize) / 1e6).round() as u64,
                        "mhz_mean": (f.mean_hz(c.id as usize, end) / 1e6).round() as u64,
                        "samples": core.samples,
                    });
                }
                v
            })
            .collect()
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
