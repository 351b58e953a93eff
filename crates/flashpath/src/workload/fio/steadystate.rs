//! fio's steady-state detection (steadystate.c, fio 3.33): once a second
//! fio's helper thread takes each job's IOPS and bandwidth over the last
//! second (`steadystate_check`); once `ss_dur` seconds of them are in, it
//! checks them against the criterion (the least-squares slope, or the
//! largest deviation from their mean, in absolute terms or as a percent of
//! the mean) and ends the job (its whole group with group_reporting) when
//! the criterion is below the limit.

use crate::report::SsReport;
use crate::sim::Ns;

/// Nanoseconds per second: fio's helper checks once a second
/// (helper_thread.c: steadystate_check every 1000 ms).
pub const SS_TICK: Ns = 1_000_000_000;

/// The job's `steadystate=`, `ss_dur=` and `ss_ramp=` (options.c
/// str_steadystate_cb: `criterion:limit[%]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SsSpec {
    /// IOPS (else bandwidth, bytes/s).
    pub iops: bool,
    /// The slope (else the largest deviation from the mean).
    pub slope: bool,
    /// The limit is a percent of the mean.
    pub pct: bool,
    pub limit: f64,
    /// ss_dur in whole seconds (td_steadystate_init: ss_dur /= 1000000).
    pub dur: u32,
    /// ss_ramp in ns.
    pub ramp: Ns,
}

impl Default for SsSpec {
    /// options.c: `steadystate` defaults to "iops_slope:0.01%", duration 0
    /// (off).
    fn default() -> Self {
        SsSpec {
            iops: true,
            slope: true,
            pct: true,
            limit: 0.01,
            dur: 0,
            ramp: 0,
        }
    }
}

impl SsSpec {
    /// The JSON's `"ss"` text (stat.c show_thread_status_json:
    /// "%s%s:%f%s" with the limit as a float).
    pub fn label(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            if self.iops { "iops" } else { "bw" },
            if self.slope { "_slope" } else { "" },
            self.limit as f32,
            if self.pct { "%" } else { "" }
        )
    }
}

/// One job's (or, with group_reporting, one group's) steady-state data:
/// fio's struct steadystate_data.
#[derive(Clone, Debug)]
pub struct SteadyState {
    pub spec: SsSpec,
    /// This thread holds the data (FIO_SS_DATA: every job without
    /// group_reporting, the group's last job with it).
    pub holds_data: bool,
    pub ramp_over: bool,
    pub attained: bool,
    buffer_full: bool,
    head: usize,
    tail: usize,
    iops_data: Vec<u64>,
    bw_data: Vec<u64>,
    sum_x: u64,
    sum_x_sq: u64,
    sum_y: u64,
    sum_xy: u64,
    oldest_y: u64,
    slope: f64,
    deviation: f64,
    criterion: f64,
    /// When and at what totals the previous check took its sample.
    pub prev_time: Ns,
    pub prev_ios: u64,
    pub prev_bytes: u64,
}

impl SteadyState {
    /// td_steadystate_init (and steadystate_alloc for the data holder).
    pub fn new(spec: SsSpec, holds_data: bool) -> SteadyState {
        let d = u64::from(spec.dur);
        // fio callocs the whole window (steadystate_alloc); the slots fill
        // in order before the ring wraps, so it grows here as samples come
        // (a window longer than the run costs nothing up front).
        let n = if holds_data {
            spec.dur.min(64) as usize
        } else {
            0
        };
        SteadyState {
            spec,
            holds_data,
            ramp_over: spec.ramp == 0,
            attained: false,
            buffer_full: false,
            head: 0,
            tail: 0,
            iops_data: Vec::with_capacity(n),
            bw_data: Vec::with_capacity(n),
            // In 64 bits as fio computes them (td_steadystate_init): a
            // window of over 2^21 s wraps there as here, and no caller's
            // window can make this panic.
            sum_x: d.wrapping_mul(d.saturating_sub(1)) / 2,
            sum_x_sq: d
                .saturating_sub(1)
                .wrapping_mul(d)
                .wrapping_mul((2 * d).saturating_sub(1))
                / 6,
            sum_y: 0,
            sum_xy: 0,
            oldest_y: 0,
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            prev_time: 0,
            prev_ios: 0,
            prev_bytes: 0,
        }
    }

    /// The job starts at `now` (backend.c: ss.prev_time is taken as the
    /// thread starts).
    pub fn start(&mut self, now: Ns) {
        self.prev_time = now;
    }

    /// steadystate_check's part for one job at the helper's tick `now`:
    /// the job (started at `start`, `ios` I/Os and `bytes` completed so
    /// far) gives its IOPS and bytes/s since the previous tick once its
    /// ramp is over (None before).
    ///
    /// fio starts recording "one second after ss_ramp has elapsed"
    /// (`utime_since(epoch, now) >= ramp + 1 s`); its helper thread starts
    /// before the jobs (fio_backend: helper_thread_create, then
    /// run_threads), so its ticks fall just before each whole second of a
    /// job's life and the test first holds one tick later than on the
    /// second itself. Here the ticks fall on the job's whole seconds: a
    /// strict comparison gives fio's tick (fio 3.33 with ss_ramp=1 and a
    /// 3 s window attains at 4.94 s, this at 5 s).
    pub fn rates(&mut self, now: Ns, start: Ns, ios: u64, bytes: u64) -> Option<(u64, u64)> {
        if !self.ramp_over && now.saturating_sub(start) > self.spec.ramp + SS_TICK {
            self.ramp_over = true;
        }
        // mtime_since: whole ms (never 0 here: ticks are a second apart,
        // and a job starting on a tick has not yet been sampled).
        let ms = ((now - self.prev_time) / 1_000_000).max(1);
        self.prev_time = now;
        let r = self.ramp_over.then(|| {
            (
                1000 * bytes.wrapping_sub(self.prev_bytes) / ms,
                1000 * ios.wrapping_sub(self.prev_ios) / ms,
            )
        });
        self.prev_ios = ios;
        self.prev_bytes = bytes;
        r
    }

    fn window_full(&self) -> bool {
        self.buffer_full || self.tail.wrapping_sub(self.head) == self.spec.dur as usize - 1
    }

    fn value(&self, i: usize) -> u64 {
        let v = if self.spec.iops {
            &self.iops_data
        } else {
            &self.bw_data
        };
        v.get(i).copied().unwrap_or(0)
    }

    /// steadystate_slope / steadystate_deviation with this second's group
    /// IOPS and bandwidth: whether the state is attained.
    pub fn add_sample(&mut self, iops: u64, bw: u64) -> bool {
        let dur = self.spec.dur as usize;
        if dur == 0 || !self.holds_data {
            return false;
        }
        if self.tail == self.bw_data.len() {
            self.bw_data.push(bw);
            self.iops_data.push(iops);
        } else {
            self.bw_data[self.tail] = bw;
            self.iops_data[self.tail] = iops;
        }
        let new_val = if self.spec.iops { iops } else { bw };
        if self.window_full() {
            if self.spec.slope {
                if !self.buffer_full {
                    // First time through: the sums over the ring (fio sums
                    // y in slot order, x*y from head).
                    self.sum_y = 0;
                    for i in 0..dur {
                        self.sum_y += self.value(i);
                        let j = (self.head + i) % dur;
                        self.sum_xy += i as u64 * self.value(j);
                    }
                    self.buffer_full = true;
                } else {
                    self.sum_y = self.sum_y - self.oldest_y + new_val;
                    self.sum_xy = (self.sum_xy + dur as u64 * new_val).wrapping_sub(self.sum_y);
                }
                self.oldest_y = self.value(self.head);
                let n = dur as f64;
                self.slope = (self.sum_xy as f64 - self.sum_x as f64 * self.sum_y as f64 / n)
                    / (self.sum_x_sq as f64 - self.sum_x as f64 * self.sum_x as f64 / n);
                self.criterion = if self.spec.pct {
                    100.0 * self.slope / (self.sum_y as f64 / n)
                } else {
                    self.slope
                };
                if self.criterion.abs() < self.spec.limit {
                    return true;
                }
            } else {
                if !self.buffer_full {
                    self.sum_y = (0..dur).map(|i| self.value(i)).sum();
                    self.buffer_full = true;
                } else {
                    self.sum_y = self.sum_y - self.oldest_y + self.value(self.tail);
                }
                self.oldest_y = self.value(self.head);
                let mean = self.sum_y as f64 / dur as f64;
                self.deviation = (0..dur)
                    .map(|i| (self.value(i) as f64 - mean).abs())
                    .fold(0.0, f64::max);
                self.criterion = if self.spec.pct {
                    100.0 * self.deviation / mean
                } else {
                    self.deviation
                };
                if self.criterion < self.spec.limit {
                    return true;
                }
            }
        }
        self.tail = (self.tail + 1) % dur;
        if self.tail <= self.head {
            self.head = (self.head + 1) % dur;
        }
        false
    }

    /// The report's view (stat.c show_thread_status_json's order: from
    /// `head`, or the slot before it when the ring is full and the state
    /// not attained).
    pub fn report(&self) -> SsReport {
        let dur = self.spec.dur as usize;
        let first = if self.attained || !self.buffer_full {
            self.head
        } else if self.head == 0 {
            dur.saturating_sub(1)
        } else {
            self.head - 1
        };
        let order = (0..dur).map(|l| (first + l) % dur);
        SsReport {
            label: self.spec.label(),
            iops: self.spec.iops,
            slope: self.spec.slope,
            pct: self.spec.pct,
            duration: self.spec.dur,
            attained: self.attained,
            criterion: self.criterion,
            max_deviation: self.deviation,
            slope_value: self.slope,
            iops_data: order
                .clone()
                .map(|k| self.iops_data.get(k).copied().unwrap_or(0))
                .collect(),
            bw_data: order
                .map(|k| self.bw_data.get(k).copied().unwrap_or(0))
                .collect(),
        }
    }

    /// steadystate_setup: only the data holder keeps the samples.
    pub fn set_holds_data(&mut self, holds: bool) {
        self.holds_data = holds;
        if !holds {
            self.iops_data = Vec::new();
            self.bw_data = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(slope: bool, pct: bool, limit: f64, dur: u32) -> SsSpec {
        SsSpec {
            iops: true,
            slope,
            pct,
            limit,
            dur,
            ramp: 0,
        }
    }

    #[test]
    fn a_flat_series_is_steady_once_the_window_is_full() {
        let mut ss = SteadyState::new(spec(true, true, 1.0, 3), true);
        assert!(!ss.add_sample(1000, 4_096_000));
        assert!(!ss.add_sample(1000, 4_096_000));
        assert!(ss.add_sample(1000, 4_096_000));
        assert_eq!(ss.report().iops_data, vec![1000, 1000, 1000]);
    }

    #[test]
    fn the_slope_is_the_least_squares_slope_of_the_window() {
        // y = 100, 110, 120, 130 over x = 0..3: slope 10 per second, 8.7%
        // of the mean 115; the window then slides: 110..140, slope 10.
        let mut ss = SteadyState::new(spec(true, false, 5.0, 3), true);
        for y in [100, 110] {
            assert!(!ss.add_sample(y, 0));
        }
        assert!(!ss.add_sample(120, 0));
        assert!((ss.slope - 10.0).abs() < 1e-9);
        assert!(!ss.add_sample(130, 0));
        assert!((ss.slope - 10.0).abs() < 1e-9, "{}", ss.slope);
        // Flat from here: 130, 130, 130 has slope 0.
        ss.add_sample(130, 0);
        assert!(ss.add_sample(130, 0));
        assert!(ss.slope.abs() < 1e-9);
    }

    #[test]
    fn the_deviation_is_the_largest_distance_from_the_mean() {
        let mut ss = SteadyState::new(spec(false, true, 5.0, 4), true);
        for y in [90, 110, 100] {
            assert!(!ss.add_sample(y, 0));
        }
        // 90, 110, 100, 100: mean 100, largest deviation 10 = 10%.
        assert!(!ss.add_sample(100, 0));
        assert!((ss.deviation - 10.0).abs() < 1e-9);
        assert!((ss.criterion - 10.0).abs() < 1e-9);
        // 110, 100, 100, 102 after 90 drops: mean 103, deviation 7.
        assert!(!ss.add_sample(102, 0));
        assert!((ss.deviation - 7.0).abs() < 1e-9);
        // 100, 100, 102, 101: mean 100.75, deviation 1.25 = 1.24%.
        assert!(ss.add_sample(101, 0));
    }

    #[test]
    fn the_label_is_fios() {
        assert_eq!(spec(true, true, 10.0, 3).label(), "iops_slope:10.000000%");
        let bw = SsSpec {
            iops: false,
            slope: false,
            pct: false,
            limit: 10000.0,
            dur: 2,
            ramp: 0,
        };
        assert_eq!(bw.label(), "bw:10000.000000");
    }
}
