//! Deterministic random streams. Each consumer (a job's offsets, a job's
//! block sizes, a device's noise...) gets its own stream, derived from the
//! run seed and the consumer's name, so adding a consumer never shifts the
//! numbers another one sees.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Clone)]
pub struct RngStream {
    inner: Xoshiro256PlusPlus,
}

/// FNV-1a, 64 bit: a stable hash of a stream's name (std's hasher is not
/// guaranteed stable across Rust releases).
fn fnv1a(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64 finaliser, to spread seed bits before seeding xoshiro.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl RngStream {
    pub fn new(seed: u64, name: &str) -> Self {
        RngStream {
            inner: Xoshiro256PlusPlus::seed_from_u64(splitmix(seed ^ splitmix(fnv1a(name)))),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n) without modulo bias (Lemire's method).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// Exponentially distributed with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - u is in (0, 1], so ln never sees 0.
        -mean * (1.0 - self.uniform()).ln()
    }

    /// A standard normal variate (Box and Muller, Ann. Math. Statist. 29,
    /// 1958): two uniforms per draw, the second variate of the pair
    /// dropped so that a stream's draws do not depend on the calls' parity.
    pub fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_name_same_stream() {
        let mut a = RngStream::new(7, "job0.offsets");
        let mut b = RngStream::new(7, "job0.offsets");
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn streams_are_independent_of_each_other() {
        let mut a = RngStream::new(7, "job0.offsets");
        let mut c = RngStream::new(7, "job1.offsets");
        let same = (0..100).filter(|_| a.next_u64() == c.next_u64()).count();
        assert_eq!(same, 0);
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = RngStream::new(1, "t");
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn exponential_mean_is_close() {
        let mut r = RngStream::new(3, "exp");
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| r.exponential(5.0)).sum::<f64>() / n as f64;
        // Standard error 5/sqrt(n) ~ 0.011; allow 5 sigma.
        assert!((mean - 5.0).abs() < 0.06, "{mean}");
    }
}
