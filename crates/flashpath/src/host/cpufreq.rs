//! CPU frequency governors of Linux v4.4 on x86: `intel_pstate` (its PID
//! controller on APERF/MPERF) and `acpi-cpufreq` with `ondemand`. A core's
//! frequency is a P-state ratio times the 100 MHz bus clock
//! (`core_get_scaling()` = 100000 kHz in drivers/cpufreq/intel_pstate.c),
//! turbo being the ratios above the nominal one; every CPU cost the host
//! books on the core is scaled by the frequency it has when the work runs
//! (`Cpu::set_hz`), device and memory time are not.
//!
//! Both governors sample from a *deferrable* timer (intel_pstate:
//! `init_timer_deferrable`, re-armed `msecs_to_jiffies(sample_rate_ms)`
//! ahead by `intel_pstate_set_sample_time`; ondemand: the deferrable
//! delayed work of cpufreq_governor.c). A deferrable timer runs only from
//! the tick of a CPU that is not idle: in v4.4 `tick_nohz_idle_enter()`
//! stops the tick when the CPU idles (kernel/time/tick-sched.c), and an
//! interrupt into the idle loop does not restart it (`tick_irq_enter` only
//! updates jiffies); leaving the idle loop to run a task restarts it at
//! the next tick boundary (`tick_nohz_restart`). So a sample fires at the
//! first tick boundary at or after its expiry at which a task runs on the
//! core. A core that never runs a task (an interrupt CPU) is never sampled
//! and keeps the P-state it starts with: `intel_pstate_get_cpu_pstates`
//! sets `min_pstate` at init, which is also where an idle core settles.
//!
//! intel_pstate (Core: Sandy Bridge to Broadwell, Haswell-EP 0x3f use
//! `core_params`: sample_rate_ms 10, setpoint 97, p_gain 20%, i and d gain
//! 0, deadband 0) computes `core_pct_busy = 100 * APERF / MPERF` over the
//! sample: both counters run only in C0, so that is the ratio of the
//! frequency the core ran at to the nominal one, not a C0 fraction; scaled
//! by `max_pstate / current_pstate` it is ~100 whenever the core got the
//! P-state it asked for. Idle enters only through the deferrable timer:
//! when the time since the last sample exceeds 3 sample periods, busy is
//! scaled by `sample_time / duration` (`intel_pstate_get_scaled_busy`).
//! The PID output lowers the P-state by `ctl` (`pid_calc`, 8-bit fixed
//! point as in the kernel). A core whose tick runs at most tick boundaries
//! climbs one P-state per sample (busy ~100 > setpoint 97 rounds to
//! ctl = -1); a core idle at five boundaries in a row (HZ = 250) sees a
//! 32 ms sample and drops by ~13 P-states. How often that happens depends
//! on the fraction of time a task runs on the core, so a waiting core
//! that idles most of each I/O runs slower the longer the device takes.
//!
//! ondemand (drivers/cpufreq/cpufreq_ondemand.c v4.4, `od_check_cpu`):
//! load = 100 * (wall - idle) / wall over the sample, idle time excluding
//! I/O wait when `io_is_busy` (`should_io_be_busy()`: 1 on Intel family 6
//! model >= 15); load > up_threshold (95 with NOHZ idle accounting,
//! `MICRO_FREQUENCY_UP_THRESHOLD`) goes to the maximum (the turbo entry),
//! else to `min_f + load * (max_f - min_f) / 100`, the lowest table
//! frequency at or above it (CPUFREQ_RELATION_L; powersave_bias 0).
//! sampling_rate = max(10 ms, transition latency x 1000): 10 ms for
//! acpi-cpufreq's ~10 us _PSS latency (cpufreq_governor.c,
//! `MICRO_FREQUENCY_MIN_SAMPLE_RATE`).

use crate::error::{InputError, Result};
use crate::profile::{range, Profile, Range};
use crate::sim::Ns;

/// The bus clock a P-state ratio multiplies: 100 MHz on Core processors
/// (`core_get_scaling()` returns 100000 kHz).
pub const BUS_CLOCK_HZ: f64 = 100e6;

/// `core_params.pid_policy` of intel_pstate (v4.0-v4.5 text).
const PSTATE_SAMPLE_MS: u64 = 10;
const PSTATE_SETPOINT: i64 = 97;
const PSTATE_P_GAIN_PCT: i64 = 20;
const PSTATE_I_GAIN_PCT: i64 = 0;
const PSTATE_D_GAIN_PCT: i64 = 0;
/// `integral_limit = int_tofp(30)` in `pid_calc`.
const PSTATE_INTEGRAL_LIMIT: i64 = 30 << FRAC_BITS;

/// ondemand with NOHZ idle accounting (`od_init`): up_threshold 95,
/// sampling rate 10 ms (`MICRO_FREQUENCY_MIN_SAMPLE_RATE`, above
/// acpi-cpufreq's 10 us x LATENCY_MULTIPLIER 1000).
const OD_UP_THRESHOLD: u64 = 95;
const OD_SAMPLE_MS: u64 = 10;

/// intel_pstate's fixed point (`FRAC_BITS 8`).
const FRAC_BITS: u32 = 8;

fn int_tofp(x: i64) -> i64 {
    x << FRAC_BITS
}
fn fp_toint(x: i64) -> i64 {
    x >> FRAC_BITS
}
/// `mul_fp`: (x * y) >> 8 on 64 bits, an arithmetic shift.
fn mul_fp(x: i64, y: i64) -> i64 {
    (x * y) >> FRAC_BITS
}
/// `div_fp`: div_s64(x << 8, y), truncating towards zero.
fn div_fp(x: i64, y: i64) -> i64 {
    (x << FRAC_BITS) / y
}

crate::choice_enum! {
    /// `host.cpufreq.governor`: the v4.4 scaling driver and governor.
    pub enum FreqGovernor {
        IntelPstate = "intel_pstate",
        Ondemand = "acpi-cpufreq-ondemand",
    }
}

/// A P-state ratio: x86 ratios are 8-bit fields of MSR_PLATFORM_INFO and
/// MSR_TURBO_RATIO_LIMIT.
const PSTATE: Range = range(
    1.0,
    255.0,
    "a P-state ratio (x 100 MHz), an 8-bit field of MSR_PLATFORM_INFO / MSR_TURBO_RATIO_LIMIT",
);

crate::params! {
    /// `host.cpufreq.*`, read when `host.cpufreq.governor` is given.
    pub struct CpuFreqParams {
        /// The scaling driver and governor.
        pub governor: FreqGovernor = required choice("host.cpufreq.governor", FreqGovernor),
        /// The lowest P-state ratio (MSR_PLATFORM_INFO bits 47:40).
        pub min_pstate: u32 = required count_u32("host.cpufreq.min_pstate", PSTATE),
        /// The nominal (highest non-turbo) ratio (MSR_PLATFORM_INFO bits
        /// 15:8); `host.freq` must be it times 100 MHz.
        pub max_pstate: u32 = required count_u32("host.cpufreq.max_pstate", PSTATE),
        /// The one-core turbo ratio (MSR_TURBO_RATIO_LIMIT bits 7:0): the
        /// highest P-state the governors ask for.
        pub turbo_pstate: u32 = required count_u32("host.cpufreq.turbo_pstate", PSTATE),
    }
}

/// The governor every core of the host runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuFreqConfig {
    pub governor: FreqGovernor,
    pub min_pstate: u32,
    pub max_pstate: u32,
    pub turbo_pstate: u32,
    /// The scheduler tick (`host.idle.tick`): samples fire on its
    /// boundaries.
    pub tick_ns: Ns,
    /// `host.idle.nohz`: the tick stops when a core idles, so the
    /// deferrable sample timer waits for a task to run. Without it the
    /// tick runs on idle cores too and every core is sampled on time.
    pub nohz_idle: bool,
}

impl CpuFreqConfig {
    /// `None` when the profile gives no governor: the cores keep
    /// `host.freq`.
    pub fn from_profile(
        p: &Profile,
        freq_hz: f64,
        tick_ns: Ns,
        nohz_idle: bool,
    ) -> Result<Option<CpuFreqConfig>> {
        if !p.has("host.cpufreq.governor") {
            return Ok(None);
        }
        let c = CpuFreqParams::read(p)?;
        if !(c.min_pstate <= c.max_pstate && c.max_pstate <= c.turbo_pstate) {
            // Name the file of the key out of order (a --set names "--set").
            let key = if c.max_pstate > c.turbo_pstate {
                "host.cpufreq.turbo_pstate"
            } else {
                "host.cpufreq.min_pstate"
            };
            return Err(InputError::new(
                p.file_of(key),
                None,
                format!(
                    "host.cpufreq: min_pstate ({}) <= max_pstate ({}) <= turbo_pstate ({}) must hold",
                    c.min_pstate, c.max_pstate, c.turbo_pstate
                ),
            ));
        }
        let nominal = f64::from(c.max_pstate) * BUS_CLOCK_HZ;
        if (freq_hz - nominal).abs() > 0.5 {
            return Err(InputError::new(
                p.file_of("host.freq"),
                None,
                format!(
                    "host.freq ({} MHz) must be host.cpufreq.max_pstate ({}) x 100 MHz = {} MHz, the nominal frequency a governed core's counters (MPERF) run at",
                    freq_hz / 1e6,
                    c.max_pstate,
                    nominal / 1e6
                ),
            ));
        }
        Ok(Some(CpuFreqConfig {
            governor: c.governor,
            min_pstate: c.min_pstate,
            max_pstate: c.max_pstate,
            turbo_pstate: c.turbo_pstate,
            tick_ns: tick_ns.max(1),
            nohz_idle,
        }))
    }

    /// The frequency of a P-state ratio.
    pub fn hz(pstate: u32) -> f64 {
        f64::from(pstate) * BUS_CLOCK_HZ
    }

    /// `msecs_to_jiffies(ms)`: whole ticks, rounded up.
    fn delay_ns(&self, ms: u64) -> Ns {
        (ms * 1_000_000).div_ceil(self.tick_ns) * self.tick_ns
    }
}

/// One core's governor state.
#[derive(Clone, Debug)]
pub struct CoreFreq {
    pub pstate: u32,
    /// The tick runs (a task runs on the core) since then.
    tick_since: Option<Ns>,
    /// When the deferrable sample timer expires.
    due: Ns,
    /// The last sample's time (`cpu->sample.time`).
    last_sample: Ns,
    /// `pid->integral`, `pid->last_err` (fixed point).
    integral: i64,
    last_err: i64,
    /// ondemand: idle time counted idle (not I/O wait) since the last
    /// sample.
    idle_ns: Ns,
    pub samples: u64,
    /// The time-weighted sum of the P-state (ratio x ns) up to
    /// `changed_at`, when the P-state last changed: the run's mean
    /// frequency for the report (the end-of-run one hides the oscillation
    /// of a core sampled late now and then).
    pstate_ns: u128,
    changed_at: Ns,
}

/// The governors of all cores.
#[derive(Clone, Debug)]
pub struct CpuFreq {
    cfg: CpuFreqConfig,
    cores: Vec<CoreFreq>,
}

impl CpuFreq {
    pub fn new(cfg: CpuFreqConfig, ncpus: usize) -> CpuFreq {
        // intel_pstate_busy_pid_reset: pid_reset(setpoint, busy 100, ...,
        // integral 0): last_err = setpoint - 100.
        let first = cfg.delay_ns(PSTATE_SAMPLE_MS.min(OD_SAMPLE_MS));
        let core = CoreFreq {
            pstate: cfg.min_pstate,
            tick_since: None,
            due: first,
            last_sample: 0,
            integral: 0,
            last_err: int_tofp(PSTATE_SETPOINT - 100),
            idle_ns: 0,
            samples: 0,
            pstate_ns: 0,
            changed_at: 0,
        };
        CpuFreq {
            cfg,
            cores: vec![core; ncpus],
        }
    }

    pub fn config(&self) -> &CpuFreqConfig {
        &self.cfg
    }

    pub fn core(&self, cpu: usize) -> &CoreFreq {
        &self.cores[cpu]
    }

    /// The frequency core `cpu` runs at now.
    pub fn hz(&self, cpu: usize) -> f64 {
        CpuFreqConfig::hz(self.cores[cpu].pstate)
    }

    /// The mean frequency of core `cpu` from 0 to `end`, weighted by
    /// time (`end` at or after its last P-state change).
    pub fn mean_hz(&self, cpu: usize, end: Ns) -> f64 {
        let c = &self.cores[cpu];
        if end == 0 {
            return CpuFreqConfig::hz(c.pstate);
        }
        let tail = u128::from(c.pstate) * u128::from(end.saturating_sub(c.changed_at));
        let ratio_ns = c.pstate_ns + tail;
        ratio_ns as f64 / end.max(c.changed_at) as f64 * BUS_CLOCK_HZ
    }

    /// A task runs on core `cpu` at `at`: its tick runs from then (if it
    /// did not already). Fires the samples due up to `at`; returns the new
    /// frequency if the P-state changed.
    pub fn task_runs(&mut self, cpu: usize, at: Ns) -> Option<f64> {
        let c = &mut self.cores[cpu];
        if c.tick_since.is_none() {
            c.tick_since = Some(at);
        }
        self.advance(cpu, at)
    }

    /// Core `cpu` goes idle at `at` (nothing runnable): the samples due
    /// while its tick ran fire, then the tick stops.
    pub fn idles(&mut self, cpu: usize, at: Ns) -> Option<f64> {
        let changed = self.advance(cpu, at);
        self.cores[cpu].tick_since = None;
        changed
    }

    /// Core `cpu` leaves idle at `at`: without NOHZ idle its tick ran
    /// while it slept, and the samples due by then have fired.
    pub fn wakes(&mut self, cpu: usize, at: Ns) -> Option<f64> {
        if self.cfg.nohz_idle {
            return None;
        }
        self.advance(cpu, at)
    }

    /// Core `cpu` was idle for `ns`, with a task in I/O wait or not: what
    /// ondemand counts as idle (I/O wait counts busy, `io_is_busy` = 1).
    pub fn account_idle(&mut self, cpu: usize, ns: Ns, iowait: bool) {
        if !iowait {
            self.cores[cpu].idle_ns += ns;
        }
    }

    /// Fire every sample whose timer expired at a tick boundary while the
    /// tick ran, up to `at`.
    fn advance(&mut self, cpu: usize, at: Ns) -> Option<f64> {
        let tick = self.cfg.tick_ns;
        let before = self.cores[cpu].pstate;
        loop {
            let c = &self.cores[cpu];
            let since = match (self.cfg.nohz_idle, c.tick_since) {
                (false, _) => 0,
                (true, Some(since)) => since,
                (true, None) => break,
            };
            let from = c.due.max(since);
            let t = from.div_ceil(tick) * tick;
            if t > at {
                break;
            }
            self.sample(cpu, t);
        }
        let after = self.cores[cpu].pstate;
        (after != before).then(|| CpuFreqConfig::hz(after))
    }

    fn sample(&mut self, cpu: usize, t: Ns) {
        let cfg = self.cfg;
        let c = &mut self.cores[cpu];

        let duration = t - c.last_sample;
        let next = match cfg.governor {
            FreqGovernor::IntelPstate => {
                let ctl = pstate_ctl(c, cfg.max_pstate, duration);
                let p = i64::from(c.pstate) - ctl;
                c.due = t + cfg.delay_ns(PSTATE_SAMPLE_MS);
                p.clamp(i64::from(cfg.min_pstate), i64::from(cfg.turbo_pstate)) as u32
            }
            FreqGovernor::Ondemand => {
                let idle = c.idle_ns.min(duration);
                c.idle_ns = 0;
                c.due = t + cfg.delay_ns(OD_SAMPLE_MS);
                ondemand_target(&cfg, duration, idle)
            }
        };
        c.last_sample = t;
        if next != c.pstate {
            c.pstate_ns += u128::from(c.pstate) * u128::from(t - c.changed_at);
            c.changed_at = t;
        }
        c.pstate = next;
        c.samples += 1;
    }
}

/// intel_pstate's `intel_pstate_get_scaled_busy` and `pid_calc` for one
/// sample of `duration_ns` at the core's P-state: the controller's output
/// (negative raises the P-state).
fn pstate_ctl(c: &mut CoreFreq, max_pstate: u32, duration_ns: Ns) -> i64 {
    let cur = i64::from(c.pstate);
    let max = i64::from(max_pstate);
    // intel_pstate_calc_busy: int_tofp(aperf) * int_tofp(100) /
    // int_tofp(mperf). The sample ran at `cur` throughout (the P-state
    // changes only here), so APERF / MPERF = cur / max whatever the C0
    // time was.
    let core_pct = int_tofp(cur) * int_tofp(100) / int_tofp(max);
    let mut busy = mul_fp(core_pct, div_fp(int_tofp(max), int_tofp(cur)));
    let sample_us = (PSTATE_SAMPLE_MS * 1000) as i64;
    let duration_us = i64::from((duration_ns / 1000) as u32);
    if duration_us > sample_us * 3 {
        let ratio = div_fp(int_tofp(sample_us), int_tofp(duration_us));
        busy = mul_fp(busy, ratio);
    }
    // pid_calc.
    let err = int_tofp(PSTATE_SETPOINT) - busy;
    if err.abs() <= 0 {
        return 0;
    }
    let p_gain = div_fp(int_tofp(PSTATE_P_GAIN_PCT), int_tofp(100));
    let i_gain = div_fp(int_tofp(PSTATE_I_GAIN_PCT), int_tofp(100));
    let d_gain = div_fp(int_tofp(PSTATE_D_GAIN_PCT), int_tofp(100));
    let pterm = mul_fp(p_gain, err);
    c.integral = (c.integral + err).clamp(-PSTATE_INTEGRAL_LIMIT, PSTATE_INTEGRAL_LIMIT);
    let dterm = mul_fp(d_gain, err - c.last_err);
    c.last_err = err;
    let result = pterm + mul_fp(c.integral, i_gain) + dterm + (1 << (FRAC_BITS - 1));
    fp_toint(result)
}

/// ondemand's `od_check_cpu` on acpi-cpufreq's table (the ratios from
/// min to nominal in 100 MHz steps, then the turbo entry, which
/// `cpuinfo.max_freq` is).
fn ondemand_target(cfg: &CpuFreqConfig, wall: Ns, idle: Ns) -> u32 {
    if wall == 0 {
        return cfg.turbo_pstate;
    }
    let load = 100 * (wall - idle) / wall;
    if load > OD_UP_THRESHOLD {
        return cfg.turbo_pstate;
    }
    let (min_f, max_f) = (u64::from(cfg.min_pstate), u64::from(cfg.turbo_pstate));
    // freq_next = min_f + load * (max_f - min_f) / 100, in ratio units x100
    // to keep the kernel's kHz precision.
    let next_x100 = min_f * 100 + load * (max_f - min_f);
    // CPUFREQ_RELATION_L: the lowest entry at or above it. Above nominal,
    // the only entry is turbo.
    let ratio = next_x100.div_ceil(100) as u32;
    if ratio > cfg.max_pstate {
        cfg.turbo_pstate
    } else {
        ratio.max(cfg.min_pstate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(governor: FreqGovernor) -> CpuFreqConfig {
        CpuFreqConfig {
            governor,
            min_pstate: 12,
            max_pstate: 30,
            turbo_pstate: 35,
            tick_ns: 4_000_000,
            nohz_idle: true,
        }
    }

    const GOVERNED: &str = r#"
[profile]
name = "t"
[host.cpufreq]
governor = { value = "intel_pstate", unit = "name", source = "test" }
min_pstate = { value = 12, unit = "count", source = "test" }
max_pstate = { value = 30, unit = "count", source = "test" }
turbo_pstate = { value = 35, unit = "count", source = "test" }
"#;

    #[test]
    fn a_governed_host_is_read_and_bad_ranges_are_refused() {
        let mut p = Profile::from_text("t.toml", GOVERNED, None).unwrap();
        let c = CpuFreqConfig::from_profile(&p, 3e9, 4_000_000, false)
            .unwrap()
            .expect("a governor");
        assert_eq!(c.governor, FreqGovernor::IntelPstate);
        assert_eq!((c.min_pstate, c.max_pstate, c.turbo_pstate), (12, 30, 35));
        // host.freq must be the nominal ratio's frequency.
        let e = CpuFreqConfig::from_profile(&p, 2.9e9, 4_000_000, false).expect_err("refused");
        assert_eq!(e.file, "t.toml");
        assert!(
            e.message.contains("host.freq (2900 MHz)") && e.message.contains("3000 MHz"),
            "{e}"
        );
        // min <= max <= turbo, the message naming where the bad value is.
        p.apply_override("host.cpufreq.turbo_pstate=29").unwrap();
        let e = CpuFreqConfig::from_profile(&p, 3e9, 4_000_000, false).expect_err("refused");
        assert_eq!(e.file, "--set");
        assert!(e.message.contains("turbo_pstate (29)"), "{e}");
        // A host without the key (every shipped one) keeps its fixed clock.
        for name in ["nullblk", "nvme-dram"] {
            let p = Profile::load(name).unwrap();
            assert_eq!(
                CpuFreqConfig::from_profile(&p, 3e9, 4_000_000, false).unwrap(),
                None
            );
        }
    }

    #[test]
    fn a_busy_core_climbs_one_pstate_per_sample_to_turbo() {
        let mut f = CpuFreq::new(cfg(FreqGovernor::IntelPstate), 1);
        f.task_runs(0, 0);
        // Samples every msecs_to_jiffies(10) = 3 ticks = 12 ms.
        f.task_runs(0, 12_000_000);
        assert_eq!(f.core(0).pstate, 13);
        f.task_runs(0, 24_000_000);
        assert_eq!(f.core(0).pstate, 14);
        f.task_runs(0, 2_000_000_000);
        assert_eq!(f.core(0).pstate, 35);
        assert_eq!(f.hz(0), 3.5e9);
    }

    #[test]
    fn the_mean_frequency_is_weighted_by_time() {
        let mut f = CpuFreq::new(cfg(FreqGovernor::IntelPstate), 1);
        f.task_runs(0, 0);
        assert_eq!(f.mean_hz(0, 0), 1.2e9);
        // Ratio k from (k - 12) x 12 ms to (k - 11) x 12 ms, k = 12..34;
        // 35 from 276 ms: sum(12..=34) = 529, 529 x 12 / 276 = 23.
        f.task_runs(0, 276_000_000);
        assert_eq!(f.core(0).pstate, 35);
        assert!((f.mean_hz(0, 276_000_000) - 2.3e9).abs() < 1.0);
        // Another 276 ms at 35: (529 x 12 + 35 x 276) / 552 = 29.
        f.task_runs(0, 552_000_000);
        assert!((f.mean_hz(0, 552_000_000) - 2.9e9).abs() < 1.0);
    }

    #[test]
    fn pid_output_matches_the_kernels_fixed_point() {
        // busy = 100 at any P-state: err = 97 - 100 = -3 -> pterm
        // mul_fp(51, -768) = -153, +128 = -25, >> 8 = -1.
        let mut c = CpuFreq::new(cfg(FreqGovernor::IntelPstate), 1).cores[0].clone();
        assert_eq!(pstate_ctl(&mut c, 30, 12_000_000), -1);
        c.pstate = 35;
        assert_eq!(pstate_ctl(&mut c, 30, 12_000_000), -1);
        // A 32 ms sample: busy x 10/32 -> err ~ 97 - 31 = 66 -> ~13.
        c.pstate = 30;
        assert_eq!(pstate_ctl(&mut c, 30, 32_000_000), 13);
        // 36 ms: sample_ratio = div_fp(10000 << 8, 36000 << 8) = 71, busy
        // = 25600 x 71 >> 8 = 7100, err = 24832 - 7100 = 17732, pterm =
        // 51 x 17732 >> 8 = 3532, (3532 + 128) >> 8 = 14.
        assert_eq!(pstate_ctl(&mut c, 30, 36_000_000), 14);
        // 30 ms is not more than 3 periods: no scaling.
        assert_eq!(pstate_ctl(&mut c, 30, 30_000_000), -1);
    }

    #[test]
    fn a_core_idle_at_the_tick_is_not_sampled_and_then_drops() {
        let mut f = CpuFreq::new(cfg(FreqGovernor::IntelPstate), 1);
        f.task_runs(0, 0);
        f.task_runs(0, 1_000_000_000);
        assert_eq!(f.core(0).pstate, 35);
        let n = f.core(0).samples;
        // Idle from 1.0001 s to 1.05 s: no tick, no sample.
        f.idles(0, 1_000_100_000);
        assert_eq!(f.core(0).samples, n);
        // Runs again at 1.05 s: the timer, due since ~1.008 s, fires at
        // the next boundary (1.052 s), 52 ms after the last sample.
        f.task_runs(0, 1_050_000_000);
        f.task_runs(0, 1_052_000_000);
        assert_eq!(f.core(0).samples, n + 1);
        assert!(f.core(0).pstate < 30, "{}", f.core(0).pstate);
    }

    #[test]
    fn a_core_that_never_runs_a_task_keeps_min_pstate() {
        let mut f = CpuFreq::new(cfg(FreqGovernor::IntelPstate), 2);
        f.idles(1, 5_000_000_000);
        assert_eq!(f.core(1).pstate, 12);
        assert_eq!(f.core(1).samples, 0);
    }

    #[test]
    fn without_nohz_an_idle_core_is_sampled_on_time_and_climbs() {
        let mut c = cfg(FreqGovernor::IntelPstate);
        c.nohz_idle = false;
        let mut f = CpuFreq::new(c, 2);
        // Core 1 never runs a task; its tick samples it every 12 ms, and
        // APERF/MPERF at the asked P-state reads busy 100 > setpoint 97.
        f.wakes(1, 120_000_000);
        assert_eq!(f.core(1).samples, 10);
        assert_eq!(f.core(1).pstate, 22);
        f.idles(1, 1_000_000_000);
        assert_eq!(f.core(1).pstate, 35);
    }

    #[test]
    fn ondemand_counts_io_wait_as_busy() {
        let mut f = CpuFreq::new(cfg(FreqGovernor::Ondemand), 1);
        f.task_runs(0, 0);
        // Half the time idle in I/O wait: load 100 -> turbo.
        f.account_idle(0, 6_000_000, true);
        f.task_runs(0, 12_000_000);
        assert_eq!(f.core(0).pstate, 35);
        // Half of the next 12 ms idle without a waiter: load 50 -> 12 +
        // 0.5 x 23 = 23.5 -> 24 (RELATION_L).
        f.account_idle(0, 6_000_000, false);
        f.task_runs(0, 30_000_000);
        assert_eq!(f.core(0).pstate, 24);
    }
}
