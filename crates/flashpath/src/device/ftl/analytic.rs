//! Closed forms for the write amplification (WA) of uniform random
//! single-unit writes at steady state, and the effective spare of this FTL
//! that they need. Used by the tests and by the `ftl_wa` example that
//! prints the comparison table (docs/ftl-write-amplification.md).
//!
//! Notation: `alpha` = physical units that can hold data / logical units
//! (Desnoyers' α = T/U; his spare factor is Sf = 1 − 1/α). The profile's
//! `over_provisioning` is α − 1 before the GC reserve is taken out.

use super::super::FlashParams;

/// Principal branch W0 of Lambert W on [−1/e, 0), by Newton's method from
/// −0.5 (W0 maps that interval onto [−1, 0)).
pub fn lambert_w0(y: f64) -> f64 {
    debug_assert!((-1.0 / std::f64::consts::E..0.0).contains(&y));
    let mut w: f64 = -0.5;
    for _ in 0..100 {
        let e = w.exp();
        let step = (w * e - y) / (e * (w + 1.0));
        w -= step;
        if step.abs() < 1e-15 {
            break;
        }
    }
    w
}

/// WA of LRW (FIFO) cleaning under uniform random writes, and the limit
/// of greedy cleaning as pages per block grow: A = 1 / (1 − x), where x,
/// the fraction of a victim's units still valid, solves x = e^(−α(1−x)).
/// Why: between a block's write and its cleaning the whole log of α·U units
/// is rewritten once, of which (1 − x)·α·U are host writes; each host write
/// leaves a given unit valid with probability 1 − 1/U. Solving with
/// Lambert W: x = −W0(−α e^−α)/α, so A = α / (α + W0(−α e^−α)).
/// P. Desnoyers, "Analytic Modeling of SSD Write Performance", SYSTOR 2012
/// (the LRW model); the same fixed point is in Hu et al., "Write
/// Amplification Analysis in Flash-Based Solid State Drives", SYSTOR 2009.
pub fn wa_lrw(alpha: f64) -> f64 {
    assert!(alpha > 1.0, "no spare: alpha {alpha}");
    alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
}

/// WA of greedy cleaning with `b` units per block under uniform random
/// writes, in the mean-field limit of many blocks (derived here; the
/// mean-field method is B. Van Houdt's, "A Mean Field Model for a Class of
/// Garbage Collection Algorithms in Flash-Based Solid State Drives",
/// SIGMETRICS 2013, and greedy with a fixed victim level is W. Bux and
/// I. Iliadis, "Performance of Greedy Garbage Collection in Flash-Based
/// Solid-State Drives", Performance Evaluation 67(11), 2010).
///
/// A full block with i valid units loses one at rate i / U per host write,
/// and greedy cleans as soon as a block reaches the lowest level present,
/// so at steady state every victim has j or j + 1 valid units (a fraction
/// q at j). With m = j + 1 − q units moved per victim, 1 / (b − m) blocks
/// are filled per host write; the blocks passing level i number
/// U / (i (b − m)), and they must add up to the data blocks U·α / b:
/// α/b = (H_b − H_(j+1) + q/(j+1)) / (b − m), H the harmonic numbers.
/// Then A = b / (b − m). As b grows the sum becomes ln(b/m) and this
/// becomes [`wa_lrw`]; at b = 256 it is 1–4% below it.
pub fn wa_greedy_mean_field(alpha: f64, b: u32) -> f64 {
    assert!(alpha > 1.0 && b >= 2, "alpha {alpha}, b {b}");
    let bf = f64::from(b);
    // H_b − H_k for k = 0..=b, by suffix sums.
    let mut tail = vec![0.0; b as usize + 1];
    for k in (0..b as usize).rev() {
        tail[k] = tail[k + 1] + 1.0 / (k + 1) as f64;
    }
    // Data blocks implied by a mean victim level m, minus the blocks there
    // are: positive for small m (blocks kept too long), negative near b.
    let excess = |m: f64| {
        let j = (m.ceil() as usize).max(1) - 1;
        let q = (j + 1) as f64 - m;
        (tail[j + 1] + q / (j + 1) as f64) / (bf - m) - alpha / bf
    };
    let (mut lo, mut hi) = (0.0, bf - 1e-9);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if excess(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    bf / (bf - 0.5 * (lo + hi))
}

/// Blocks per die that hold no data at steady state, on average over host
/// writes: the free pool and the unwritten part of the two open frontiers.
/// GC runs when a host-frontier allocation finds fewer than `low` free
/// blocks and refills the pool to `high`; between two host allocations the
/// pool does not change, so over the host writes it steps through
/// high − 1, high − 2, ..., low − 1 for one block each: mean
/// (low + high)/2 − 1. The host and GC frontiers are each half written on
/// average: one more block. Total (low + high)/2.
/// A first-order account: it holds while high − low is small against the
/// die's spare blocks (docs/ftl-write-amplification.md measures where it
/// stops holding).
pub fn reserve_blocks(p: &FlashParams) -> f64 {
    0.5 * f64::from(p.gc_low_free_blocks + p.gc_high_free_blocks)
}

/// Effective α of one die: (blocks − reserve) × units per block over the
/// logical units striped onto the die (GC is per die, so each die is its
/// own log). Die 0 holds the most LPNs when they do not divide evenly.
pub fn effective_alpha(p: &FlashParams) -> f64 {
    let g = &p.geometry;
    let units_per_block =
        f64::from(g.pages_per_block) * f64::from(g.planes_per_die) * f64::from(p.units_per_page());
    let lpns_per_die = p.user_units().div_ceil(u64::from(g.dies())) as f64;
    (f64::from(g.blocks_per_plane) - reserve_blocks(p)) * units_per_block / lpns_per_die
}

/// The nominal α the profile states: 1 + over_provisioning.
pub fn nominal_alpha(p: &FlashParams) -> f64 {
    1.0 + p.over_provisioning
}

/// One row of the comparison: a single-die device of `blocks` blocks of
/// `pages` 4 KiB units (one plane, so a row is one unit and nothing is
/// padded) at nominal over-provisioning `op`, GC watermarks 3/5 and greedy
/// victims ([`FlashParams::small`]).
pub fn wa_experiment_params(op: f64, blocks: u32, pages: u32) -> FlashParams {
    let mut p = FlashParams::small(1, 1, blocks, pages);
    p.over_provisioning = op;
    p.check_integrity = false;
    p
}

/// Simulated WA at steady state: the device is filled sequentially, then
/// `warm` × capacity uniformly random single-unit writes bring it to steady
/// state and the WA is measured over the next `measure` × capacity (the
/// FTL's own write path without timing: placement, GC and its victim
/// choice are the ones timed writes use). Deterministic for a seed.
pub fn simulated_wa(p: &FlashParams, seed: u64, warm: f64, measure: f64) -> crate::Result<f64> {
    let mut p = p.clone();
    p.prefilled = false;
    let mut dev = super::FlashDevice::new(&p, seed)?;
    dev.precondition(true, warm, seed);
    let s = dev.precondition(false, measure, seed.wrapping_add(1));
    Ok(s.waf())
}

/// The nominal over-provisioning of each row of the comparison,
/// (physical − logical) / logical as the profiles state it: 7% (GB vs GiB)
/// to 50%.
pub const WA_SPARES: [f64; 7] = [0.07, 0.10, 0.15, 0.20, 0.28, 0.35, 0.50];

/// One row of the write-amplification comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WaRow {
    /// Nominal over-provisioning, (physical − logical) / logical.
    pub over_provisioning: f64,
    /// The closed form at the nominal spare (what ignoring the GC reserve
    /// would predict).
    pub nominal_analytic_wa: f64,
    /// α with the GC reserve taken out ([`effective_alpha`]).
    pub effective_alpha: f64,
    /// The effective spare factor, 1 − 1/α.
    pub effective_spare_factor: f64,
    /// LRW / large-block greedy closed form at the effective α.
    pub analytic_wa: f64,
    /// Greedy's mean-field value for the block size used.
    pub greedy_mean_field_wa: f64,
    /// The FTL's own write amplification at steady state.
    pub simulated_wa: f64,
}

/// The comparison at every spare of [`WA_SPARES`] on a single-die device of
/// `blocks` × `pages` units ([`wa_experiment_params`], [`simulated_wa`]).
pub fn wa_table(
    blocks: u32,
    pages: u32,
    warm: f64,
    measure: f64,
    seed: u64,
) -> crate::Result<Vec<WaRow>> {
    WA_SPARES
        .iter()
        .map(|&op| {
            let p = wa_experiment_params(op, blocks, pages);
            let alpha = effective_alpha(&p);
            Ok(WaRow {
                over_provisioning: op,
                nominal_analytic_wa: wa_lrw(nominal_alpha(&p)),
                effective_alpha: alpha,
                effective_spare_factor: 1.0 - 1.0 / alpha,
                analytic_wa: wa_lrw(alpha),
                greedy_mean_field_wa: wa_greedy_mean_field(alpha, pages),
                simulated_wa: simulated_wa(&p, seed, warm, measure)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambert_w0_inverts_w_e_w() {
        for y in [-0.36, -0.3, -0.1, -1e-3] {
            let w = lambert_w0(y);
            assert!((w * w.exp() - y).abs() < 1e-12, "y {y}: w {w}");
            assert!(w > -1.0);
        }
    }

    #[test]
    fn lrw_solves_its_fixed_point() {
        for alpha in [1.05, 1.2, 1.5, 2.0] {
            let x = 1.0 - 1.0 / wa_lrw(alpha);
            assert!((x - (-alpha * (1.0 - x)).exp()).abs() < 1e-12);
        }
        // The small-spare limit, s = α − 1 → 0: with ε = 1 − x,
        // ln(1 − ε) = −αε gives ε/2 + ε²/3 ≈ s, so A = 1/ε ≈ 1/(2s) + 2/3.
        let alpha = 1.01;
        let approx = 1.0 / (2.0 * (alpha - 1.0)) + 2.0 / 3.0;
        assert!((wa_lrw(alpha) - approx).abs() / approx < 0.01);
    }

    #[test]
    fn greedy_mean_field_tends_to_lrw_from_below() {
        for alpha in [1.07, 1.2, 1.5] {
            let lrw = wa_lrw(alpha);
            let mut prev = 0.0;
            for b in [16, 64, 256, 4096] {
                let g = wa_greedy_mean_field(alpha, b);
                assert!(g < lrw && g > prev, "alpha {alpha} b {b}: {g} vs {lrw}");
                prev = g;
            }
            assert!((lrw - prev) / lrw < 0.002, "alpha {alpha}: {prev} vs {lrw}");
        }
    }
}
