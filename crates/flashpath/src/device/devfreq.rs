//! devfreq: a device's frequency levels (OPP table), the monitor that
//! evaluates them every `polling_ms`, PM QoS frequency limits, and the
//! simple_ondemand governor.
//!
//! It lives under `device/` because devfreq scales a *device's* clock (here
//! the UFS host controller and its link), and DESIGN.md places "frequency
//! scaling with devfreq" with the device controller; the driver that owns
//! the device (ufshcd) supplies the busy statistics and applies the target,
//! as `devfreq_dev_profile.get_dev_status` / `.target` do in Linux. The
//! monitor has no events of its own: the owning driver schedules an
//! evaluation at [`Devfreq::next_eval`] and calls [`Devfreq::evaluate`].
//!
//! Sources (KERNEL-NOTES 4(a)): `drivers/devfreq/devfreq.c`
//! (`devfreq_monitor`, `devfreq_monitor_suspend/resume`,
//! `devfreq_get_freq_range`, `devfreq_update_target`),
//! `drivers/devfreq/governor_simpleondemand.c`.

use crate::sim::Ns;

/// `DEVFREQ_MAX_FREQ` (ULONG_MAX): the governor's "as fast as possible".
pub const DEVFREQ_MAX_FREQ: u64 = u64::MAX;
pub use crate::types::FREQ_QOS_MAX_DEFAULT_VALUE;

/// simple_ondemand's tunables (`struct devfreq_simple_ondemand_data`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimpleOndemand {
    /// DFSO_UPTHRESHOLD (default 90), percent.
    pub upthreshold: u64,
    /// DFSO_DOWNDIFFERENCTIAL (default 5), percent.
    pub downdifferential: u64,
}

/// Busy statistics of one window (`struct devfreq_dev_status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevStatus {
    pub busy_time: u64,
    pub total_time: u64,
    /// Hz.
    pub current_frequency: u64,
}

impl SimpleOndemand {
    pub const DEFAULT: SimpleOndemand = SimpleOndemand {
        upthreshold: 90,
        downdifferential: 5,
    };

    /// `devfreq_simple_ondemand_func`, line by line. `Err` is its -EINVAL.
    pub fn get_target_freq(&self, stat: DevStatus) -> Result<u64, &'static str> {
        let up = self.upthreshold;
        let down = self.downdifferential;
        if up > 100 || up < down {
            return Err("upthreshold > 100 or upthreshold < downdifferential");
        }
        let mut busy = stat.busy_time;
        let mut total = stat.total_time;
        // Assume MAX if it is going to be divided by zero.
        if total == 0 {
            return Ok(DEVFREQ_MAX_FREQ);
        }
        // Prevent overflow.
        if busy >= (1 << 24) || total >= (1 << 24) {
            busy >>= 7;
            total >>= 7;
        }
        // Set MAX if it's busy enough.
        if busy * 100 > total * up {
            return Ok(DEVFREQ_MAX_FREQ);
        }
        // Set MAX if we do not know the initial frequency.
        if stat.current_frequency == 0 {
            return Ok(DEVFREQ_MAX_FREQ);
        }
        // Keep the current frequency.
        if busy * 100 > total * (up - down) {
            return Ok(stat.current_frequency);
        }
        // Set the desired frequency based on the load (u64 arithmetic as
        // the kernel's unsigned long long; div_u64 truncates). A total
        // shifted to 0 by the guard cannot reach here: busy*100 > 0*up
        // would have returned MAX unless busy is 0 too, and then total was
        // < 2^7 before the shift, so the guard did not shift.
        let a = busy.wrapping_mul(stat.current_frequency);
        let b = a / total;
        let b = b.wrapping_mul(100);
        Ok(b / (up - down / 2))
    }
}

/// The work type of the monitor (`enum devfreq_timer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// DEVFREQ_TIMER_DEFERRABLE (the default): does not wake an idle CPU,
    /// so an evaluation due while its CPU idles runs when the CPU wakes.
    Deferrable,
    /// DEVFREQ_TIMER_DELAYED: runs on time, waking the CPU.
    Delayed,
}

impl TimerKind {
    /// When work due at `due` runs, given the first time at or after `due`
    /// that the CPU it is queued on is awake (`cpu_awake_at`).
    pub fn fires_at(self, due: Ns, cpu_awake_at: Ns) -> Ns {
        match self {
            TimerKind::Delayed => due,
            TimerKind::Deferrable => due.max(cpu_awake_at),
        }
    }
}

/// One devfreq device: OPP table, limits, monitor state, statistics.
#[derive(Clone, Debug)]
pub struct Devfreq {
    /// Frequencies in Hz, ascending (the OPP table).
    opps: Vec<u64>,
    pub governor: SimpleOndemand,
    pub polling: Ns,
    pub timer: TimerKind,
    /// Current frequency, Hz.
    pub cur_freq: u64,
    /// PM QoS requests on the devfreq device, kHz (aggregated: the largest
    /// minimum, the smallest maximum). `None` = no request.
    qos_min_khz: Option<u64>,
    qos_max_khz: Option<u64>,
    /// `stop_polling`: monitoring suspended.
    pub suspended: bool,
    /// The evaluation the monitor has queued, if any.
    pub next_eval: Option<Ns>,
    /// Statistics: evaluations and frequency changes.
    pub evaluations: u64,
    pub transitions: u64,
}

impl Devfreq {
    /// A device at `initial` Hz with its monitor started (first evaluation
    /// `polling` after `now`, as `devfreq_monitor_start`).
    pub fn new(
        opps: Vec<u64>,
        governor: SimpleOndemand,
        polling: Ns,
        timer: TimerKind,
        initial: u64,
        now: Ns,
    ) -> Devfreq {
        assert!(!opps.is_empty(), "an OPP table needs at least one level");
        assert!(opps.windows(2).all(|w| w[0] < w[1]), "OPPs ascending");
        Devfreq {
            opps,
            governor,
            polling,
            timer,
            cur_freq: initial,
            qos_min_khz: None,
            qos_max_khz: None,
            suspended: false,
            next_eval: (polling > 0).then_some(now + polling),
            evaluations: 0,
            transitions: 0,
        }
    }

    pub fn min_opp(&self) -> u64 {
        self.opps[0]
    }
    pub fn max_opp(&self) -> u64 {
        *self.opps.last().unwrap()
    }

    /// `devfreq_get_freq_range`: the PM QoS requests (kHz to Hz), then
    /// the OPP limits: `max` clamped to the table, `min` to `[lowest, max]`
    /// (so when they cross, the minimum yields).
    pub fn freq_range(&self) -> (u64, u64) {
        let mut min = self.min_opp();
        let mut max = self.max_opp();
        if let Some(q) = self.qos_min_khz {
            min = min.max(q.saturating_mul(1000));
        }
        if let Some(q) = self.qos_max_khz {
            max = max.min(q.saturating_mul(1000));
        }
        let max = max.clamp(self.min_opp(), self.max_opp());
        let min = min.clamp(self.min_opp(), max);
        (min, max)
    }

    /// `devfreq_recommended_opp`: the highest OPP at or below `freq`
    /// (greatest lower bound), or with `lub` the lowest at or above it;
    /// falling back to the other direction when none exists.
    pub fn recommended_opp(&self, freq: u64, lub: bool) -> u64 {
        let floor = self.opps.iter().rev().find(|&&f| f <= freq).copied();
        let ceil = self.opps.iter().find(|&&f| f >= freq).copied();
        if lub {
            ceil.or(floor).unwrap()
        } else {
            floor.or(ceil).unwrap()
        }
    }

    /// `devfreq_update_target` up to the driver's `target` call: the
    /// governor's frequency clamped to the QoS range, rounded to an OPP.
    pub fn target_for(&self, stat: DevStatus) -> u64 {
        let freq = self.governor.get_target_freq(stat).unwrap_or(self.cur_freq);
        let (min, max) = self.freq_range();
        if freq < min {
            self.recommended_opp(min, false)
        } else if freq > max {
            // DEVFREQ_FLAG_LEAST_UPPER_BOUND, as the kernel.
            self.recommended_opp(max, true)
        } else {
            self.recommended_opp(freq, false)
        }
    }

    /// One monitor run at `now` (`devfreq_monitor`): returns the target
    /// frequency for the driver and requeues the next evaluation.
    pub fn evaluate(&mut self, now: Ns, stat: DevStatus) -> u64 {
        self.evaluations += 1;
        let f = self.target_for(stat);
        if !self.suspended && self.polling > 0 {
            self.next_eval = Some(now + self.polling);
        }
        f
    }

    /// The driver applied `freq`.
    pub fn set_cur(&mut self, freq: u64) {
        if freq != self.cur_freq {
            self.transitions += 1;
            self.cur_freq = freq;
        }
    }

    /// `devfreq_monitor_suspend`: stop polling, cancel queued work.
    pub fn suspend(&mut self) {
        self.suspended = true;
        self.next_eval = None;
    }

    /// `devfreq_monitor_resume`: the next evaluation `polling` from now.
    pub fn resume(&mut self, now: Ns) {
        if !self.suspended {
            return;
        }
        self.suspended = false;
        if self.next_eval.is_none() && self.polling > 0 {
            self.next_eval = Some(now + self.polling);
        }
    }

    /// Update the PM QoS minimum request on the devfreq device itself
    /// (kHz, `None` = removed). Returns true when devfreq's notifier
    /// re-evaluates at once (`qos_min_notifier_call` -> `update_devfreq`).
    pub fn set_qos_min(&mut self, khz: Option<u64>) -> bool {
        let changed = self.qos_min_khz != khz;
        self.qos_min_khz = khz;
        changed
    }

    /// As [`Devfreq::set_qos_min`] for the maximum.
    pub fn set_qos_max(&mut self, khz: Option<u64>) -> bool {
        let changed = self.qos_max_khz != khz;
        self.qos_max_khz = khz;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::NS_PER_MS;

    const MHZ: u64 = 1_000_000;

    fn st(busy: u64, total: u64, cur: u64) -> DevStatus {
        DevStatus {
            busy_time: busy,
            total_time: total,
            current_frequency: cur,
        }
    }

    #[test]
    fn simple_ondemand_hand_worked_windows() {
        // UFS core tunables: up 70, down 5 (KERNEL-NOTES 4(b)).
        let g = SimpleOndemand {
            upthreshold: 70,
            downdifferential: 5,
        };
        let cur = 75 * MHZ;
        // total 0 -> MAX.
        assert_eq!(g.get_target_freq(st(0, 0, cur)), Ok(DEVFREQ_MAX_FREQ));
        // 71% > 70% -> MAX.
        assert_eq!(
            g.get_target_freq(st(71_000, 100_000, cur)),
            Ok(DEVFREQ_MAX_FREQ)
        );
        // exactly 70%: not > 70, but > 65 -> keep.
        assert_eq!(g.get_target_freq(st(70_000, 100_000, cur)), Ok(cur));
        // 66% -> keep.
        assert_eq!(g.get_target_freq(st(66_000, 100_000, cur)), Ok(cur));
        // 65% exactly: proportional, 65000*75e6/100000 = 48.75e6,
        // *100 / (70 - 2) = 71_691_176 (integer division).
        assert_eq!(
            g.get_target_freq(st(65_000, 100_000, cur)),
            Ok(4_875_000_000 / 68)
        );
        // 5% at 300 MHz: 5000*300e6/100000 = 15e6, *100/68 = 22_058_823.
        assert_eq!(
            g.get_target_freq(st(5_000, 100_000, 300 * MHZ)),
            Ok(1_500_000_000 / 68)
        );
        // unknown current frequency and not busy enough -> MAX.
        assert_eq!(g.get_target_freq(st(10, 100_000, 0)), Ok(DEVFREQ_MAX_FREQ));
        // invalid tunables.
        let bad = SimpleOndemand {
            upthreshold: 101,
            downdifferential: 5,
        };
        assert!(bad.get_target_freq(st(1, 2, cur)).is_err());
        let bad = SimpleOndemand {
            upthreshold: 4,
            downdifferential: 5,
        };
        assert!(bad.get_target_freq(st(1, 2, cur)).is_err());
    }

    #[test]
    fn overflow_guard_shifts_both_by_7() {
        let g = SimpleOndemand::DEFAULT; // 90 / 5
                                         // total = 2^24 us: both shifted right by 7 before the comparisons;
                                         // busy 2^23 + 127 becomes 2^16 (the low bits are lost).
        let busy = (1u64 << 23) + 127;
        let total = 1u64 << 24;
        let want = ((busy >> 7) * 300 * MHZ / (total >> 7)) * 100 / (90 - 2);
        assert_eq!(g.get_target_freq(st(busy, total, 300 * MHZ)), Ok(want));
        // Below the guard no shift: same ratio, different rounding path.
        assert_eq!(
            g.get_target_freq(st(50, 100, 300 * MHZ)),
            Ok(150 * MHZ * 100 / 88)
        );
    }

    fn two_level(now: Ns) -> Devfreq {
        Devfreq::new(
            vec![75 * MHZ, 300 * MHZ],
            SimpleOndemand {
                upthreshold: 70,
                downdifferential: 5,
            },
            60 * NS_PER_MS,
            TimerKind::Delayed,
            75 * MHZ,
            now,
        )
    }

    #[test]
    fn proportional_branch_rounds_down_to_an_opp_and_qos_clamps() {
        let mut d = two_level(0);
        // 30% at 300 MHz -> 132 MHz -> floor OPP 75 MHz.
        assert_eq!(d.target_for(st(30, 100, 300 * MHZ)), 75 * MHZ);
        // 60% at 300 MHz -> 264 MHz -> still 75 MHz (GLB).
        assert_eq!(d.target_for(st(60, 100, 300 * MHZ)), 75 * MHZ);
        // 68% at 300 MHz -> keep 300 MHz.
        assert_eq!(d.target_for(st(68, 100, 300 * MHZ)), 300 * MHZ);
        // QoS min at "maximum" (S32_MAX kHz) clamps everything to 300 MHz;
        // a change of the request asks for an immediate re-evaluation.
        assert!(d.set_qos_min(Some(FREQ_QOS_MAX_DEFAULT_VALUE)));
        assert!(!d.set_qos_min(Some(FREQ_QOS_MAX_DEFAULT_VALUE)));
        assert_eq!(d.target_for(st(1, 100, 75 * MHZ)), 300 * MHZ);
        // A max request below the min wins (min yields to max).
        d.set_qos_max(Some(75_000));
        assert_eq!(d.freq_range(), (75 * MHZ, 75 * MHZ));
        assert_eq!(d.target_for(st(100, 100, 75 * MHZ)), 75 * MHZ);
        d.set_qos_max(None);
        d.set_qos_min(None);
        assert_eq!(d.target_for(st(100, 100, 75 * MHZ)), 300 * MHZ);
    }

    #[test]
    fn load_step_scales_up_after_one_window_and_down_after_one() {
        // From idle at 75 MHz, a load step to 100% busy: the first window
        // that contains more than 70% busy goes to max. A step that starts
        // mid-window at fraction x of a 60 ms window gives busy 1-x: it
        // scales up in that window iff 1-x > 0.7, else one window later.
        let mut d = two_level(0);
        let w = 60_000u64; // us
        let mut t = 0;
        let mut up_at = None;
        let step_at_us = 20_000; // x = 1/3: busy 2/3 < 70% in window 1
        for k in 1..=4u64 {
            t += d.polling;
            let (ws, we) = ((k - 1) * w, k * w);
            let busy = we.saturating_sub(step_at_us.max(ws));
            let f = d.evaluate(t, st(busy, w, d.cur_freq));
            d.set_cur(f);
            if f == 300 * MHZ && up_at.is_none() {
                up_at = Some(k);
            }
        }
        assert_eq!(up_at, Some(2));
        assert_eq!(d.transitions, 1);
        assert_eq!(d.next_eval, Some(5 * 60 * NS_PER_MS));
        // Load drops to 10%: 10% at 300 MHz -> 44 MHz -> 75 MHz at once.
        let f = d.evaluate(t + d.polling, st(6_000, w, d.cur_freq));
        assert_eq!(f, 75 * MHZ);
    }

    #[test]
    fn suspend_and_resume_of_the_monitor() {
        let mut d = two_level(0);
        assert_eq!(d.next_eval, Some(60 * NS_PER_MS));
        d.suspend();
        assert_eq!(d.next_eval, None);
        d.resume(1_000 * NS_PER_MS);
        assert_eq!(d.next_eval, Some(1_060 * NS_PER_MS));
        d.resume(2_000 * NS_PER_MS); // not suspended: nothing changes
        assert_eq!(d.next_eval, Some(1_060 * NS_PER_MS));
    }

    #[test]
    fn deferrable_waits_for_the_cpu_delayed_does_not() {
        assert_eq!(TimerKind::Delayed.fires_at(100, 250), 100);
        assert_eq!(TimerKind::Deferrable.fires_at(100, 250), 250);
        assert_eq!(TimerKind::Deferrable.fires_at(100, 50), 100);
    }
}
