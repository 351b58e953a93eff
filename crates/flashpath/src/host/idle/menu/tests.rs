//! Hand-worked cases. Every expected value is computed in the comment from
//! the menu.c formulas, never by calling the code under test.
//!
//! skl table (intel_idle.c skl_cstates[] with POLL first), exit/residency us:
//!   0 POLL 0/0, 1 C1 2/2, 2 C1E 10/20, 3 C3 70/100, 4 C6 85/200,
//!   5 C7s 124/800, 6 C8 200/800, 7 C9 480/5000, 8 C10 890/5000
//! Unity correction factor = RESOLUTION * DECAY = 8192.

use super::*;
use crate::host::idle::{CState, IntelIdleTable};

const US: u64 = 1_000;

fn skl() -> Vec<CState> {
    IntelIdleTable::Skl.table().states
}
fn hsw() -> Vec<CState> {
    IntelIdleTable::Hsw.table().states
}

fn gov(variant: MenuVariant, states: &[CState], intervals: [u32; INTERVALS]) -> MenuGovernor {
    let mut g = MenuGovernor::new(variant, states.len());
    g.set_history(intervals, [8192; BUCKETS]);
    g
}

fn input(next_timer_us: u64, nr_iowaiters: u32) -> SelectInput {
    SelectInput {
        next_timer_ns: next_timer_us * US,
        nr_iowaiters,
        load_avg: 0.0,
        latency_req_ns: u64::MAX,
        delta_tick_ns: next_timer_us * US,
    }
}

// ---------------------------------------------------------------- buckets,
// multiplier

#[test]
fn buckets_by_decade_and_iowait() {
    assert_eq!(which_bucket(9, 0), 0);
    assert_eq!(which_bucket(10, 0), 1);
    assert_eq!(which_bucket(999, 0), 2);
    assert_eq!(which_bucket(1000, 0), 3);
    assert_eq!(which_bucket(10_000, 0), 4);
    assert_eq!(which_bucket(100_000, 0), 5);
    assert_eq!(which_bucket(9, 1), 6);
    assert_eq!(which_bucket(50_000, 3), 10);
    assert_eq!(which_bucket(u32::MAX, 1), 11);
}

#[test]
fn performance_multipliers() {
    // Modern: 1 + 10*nr_iowaiters = 1 + 20 = 21, load ignored.
    assert_eq!(performance_multiplier(MenuVariant::Modern, 2, 3.0), 21);
    // 4.4, load 0.5: fixed = 0.5*2048 = 1024; LOAD_INT = 0;
    // LOAD_FRAC = (1024*100)>>11 = 50; get_loadavg = 0*10 + 50/10 = 5;
    // mult = 1 + 2*5 + 10*1 = 21.
    assert_eq!(performance_multiplier(MenuVariant::Linux44, 1, 0.5), 21);
    // 4.4, load 1.0: fixed 2048 -> LOAD_INT 1, LOAD_FRAC 0 -> 10; 1 + 20 = 21.
    assert_eq!(performance_multiplier(MenuVariant::Linux44, 0, 1.0), 21);
    // 4.4, load 0.04: fixed = round(81.92) = 82; LOAD_FRAC = 8200>>11 = 4;
    // get_loadavg = 4/10 = 0 -> mult 1.
    assert_eq!(performance_multiplier(MenuVariant::Linux44, 0, 0.04), 1);
}

// ---------------------------------------------------------------- typical
// interval detector

#[test]
fn typical_interval_discards_one_outlier() {
    let iv = [100, 100, 100, 100, 100, 100, 100, 5000];
    // Modern, predicted 10000.
    // Pass 1: sum 5700, avg 5700>>3 = 712; variance
    //   (7*612^2 + 4288^2)>>3 = (2621808 + 18386944)>>3 = 2626094;
    //   avg^2 = 506944 < 36*var; var > 400 -> no. 8*4 > 24 -> thresh 4999.
    // Pass 2: seven 100s: avg 100, var 0; 100^2 > 0 and 7*4 = 28 >= 24 -> 100.
    assert_eq!(typical_interval_modern(&iv, 10_000), 100);
    // 4.4: pass 1 stddev = int_sqrt(2626094) = 1620; 712 > 6*1620? no;
    // 1620 <= 20? no. Pass 2 as above -> Some(100).
    assert_eq!(typical_interval_linux44(&iv), Some(100));
}

#[test]
fn typical_interval_discards_two_outliers() {
    let iv = [100, 100, 100, 100, 100, 100, 3000, 5000];
    // Pass 1: avg 8600>>3 = 1075, var (6*975^2 + 1925^2 + 3925^2)>>3
    //   = 24815000>>3 = 3101875 -> no; thresh 4999.
    // Pass 2: 7 samples, avg 3600/7 = 514, var (6*414^2 + 2486^2)/7
    //   = 7208572/7 = 1029796 -> no; 28 > 24 -> thresh 2999.
    // Pass 3: six 100s: avg 100, var 0; 6*4 = 24 >= 24 -> 100.
    assert_eq!(typical_interval_modern(&iv, 10_000), 100);
    assert_eq!(typical_interval_linux44(&iv), Some(100));
}

#[test]
fn typical_interval_gives_up_after_a_quarter() {
    let iv = [100, 100, 100, 100, 100, 3000, 4000, 5000];
    // Pass 3 keeps [100 x5, 3000]: avg 3500/6 = 583, var
    //   (5*483^2 + 2417^2)/6 = 7008334/6 = 1168055 -> no; 6*4 = 24 <= 24
    //   -> UINT_MAX / None.
    assert_eq!(typical_interval_modern(&iv, 10_000), u32::MAX);
    assert_eq!(typical_interval_linux44(&iv), None);
}

#[test]
fn typical_interval_modern_skips_when_all_above_prediction() {
    // min 800 >= predicted 500 -> UINT_MAX without computing.
    assert_eq!(typical_interval_modern(&[800; 8], 500), u32::MAX);
    // min 800 < 801 -> avg 800, var 0 -> 800.
    assert_eq!(typical_interval_modern(&[800; 8], 801), 800);
}

#[test]
fn typical_interval_sqrt_vs_variance_threshold() {
    // Four 10s and four 51s: avg 244>>3 = 30; var (4*20^2 + 4*21^2)>>3
    //   = 3364>>3 = 420.
    let iv = [10, 51, 10, 51, 10, 51, 10, 51];
    // 4.4: stddev = int_sqrt(420) = 20 <= 20 -> avg 30.
    assert_eq!(typical_interval_linux44(&iv), Some(30));
    // Modern: 900 > 36*420? no; 420 <= 400? no; 32 > 24 -> thresh 50.
    // Pass 2: four 10s, avg 10, var 0 <= 400 -> 10.
    assert_eq!(typical_interval_modern(&iv, 1_000), 10);
}

// ---------------------------------------------------------------- select

#[test]
fn modern_regular_500us_history_picks_c6() {
    let st = skl();
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    // next_timer 10000 us, no iowaiter: bucket 4, factor 8192,
    // predicted = round(10000*8192/8192) = 10000; typical: min 500 < 10000,
    // avg 500, var 0 -> 500; predicted = min(10000, 500) = 500.
    // multiplier 1 -> latency limit min(2e9, 500) = 500.
    // Loop: POLL, C1(2/2), C1E(20/10), C3(100/70), C6(200/85) pass;
    // C7s residency 800 > 500, selected C6 is not POLL, 500 < TICK 4000
    // -> break. Result C6 = 4.
    assert_eq!(g.select(&st, &input(10_000, 0)), 4);
    assert_eq!(g.bucket(), 4);
    assert_eq!(g.predicted_ns(), 500 * US);
    assert!(!g.stop_tick()); // 500 < TICK_USEC
}

#[test]
fn modern_iowait_multiplier_refuses_deep_state() {
    let st = skl();
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    // As above but 1 iowaiter: bucket 4+6 = 10, predicted 500,
    // multiplier 1 + 10 = 11, interactivity 500/11 = 45 -> limit 45.
    // C1E (exit 10) passes; C3 residency 100 <= 500 but exit 70 > 45
    // -> break. Result C1E = 2.
    assert_eq!(g.select(&st, &input(10_000, 1)), 2);
    assert_eq!(g.bucket(), 10);
}

#[test]
fn modern_15us_waiter_polls_without_iowait_takes_c1() {
    // KERNEL-NOTES 3(e) caveat: a ~15 us prediction with an I/O waiter.
    let st = skl();
    let mut g = gov(MenuVariant::Modern, &st, [15; 8]);
    // next_timer 10000, bucket 10, predicted 10000 -> typical 15 -> 15.
    // multiplier 11: 15/11 = 1 -> limit 1. POLL (exit 0) first;
    // C1 residency 2 <= 15, exit 2 > 1 -> break. POLL = 0.
    assert_eq!(g.select(&st, &input(10_000, 1)), 0);
    // Without the waiter: bucket 4, limit 15: C1 passes; C1E residency
    // 20 > 15, selected C1 not POLL, 15 < tick -> break. C1 = 1.
    let mut g = gov(MenuVariant::Modern, &st, [15; 8]);
    assert_eq!(g.select(&st, &input(10_000, 0)), 1);
}

#[test]
fn linux44_15us_waiter_defaults_to_c1() {
    let st = skl();
    let mut g = gov(MenuVariant::Linux44, &st, [15; 8]);
    // predicted 10000; typical: stddev 0 -> 15 < next_timer -> 15.
    // multiplier 1 + 2*0 + 10 = 11, limit 15/11 = 1.
    // next_timer 10000 > 5 and C1 enabled -> default C1 (1).
    // Loop from 1: C1 exit 2 > 1 skip; C1E residency 20 > 15 skip; all
    // deeper skip. Result C1 = 1.
    assert_eq!(g.select(&st, &input(10_000, 1)), 1);
}

#[test]
fn linux44_iowait_refuses_deep_state() {
    let st = skl();
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    // predicted 500 (typical), limit 500/11 = 45: C1E ok; C3 exit 70,
    // C6 exit 85 > 45 skip; C7s.. residency > 500 skip. C1E = 2.
    assert_eq!(g.select(&st, &input(10_000, 1)), 2);
    // With load 0.5 as well: multiplier 1 + 2*5 + 10 = 21, limit 500/21
    // = 23: C1E exit 10 still ok -> 2. With load 2.5: fixed 5120 ->
    // LOAD_INT 2, LOAD_FRAC (1024*100)>>11 = 50 -> 25; multiplier
    // 1 + 50 + 10 = 61, limit 500/61 = 8: C1E exit 10 > 8 -> C1 = 1.
    let mut inp = input(10_000, 1);
    inp.load_avg = 0.5;
    assert_eq!(g.select(&st, &inp), 2);
    inp.load_avg = 2.5;
    assert_eq!(g.select(&st, &inp), 1);
}

#[test]
fn pm_qos_limit_caps_choice() {
    let st = skl();
    // Modern, history 500, no waiter: predicted 500; limit min(50, 500)
    // = 50: C1E exit 10 ok, C3 exit 70 > 50 -> break. C1E = 2.
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    let mut inp = input(10_000, 0);
    inp.latency_req_ns = 50 * US;
    assert_eq!(g.select(&st, &inp), 2);
    // 4.4: same limit 50: C3 70, C6 85 skipped, deeper too long -> 2.
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    assert_eq!(g.select(&st, &inp), 2);
    // Limit 0: both return state 0 at once.
    inp.latency_req_ns = 0;
    assert_eq!(g.select(&st, &inp), 0);
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    assert_eq!(g.select(&st, &inp), 0);
    // Modern, limit 1 us < C1 exit 2 us: early POLL (state 0).
    inp.latency_req_ns = US;
    assert_eq!(g.select(&st, &inp), 0);
    // 4.4, limit 1 us: default C1 regardless (4.4 only checks
    // next_timer > 5), loop finds nothing with exit <= 1 -> C1 = 1.
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    assert_eq!(g.select(&st, &inp), 1);
}

#[test]
fn poll_for_very_short_predictions() {
    let st = skl();
    // Modern: next_timer 1 us < C1 target residency 2 us -> POLL at once;
    // tick kept because POLL is a polling state.
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(1, 0)), 0);
    assert!(!g.stop_tick());
    // 4.4: next_timer 4 us <= 5 -> no C1 default; predicted
    // round(4*8192/8192) = 4, typical avg 500 not < 4 -> stays 4;
    // limit 4: C1 (2/2) passes -> C1 = 1. With next_timer 1 us:
    // predicted 1, C1 residency 2 > 1 -> stays POLL = 0.
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(4, 0)), 1);
    assert_eq!(g.select(&st, &input(1, 0)), 0);
}

#[test]
fn modern_prefers_physical_state_to_poll() {
    let st = skl();
    // Zero history (fresh governor): next_timer 1000 us, bucket 3,
    // predicted 1000 -> typical: min 0 < 1000, avg 0, var 0 -> 0.
    // Limit 0/1 = 0. POLL selected; C1 residency 2 > 0, selected is POLL:
    // C1 exit 2 <= 0? no -> not taken; 0 < tick -> break. POLL = 0.
    let mut g = MenuGovernor::new(MenuVariant::Modern, st.len());
    assert_eq!(g.select(&st, &input(1_000, 0)), 0);
    // A table whose C1 has exit 0, residency 5: with the same input,
    // C1 exit 0 <= 0 and residency 5 <= next_timer 1000 -> C1 = 1,
    // prediction raised to C1's residency (5 us).
    let st2 = vec![
        CState::poll(),
        CState::from_us("C1", 0, 5),
        CState::from_us("C6", 100, 400),
    ];
    let mut g = MenuGovernor::new(MenuVariant::Modern, st2.len());
    assert_eq!(g.select(&st2, &input(1_000, 0)), 1);
    assert_eq!(g.predicted_ns(), 5 * US);
}

#[test]
fn disabled_state_skipped() {
    let mut st = skl();
    // Modern, 1 waiter, history 500 -> C1E normally (see above). C1E
    // disabled: POLL, C1, skip C1E, C3 exit 70 > 45 -> break. C1 = 1.
    st[2].disabled = true;
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(10_000, 1)), 1);
    // No waiter, C6 disabled: POLL..C3 pass, skip C6, C7s residency 800 >
    // 500 -> break. C3 = 3 (C6 would have been chosen).
    let mut st = skl();
    st[4].disabled = true;
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(10_000, 0)), 3);
    // 4.4 same: C6 skipped, C7s.. residency > 500 skipped -> C3 = 3.
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(10_000, 0)), 3);
    // 4.4 with C1 disabled and next_timer 4 us: default stays POLL,
    // predicted 4, C1 skipped, C1E residency 20 > 4 -> POLL = 0.
    let mut st = skl();
    st[1].disabled = true;
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(4, 0)), 0);
}

#[test]
fn linux44_typical_interval_can_raise_prediction() {
    let st = skl();
    // Factor 2048 (0.25) everywhere, history 800 us, next_timer 2000 us.
    // bucket 3; predicted = round(2000*2048/8192) = 500.
    let mut g = MenuGovernor::new(MenuVariant::Linux44, st.len());
    g.set_history([800; 8], [2048; BUCKETS]);
    // 4.4: typical avg 800 < next_timer 2000 -> predicted = 800 (raised).
    // Limit 800: C7s (800/124) and C8 (800/200) pass; C9, C10 residency
    // 5000 skip. C8 = 6.
    assert_eq!(g.select(&st, &input(2_000, 0)), 6);
    assert_eq!(g.predicted_ns(), 800 * US);
    // Modern: typical gives up (min 800 >= 500), predicted stays 500:
    // C6 (200) ok, C7s residency 800 > 500 -> break. C6 = 4.
    let mut g = MenuGovernor::new(MenuVariant::Modern, st.len());
    g.set_history([800; 8], [2048; BUCKETS]);
    assert_eq!(g.select(&st, &input(2_000, 0)), 4);
    assert_eq!(g.predicted_ns(), 500 * US);
}

#[test]
fn modern_long_prediction_retains_tick_in_shallow_state() {
    let st = hsw();
    // hsw: ... 7 C9 600/1800, 8 C10 2600/7700. History 6000 us,
    // next_timer 100000: predicted min(100000, 6000) = 6000; limit 6000.
    // C9 passes; C10 residency 7700 > 6000, C9 not POLL, 6000 >= TICK
    // 4000, tick running -> predicted = C9 residency 1800, break.
    // 1800 < 4000 -> stop_tick false. C9 = 7.
    let mut g = gov(MenuVariant::Modern, &st, [6000; 8]);
    assert_eq!(g.select(&st, &input(100_000, 0)), 7);
    assert!(!g.stop_tick());
    // History 8000: predicted 8000, C10 (7700/2600) passes, loop ends;
    // 8000 >= tick -> stop_tick true. C10 = 8.
    let mut g = gov(MenuVariant::Modern, &st, [8000; 8]);
    assert_eq!(g.select(&st, &input(100_000, 0)), 8);
    assert!(g.stop_tick());
}

// ---------------------------------------------------------------- reflect

#[test]
fn correction_factor_converges_to_measured_over_next_timer() {
    // POLL, C1 exit 0 / residency 1, so measured = residency exactly.
    let st = vec![CState::poll(), CState::from_us("C1", 0, 1)];
    let mut g = MenuGovernor::new(MenuVariant::Modern, st.len());
    let inp = input(1_000, 0); // bucket 3
                               // First round: predicted from zero history = 0; limit 0; C1 exit 0,
                               // residency 1 <= 1000 -> C1 (physical state preferred to POLL).
    assert_eq!(g.select(&st, &inp), 1);
    // Idle 250 us: 250 > 2*0 -> measured 250.
    // f = 8192 - 8192/8 + 1024*250/1000 = 8192 - 1024 + 256 = 7424.
    g.reflect(&st, 250 * US, false);
    assert_eq!(g.correction_factor(3), 7424);
    // Second: 7424 - 928 + 256 = 6752.
    assert_eq!(g.select(&st, &inp), 1);
    g.reflect(&st, 250 * US, false);
    assert_eq!(g.correction_factor(3), 6752);
    // f <- f - floor(f/8) + 256 has fixed points 2048..=2055 and never
    // drops below 2048; from above it decreases by floor(f/8) - 256 >= 1
    // per step until it reaches 2055 (= 0.2509 ~ 250/1000 x 8192).
    for _ in 0..200 {
        g.select(&st, &inp);
        g.reflect(&st, 250 * US, false);
    }
    assert_eq!(g.correction_factor(3), 2055);
    // Other buckets untouched.
    assert_eq!(g.correction_factor(4), 8192);
    // Prediction: round(1000*2055/8192) = round(250.85) = 251; typical of
    // eight 250s = 250; min -> 250.
    g.select(&st, &inp);
    assert_eq!(g.predicted_ns(), 250 * US);
    assert_eq!(g.intervals(), &[250; 8]);
}

#[test]
fn reflect_exit_latency_handling() {
    let st = skl();
    // Modern, choose C1E: history 15... use 1 waiter history 500 -> C1E.
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(10_000, 1)), 2); // bucket 10
                                                     // 30 us residency from C1E (exit 10): 30 > 20 -> 20.
                                                     // f = 8192 - 1024 + 1024*20/10000 = 7168 + 2 = 7170.
    g.reflect(&st, 30 * US, false);
    assert_eq!(g.correction_factor(10), 7170);
    assert_eq!(g.intervals()[0], 20);
    // Next select sees history [20, 500 x7]: factor 7170 -> predicted
    // round(10000*7170/8192) = round(8752.4) = 8752. Typical pass 1:
    // avg 3520>>3 = 440, var (420^2 + 7*60^2)>>3 = 25200 -> no; thresh 499
    // drops all seven 500s; pass 2 keeps [20]: var 0 <= 400 -> 20 (the
    // variance test does not need 3/4 of the samples). Limit 20/11 = 1
    // -> POLL.
    assert_eq!(g.select(&st, &input(10_000, 1)), 0);
    assert_eq!(g.predicted_ns(), 20 * US);
    // Leaving POLL after 15 us >= its 2 us limit is a time-limit exit:
    // measured = next_timer 10000.
    g.reflect(&st, 15 * US, false);
    assert_eq!(g.intervals()[1], 10_000);
    // 15 us from C1E (fresh governor): 15 <= 2*10 -> 15/2 = 7.
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(10_000, 1)), 2);
    g.reflect(&st, 15 * US, false);
    assert_eq!(g.intervals()[0], 7);

    // 4.4: 15 us from C1E: 15 > 10 -> 5; 8 us: 8 <= 10 -> 8 kept.
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(10_000, 1)), 2);
    g.reflect(&st, 15 * US, false);
    assert_eq!(g.intervals()[0], 5);
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(10_000, 1)), 2);
    g.reflect(&st, 8 * US, false);
    assert_eq!(g.intervals()[0], 8);
    // Capped at the next timer: 20000 us idle in C1E, next 10000:
    // 20000 - 10 = 19990, min(19990, 10000) = 10000.
    let mut g = gov(MenuVariant::Linux44, &st, [500; 8]);
    assert_eq!(g.select(&st, &input(10_000, 1)), 2);
    g.reflect(&st, 20_000 * US, false);
    assert_eq!(g.intervals()[0], 10_000);
}

#[test]
fn modern_tick_wakeup_counts_as_long_idle() {
    let st = skl();
    let mut g = gov(MenuVariant::Modern, &st, [60_000; 8]);
    // next_timer 100000 us (bucket 5) > TICK 4000, woken by the tick after
    // 4000 us: measured = 9*50000/10 = 45000 (< next_timer).
    // f = 8192 - 1024 + 1024*45000/100000 = 7168 + 460 = 7628.
    g.select(&st, &input(100_000, 0));
    assert_eq!(g.bucket(), 5);
    g.reflect(&st, 4_000 * US, true);
    assert_eq!(g.correction_factor(5), 7628);
    assert_eq!(g.intervals()[0], 45_000);
    // 4.4 ignores the flag: C10 (890 exit) chosen? predicted 60000 ->
    // deepest C10; measured 4000 - 890 = 3110,
    // f = 7168 + 1024*3110/100000 = 7168 + 31 = 7199.
    let mut g = gov(MenuVariant::Linux44, &st, [60_000; 8]);
    assert_eq!(g.select(&st, &input(100_000, 0)), 8);
    g.reflect(&st, 4_000 * US, true);
    assert_eq!(g.correction_factor(5), 7199);
}

#[test]
fn modern_poll_time_limit_exit_counts_as_timer() {
    let st = skl();
    let mut g = gov(MenuVariant::Modern, &st, [500; 8]);
    // Poll limit = target residency of first enabled non-POLL state (C1,
    // 2 us).
    assert_eq!(g.poll_time_limit_ns(&st), Some(2 * US));
    // next_timer 1 us -> POLL (early return), bucket 0.
    assert_eq!(g.select(&st, &input(1, 0)), 0);
    // Left POLL at its 2 us limit -> measured = next_timer = 1;
    // f = 7168 + 1024*1/1 = 8192.
    g.reflect(&st, 2 * US, false);
    assert_eq!(g.correction_factor(0), 8192);
    assert_eq!(g.intervals()[0], 1);
    // 4.4 has no poll time limit.
    let g44 = MenuGovernor::new(MenuVariant::Linux44, st.len());
    assert_eq!(g44.poll_time_limit_ns(&st), None);
}

#[test]
fn long_idle_counts_as_perfect() {
    let st = skl();
    let mut g = gov(MenuVariant::Modern, &st, [60_000; 8]);
    // next_timer 200000 us, idle 150000 us in C10 (exit 890):
    // 150000 > 1780 -> 149110 >= MAX_INTERESTING -> f = 7168 + 1024 = 8192.
    g.set_history([60_000; 8], [4096; BUCKETS]);
    g.select(&st, &input(200_000, 0));
    g.reflect(&st, 150_000 * US, false);
    // 4096 - 512 + 1024 = 4608.
    assert_eq!(g.correction_factor(5), 4608);
}

// ---------------------------------------------------------------- v4.4's
// acceptance test without int_sqrt()

/// The v4.4 text's test, computed the kernel's way (with `int_sqrt()`).
fn linux44_typical_by_sqrt(avg: u64, variance: u64, divisor: u64) -> bool {
    let stddev = int_sqrt(variance);
    ((avg > stddev * 6) && (divisor * 4 >= INTERVALS as u64 * 3)) || stddev <= 20
}

#[test]
fn linux44_test_without_square_root_is_the_kernels() {
    // Every average up to 3,000 us against the variances where either
    // side of the test can flip: the squares 21^2 and ((avg - 1) / 6 + 1)^2
    // and their neighbours, and a spread of others; 6, 7 and 8 samples
    // (6 is below 3/4 of INTERVALS only for the "avg > 6 stddev" arm).
    let mut rng = crate::sim::rng::RngStream::new(27, "menu-sqrt");
    let mut flips = 0;
    for avg in 0..3_000u64 {
        let k1 = avg.saturating_sub(1) / 6 + 1;
        let mut vars = vec![0, 1, 440, 441, 442, k1 * k1 - 1, k1 * k1, k1 * k1 + 1];
        vars.extend((0..8).map(|_| rng.below(4 * k1 * k1 + 1_000)));
        for &v in &vars {
            for divisor in [5, 6, 7, 8] {
                let want = linux44_typical_by_sqrt(avg, v, divisor);
                assert_eq!(
                    linux44_typical(avg, v, divisor),
                    want,
                    "avg {avg} variance {v} divisor {divisor}"
                );
                flips += usize::from(want);
            }
        }
    }
    // Both outcomes occur (the sweep is not vacuous).
    assert!(flips > 1_000 && flips < 3_000 * 16 * 4 - 1_000, "{flips}");
    // The largest averages a u32 history gives.
    for avg in [u32::MAX as u64, u32::MAX as u64 - 5, 1 << 31] {
        let k1 = (avg - 1) / 6 + 1;
        for v in [k1 * k1 - 1, k1 * k1, u64::MAX / 2] {
            assert_eq!(
                linux44_typical(avg, v, 8),
                linux44_typical_by_sqrt(avg, v, 8)
            );
        }
    }
}

// ---------------------------------------------------------------- the
// converted table and the remembered load

#[test]
fn state_times_are_the_tables_microseconds() {
    let mut states = skl();
    states[2].disabled = true;
    let t = StateTimes::of(&states);
    assert_eq!(t.len(), 9);
    // skl C3: exit 70 us, residency 100 us; C10: 890 / 5000.
    assert_eq!((t.exit_us[3], t.residency_us[3]), (70, 100));
    assert_eq!((t.exit_us[8], t.residency_us[8]), (890, 5_000));
    assert!(t.polling[0] && !t.polling[1]);
    assert!(t.disabled[2] && !t.disabled[1]);
    // POLL's limit: the first enabled state after POLL, C1 (2 us).
    assert_eq!(t.poll_residency_ns, Some(2 * US));
    states[1].disabled = true;
    // C1 and C1E disabled: C3's 100 us.
    assert_eq!(StateTimes::of(&states).poll_residency_ns, Some(100 * US));
    // A sub-microsecond latency truncates as ktime_to_us() does.
    let odd = [
        CState::poll(),
        CState {
            exit_latency_ns: 1_999,
            target_residency_ns: 999,
            ..CState::from_us("C1", 0, 0)
        },
    ];
    let t = StateTimes::of(&odd);
    assert_eq!((t.exit_us[1], t.residency_us[1]), (1, 0));
}

#[test]
fn linux44_load_change_is_seen_at_the_next_select() {
    // skl, history of eight 100 us periods, next timer 10 ms, no waiter:
    // predicted = typical 100 (below 10000). Load 0: mult 1,
    // latency_req 100 -> deepest state with residency <= 100 and exit
    // <= 100 is C3 (70/100); C6's residency 200 > 100.
    // Load 5.0: get_loadavg = 50, mult 1 + 2*50 = 101, 100/101 = 0:
    // every state's exit > 0 -> the C1 default (next timer > 5 us).
    let states = skl();
    let mut g = gov(MenuVariant::Linux44, &states, [100; INTERVALS]);
    let mut inp = input(10_000, 0);
    assert_eq!(g.select(&states, &inp), 3);
    inp.load_avg = 5.0;
    assert_eq!(g.select(&states, &inp), 1);
    inp.load_avg = 0.0;
    assert_eq!(g.select(&states, &inp), 3);
    inp.load_avg = 5.0;
    assert_eq!(g.select_times(&StateTimes::of(&states), &inp), 1);
}

#[test]
fn linux44_first_pass_is_the_general_pass() {
    // The unrolled first pass against the general loop started with the
    // kernel's initial threshold (ULONG_MAX keeps every sample), on
    // histories that are accepted at once, after dropping outliers, and
    // never; and with intervals near u32::MAX (a long idle with no timer).
    let mut rng = crate::sim::rng::RngStream::new(27, "menu-first-pass");
    let mut outcomes = [0usize; 3];
    for i in 0..20_000 {
        let spread = [30, 400, 5_000, 1 << 20, u32::MAX as u64][i % 5];
        let base = rng.below(10_000);
        let mut iv = [0u32; INTERVALS];
        for v in iv.iter_mut() {
            *v = (base + rng.below(spread + 1)).min(u32::MAX as u64) as u32;
        }
        if i % 7 == 0 {
            iv[rng.below(INTERVALS as u64) as usize] = rng.below(200_000) as u32;
        }
        let want = typical_interval_linux44_from(&iv, u32::MAX);
        assert_eq!(typical_interval_linux44(&iv), want, "{iv:?}");
        outcomes[match want {
            None => 0,
            Some(a) if u64::from(a) == iv.iter().map(|&v| v as u64).sum::<u64>() >> 3 => 1,
            Some(_) => 2,
        }] += 1;
    }
    // Accepted at once, accepted after dropping outliers, and rejected all
    // occur.
    assert!(outcomes.iter().all(|&n| n > 100), "{outcomes:?}");
    assert_eq!(typical_interval_linux44(&[0; INTERVALS]), Some(0));
}

#[test]
fn linux44_loop_stops_early_only_on_a_sorted_table() {
    // Residencies 0, 2, 500, 50 us (not sorted): predicted 100 (history of
    // 100s), no latency limit. C2 (500 > 100) fails, C3 (50 <= 100, exit
    // 20 <= 100) passes: v4.4 skips the failing state and returns 3.
    let states = [
        CState::poll(),
        CState::from_us("C1", 2, 2),
        CState::from_us("C2", 10, 500),
        CState::from_us("C3", 20, 50),
    ];
    assert!(!StateTimes::of(&states).residency_sorted);
    let mut g = gov(MenuVariant::Linux44, &states, [100; INTERVALS]);
    assert_eq!(g.select(&states, &input(10_000, 0)), 3);
    assert!(StateTimes::of(&skl()).residency_sorted);
    assert!(StateTimes::of(&hsw()).residency_sorted);

    // On sorted tables the early stop picks what the full scan picks:
    // random sorted tables, disabled states, histories, timers, loads,
    // waiters and latency limits, each selected with the stop and with
    // the table marked unsorted (the full scan).
    let mut rng = crate::sim::rng::RngStream::new(27, "menu-sorted-stop");
    let mut deep = 0;
    for _ in 0..5_000 {
        let n = 2 + rng.below(8) as usize;
        let mut res = 0u64;
        let mut table = vec![CState::poll()];
        for k in 1..n {
            res += rng.below(300);
            let mut s = CState::from_us(&format!("C{k}"), rng.below(400), res);
            s.disabled = rng.below(5) == 0;
            table.push(s);
        }
        let sorted = StateTimes::of(&table);
        assert!(sorted.residency_sorted);
        let mut full = sorted;
        full.residency_sorted = false;
        let mut iv = [0u32; INTERVALS];
        for v in iv.iter_mut() {
            *v = rng.below(2_000) as u32;
        }
        let inp = SelectInput {
            next_timer_ns: rng.below(5_000) * US,
            nr_iowaiters: rng.below(2) as u32,
            load_avg: [0.0, 0.3, 2.0][rng.below(3) as usize],
            latency_req_ns: [u64::MAX, rng.below(500) * US][rng.below(2) as usize],
            delta_tick_ns: 4_000 * US,
        };
        let mut a = gov(MenuVariant::Linux44, &table, iv);
        let mut b = a.clone();
        let got = a.select_times(&sorted, &inp);
        assert_eq!(got, b.select_times(&full, &inp), "{table:?} {iv:?} {inp:?}");
        deep += usize::from(got >= 2);
    }
    assert!(deep > 500, "{deep}");
}
