//! The menu cpuidle governor, `drivers/cpuidle/governors/menu.c`.
//!
//! Two texts, chosen by [`MenuVariant`]:
//!
//! * [`MenuVariant::Linux44`]: v4.4 (the kernel of the 2015 polling seed).
//!   Performance multiplier `1 + 2*get_loadavg(load) + 10*nr_iowaiters`;
//!   C1 (`CPUIDLE_DRIVER_STATE_START`) is the default instead of POLL unless
//!   the next timer is within 5 us (`data->next_timer_us > 5`; Rik van
//!   Riel's v4.5 patches raised it to 20 us and then tied it to
//!   `interactivity_req`, and 4.11+ uses `max(20, C1 target residency)`,
//!   the form KERNEL-NOTES 3(a) quotes from a later copy);
//!   `get_typical_interval()` with `int_sqrt()` of the variance, whose
//!   average *replaces* the prediction whenever it is below the next timer
//!   (it can raise it); the state loop skips (`continue`) rather than stops
//!   on a state that fails a test; `menu_update()` subtracts the exit
//!   latency only when the residency exceeds it.
//! * [`MenuVariant::Modern`]: the text KERNEL-NOTES pins
//!   (`linux:drivers/cpuidle/governors/menu.c@010e85f`, microsecond
//!   based). Multiplier `1 + 10*nr_iowaiters`; POLL returned at once when
//!   the next timer is closer than state 1's target residency or the PM QoS
//!   limit is below state 1's exit latency; `get_typical_interval()`
//!   comparing variance (no square root), returning "none" when every
//!   sample is above the prediction; `min(prediction, typical)`; the state
//!   loop stops at the first state too deep, prefers a physical state to
//!   POLL if the next timer allows; `menu_update()` halves short
//!   residencies, counts a tick wake-up as 9/10 of `MAX_INTERESTING`, and
//!   takes a POLL time-limit exit as "would have slept until the timer".
//!
//! Simplifications (both variants), each because the simulator does not
//! model the thing it depends on:
//!
//! * The scheduler tick is running whenever `select()` is called
//!   (`tick_nohz_tick_stopped()` is false): in flashpath a core goes idle
//!   from running a task, and `tick_nohz_idle_exit()` restarts the tick on
//!   every idle exit. The Modern "tick already stopped" branches are
//!   therefore not taken. `delta_next` (time to the next event including
//!   the tick) is taken equal to `next_timer_ns`: the caller passes the
//!   nearest timer event it knows of. The `stop_tick` decision is still
//!   computed and readable ([`MenuGovernor::stop_tick`]).
//! * `menu_update()` runs inside [`MenuGovernor::reflect`] instead of at the
//!   start of the next `menu_select()` (`needs_update`); nothing the update
//!   reads changes in between, so the result is the same.
//! * `states[i].disabled` stands for both `drv->states[i].disabled` /
//!   `CPUIDLE_FLAG_UNUSABLE` and `dev->states_usage[i].disable`.
//! * Linux44: `cpu_load` is given as a number of runnable tasks averaged
//!   (`load_avg`) and converted to the `FSHIFT` fixed point `get_loadavg()`
//!   reads; what v4.4's `this_rq()->cpu_load[0]` held in practice was in
//!   scheduler weight units (Colin Cross: "almost always returning 0 but can
//!   spike into the hundreds"), which the simulator does not model.
//! * Linux44 with no POLL state (`CPUIDLE_DRIVER_STATE_START == 0`): the
//!   v4.4 text returns -1 when the next timer is within 5 us; here state 0.
//! * Later kernels (v5.x on) compute in nanoseconds and v6.15 removed the
//!   iowait buckets and multiplier ("cpuidle: menu: Remove iowait
//!   influence"); neither is modelled (a profile wanting that can pass
//!   `nr_iowaiters = 0`).

use super::CState;
use crate::sim::Ns;

/// 6 magnitude buckets x {no I/O waiter, I/O waiter}.
pub const BUCKETS: usize = 12;
pub const INTERVAL_SHIFT: u32 = 3;
/// Idle periods remembered by the repeating-interval detector.
pub const INTERVALS: usize = 1 << INTERVAL_SHIFT;
/// Fixed-point unit of a correction factor (x DECAY in storage).
pub const RESOLUTION: u32 = 1024;
/// Running-average weight: the factor keeps 7/8 of itself per update.
pub const DECAY: u32 = 8;
/// Idle periods at least this long (us) count as perfectly predicted.
pub const MAX_INTERESTING: u32 = 50_000;
/// `PM_QOS_CPU_DMA_LAT_DEFAULT_VALUE` = 2000 s in us: "no constraint"
/// (`include/linux/pm_qos.h`).
pub const PM_QOS_CPU_LATENCY_DEFAULT_US: u32 = 2_000 * 1_000_000;
/// v4.4 menu_select(): poll only if the next timer is within this (us).
pub const LINUX44_POLLING_THRESHOLD_US: u32 = 5;
/// Default `TICK_USEC`, for HZ=250 (a common distribution setting).
pub const DEFAULT_TICK_NS: Ns = 4_000_000;
/// `POLL_IDLE_RELAX_COUNT` (`drivers/cpuidle/poll_state.c`): the clock is
/// read once per this many `cpu_relax()` iterations; kept for the CPU
/// model's spin-granularity.
pub const POLL_IDLE_RELAX_COUNT: u32 = 200;

/// Which text of `menu.c` to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MenuVariant {
    /// Linux v4.4 (December 2015).
    Linux44,
    /// `menu.c@010e85f` (KERNEL-NOTES 3(a)).
    Modern,
}

/// What `menu_select()` reads from the rest of the kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectInput {
    /// `tick_nohz_get_sleep_length()`: time to the next timer event.
    pub next_timer_ns: Ns,
    /// `nr_iowait_cpu()`: tasks that slept in I/O wait on this CPU and have
    /// not woken yet (a sync O_DIRECT reader waiting for its completion).
    pub nr_iowaiters: u32,
    /// Linux44 only: this CPU's load average in tasks (1.0 = one runnable
    /// task), read by `get_loadavg()`.
    pub load_avg: f64,
    /// PM QoS CPU latency limit (`cpuidle_governor_latency_req()` /
    /// `pm_qos_request(PM_QOS_CPU_DMA_LATENCY)`); `u64::MAX` = none
    /// (the kernel's 2000 s default). The kernel keeps it in whole
    /// microseconds, so it is truncated to us: below 1 us acts as 0
    /// ("very strict latency requirement": state 0).
    pub latency_req_ns: Ns,
    /// `delta_tick` of `tick_nohz_get_sleep_length(&delta_tick)`: time to
    /// the next timer event if the tick is *not* stopped (so at most one
    /// tick period away). Equal to `next_timer_ns` when the caller models a
    /// tick that is never stopped; smaller when `next_timer_ns` is the
    /// sleep length with the tick stopped (NOHZ idle).
    pub delta_tick_ns: Ns,
}

impl SelectInput {
    /// No I/O waiters, no load, no PM QoS limit.
    pub fn timer(next_timer_ns: Ns) -> Self {
        SelectInput {
            next_timer_ns,
            nr_iowaiters: 0,
            load_avg: 0.0,
            latency_req_ns: u64::MAX,
            delta_tick_ns: next_timer_ns,
        }
    }
}

/// What `menu_select()` and `menu_update()` read of each state, converted
/// once from a state table: the kernel keeps `exit_latency` and
/// `target_residency` in whole microseconds in `struct cpuidle_state`
/// (set once at driver registration), so the per-entry `ns -> us`
/// truncations of the [`CState`] fields are done here, when the table is
/// made, instead of on every idle entry. Fixed size (`CPUIDLE_STATE_MAX`
/// states, what [`super::CStateTable::validate`] admits), so building one
/// allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateTimes {
    n: usize,
    exit_us: [u32; super::CPUIDLE_STATE_MAX],
    residency_us: [u32; super::CPUIDLE_STATE_MAX],
    disabled: [bool; super::CPUIDLE_STATE_MAX],
    polling: [bool; super::CPUIDLE_STATE_MAX],
    /// `cpuidle_poll_time()`'s table part: the target residency (ns) of
    /// the first enabled state after state 0, if any.
    poll_residency_ns: Option<Ns>,
    /// Target residencies never fall with depth (every shipped table):
    /// v4.4's state loop may then stop at the first state whose residency
    /// is above the prediction, since every deeper one fails that test too.
    residency_sorted: bool,
}

impl StateTimes {
    /// The microsecond view of `states` (at most `CPUIDLE_STATE_MAX`).
    pub fn of(states: &[CState]) -> StateTimes {
        assert!(
            states.len() <= super::CPUIDLE_STATE_MAX,
            "a cpuidle driver has at most CPUIDLE_STATE_MAX states (CStateTable::validate)"
        );
        let mut t = StateTimes {
            n: states.len(),
            exit_us: [0; super::CPUIDLE_STATE_MAX],
            residency_us: [0; super::CPUIDLE_STATE_MAX],
            disabled: [false; super::CPUIDLE_STATE_MAX],
            polling: [false; super::CPUIDLE_STATE_MAX],
            poll_residency_ns: states
                .iter()
                .skip(1)
                .find(|s| !s.disabled)
                .map(|s| s.target_residency_ns),
            residency_sorted: true,
        };
        for (i, s) in states.iter().enumerate() {
            t.exit_us[i] = ns_to_us(s.exit_latency_ns);
            t.residency_us[i] = ns_to_us(s.target_residency_ns);
            t.disabled[i] = s.disabled;
            t.polling[i] = s.polling;
        }
        t.residency_sorted = t.residency_us[..t.n].windows(2).all(|w| w[0] <= w[1]);
        t
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the table has no state.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Per-CPU menu state (`struct menu_device`). Fixed size; `select` and
/// `reflect` allocate nothing.
#[derive(Debug, Clone)]
pub struct MenuGovernor {
    variant: MenuVariant,
    nr_states: usize,
    tick_us: u32,
    /// `dev->last_state_idx`: the state returned by the last select.
    last_state_idx: usize,
    next_timer_us: u32,
    predicted_us: u32,
    bucket: usize,
    correction_factor: [u32; BUCKETS],
    intervals: [u32; INTERVALS],
    interval_ptr: usize,
    stop_tick: bool,
    /// Linux44: the last `load_avg` given (its bits) and its
    /// `get_loadavg()`, so that a constant load is converted once rather
    /// than on every select (float rounding and fixed-point steps).
    load_bits: u64,
    load_tenths: u32,
}

/// ns -> us truncating, saturating at `u32::MAX` (the kernel stores these
/// in `unsigned int`).
fn ns_to_us(ns: Ns) -> u32 {
    (ns / 1_000).min(u32::MAX as u64) as u32
}

/// `which_bucket()`: magnitude decade of the next-timer distance, offset by
/// BUCKETS/2 when any task is in I/O wait on this CPU.
pub fn which_bucket(duration_us: u32, nr_iowaiters: u32) -> usize {
    let base = if nr_iowaiters > 0 { BUCKETS / 2 } else { 0 };
    let mag = match duration_us {
        0..=9 => 0,
        10..=99 => 1,
        100..=999 => 2,
        1_000..=9_999 => 3,
        10_000..=99_999 => 4,
        _ => 5,
    };
    base + mag
}

/// v4.4 `get_loadavg()`: `LOAD_INT(load) * 10 + LOAD_FRAC(load) / 10`,
/// i.e. the load in tenths, from `FSHIFT` (11-bit) fixed point.
fn get_loadavg_44(load_avg: f64) -> u32 {
    const FSHIFT: u32 = 11;
    const FIXED_1: u64 = 1 << FSHIFT;
    let fixed = if load_avg.is_finite() && load_avg > 0.0 {
        (load_avg * FIXED_1 as f64).round().min(u32::MAX as f64) as u64
    } else {
        0
    };
    let load_int = fixed >> FSHIFT;
    let load_frac = ((fixed & (FIXED_1 - 1)) * 100) >> FSHIFT;
    (load_int * 10 + load_frac / 10).min(u32::MAX as u64 / 4) as u32
}

/// `performance_multiplier()`: how many times the predicted idle time must
/// exceed an exit latency.
pub fn performance_multiplier(variant: MenuVariant, nr_iowaiters: u32, load_avg: f64) -> u32 {
    match variant {
        MenuVariant::Linux44 => multiplier_44(nr_iowaiters, get_loadavg_44(load_avg)),
        MenuVariant::Modern => multiplier_modern(nr_iowaiters),
    }
}

/// v4.4: `mult = 1; mult += 2 * get_loadavg(load); mult += 10 * nr_iowaiters`,
/// with `get_loadavg()` already applied (`load_tenths`).
fn multiplier_44(nr_iowaiters: u32, load_tenths: u32) -> u32 {
    1u32.saturating_add(2u32.saturating_mul(load_tenths))
        .saturating_add(10u32.saturating_mul(nr_iowaiters))
}

/// 010e85f: `return 1 + 10 * nr_iowaiters`.
fn multiplier_modern(nr_iowaiters: u32) -> u32 {
    1u32.saturating_add(10u32.saturating_mul(nr_iowaiters))
}

/// Kernel `int_sqrt()`: floor of the square root. The reference the
/// square-root-free test in [`linux44_typical`] is checked against.
#[cfg(test)]
fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u64;
    // Correct the float estimate to the exact floor.
    while r.saturating_mul(r) > x {
        r -= 1;
    }
    while (r + 1).saturating_mul(r + 1) <= x {
        r += 1;
    }
    r
}

/// v4.4 `get_typical_interval()`: average of the remembered intervals if
/// their standard deviation is at most 20 us, or the average exceeds six
/// standard deviations while at least 3/4 of the samples are kept;
/// otherwise drop the largest value(s) and retry, down to 6 of 8 samples.
/// `None` when no typical interval was found. The caller uses it only if
/// below the next timer.
pub fn typical_interval_linux44(intervals: &[u32; INTERVALS]) -> Option<u32> {
    // The first pass keeps every sample (`thresh = ULONG_MAX`), so it
    // needs no per-sample test and divides by INTERVALS (a shift).
    let sum: u64 = intervals.iter().map(|&v| v as u64).sum();
    let avg = sum >> INTERVAL_SHIFT;
    // The kernel sums `diff * diff` in a u64, which wraps for intervals
    // near u32::MAX (a long idle with no timer armed): so here, in every
    // build (a checked add would panic in a debug build).
    let mut var = 0u64;
    for &v in intervals {
        let d = v as i64 - avg as i64;
        var = var.wrapping_add(d.wrapping_mul(d) as u64);
    }
    if linux44_typical(avg, var >> INTERVAL_SHIFT, INTERVALS as u64) {
        return Some(avg as u32);
    }
    // All INTERVALS samples were kept (more than 3/4): drop the largest
    // and go on. `max >= 1` here: an all-zero history has variance 0.
    let max = intervals.iter().copied().max().unwrap_or(0);
    typical_interval_linux44_from(intervals, max - 1)
}

/// The passes of [`typical_interval_linux44`] after the first, from the
/// outlier threshold `thresh`.
fn typical_interval_linux44_from(intervals: &[u32; INTERVALS], mut thresh: u32) -> Option<u32> {
    loop {
        let mut max = 0u32;
        let mut sum = 0u64;
        let mut divisor = 0u64;
        for &v in intervals {
            if v <= thresh {
                sum += v as u64;
                divisor += 1;
                max = max.max(v);
            }
        }
        // `divisor` >= 1: see the exit conditions below.
        let avg = if divisor == INTERVALS as u64 {
            sum >> INTERVAL_SHIFT
        } else {
            sum / divisor
        };
        let mut var = 0u64;
        for &v in intervals {
            if v <= thresh {
                let d = v as i64 - avg as i64;
                var = var.wrapping_add(d.wrapping_mul(d) as u64);
            }
        }
        var = if divisor == INTERVALS as u64 {
            var >> INTERVAL_SHIFT
        } else {
            var / divisor
        };
        // `likely(stddev <= ULONG_MAX)` always holds on 64-bit.
        if linux44_typical(avg, var, divisor) {
            return Some(avg as u32);
        }
        if divisor * 4 <= INTERVALS as u64 * 3 {
            return None;
        }
        thresh = max - 1;
    }
}

/// v4.4's acceptance test on `stddev = int_sqrt(variance)`:
/// `((avg > stddev * 6) && (divisor * 4 >= INTERVALS * 3)) || stddev <= 20`,
/// decided without the square root. For `s = floor(sqrt(v))`,
/// `s <= 20` holds exactly when `v < 21^2`, and `6 s < avg` (integers,
/// `avg >= 1`) exactly when `s <= (avg - 1) / 6 = k`, that is `v < (k + 1)^2`
/// (`k + 1 < 2^30` for a `u32` average, so the square fits).
fn linux44_typical(avg: u64, variance: u64, divisor: u64) -> bool {
    if variance < 21 * 21 {
        return true;
    }
    if avg == 0 || divisor * 4 < INTERVALS as u64 * 3 {
        return false;
    }
    let k1 = (avg - 1) / 6 + 1;
    variance < k1 * k1
}

/// Modern `get_typical_interval()`: like v4.4 but compares the variance
/// (`variance <= 400` or `avg^2 > 36 * variance` with 3/4 of the samples),
/// and gives up at once (`UINT_MAX`) when even the smallest remembered
/// interval is not below `predicted_us`. Returns `u32::MAX` for "none".
pub fn typical_interval_modern(intervals: &[u32; INTERVALS], predicted_us: u32) -> u32 {
    let mut thresh = i32::MAX as u32; // INT_MAX: discard outliers above this value
    loop {
        let mut min = u32::MAX;
        let mut max = 0u32;
        let mut sum = 0u64;
        let mut divisor = 0u64;
        for &v in intervals {
            if v <= thresh {
                sum += v as u64;
                divisor += 1;
                max = max.max(v);
                min = min.min(v);
            }
        }
        // "If the result of the computation is going to be discarded
        // anyway, avoid the computation altogether."
        if min >= predicted_us {
            return u32::MAX;
        }
        let avg = if divisor == INTERVALS as u64 {
            sum >> INTERVAL_SHIFT
        } else {
            sum / divisor
        };
        let mut variance = 0u64;
        for &v in intervals {
            if v <= thresh {
                let d = v as i64 - avg as i64;
                variance = variance.wrapping_add(d.wrapping_mul(d) as u64);
            }
        }
        variance = if divisor == INTERVALS as u64 {
            variance >> INTERVAL_SHIFT
        } else {
            variance / divisor
        };
        if variance <= u64::MAX / 36
            && (((avg * avg > variance * 36) && (divisor * 4 >= INTERVALS as u64 * 3))
                || variance <= 400)
        {
            return avg as u32;
        }
        if divisor * 4 <= INTERVALS as u64 * 3 {
            return u32::MAX;
        }
        thresh = max - 1;
    }
}

impl MenuGovernor {
    /// `menu_enable_device()`: every correction factor at unity
    /// (`RESOLUTION * DECAY`), no interval history (zeros).
    pub fn new(variant: MenuVariant, nr_states: usize) -> Self {
        debug_assert!(
            (1..=super::CPUIDLE_STATE_MAX).contains(&nr_states),
            "a cpuidle driver has 1..=CPUIDLE_STATE_MAX states"
        );
        MenuGovernor {
            variant,
            nr_states,
            tick_us: ns_to_us(DEFAULT_TICK_NS),
            last_state_idx: 0,
            next_timer_us: 0,
            predicted_us: 0,
            bucket: 0,
            correction_factor: [RESOLUTION * DECAY; BUCKETS],
            intervals: [0; INTERVALS],
            interval_ptr: 0,
            stop_tick: false,
            load_bits: 0.0f64.to_bits(),
            load_tenths: get_loadavg_44(0.0),
        }
    }

    /// Set the scheduler tick period (`TICK_USEC` = 1 s / HZ); Modern only.
    pub fn with_tick_period_ns(mut self, tick_ns: Ns) -> Self {
        self.tick_us = ns_to_us(tick_ns).max(1);
        self
    }

    pub fn variant(&self) -> MenuVariant {
        self.variant
    }
    pub fn nr_states(&self) -> usize {
        self.nr_states
    }
    /// The index returned by the last `select`.
    pub fn last_state_idx(&self) -> usize {
        self.last_state_idx
    }
    /// The bucket the last `select` used (and `reflect` updates).
    pub fn bucket(&self) -> usize {
        self.bucket
    }
    /// Correction factor of a bucket, in units of 1/(RESOLUTION*DECAY):
    /// 8192 = the next timer is a perfect prediction.
    pub fn correction_factor(&self, bucket: usize) -> u32 {
        self.correction_factor[bucket]
    }
    /// The remembered idle periods (us), ring order.
    pub fn intervals(&self) -> &[u32; INTERVALS] {
        &self.intervals
    }
    /// The predicted idle duration of the last `select` (ns, from us).
    /// Not meaningful when `select` returned early (latency limit 0,
    /// Modern's immediate POLL).
    pub fn predicted_ns(&self) -> Ns {
        self.predicted_us as Ns * 1_000
    }
    /// Modern: whether `menu_select()` would let the tick be stopped.
    pub fn stop_tick(&self) -> bool {
        self.stop_tick
    }

    /// Preload the interval history (oldest first) and correction factors,
    /// e.g. to start a run in steady state, or in tests.
    pub fn set_history(
        &mut self,
        intervals_us: [u32; INTERVALS],
        correction_factor: [u32; BUCKETS],
    ) {
        self.intervals = intervals_us;
        self.interval_ptr = 0;
        self.correction_factor = correction_factor;
    }

    /// Time limit of the POLL state (`cpuidle_poll_time()` /
    /// `poll_idle()`): the target residency of the first enabled non-POLL
    /// state, or the tick period if there is none. The CPU model leaves
    /// POLL at this limit and calls `reflect` (which then treats the exit
    /// as a time-limit exit). `None` for Linux44, whose `poll_idle()`
    /// spins until `need_resched()`.
    pub fn poll_time_limit_ns(&self, states: &[CState]) -> Option<Ns> {
        self.poll_time_limit_of(&StateTimes::of(states))
    }

    /// [`MenuGovernor::poll_time_limit_ns`] of a converted table.
    pub fn poll_time_limit_of(&self, states: &StateTimes) -> Option<Ns> {
        match self.variant {
            MenuVariant::Linux44 => None,
            MenuVariant::Modern => Some(
                states
                    .poll_residency_ns
                    .unwrap_or(self.tick_us as Ns * 1_000),
            ),
        }
    }

    /// `menu_select()`: the index of the state to enter.
    pub fn select(&mut self, states: &[CState], input: &SelectInput) -> usize {
        self.select_times(&StateTimes::of(states), input)
    }

    /// [`MenuGovernor::select`] on a table converted once
    /// ([`StateTimes::of`]), as the idle loop calls it.
    pub fn select_times(&mut self, states: &StateTimes, input: &SelectInput) -> usize {
        debug_assert!(!states.is_empty());
        let latency_req = if input.latency_req_ns == u64::MAX {
            PM_QOS_CPU_LATENCY_DEFAULT_US
        } else {
            ns_to_us(input.latency_req_ns).min(PM_QOS_CPU_LATENCY_DEFAULT_US)
        };
        let idx = match self.variant {
            MenuVariant::Linux44 => self.select_44(states, input, latency_req),
            MenuVariant::Modern => self.select_modern(states, input, latency_req),
        };
        self.last_state_idx = idx;
        idx
    }

    fn predict(&self) -> u32 {
        // DIV_ROUND_CLOSEST_ULL(next_timer_us * correction_factor[bucket],
        //                       RESOLUTION * DECAY): "round up for half
        // microseconds".
        let num = self.next_timer_us as u64 * self.correction_factor[self.bucket] as u64;
        let den = (RESOLUTION * DECAY) as u64;
        ((num + den / 2) / den) as u32
    }

    fn select_44(
        &mut self,
        states: &StateTimes,
        input: &SelectInput,
        mut latency_req: u32,
    ) -> usize {
        // CPUIDLE_DRIVER_STATE_START: 1 on x86 where state 0 is the POLL
        // state, else 0.
        let start = usize::from(states.polling[0]);
        // "Special case when user has set very strict latency requirement"
        if latency_req == 0 {
            return 0;
        }
        // "determine the expected residency time, round up"
        self.next_timer_us = ns_to_us(input.next_timer_ns);
        self.bucket = which_bucket(self.next_timer_us, input.nr_iowaiters);
        self.predicted_us = self.predict();
        // get_typical_interval(): "Use this result only if there is no
        // timer to wake us up sooner."
        if let Some(avg) = typical_interval_linux44(&self.intervals) {
            if self.next_timer_us > avg {
                self.predicted_us = avg;
            }
        }
        // "Performance multiplier defines a minimum predicted idle
        // duration / latency ratio."
        if input.load_avg.to_bits() != self.load_bits {
            self.load_bits = input.load_avg.to_bits();
            self.load_tenths = get_loadavg_44(input.load_avg);
        }
        let interactivity_req =
            self.predicted_us / multiplier_44(input.nr_iowaiters, self.load_tenths);
        latency_req = latency_req.min(interactivity_req);
        // "We want to default to C1 (hlt), not to busy polling unless the
        // timer is happening really really soon."
        let mut last = start.saturating_sub(1);
        if start < states.n
            && self.next_timer_us > LINUX44_POLLING_THRESHOLD_US
            && !states.disabled[start]
        {
            last = start;
        }
        // "Find the idle state with the lowest power while satisfying our
        // constraints": the deepest state passing every test (v4.4 skips a
        // failing state and keeps looking).
        for i in start..states.n {
            if states.residency_us[i] > self.predicted_us {
                if states.residency_sorted {
                    break;
                }
                continue;
            }
            if states.disabled[i] || states.exit_us[i] > latency_req {
                continue;
            }
            last = i;
        }
        last
    }

    fn select_modern(
        &mut self,
        states: &StateTimes,
        input: &SelectInput,
        mut latency_req: u32,
    ) -> usize {
        self.next_timer_us = ns_to_us(input.next_timer_ns);
        self.bucket = which_bucket(self.next_timer_us, input.nr_iowaiters);
        let n = states.n;
        // "In this case state[0] will be used no matter what, so return it
        // right away and keep the tick running if state[0] is a polling one."
        if n <= 1
            || latency_req == 0
            || ((self.next_timer_us < states.residency_us[1] || latency_req < states.exit_us[1])
                && !states.disabled[0])
        {
            self.stop_tick = !states.polling[0];
            return 0;
        }
        let mut predicted = self.predict();
        // "Use the lowest expected idle interval to pick the idle state."
        predicted = predicted.min(typical_interval_modern(&self.intervals, predicted));
        // Tick running (see module docs): apply the performance multiplier.
        let interactivity_req = predicted / multiplier_modern(input.nr_iowaiters);
        latency_req = latency_req.min(interactivity_req);

        let mut idx: Option<usize> = None;
        for i in 0..n {
            if states.disabled[i] {
                continue;
            }
            let cur = *idx.get_or_insert(i); // first enabled state
            let residency = states.residency_us[i];
            if residency > predicted {
                // "Use a physical idle state, not busy polling, unless a
                // timer is going to trigger soon enough."
                if states.polling[cur]
                    && states.exit_us[i] <= latency_req
                    && residency <= self.next_timer_us
                {
                    predicted = residency;
                    idx = Some(i);
                    break;
                }
                if predicted < self.tick_us {
                    break;
                }
                // Tick not stopped: "If the state selected so far is
                // shallow, waking up early won't hurt, so retain the tick".
                predicted = states.residency_us[cur];
                break;
            }
            if states.exit_us[i] > latency_req {
                break;
            }
            idx = Some(i);
        }
        let mut idx = idx.unwrap_or(0); // "No states enabled. Must use 0."

        // "Don't stop the tick if the selected state is a polling one or if
        // the expected idle duration is shorter than the tick period length."
        if states.polling[idx] || predicted < self.tick_us {
            self.stop_tick = false;
            let delta_next_us = ns_to_us(input.delta_tick_ns).min(self.next_timer_us);
            if idx > 0 && states.residency_us[idx] > delta_next_us {
                // "The tick is not going to be stopped and the target
                // residency of the state to be returned is not within the
                // time until the next timer event including the tick, so try
                // to correct that."
                for i in (0..idx).rev() {
                    if states.disabled[i] {
                        continue;
                    }
                    idx = i;
                    if states.residency_us[i] <= delta_next_us {
                        break;
                    }
                }
            }
        } else {
            self.stop_tick = true;
        }
        self.predicted_us = predicted;
        idx
    }

    /// `menu_reflect()` + `menu_update()`: the CPU left the state returned
    /// by the last `select` after `measured_ns` (entry to exit, exit latency
    /// included, as `cpuidle_enter_state()` measures `last_residency`).
    /// `woke_by_timer`: the wake-up was the tick / the timer event the
    /// governor was given (`tick_nohz_idle_got_tick()`); Modern only.
    pub fn reflect(&mut self, states: &[CState], measured_ns: Ns, woke_by_timer: bool) {
        self.reflect_times(&StateTimes::of(states), measured_ns, woke_by_timer)
    }

    /// [`MenuGovernor::reflect`] on a table converted once.
    pub fn reflect_times(&mut self, states: &StateTimes, measured_ns: Ns, woke_by_timer: bool) {
        let target = self.last_state_idx;
        let el = states.exit_us[target];
        let residency = ns_to_us(measured_ns);
        let mut measured_us = match self.variant {
            MenuVariant::Linux44 => {
                // "Deduct exit latency" when the state was reached at all.
                if residency > el {
                    residency - el
                } else {
                    residency
                }
            }
            MenuVariant::Modern => {
                let poll_time_limit = states.polling[target]
                    && self
                        .poll_time_limit_of(states)
                        .is_some_and(|limit| measured_ns >= limit);
                if woke_by_timer && self.next_timer_us > self.tick_us {
                    // "the CPU could have been idle long (but not forever)"
                    9 * MAX_INTERESTING / 10
                } else if poll_time_limit {
                    // "If a better prediction had been made, the CPU might
                    // have been woken up from idle by the next timer."
                    self.next_timer_us
                } else if residency > 2 * el {
                    residency - el
                } else {
                    residency / 2
                }
            }
        };
        // "Make sure our coefficients do not exceed unity"
        measured_us = measured_us.min(self.next_timer_us);

        // "Update our correction ratio"
        let mut new_factor = self.correction_factor[self.bucket];
        new_factor -= new_factor / DECAY;
        if self.next_timer_us > 0 && measured_us < MAX_INTERESTING {
            new_factor += RESOLUTION * measured_us / self.next_timer_us;
        } else {
            // "we were idle so long that we count it as a perfect prediction"
            new_factor += RESOLUTION;
        }
        self.correction_factor[self.bucket] = new_factor;

        // "update the repeating-pattern data"
        self.intervals[self.interval_ptr] = measured_us;
        self.interval_ptr = (self.interval_ptr + 1) % INTERVALS;
    }
}

#[cfg(test)]
mod tests;
