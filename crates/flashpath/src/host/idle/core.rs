//! One core's cpuidle device: its state table, its menu governor, its
//! residency counters, and the state it is in while idle.
//!
//! The machine calls [`CoreIdle::enter`] when the core's last runnable
//! thread blocks (the governor's `select()` with the next timer the core
//! knows of and the number of I/O waiters on it) and [`CoreIdle::exit`]
//! when a wake-up event (interrupt, IPI, timer) reaches it: the core pays
//! the chosen state's exit latency (C1 promoted to C1E when the hardware
//! switch is on), the stay is counted, and the governor's `reflect()` runs.

use super::menu::StateTimes;
use super::{
    effective_exit_latency_ns, CState, CStateTable, IdleStats, MenuGovernor, QcomLpmGovernor,
    SelectInput,
};
use crate::sim::Ns;

/// Profile settings of the cpuidle model, shared by every core.
#[derive(Clone, Debug)]
pub struct IdleConfig {
    pub table: CStateTable,
    pub variant: super::MenuVariant,
    pub tick_ns: Ns,
    pub c1e_auto_promotion: bool,
    /// Linux44's `get_loadavg()` input: this CPU's load in tasks.
    pub load_avg: f64,
    /// Per-CPU state tables (index = CPU), for SoCs whose clusters have
    /// different idle states (cpuidle-psci registers one driver per CPU
    /// from its `cpu-idle-states` / power-domain states). Empty: every
    /// core uses `table`.
    pub per_cpu: Vec<CStateTable>,
    /// `CONFIG_NO_HZ_IDLE`: the governor sees the sleep length with the
    /// tick stopped (the next real timer, or none) and decides whether
    /// the tick is stopped; without it the next timer is never further
    /// than the next tick.
    pub nohz_idle: bool,
    /// Qualcomm's `qcom-cpu-lpm` governor instead of menu
    /// (`host.idle.governor = "qcom-lpm"`).
    pub qcom_lpm: bool,
    /// The idle path before any state (`host.idle.entry_path`): the
    /// switch to the idle task, `tick_nohz_idle_enter()`, the governor's
    /// select. An interrupt during it is taken when the state is reached.
    pub entry_path_ns: Ns,
}

impl IdleConfig {
    /// A core without a cpuidle driver: it waits in C0 (the POLL state
    /// only), so waking it costs nothing.
    pub fn poll_only() -> IdleConfig {
        IdleConfig {
            table: CStateTable::new("none (POLL only)", vec![CState::poll()]),
            variant: super::MenuVariant::Modern,
            tick_ns: super::menu::DEFAULT_TICK_NS,
            c1e_auto_promotion: false,
            load_avg: 0.0,
            per_cpu: Vec::new(),
            nohz_idle: false,
            qcom_lpm: false,
            entry_path_ns: 0,
        }
    }

    /// The state table of `cpu`.
    pub fn table_of(&self, cpu: usize) -> &CStateTable {
        self.per_cpu.get(cpu).unwrap_or(&self.table)
    }
}

/// The sleep length `tick_nohz_get_sleep_length()` reports when no timer
/// is armed (`KTIME_MAX` in the kernel); the governors compute in u32 us,
/// where it saturates.
pub const NO_TIMER_NS: Ns = u32::MAX as Ns * 1_000;

#[derive(Clone, Debug)]
pub struct CoreIdle {
    states: Vec<CState>,
    /// `states` as the menu governor reads them (microseconds), converted
    /// once: the table does not change after the core is made.
    times: StateTimes,
    gov: MenuGovernor,
    pub stats: IdleStats,
    c1e: bool,
    tick_ns: Ns,
    /// The tick boundary after the last `at` asked about (a multiple of
    /// `tick_ns`; 0 before the first): time only moves forward, so the
    /// next tick is found without dividing while `at` stays within one
    /// tick period of it.
    tick_edge: Ns,
    load_avg: f64,
    /// While idle: the state chosen and when the core entered it.
    current: Option<(usize, Ns)>,
    next_timer_ns: Ns,
    nohz: bool,
    latency_req_ns: Ns,
    /// `qcom-cpu-lpm`, when the profile selects it (menu is then unused).
    lpm: Option<QcomLpmGovernor>,
    /// The last stay (`dev->last_residency_ns`), read by `lpm_select()`.
    last_residency_ns: Option<Ns>,
    /// qcom-lpm's prediction timer for the current stay: delay from entry.
    histtimer_ns: Option<Ns>,
    entry_path_ns: Ns,
    /// The idle path walked before the current stay (0 in the idle loop).
    path_ns: Ns,
    /// The current idle period has been re-selected once already.
    resettled: bool,
}

impl CoreIdle {
    pub fn new(cfg: &IdleConfig) -> CoreIdle {
        Self::for_cpu(cfg, usize::MAX)
    }

    /// The cpuidle device of `cpu`, with that CPU's state table.
    pub fn for_cpu(cfg: &IdleConfig, cpu: usize) -> CoreIdle {
        let table = cfg.table_of(cpu);
        let n = table.len();
        CoreIdle {
            states: table.states.clone(),
            times: StateTimes::of(&table.states),
            gov: MenuGovernor::new(cfg.variant, n).with_tick_period_ns(cfg.tick_ns),
            stats: IdleStats::new(n),
            c1e: cfg.c1e_auto_promotion,
            tick_ns: cfg.tick_ns.max(1),
            tick_edge: 0,
            load_avg: cfg.load_avg,
            current: None,
            next_timer_ns: 0,
            nohz: cfg.nohz_idle,
            latency_req_ns: u64::MAX,
            lpm: cfg.qcom_lpm.then(QcomLpmGovernor::new),
            last_residency_ns: None,
            histtimer_ns: None,
            entry_path_ns: cfg.entry_path_ns,
            path_ns: 0,
            resettled: false,
        }
    }

    pub fn states(&self) -> &[CState] {
        &self.states
    }

    /// Time from `at` to the next scheduler tick (ticks at multiples of
    /// the tick period).
    pub fn to_next_tick(&self, at: Ns) -> Ns {
        self.tick_ns - at % self.tick_ns
    }

    /// [`CoreIdle::to_next_tick`], remembering the boundary: when `at` is
    /// in `[edge - tick, edge)`, `at % tick = at - (edge - tick)`, so the
    /// result is `edge - at` with no division.
    fn next_tick_from(&mut self, at: Ns) -> Ns {
        if at < self.tick_edge && at >= self.tick_edge - self.tick_ns {
            return self.tick_edge - at;
        }
        let to = self.to_next_tick(at);
        // 0 (no boundary known) where the sum would overflow.
        self.tick_edge = at.checked_add(to).unwrap_or(0);
        to
    }

    /// The core goes idle at `at`; `timer_at` is the earliest timer armed
    /// on it (a sleeping thread's), if any, else the tick is the next
    /// timer. Returns the chosen state's index.
    pub fn enter(&mut self, at: Ns, timer_at: Option<Ns>, nr_iowaiters: u32) -> usize {
        self.enter_limited(at, timer_at, nr_iowaiters, None)
    }

    /// [`CoreIdle::enter`] under a PM QoS CPU resume-latency request
    /// (`latency_req`, `None` = no constraint), which the governor reads
    /// as `cpuidle_governor_latency_req()`.
    pub fn enter_limited(
        &mut self,
        at: Ns,
        timer_at: Option<Ns>,
        nr_iowaiters: u32,
        latency_req: Option<Ns>,
    ) -> usize {
        self.enter_via(at, timer_at, nr_iowaiters, latency_req, 0)
    }

    /// [`CoreIdle::enter_limited`] when a task has just blocked: the core
    /// walks the whole idle path (`host.idle.entry_path`) first. A core
    /// that goes back to idle after an interrupt that woke nothing on it
    /// stays in the idle loop (v4.4 `cpu_idle_loop()`, later `do_idle()`:
    /// `while (!need_resched())`), with no switch to the idle task and no
    /// new `tick_nohz_idle_enter()`, so [`CoreIdle::enter_limited`] counts
    /// no path.
    pub fn enter_from_task(
        &mut self,
        at: Ns,
        timer_at: Option<Ns>,
        nr_iowaiters: u32,
        latency_req: Option<Ns>,
    ) -> usize {
        self.enter_via(at, timer_at, nr_iowaiters, latency_req, self.entry_path_ns)
    }

    fn enter_via(
        &mut self,
        at: Ns,
        timer_at: Option<Ns>,
        nr_iowaiters: u32,
        latency_req: Option<Ns>,
        path_ns: Ns,
    ) -> usize {
        if let Some((idx, _)) = self.current {
            return idx;
        }
        self.path_ns = path_ns;
        self.resettled = false;
        self.latency_req_ns = latency_req.unwrap_or(u64::MAX);
        let tick = self.next_tick_from(at);
        // The sleep length with the tick stopped: the earliest armed timer.
        let sleep = match timer_at {
            Some(t) if t > at => t - at,
            Some(_) => 0,
            None => NO_TIMER_NS,
        };
        let delta_tick = sleep.min(tick);
        // Without NOHZ idle the tick is always the latest wake-up.
        let next = if self.nohz { sleep } else { delta_tick };
        let input = SelectInput {
            next_timer_ns: next,
            nr_iowaiters,
            load_avg: self.load_avg,
            latency_req_ns: self.latency_req_ns,
            delta_tick_ns: delta_tick,
        };
        self.histtimer_ns = None;
        let idx = if self.states.len() == 1 {
            0
        } else if let Some(lpm) = self.lpm.as_mut() {
            // lpm_select() never keeps the tick: the sleep length is `sleep`.
            let (idx, htime) = lpm.select(
                &self.states,
                sleep,
                self.latency_req_ns,
                self.last_residency_ns,
            );
            self.histtimer_ns = htime;
            idx
        } else {
            self.gov.select_times(&self.times, &input)
        };
        self.next_timer_ns = next;
        self.current = Some((idx, at));
        idx
    }

    /// Bring an idle core up to `at`: the re-selections cpuidle makes by
    /// itself while the core stays idle, each at most once per idle period.
    /// A POLL stay that outlives the Modern governor's poll time limit
    /// re-selects at the limit (`cpuidle_idle_call()` after `poll_idle()`
    /// returns); qcom-lpm's prediction timer (histtimer) firing before `at`
    /// wakes the core from its shallow state (paying that exit), marks the
    /// history invalid, and `lpm_select()` chooses again without a
    /// prediction. Afterwards `current` is the state the core is in, or on
    /// its way into, at `at`.
    fn settle(&mut self, at: Ns, nr_iowaiters: u32) {
        if self.resettled {
            return;
        }
        let Some((idx, since)) = self.current else {
            return;
        };
        let stay = at.saturating_sub(since);
        let limit_req = (self.latency_req_ns != u64::MAX).then_some(self.latency_req_ns);
        if self.states[idx].polling && self.states.len() > 1 {
            if let Some(limit) = self.gov.poll_time_limit_of(&self.times) {
                if stay > limit {
                    self.stats.record(&self.states, idx, limit);
                    self.gov.reflect_times(&self.times, limit, false);
                    let since = since + limit;
                    let left = self.next_timer_ns.saturating_sub(limit).max(1);
                    self.current = None;
                    self.enter_limited(since, Some(since + left), nr_iowaiters, limit_req);
                    self.histtimer_ns = None;
                    self.resettled = true;
                    return;
                }
            }
        }
        if let Some(h) = self.histtimer_ns {
            if stay > h {
                let wexit = effective_exit_latency_ns(&self.states, idx, self.c1e);
                self.stats.record(&self.states, idx, h + wexit);
                self.last_residency_ns = Some(h + wexit);
                if let Some(lpm) = self.lpm.as_mut() {
                    lpm.history_invalid = true;
                    lpm.histtimer_wakeups += 1;
                }
                let since = since + h + wexit;
                let left = self.next_timer_ns.saturating_sub(h + wexit).max(1);
                let timer = (self.next_timer_ns < NO_TIMER_NS).then_some(since + left);
                self.current = None;
                self.enter_limited(since, timer, nr_iowaiters, limit_req);
                self.histtimer_ns = None;
                self.resettled = true;
            }
        }
    }

    /// Whether the core is powered down at `at` (in a state that cuts its
    /// power, past that state's entry): what an interrupt controller sees
    /// as a sleeping processor (GICR_WAKER.ProcessorSleep, set by the
    /// firmware's power-down sequence). A running core, one in WFI/C1, or
    /// one still entering a state is awake.
    pub fn powered_down(&mut self, at: Ns, nr_iowaiters: u32) -> bool {
        self.settle(at, nr_iowaiters);
        match self.current {
            Some((idx, since)) => {
                let s = &self.states[idx];
                s.power_down && at >= since + self.path_ns + s.entry_ns
            }
            None => false,
        }
    }

    /// A wake-up reaches the idle core at `at`: returns the latency it
    /// pays (0 when the core was not idle). A core still on its way into
    /// the state (the idle path, then the state's own entry) takes the
    /// interrupt once the state is reached, paying the rest of the entry
    /// and no exit latency; a core in the state pays its exit latency
    /// (issue 16.1: the cost of a wake-up follows the idle period's length
    /// where it is shorter than the way in). Re-selections made while the
    /// core was idle ([`CoreIdle::settle`]) come first: the wake-up pays
    /// the exit of the state the core is in by then.
    pub fn exit(&mut self, at: Ns, woke_by_timer: bool, nr_iowaiters: u32) -> Ns {
        self.settle(at, nr_iowaiters);
        self.histtimer_ns = None;
        self.resettled = false;
        let Some((idx, since)) = self.current.take() else {
            return 0;
        };
        let stay = at.saturating_sub(since);
        // A re-selection happens inside cpuidle_idle_call(): the idle path
        // (switch to idle, tick_nohz_idle_enter) is not walked again, so
        // a re-selected state has none (`enter_limited`).
        let path = self.path_ns;
        let reach = path + self.states[idx].entry_ns;
        let exit = if stay < reach {
            reach - stay
        } else {
            effective_exit_latency_ns(&self.states, idx, self.c1e)
        };
        // cpuidle_enter_state() times the stay from after the idle path.
        let stay = stay.saturating_sub(path);
        self.stats.record(&self.states, idx, stay + exit);
        if self.lpm.is_some() {
            // lpm_reflect() is empty; the stay is read at the next select.
            self.last_residency_ns = Some(stay + exit);
        } else if self.states.len() > 1 {
            // With NOHZ idle the timers the machine knows are hrtimers of
            // sleeping threads, not the tick (`tick_nohz_idle_got_tick()`
            // is false for them), and the model sends no tick wake-ups.
            self.gov
                .reflect_times(&self.times, stay + exit, woke_by_timer && !self.nohz);
        }
        exit
    }

    /// The core was asked to idle but work reached it before its queued
    /// work ended: it never entered the state.
    pub fn cancel(&mut self) {
        self.current = None;
        self.resettled = false;
    }

    /// Residency per state for flashpath's report section.
    pub fn report(&self) -> serde_json::Value {
        let states: Vec<serde_json::Value> = self
            .states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                serde_json::json!({
                    "name": s.name, "usage": self.stats.usage(i), "time_ns": self.stats.time_ns(i),
                    "above": self.stats.above(i), "below": self.stats.below(i),
                    "time_share": self.stats.time_share(i),
                })
            })
            .collect();
        serde_json::Value::Array(states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::idle::{CState, CStateTable, IntelIdleTable, MenuVariant};

    fn hsw44(c1e: bool) -> CoreIdle {
        CoreIdle::new(&IdleConfig {
            table: IntelIdleTable::Hsw.table(),
            variant: MenuVariant::Linux44,
            tick_ns: 4_000_000,
            c1e_auto_promotion: c1e,
            load_avg: 0.0,
            per_cpu: Vec::new(),
            nohz_idle: false,
            qcom_lpm: false,
            entry_path_ns: 0,
        })
    }

    #[test]
    fn remembered_tick_boundary_is_the_division() {
        // Times that move forward by less than, exactly and more than a
        // tick, land on boundaries, and step back (a re-selection at an
        // earlier `since`): the remembered boundary gives what the
        // division gives every time.
        let mut c = hsw44(false);
        let tick = 4_000_000;
        let mut rng = crate::sim::rng::RngStream::new(27, "tick-edge");
        let mut at: Ns = 0;
        let mut hits = 0;
        for i in 0..20_000u64 {
            at = match i % 7 {
                0 => at + rng.below(10),
                1 => (at / tick + 1) * tick,
                2 => (at / tick + 1) * tick - 1,
                3 => at + tick,
                4 => at.saturating_sub(rng.below(2 * tick)),
                5 => at + rng.below(3 * tick),
                _ => at + rng.below(50_000),
            };
            let before = c.tick_edge;
            assert_eq!(c.next_tick_from(at), c.to_next_tick(at), "at {at}");
            hits += usize::from(before == c.tick_edge);
        }
        // Most steps stay within a period, so the shortcut is taken.
        assert!(hits > 10_000, "{hits}");
        // No boundary past u64::MAX: nothing remembered, still exact.
        let near = u64::MAX - 5;
        assert_eq!(c.next_tick_from(near), c.to_next_tick(near));
        assert_eq!(c.next_tick_from(near), c.to_next_tick(near));
    }

    #[test]
    fn poll_only_core_costs_nothing() {
        let mut c = CoreIdle::new(&IdleConfig::poll_only());
        assert_eq!(c.enter(0, None, 1), 0);
        assert_eq!(c.exit(10_000, false, 1), 0);
        assert_eq!(c.stats.usage(0), 1);
    }

    #[test]
    fn io_waiter_keeps_linux44_in_c1_and_promotion_pays_c1e() {
        // Fresh governor: the interval history is all zeros, whose
        // average (0) replaces the prediction in v4.4, so C1 (the default).
        let mut c = hsw44(false);
        let first = c.enter(0, None, 1);
        assert_eq!(c.states()[first].name, "C1");
        assert_eq!(c.exit(15_000, false, 1), 2_000);
        // After 8 equal 15 us periods the typical interval (15 - exit)
        // rules: interactivity_req < 2 us, so only C1 (the 4.4 default).
        for i in 0..20 {
            let at = 1_000_000 * (i + 1);
            let idx = c.enter(at, None, 1);
            c.exit(at + 15_000, false, 1);
            if i > 10 {
                assert_eq!(c.states()[idx].name, "C1");
            }
        }
        let mut p = hsw44(true);
        for i in 0..20 {
            let at = 1_000_000 * (i + 1);
            p.enter(at, None, 1);
            let exit = p.exit(at + 15_000, false, 1);
            if i > 10 {
                assert_eq!(exit, 10_000, "C1 promoted to C1E");
            }
        }
    }
    fn psci_core(nohz: bool) -> CoreIdle {
        // sm8650.dtsi silver CPU: WFI, then power collapse entry 550 /
        // exit 750 / min-residency 6700 us.
        let table = CStateTable::new(
            "psci",
            vec![
                CState::arm_wfi(),
                CState::psci("silver-rail-power-collapse", 550, 750, 6700),
            ],
        );
        CoreIdle::for_cpu(
            &IdleConfig {
                table,
                variant: MenuVariant::Modern,
                tick_ns: 4_000_000,
                c1e_auto_promotion: false,
                load_avg: 0.0,
                per_cpu: Vec::new(),
                nohz_idle: nohz,
                qcom_lpm: false,
                entry_path_ns: 0,
            },
            0,
        )
    }

    /// Eight 20 ms idle periods with no timer armed, then one more entry.
    fn after_long_idles(c: &mut CoreIdle, limit: Option<Ns>) -> usize {
        let mut at = 0;
        for _ in 0..8 {
            c.enter_limited(at, None, 0, limit);
            c.exit(at + 20_000_000, false, 0);
            at += 21_000_000;
        }
        c.enter_limited(at, None, 0, limit)
    }

    #[test]
    fn nohz_lets_a_long_idle_reach_power_collapse_and_wake_pays_dt_exit() {
        let mut c = psci_core(true);
        let idx = after_long_idles(&mut c, None);
        assert_eq!(c.states()[idx].name, "silver-rail-power-collapse");
        // The wake-up costs exit-latency-us (750), not entry + exit (1300).
        assert_eq!(c.exit(200_000_000, false, 0), 750_000);
    }

    /// A PSCI core with a 3 us idle path, after long idle periods, going
    /// idle from a task at `PATH_TEST_AT`: the core and the state chosen.
    fn entering_from_task(nohz: bool) -> (CoreIdle, usize) {
        let mut c = psci_core(nohz);
        c.entry_path_ns = 3_000;
        after_long_idles(&mut c, None);
        c.cancel();
        let idx = c.enter_from_task(PATH_TEST_AT, None, 0, None);
        (c, idx)
    }
    const PATH_TEST_AT: Ns = 8 * 21_000_000;

    #[test]
    fn a_wake_before_the_state_is_reached_pays_the_rest_of_the_way_in() {
        // psci_core's state (sm8650.dtsi silver-rail-power-collapse:
        // entry-latency-us 550, exit-latency-us 750), after an idle path of
        // 3 us: a wake-up 1 us in waits 2 us (path) + 550 us (entry); one
        // 400 us in waits the 153 us left of the entry; one past 553 us
        // pays the 750 us exit. None pays both.
        let at = PATH_TEST_AT;
        for (woken_after, paid) in [(1_000, 552_000), (400_000, 153_000), (553_000, 750_000)] {
            let (mut c, idx) = entering_from_task(true);
            assert_eq!(c.states()[idx].name, "silver-rail-power-collapse");
            assert_eq!(c.exit(at + woken_after, false, 0), paid, "{woken_after}");
        }
        // WFI has no entry of its own: only the path is waited for.
        let (mut c, idx) = entering_from_task(false);
        assert_eq!(c.states()[idx].name, "WFI");
        assert_eq!(c.exit(at + 1_000, false, 0), 2_000);
        assert_eq!(c.exit(at + 1_000, false, 0), 0, "not idle any more");
        // Back to idle from the idle loop (an interrupt woke nothing): no
        // path, so an early wake-up pays WFI's exit alone.
        let idx = c.enter_limited(at + 10_000, None, 0, None);
        assert_eq!(c.states()[idx].name, "WFI");
        assert_eq!(c.exit(at + 11_000, false, 0), 1_000);
    }

    #[test]
    fn a_core_is_powered_down_only_once_in_a_power_down_state() {
        let mut c = psci_core(true);
        after_long_idles(&mut c, None);
        let at = 8 * 21_000_000;
        c.cancel();
        let idx = c.enter_limited(at, None, 0, None);
        assert!(c.states()[idx].power_down);
        // Entering (the DT entry-latency-us, 550): still awake to the
        // interrupt controller.
        assert!(!c.powered_down(at + 549_000, 0));
        assert!(c.powered_down(at + 550_000, 0));
        c.exit(at + 600_000, false, 0);
        assert!(!c.powered_down(at + 700_000, 0), "not idle");
        // WFI never powers down.
        let mut w = psci_core(false);
        let idx = after_long_idles(&mut w, None);
        assert_eq!(w.states()[idx].name, "WFI");
        assert!(!w.powered_down(8 * 21_000_000 + 10_000_000, 0));
    }

    #[test]
    fn the_governor_is_told_the_stay_after_the_idle_path() {
        // cpuidle_enter_state() times from after the path: a 10 us path
        // before 50 us stays in C1 is counted as 40 us + 2 us exit each.
        let mut c = hsw44(false);
        c.entry_path_ns = 10_000;
        for i in 0..4u64 {
            let at = 1_000_000 * (i + 1);
            c.enter_from_task(at, None, 1, None);
            assert_eq!(c.exit(at + 50_000, false, 1), 2_000);
        }
        let c1 = c.states().iter().position(|s| s.name == "C1").unwrap();
        assert_eq!(c.stats.time_ns(c1), 4 * 42_000);
    }

    #[test]
    fn with_the_tick_running_the_next_event_is_never_past_a_tick() {
        // Tick 4 ms < min-residency 6.7 ms: menu returns WFI at once.
        let mut c = psci_core(false);
        let idx = after_long_idles(&mut c, None);
        assert_eq!(c.states()[idx].name, "WFI");
        assert_eq!(c.exit(200_000_000, false, 0), 1_000);
    }

    #[test]
    fn a_resume_latency_limit_below_entry_plus_exit_keeps_wfi() {
        // 1299 us < entry + exit = 1300 us: excluded; 1300 us: allowed.
        let mut c = psci_core(true);
        let idx = after_long_idles(&mut c, Some(1_299_000));
        assert_eq!(c.states()[idx].name, "WFI");
        let mut c = psci_core(true);
        let idx = after_long_idles(&mut c, Some(1_300_000));
        assert_eq!(c.states()[idx].name, "silver-rail-power-collapse");
    }
}
