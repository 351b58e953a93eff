//! Latency statistics as fio keeps them, so percentiles and json+ bins come
//! out exactly as fio would print them for the same samples.
//!
//! fio records latencies in a log-linear histogram (stat.h:
//! FIO_IO_U_PLAT_BITS = 6, so 64 buckets per power of two, and
//! FIO_IO_U_PLAT_GROUP_NR = 29 groups), reports a bucket's middle value as the
//! percentile (stat.c: plat_val_to_idx, plat_idx_to_val,
//! calc_clat_percentiles), and keeps min/max/mean/variance with Welford's
//! update (stat.c: add_stat_sample). The storage is a fixed array: recording
//! never allocates.

use super::Ns;

pub const PLAT_BITS: u32 = 6;
pub const PLAT_VAL: usize = 1 << PLAT_BITS;
pub const PLAT_GROUP_NR: usize = 29;
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL;

/// fio's default percentile list (options.c: def_percentile_list).
pub const FIO_DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits) as usize;
    (base + offset).min(PLAT_NR - 1)
}

pub fn plat_idx_to_val(idx: usize) -> u64 {
    assert!(idx < PLAT_NR);
    if idx < (PLAT_VAL << 1) {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx % PLAT_VAL) as f64;
    // fio computes this in floating point and truncates to an integer.
    base + ((k + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// min / max / mean / stddev / N, as fio's struct io_stat.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunningStat {
    pub min: u64,
    pub max: u64,
    pub samples: u64,
    mean: f64,
    s: f64,
}

impl RunningStat {
    pub fn add(&mut self, value: u64) {
        if self.samples == 0 {
            self.min = value;
            self.max = value;
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        self.samples += 1;
        let v = value as f64;
        let delta = v - self.mean;
        self.mean += delta / self.samples as f64;
        self.s += delta * (v - self.mean);
    }

    pub fn mean(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.mean
        }
    }

    /// Sample standard deviation (n - 1), as fio's calc_lat.
    pub fn stddev(&self) -> f64 {
        if self.samples <= 1 {
            0.0
        } else {
            (self.s / (self.samples - 1) as f64).sqrt()
        }
    }

    /// Combine two independent sample sets (fio's sum_stat, used for
    /// group_reporting).
    pub fn merge(&mut self, other: &RunningStat) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *other;
            return;
        }
        let n1 = self.samples as f64;
        let n2 = other.samples as f64;
        let n = n1 + n2;
        let delta = other.mean - self.mean;
        let mean = self.mean + delta * n2 / n;
        let s = self.s + other.s + delta * delta * n1 * n2 / n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.samples += other.samples;
        self.mean = mean;
        self.s = s;
    }
}

/// One latency series (slat, clat or lat of one direction).
#[derive(Clone)]
pub struct LatencyHist {
    pub stat: RunningStat,
    plat: Box<[u64; PLAT_NR]>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist {
            stat: RunningStat::default(),
            plat: Box::new([0; PLAT_NR]),
        }
    }
}

impl std::fmt::Debug for LatencyHist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHist")
            .field("stat", &self.stat)
            .finish()
    }
}

impl LatencyHist {
    /// Bytes of one histogram's buckets (fio's `FIO_IO_U_PLAT_NR` u64s).
    pub const BUCKET_BYTES: usize = PLAT_NR * std::mem::size_of::<u64>();

    pub fn record(&mut self, ns: Ns) {
        self.stat.add(ns);
        self.plat[plat_val_to_idx(ns)] += 1;
    }

    pub fn samples(&self) -> u64 {
        self.stat.samples
    }

    pub fn merge(&mut self, other: &LatencyHist) {
        self.stat.merge(&other.stat);
        for (a, b) in self.plat.iter_mut().zip(other.plat.iter()) {
            *a += *b;
        }
    }

    /// Non-empty buckets as (representative value in ns, count): json+ bins.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.plat
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (plat_idx_to_val(i), *c))
    }

    /// fio's calc_clat_percentiles: for each requested percentile, the value
    /// of the first bucket where the running count reaches p% of N.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        let n = self.stat.samples as f64;
        let mut out = vec![0u64; list.len()];
        if list.is_empty() || self.stat.samples == 0 {
            return out;
        }
        let mut sum: u64 = 0;
        let mut j = 0;
        'buckets: for (i, count) in self.plat.iter().enumerate() {
            sum += count;
            while sum as f64 >= list[j] / 100.0 * n {
                out[j] = plat_idx_to_val(i);
                if j == list.len() - 1 {
                    break 'buckets;
                }
                j += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        for v in 0..128u64 {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v);
        }
    }

    #[test]
    fn bucket_value_is_within_one_part_in_64() {
        for v in [129u64, 1000, 4096, 123_456, 10_000_000, 3_000_000_000] {
            let back = plat_idx_to_val(plat_val_to_idx(v)) as f64;
            assert!(
                (back - v as f64).abs() / (v as f64) < 1.0 / 64.0,
                "{v} -> {back}"
            );
        }
    }

    #[test]
    fn fio_fixture_percentile_values_are_bucket_values() {
        // Values fio 3.33 printed in real-runs/randrw70-4jobs-grouped: each
        // must be a fixed point of val -> idx -> val.
        for v in [211_968u64, 288_768, 444_416] {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v);
        }
    }

    #[test]
    fn welford_matches_two_pass() {
        let xs = [3u64, 9, 27, 81, 243, 5, 7];
        let mut s = RunningStat::default();
        xs.iter().for_each(|x| s.add(*x));
        let mean = xs.iter().sum::<u64>() as f64 / xs.len() as f64;
        let var =
            xs.iter().map(|x| (*x as f64 - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
        assert!((s.mean() - mean).abs() < 1e-9);
        assert!((s.stddev() - var.sqrt()).abs() < 1e-9);
        assert_eq!((s.min, s.max, s.samples), (3, 243, 7));
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut a = LatencyHist::default();
        let mut b = LatencyHist::default();
        let mut all = LatencyHist::default();
        for v in 0..1000u64 {
            let x = v * 37 % 5000 + 100;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a.stat.samples, all.stat.samples);
        assert!((a.stat.mean() - all.stat.mean()).abs() < 1e-6);
        assert!((a.stat.stddev() - all.stat.stddev()).abs() < 1e-6);
        assert_eq!(
            a.percentiles(&FIO_DEFAULT_PERCENTILES),
            all.percentiles(&FIO_DEFAULT_PERCENTILES)
        );
    }

    #[test]
    fn median_of_uniform_is_in_the_middle() {
        let mut h = LatencyHist::default();
        for v in 1..=10_000u64 {
            h.record(v * 100);
        }
        let p = h.percentiles(&[50.0]);
        assert!((p[0] as f64 - 500_000.0).abs() / 500_000.0 < 0.02, "{p:?}");
    }
}
