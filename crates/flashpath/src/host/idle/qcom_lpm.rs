//! Qualcomm's vendor cpuidle governor `qcom-cpu-lpm`
//! (`drivers/cpuidle/governors/qcom-lpm.c` and `qcom-lpm.h` of the Android
//! vendor kernels, 2022-2023 Qualcomm Innovation Center copies). It
//! registers with rating 50, above menu (20) and teo (19), so it is the
//! governor on a Snapdragon phone that loads it.
//!
//! `lpm_select()`: first `update_cpu_history()` stores the last stay minus
//! the exit latency of the state it was in (a stay that followed a
//! prediction-timer wake-up is added to the previous sample instead); then,
//! from the deepest state down, a state is skipped when disabled, when the
//! QoS latency request is below its `exit_latency`, when its target
//! residency exceeds the sleep length, or when a prediction exists and the
//! residency exceeds it. `cpu_predict()` predicts nothing after a
//! prediction-timer wake-up (`history_invalid`) or with fewer than
//! `MAXSAMPLES` samples; else the average of the last samples when they
//! repeat (`find_deviation()`: stddev <= `PRED_REF_STDDEV`, or avg > 6 x
//! stddev with at least `MAXSAMPLES - 1` samples, dropping the largest
//! sample once), else the average of a state's premature exits when there
//! are at least `PRED_PREMATURE_CNT`. When a prediction chose a state that
//! is not the deepest, `start_prediction_timer()` arms `histtimer` at
//! `predicted + PRED_TIMER_ADD` (at most the next state's residency - 1)
//! if the sleep length leaves more than that residency after it; when it
//! fires the CPU wakes, marks the history invalid and selects again with no
//! prediction. `lpm_reflect()` does nothing.
//!
//! Not modelled: the IPI-interval prediction (`LPM_PRED_IPI_PATTERN`), the
//! IPI-pending restriction to WFI, WALT's `sched_lpm_disallowed_time()` bias,
//! `sleep_disabled` (cleared after boot) and the cluster governor.

use super::CState;
use crate::sim::Ns;

/// `MAXSAMPLES` in `qcom-lpm.h`.
pub const MAXSAMPLES: usize = 5;
/// `PRED_REF_STDDEV` (us).
pub const PRED_REF_STDDEV: u64 = 500;
/// `PRED_TIMER_ADD` (us).
pub const PRED_TIMER_ADD: u64 = 100;
/// `PRED_PREMATURE_CNT`.
pub const PRED_PREMATURE_CNT: usize = 3;

fn us(ns: Ns) -> u64 {
    ns / 1_000
}

#[derive(Clone, Debug)]
pub struct QcomLpmGovernor {
    resi: [u64; MAXSAMPLES],
    mode: [i64; MAXSAMPLES],
    samples_idx: usize,
    nsamp: usize,
    last_idx: Option<usize>,
    /// Set when the prediction timer woke the CPU.
    pub history_invalid: bool,
    htmr_wkup: bool,
    /// Prediction-timer wake-ups (for tests and reports).
    pub histtimer_wakeups: u64,
}

impl QcomLpmGovernor {
    pub fn new() -> Self {
        QcomLpmGovernor {
            resi: [0; MAXSAMPLES],
            mode: [-1; MAXSAMPLES],
            samples_idx: 0,
            nsamp: 0,
            last_idx: None,
            history_invalid: false,
            htmr_wkup: false,
            histtimer_wakeups: 0,
        }
    }

    /// `update_cpu_history()` with `dev->last_residency_ns` = `measured_ns`.
    fn update_history(&mut self, states: &[CState], measured_ns: Ns) {
        let Some(idx) = self.last_idx else { return };
        let exit = us(states[idx].exit_latency_ns);
        let mut m = us(measured_ns);
        if m > exit {
            m -= exit;
        }
        if self.htmr_wkup {
            self.samples_idx = if self.samples_idx == 0 {
                MAXSAMPLES - 1
            } else {
                self.samples_idx - 1
            };
            self.resi[self.samples_idx] += m;
            self.htmr_wkup = false;
        } else {
            self.resi[self.samples_idx] = m;
        }
        self.mode[self.samples_idx] = idx as i64;
        self.nsamp = (self.nsamp + 1).min(MAXSAMPLES);
        self.samples_idx = (self.samples_idx + 1) % MAXSAMPLES;
    }

    /// `find_deviation()`: returns the predicted sleep (us) or 0.
    fn find_deviation(&self, states: &[CState], duration_us: u64) -> u64 {
        let deepest = us(states[states.len() - 1].target_residency_ns);
        let mut thresh = u64::MAX;
        loop {
            // The samples at or below `thresh`, walked again for each sum
            // (the selection path allocates nothing).
            let vals = || self.resi.iter().copied().filter(move |v| *v <= thresh);
            let divisor = vals().count() as u64;
            if divisor == 0 {
                return 0;
            }
            let avg = vals().sum::<u64>() / divisor;
            let max = vals().max().unwrap_or(0);
            let var = vals()
                .map(|v| (v as i64 - avg as i64).pow(2) as u64)
                .sum::<u64>()
                / divisor;
            let stddev = (var as f64).sqrt() as u64;
            if (avg > stddev * 6 && divisor >= (MAXSAMPLES - 1) as u64) || stddev <= PRED_REF_STDDEV
            {
                if avg >= duration_us || avg > deepest {
                    return 0;
                }
                return avg;
            }
            thresh = max.saturating_sub(1);
            if divisor <= (MAXSAMPLES - 1) as u64 {
                return 0;
            }
        }
    }

    /// `cpu_predict()`: the predicted sleep (us), 0 = none.
    fn predict(&mut self, states: &[CState], duration_us: u64) -> u64 {
        if self.history_invalid {
            self.history_invalid = false;
            self.htmr_wkup = true;
            return 0;
        }
        if self.nsamp < MAXSAMPLES {
            return 0;
        }
        let p = self.find_deviation(states, duration_us);
        if p != 0 {
            return p;
        }
        for (j, s) in states.iter().enumerate().skip(1) {
            let res = us(s.target_residency_ns);
            let hits = || {
                (0..MAXSAMPLES)
                    .filter(|i| self.mode[*i] == j as i64 && self.resi[*i] < res)
                    .map(|i| self.resi[i])
            };
            let n = hits().count();
            if n >= PRED_PREMATURE_CNT {
                return hits().sum::<u64>() / n as u64;
            }
        }
        0
    }

    /// `lpm_select()` + `start_prediction_timer()`: the state and, when the
    /// prediction timer is armed, its delay from the idle entry.
    /// `last_residency_ns`: the previous stay (`None` before the first).
    pub fn select(
        &mut self,
        states: &[CState],
        sleep_ns: Ns,
        latency_req_ns: Ns,
        last_residency_ns: Option<Ns>,
    ) -> (usize, Option<Ns>) {
        if let Some(m) = last_residency_ns {
            self.update_history(states, m);
        }
        let duration_us = us(sleep_ns);
        let latency_req_us = us(latency_req_ns);
        let mut predicted = 0;
        let mut started = false;
        let mut chosen = 0;
        for i in (1..states.len()).rev() {
            let s = &states[i];
            if s.disabled
                || latency_req_us < us(s.exit_latency_ns)
                || s.target_residency_ns > sleep_ns
            {
                continue;
            }
            if !started {
                predicted = self.predict(states, duration_us);
                started = true;
            }
            if predicted != 0 && us(s.target_residency_ns) > predicted {
                continue;
            }
            chosen = i;
            break;
        }
        self.last_idx = Some(chosen);
        let mut htime = None;
        if predicted != 0 && chosen + 1 < states.len() {
            let max_residency = us(states[chosen + 1].target_residency_ns).saturating_sub(1);
            let h = (predicted + PRED_TIMER_ADD).min(max_residency);
            if duration_us > h && duration_us - h > max_residency {
                htime = Some(h * 1_000);
            }
        }
        (chosen, htime)
    }
}

impl Default for QcomLpmGovernor {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::super::core::{CoreIdle, IdleConfig, NO_TIMER_NS};
    use super::super::{CState, CStateTable, MenuVariant};
    use super::*;

    // A test table, not a SoC's: WFI and one power-collapse state with
    // entry / exit / min-residency (us) chosen for the arithmetic below.
    const ENTRY_US: u64 = 400;
    const EXIT_US: u64 = 600;
    const RESIDENCY_US: u64 = 6000;

    fn silver() -> Vec<CState> {
        vec![
            CState::arm_wfi(),
            CState::psci("power-collapse", ENTRY_US, EXIT_US, RESIDENCY_US),
        ]
    }

    #[test]
    fn repeating_stays_below_the_residency_predict_wfi_and_arm_the_histtimer() {
        let s = silver();
        let mut g = QcomLpmGovernor::new();
        let mut last = None;
        for _ in 0..MAXSAMPLES {
            let (idx, _) = g.select(&s, NO_TIMER_NS, u64::MAX, last);
            assert_eq!(idx, 1, "no prediction before MAXSAMPLES samples: deepest");
            last = Some(6_250_000);
        }
        // Five 6.25 ms stays minus the governor's exit_latency (entry +
        // exit): their average is below the residency, so WFI, with the
        // histtimer 100 us after the prediction.
        let predicted_us = 6250 - (ENTRY_US + EXIT_US);
        assert!(predicted_us < RESIDENCY_US);
        let (idx, h) = g.select(&s, NO_TIMER_NS, u64::MAX, last);
        assert_eq!(idx, 0);
        assert_eq!(h, Some((predicted_us + 100) * 1000));
        // After the histtimer fired: no prediction, the deepest state.
        g.history_invalid = true;
        let (idx, h) = g.select(&s, NO_TIMER_NS, u64::MAX, Some((predicted_us + 101) * 1000));
        assert_eq!((idx, h), (1, None));
    }

    /// `find_deviation()` on samples set directly: a second pass without
    /// the largest sample (and every sample equal to it), the 6 x stddev
    /// test only with at least `MAXSAMPLES - 1` samples left, and, when
    /// both passes fail, `cpu_predict()`'s average of premature exits.
    #[test]
    fn the_largest_sample_is_dropped_once_before_premature_exits_count() {
        let s = silver();
        let g = |resi: [u64; MAXSAMPLES], mode: [i64; MAXSAMPLES]| QcomLpmGovernor {
            resi,
            mode,
            nsamp: MAXSAMPLES,
            ..QcomLpmGovernor::new()
        };
        let dev = |resi| g(resi, [1; MAXSAMPLES]).find_deviation(&s, u64::MAX);
        // All five repeat closely (stddev 587 > 500, but the average is
        // above 6 x stddev).
        assert_eq!(dev([5000, 6200, 5000, 6200, 5000]), 5480);
        // One outlier: without it four samples repeat exactly.
        assert_eq!(dev([1000, 1000, 20000, 1000, 1000]), 1000);
        // ... an average not below the sleep length predicts nothing.
        let one_outlier = g([1000, 1000, 20000, 1000, 1000], [1; MAXSAMPLES]);
        assert_eq!(one_outlier.find_deviation(&s, 1000), 0);
        // Two equal largest go together; three left pass on the stddev.
        assert_eq!(dev([1000, 20000, 1200, 20000, 1100]), 1100);
        // Four left: 6 x stddev (600) is below their average.
        assert_eq!(dev([5000, 6200, 60000, 5000, 6200]), 5600);
        // Three left: the same spread fails, as only the stddev test counts.
        assert_eq!(dev([5000, 6200, 60000, 5000, 60000]), 0);
        // Repeating, but longer than the deepest residency: nothing.
        assert_eq!(dev([7000; MAXSAMPLES]), 0);
        // Both passes fail and no further sample is dropped ...
        let spread = [1000, 20000, 5000, 3000, 1000];
        assert_eq!(dev(spread), 0);
        // ... so three premature exits from state 1 (below its 6000 us
        // residency) predict their average; two do not.
        assert_eq!(g(spread, [1, 1, 1, 0, 1]).predict(&s, u64::MAX), 7000 / 3);
        assert_eq!(g(spread, [1, 1, 0, 0, 1]).predict(&s, u64::MAX), 0);
    }

    #[test]
    fn a_wake_after_the_histtimer_pays_the_power_collapse_exit() {
        let cfg = IdleConfig {
            table: CStateTable::new("psci", silver()),
            variant: MenuVariant::Modern,
            tick_ns: 4_000_000,
            c1e_auto_promotion: false,
            load_avg: 0.0,
            per_cpu: Vec::new(),
            nohz_idle: true,
            qcom_lpm: true,
            entry_path_ns: 0,
        };
        let mut c = CoreIdle::for_cpu(&cfg, 0);
        let mut at = 0;
        // Five 3 ms stays in power collapse (no prediction yet): each
        // sample is the stay plus the exit paid, minus entry + exit.
        for _ in 0..5 {
            c.enter(at, None, 0);
            c.exit(at + 3_000_000, false, 0);
            at += 3_010_000;
        }
        // Predicted 3000 + EXIT - (ENTRY + EXIT) us, below the residency:
        // WFI; a wake-up before the histtimer pays WFI's 1 us.
        let idx = c.enter(at, None, 0);
        assert_eq!(c.states()[idx].name, "WFI");
        assert_eq!(c.exit(at + 2_000_000, false, 0), 1_000);
        at += 2_010_000;
        // Still predicted well below the residency: WFI with the histtimer
        // ~100 us after the prediction; a wake-up long after it finds the
        // CPU in power collapse and pays its exit.
        c.enter(at, None, 0);
        assert_eq!(c.exit(at + 6_000_000, false, 0), EXIT_US * 1000);
    }
}
