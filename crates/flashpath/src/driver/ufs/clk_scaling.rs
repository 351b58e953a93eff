//! ufshcd clock scaling with devfreq (`UFSHCD_CAP_CLK_SCALING`,
//! drivers/ufs/core/ufshcd.c `ufshcd_devfreq_*`,
//! `ufshcd_clk_scaling_start_busy` / `_update_busy`) and clock gating: the
//! host controller's clock and the link's gear follow the load.

use super::{Event, Ufs};
use crate::device::devfreq::{DevStatus, Devfreq, SimpleOndemand, TimerKind};
use crate::driver::DriverCtx;
use crate::error::{InputError, Result};
use crate::profile::limits::{COST, DELAY};
use crate::profile::{range, Choice, Profile, Range};
use crate::sim::queue::Timer;
use crate::sim::Ns;

/// `hba->clk_scaling` plus the devfreq instance and clock gating.
pub struct ClkScaling {
    pub df: Devfreq,
    /// `clk_scaling.min_gear`: the HS gear on scale-down.
    pub min_gear: u32,
    /// The gear restored on scale-up (the negotiated one).
    pub max_gear: u32,
    /// The link's gear at start (min_gear when starting at the min clock).
    pub initial_gear: u32,
    /// `ufshcd_devfreq_scale`: quiesce, clock change, power mode change.
    pub scale_cost: Ns,
    /// `clk_scaling.suspend_on_no_request` (Qualcomm sets it).
    pub suspend_on_no_request: bool,
    pub active_reqs: u32,
    /// `window_start_t` (None = 0), `busy_start_t`, `tot_busy_t` (ns).
    window_start: Option<Ns>,
    busy_start: Option<Ns>,
    tot_busy: Ns,
    /// `clk_scaling.is_suspended`.
    pub is_suspended: bool,
    /// The devfreq monitor's delayed work (`devfreq->work`).
    eval: Timer,
    /// MIN_FREQUENCY PM QoS value of the disk's request-queue device
    /// (kHz), set by the block layer's dev_freq_timeout_ms work.
    pub disk_qos_min_khz: Option<u64>,
    /// A scaling in progress blocks new commands until then.
    busy_until: Ns,
    /// Clock gating: `clk_gating.delay_ms` of idleness gates the clocks;
    /// the next command pays `ungate` (clocks on, hibern8 exit).
    pub gating_delay: Ns,
    /// ufs-qcom (vendor) sets `clk_gating.delay_ms` on every scaling:
    /// `(delay after scale-down, delay after scale-up)`
    /// (`ufs_qcom_clk_scale_down/up_post_change`); `None` keeps one delay.
    pub gating_delay_by_scale: Option<(Ns, Ns)>,
    pub ungate: Ns,
    idle_since: Ns,
    pub gatings: u64,
    /// (time, Hz) of every frequency change, for plots.
    pub trace: Vec<(Ns, u64)>,
    /// Times devfreq monitoring resumed (first request after a suspend).
    pub resumes: Vec<Ns>,
    /// The CPU the clock-scaling work runs on (`ufs.clk_scaling.work_cpu`)
    /// and its cost at the host's reference clock; `None`: not run on a
    /// CPU. ufshcd queues `resume_work` on every request that finds no
    /// other active (`ufshcd_clk_scaling_start_busy`: `if
    /// (!active_reqs++) queue_resume_work = true`, whether or not the
    /// monitor is suspended), and devfreq's monitor is a delayed work;
    /// both workqueues are unbound (`alloc_ordered_workqueue
    /// ("ufs_clkscaling_%d")`, `create_freezable_workqueue("devfreq_wq")`),
    /// so a kworker on a CPU the scheduler picks runs them.
    pub work: Option<(u32, Ns)>,
    /// Clock-scaling works run on a CPU.
    pub works_run: u64,
}

impl ClkScaling {
    /// Whether the clocks are gated at `now`: no request for
    /// `clk_gating.delay` since the last completion.
    pub fn gated_at(&self, now: Ns) -> bool {
        self.active_reqs == 0 && self.gating_delay > 0 && now >= self.idle_since + self.gating_delay
    }

    /// Queue the monitor's next evaluation, if it polls
    /// (`queue_delayed_work` in `devfreq_monitor_start/resume` and at the
    /// end of `devfreq_monitor`).
    pub(super) fn arm_eval(&mut self, ctx: &mut DriverCtx<'_, impl Sized>) {
        if let Some(t) = self.df.next_eval {
            ctx.arm(&mut self.eval, t, Event::Devfreq);
        }
    }

    /// `ufshcd_devfreq_get_dev_status` at `now` (times in us as the kernel).
    fn get_dev_status(&mut self, now: Ns) -> DevStatus {
        let mut stat = DevStatus {
            current_frequency: self.df.cur_freq,
            ..DevStatus::default()
        };
        if let Some(ws) = self.window_start {
            if let Some(bs) = self.busy_start {
                self.tot_busy += now - bs;
                self.busy_start = Some(now);
            }
            stat.total_time = (now - ws) / 1000;
            stat.busy_time = self.tot_busy / 1000;
        }
        self.window_start = Some(now);
        self.tot_busy = 0;
        self.busy_start = (self.active_reqs > 0).then_some(now);
        stat
    }
}

impl Ufs {
    /// Controller-side time at the current clock: ns given at the maximum
    /// clock, stretched by max/cur (the host controller's work scales with
    /// its core clock).
    pub(super) fn at_clock(&self, ns: Ns) -> Ns {
        match &self.clk {
            Some(c) if c.df.cur_freq > 0 => {
                (u128::from(ns) * u128::from(c.df.max_opp()) / u128::from(c.df.cur_freq)) as Ns
            }
            _ => ns,
        }
    }

    /// `ufshcd_clk_scaling_start_busy` and clock ungating at submission;
    /// returns when the command may start.
    pub(super) fn start_busy(&mut self, now: Ns, ctx: &mut DriverCtx<'_, impl Sized>) -> Ns {
        let Some(c) = &mut self.clk else {
            return now;
        };
        let mut at = now.max(c.busy_until);
        if c.active_reqs == 0 && c.gating_delay > 0 && now >= c.idle_since + c.gating_delay {
            c.gatings += 1;
            at += c.ungate;
        }
        let first = c.active_reqs == 0;
        c.active_reqs += 1;
        if let (true, Some((cpu, cost))) = (first, c.work) {
            // resume_work on its kworker; the command does not wait for it.
            ctx.run_on_cpu(cpu, now, cost);
            c.works_run += 1;
        }
        if first && c.is_suspended {
            // resume_work -> devfreq_resume_device -> monitor_resume.
            c.is_suspended = false;
            c.df.resume(now);
            c.resumes.push(now);
            c.arm_eval(ctx);
        }
        if c.window_start.is_none() {
            c.window_start = Some(now);
            c.tot_busy = 0;
            c.busy_start = None;
        }
        if c.busy_start.is_none() {
            c.busy_start = Some(now);
        }
        at
    }

    /// `ufshcd_clk_scaling_update_busy` at a completion.
    pub(super) fn end_busy(&mut self, now: Ns) {
        if let Some(c) = &mut self.clk {
            c.active_reqs -= 1;
            if c.active_reqs == 0 {
                if let Some(bs) = c.busy_start.take() {
                    c.tot_busy += now - bs;
                }
                c.idle_since = now;
            }
        }
    }

    /// One devfreq evaluation: `update_devfreq` -> `ufshcd_devfreq_target`.
    pub(super) fn devfreq_eval(&mut self, now: Ns, ctx: &mut DriverCtx<'_, impl Sized>) {
        let Some(c) = &mut self.clk else { return };
        debug_assert_eq!(c.df.next_eval, Some(now), "the live evaluation");
        if let Some((cpu, cost)) = c.work {
            // devfreq_monitor() on its kworker.
            ctx.run_on_cpu(cpu, now, cost);
            c.works_run += 1;
        }
        let stat = c.get_dev_status(now);
        let mut freq = c.df.evaluate(now, stat);
        let max = c.df.max_opp();
        // Seed 3: a disk's MIN_FREQUENCY request above the max clock
        // forces the max clock.
        if c.disk_qos_min_khz
            .is_some_and(|k| k.saturating_mul(1000) >= max)
        {
            freq = max;
        }
        let scale_up = freq == max;
        if !scale_up {
            freq = c.df.min_opp();
        }
        if freq != c.df.cur_freq {
            let start = now.max(c.busy_until);
            c.busy_until = start + c.scale_cost;
            c.df.set_cur(freq);
            c.trace.push((start, freq));
            if let Some((down, up)) = c.gating_delay_by_scale {
                c.gating_delay = if scale_up { up } else { down };
            }
            let gear = if scale_up { c.max_gear } else { c.min_gear };
            self.link.set_gear(gear);
        }
        let c = self.clk.as_mut().unwrap();
        if c.active_reqs == 0 && (!scale_up || c.suspend_on_no_request) {
            // suspend_work: window_start_t = 0, devfreq_suspend_device.
            c.is_suspended = true;
            c.window_start = None;
            c.df.suspend();
            // devfreq_monitor_suspend: cancel_delayed_work_sync.
            ctx.cancel(&c.eval);
        }
        c.arm_eval(ctx);
    }
}

crate::choice_enum! {
    /// `ufs.clk_scaling.timer`: the devfreq monitor's timer.
    pub enum TimerName {
        /// A delayed work that wakes an idle CPU.
        Delayed = "delayed",
        /// A deferrable one, which waits for the CPU to wake (not modelled
        /// for UFS yet).
        Deferrable = "deferrable",
    }
}

crate::choice_enum! {
    /// `ufs.clk_scaling.initial`: the clock the controller starts at.
    pub enum InitialClock {
        Min = "min",
        Max = "max",
    }
}

/// `ufs.clk_scaling.work_cpu`: no CPU cost, or the CPU `cpuN` whose time
/// the scaling work takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkCpu {
    None,
    Cpu(u32),
}

impl Choice for WorkCpu {
    const NAMES: &'static [&'static str] = &["none", "cpuN"];
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(WorkCpu::None),
            _ => crate::host::config::cpu_index(name).map(WorkCpu::Cpu),
        }
    }
}

/// A load percentage of simple_ondemand.
const PERCENT: Range = range(
    0.0,
    100.0,
    "a load percentage of simple_ondemand (governor_simpleondemand.c refuses \
     upthreshold > 100)",
);

crate::params! {
    /// Whether the controller scales its clock.
    pub struct ClkScalingGate {
        /// UFSHCD_CAP_CLK_SCALING: the controller scales its clock and gear
        /// with devfreq's simple_ondemand. false: it does not, and no other
        /// `ufs.clk_scaling.*` or `ufs.clk_gating.*` key is read.
        enabled: bool = default(false) flag("ufs.clk_scaling.enabled"),
    }
}

crate::params! {
    /// UFS clock scaling and gating (drivers/ufs/core/ufshcd.c), read when
    /// `ufs.clk_scaling.enabled` is true.
    pub struct ClkScalingParams {
        /// The controller's clock operating points.
        freqs: Vec<f64> = required list(
            "ufs.clk_scaling.freqs",
            "frequency",
            range(1e3, 1e10, "a UFS controller clock (operating point): 1 kHz to 10 GHz"),
            64
        ),
        /// The devfreq monitor's timer.
        timer: TimerName = required choice("ufs.clk_scaling.timer", TimerName),
        /// simple_ondemand's upthreshold: scale up above this busy percent.
        upthreshold: u64 = required count("ufs.clk_scaling.upthreshold", PERCENT),
        /// simple_ondemand's downdifferential: scale down below
        /// upthreshold minus this.
        downdifferential: u64 = required count("ufs.clk_scaling.downdifferential", PERCENT),
        /// The gear at the low clock (ufs.link.gear at the high one).
        min_gear: u32 = required count_u32(
            "ufs.clk_scaling.min_gear",
            range(1.0, 5.0, "a gear from HS-G1 to ufs.link.gear")
        ),
        /// devfreq's polling interval.
        polling: Ns = required ns("ufs.clk_scaling.polling", DELAY),
        /// The clock the controller starts at.
        initial: InitialClock = required choice("ufs.clk_scaling.initial", InitialClock),
        /// The CPU the scaling work's time is charged to, or none.
        work_cpu: WorkCpu = required choice("ufs.clk_scaling.work_cpu", WorkCpu),
        /// One run of the scaling work on its CPU.
        work_cost: Ns = required ns("ufs.clk_scaling.work_cost", COST),
        /// A clock and gear change (ufshcd_devfreq_scale).
        scale_cost: Ns = required ns("ufs.clk_scaling.scale_cost", COST),
        /// Suspend the monitor when no request is active even after a
        /// scale-up (ufshcd's suspend_on_no_request).
        suspend_on_no_request: bool = required flag("ufs.clk_scaling.suspend_on_no_request"),
        /// clkgating_delay_ms: the idle time before the clocks are gated.
        gating_delay: Ns = required ns("ufs.clk_gating.delay", DELAY),
        /// The gating delay at the high clock (vendor kernels' delay_ms_perf).
        /// Absent: `ufs.clk_gating.delay` at every clock.
        gating_delay_perf: Option<Ns> = optional ns("ufs.clk_gating.delay_perf", DELAY),
        /// Ungating the clocks for a request after they were gated.
        ungate: Ns = required ns("ufs.clk_gating.ungate", COST),
    }
}

/// `ufs.clk_scaling.*` and `ufs.clk_gating.*` when the profile has them
/// (clock scaling off otherwise, as on a controller without
/// UFSHCD_CAP_CLK_SCALING). `ncpus`: the host's CPUs.
pub(super) fn clk_scaling_from_profile(
    p: &Profile,
    gear: u32,
    ncpus: u32,
) -> Result<Option<ClkScaling>> {
    if !ClkScalingGate::read(p)?.enabled {
        return Ok(None);
    }
    let cp = ClkScalingParams::read(p)?;
    let k = |s: &str| format!("ufs.clk_scaling.{s}");
    let bad = |key: &str, m: &str| InputError::new(p.file_of(&k(key)), None, m);
    let mut opps: Vec<u64> = cp.freqs.iter().map(|f| f.round() as u64).collect();
    opps.sort_unstable();
    opps.dedup();
    if opps.is_empty() {
        return Err(bad(
            "freqs",
            "ufs.clk_scaling.freqs needs at least one frequency",
        ));
    }
    let timer = match cp.timer {
        TimerName::Delayed => TimerKind::Delayed,
        TimerName::Deferrable => {
            return Err(bad(
                "timer",
                "ufs.clk_scaling.timer=deferrable is not modelled yet for UFS (the machine does not tell the driver when its CPU wakes); use delayed",
            ))
        }
    };
    let governor = SimpleOndemand {
        upthreshold: cp.upthreshold,
        downdifferential: cp.downdifferential,
    };
    if governor.upthreshold < governor.downdifferential {
        return Err(bad(
            "downdifferential",
            "need downdifferential <= upthreshold (governor_simpleondemand.c)",
        ));
    }
    let min_gear = cp.min_gear;
    if min_gear > gear {
        return Err(bad(
            "min_gear",
            &format!(
                "parameter 'ufs.clk_scaling.min_gear' is {min_gear} count, outside 1 to {gear} \
                 count: a gear from HS-G1 to ufs.link.gear"
            ),
        ));
    }
    let max = *opps.last().unwrap();
    let min = opps[0];
    let initial = match cp.initial {
        InitialClock::Min => min,
        InitialClock::Max => max,
    };
    let work = match cp.work_cpu {
        WorkCpu::None => None,
        WorkCpu::Cpu(c) if c < ncpus => Some((c, cp.work_cost)),
        WorkCpu::Cpu(c) => {
            return Err(bad(
                "work_cpu",
                &format!(
                    "parameter 'ufs.clk_scaling.work_cpu' is \"cpu{c}\" but the model needs \
                     one of none, cpu0 to cpu{}: host.cpus is {ncpus}",
                    ncpus - 1
                ),
            ))
        }
    };
    let mut df = Devfreq::new(opps, governor, cp.polling, timer, initial, 0);
    // ufshcd_devfreq_init: the monitor starts with the device; ufshcd
    // suspends it until the first request (clk_scaling.is_suspended).
    df.suspend();
    let link_gear = if initial == max { gear } else { min_gear };
    // Optional: a profile without the key keeps `delay` at every clock.
    let by_scale = cp.gating_delay_perf.map(|perf| (cp.gating_delay, perf));
    let gating_delay = match by_scale {
        Some((_, up)) if initial == max => up,
        _ => cp.gating_delay,
    };
    Ok(Some(ClkScaling {
        df,
        min_gear,
        initial_gear: link_gear,
        max_gear: gear,
        scale_cost: cp.scale_cost,
        suspend_on_no_request: cp.suspend_on_no_request,
        active_reqs: 0,
        window_start: None,
        busy_start: None,
        tot_busy: 0,
        is_suspended: true,
        eval: Timer::default(),
        disk_qos_min_khz: None,
        busy_until: 0,
        gating_delay,
        gating_delay_by_scale: by_scale,
        ungate: cp.ungate,
        idle_since: 0,
        gatings: 0,
        trace: vec![(0, initial)],
        resumes: Vec::new(),
        work,
        works_run: 0,
    }))
}
