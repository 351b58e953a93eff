//! The zoned UFS LU's conventional zones (`device/zns.rs`, ZBC rules): a
//! page-mapped log over their own blocks and
//! `device.zns.conventional_spare_zones` spare zones' worth (segments of a
//! zone's worth of blocks), with a greedy garbage collection: when the log
//! opens its last erased segment it first moves the valid units of the
//! full segment with the fewest into it and erases that one, in the host
//! write's time.
//!
//! The small LU: `ufs40-zoned-like`'s dies (4 dies of 4 planes, rows of
//! 64 KiB) with 4-page blocks, so that a zone of 1 MiB is one block on
//! every plane (256 units of 4 KiB: a log segment); 16 conventional zones
//! (4096 units), 64 zones in all.

mod common;

use flashpath::device::ufs::UfsDevice;
use flashpath::device::zns::Zns;
use flashpath::device::{Op, Status};
use flashpath::sim::rng::RngStream;

const UNIT: u64 = 4096;
/// Units of a zone (a segment of the log) and of the conventional zones.
const SEG: u64 = 256;
const CONV: u64 = 16;
const UNITS: u64 = CONV * SEG;

fn device(spare: u32) -> UfsDevice {
    let spare = format!("device.zns.conventional_spare_zones={spare}");
    let p = common::profile(
        "ufs40-zoned-like",
        &[
            "device.flash.pages_per_block=4",
            "device.flash.blocks_per_plane=128",
            "device.zns.zone_size=1MiB",
            "device.zns.zone_capacity=1MiB",
            "device.zns.zones=64",
            "device.zns.conventional_zones=16",
            &spare,
        ],
    );
    UfsDevice::from_profile(&p, 0, None).unwrap()
}

fn zns(d: &UfsDevice) -> &Zns {
    d.layer_as::<Zns>().unwrap()
}

/// A write of `n` units at unit `unit` from `t`, as a host at queue depth
/// 1 sends it: the next comes once this one is done (the time returned).
fn write(d: &mut UfsDevice, t: u64, unit: u64, n: u64) -> u64 {
    let (offset, len) = (unit * UNIT, (n * UNIT) as u32);
    assert_eq!(d.admit(Op::Write, offset, len), Status::Ok);
    let c = d.write(t, offset, len);
    assert_eq!(c.status, Status::Ok);
    c.at.max(t)
}

/// Read every conventional unit, 64 at a time: the unwritten reads (units
/// the map has no place for).
fn unwritten_after_reading_all(d: &mut UfsDevice, t: u64) -> u64 {
    let before = zns(d).stats().unwritten_reads;
    for u in (0..UNITS).step_by(64) {
        let len = (64 * UNIT) as u32;
        assert_eq!(d.admit(Op::Read, u * UNIT, len), Status::Ok);
        let _ = d.read(t, u * UNIT, len);
    }
    zns(d).stats().unwritten_reads - before
}

/// The greedy collection's write amplification under uniform random
/// single-unit overwrites of the whole area, in the large-segment limit:
/// a unit survives until its segment is collected, after the log wrote
/// its circulating space P = (conventional + spare - 1) segments (one is
/// always kept erased) of which the host wrote (1 - u) P, each rewriting a
/// given unit with probability 1 / U, so the victim's valid fraction
/// solves u = exp(-(1 - u) P / U) and WAF = 1 / (1 - u) (the FIFO fixed
/// point of Desnoyers, "Analytic modeling of SSD write performance",
/// SYSTOR 2012; under uniform traffic all segments age alike, and greedy
/// picks about the oldest, as Bux and Iliadis find for large blocks).
fn greedy_waf(spare: u64) -> f64 {
    let ratio = (CONV + spare - 1) as f64 / CONV as f64;
    let mut u = 0.5;
    for _ in 0..10_000 {
        u = (-(1.0 - u) * ratio).exp();
    }
    1.0 / (1.0 - u)
}

/// Random overwrites, 30 times the area, after a sequential fill: every
/// write succeeds, the log's books agree throughout (each mapped unit's
/// position names it back, segment counts match), every unit reads from
/// where the map put it (none lost), and once steady (the last 20 times
/// the area) the write amplification is at least 1 and within 8 % of the
/// closed form at 2, 4 and 8 spare segments. The tolerance: the closed
/// form is a large-segment limit; in a 256-unit segment the units at its
/// start were exposed to rewrites longer than those at its end, and the
/// survival exp(-x) is convex, so the finite log's victims hold a little
/// more (measured +1.8 to +3 %); greedy picking the fewest among 17 to 23
/// segments pulls the other way. The run ends in bounded device time: no
/// later than if every NAND operation it booked ran one after another.
#[test]
fn random_overwrites_lose_nothing_and_follow_the_greedy_closed_form() {
    for spare in [2u64, 4, 8] {
        let mut d = device(spare as u32);
        let mut t = 0;
        for u in (0..UNITS).step_by(16) {
            t = write(&mut d, t, u, 16);
        }
        let mut rng = RngStream::new(7 + spare, "conventional gc");
        let mut steady = *zns(&d).stats();
        for i in 0..30 * UNITS {
            t = write(&mut d, t + 10_000, rng.below(UNITS), 1);
            if i % 4096 == 0 {
                assert!(zns(&d).conventional_log_consistent(), "after {i} writes");
            }
            if i == 10 * UNITS {
                steady = *zns(&d).stats();
            }
        }
        assert!(zns(&d).conventional_log_consistent());
        let s = *zns(&d).stats();
        let host = s.conventional_write_units - steady.conventional_write_units;
        let moved = s.conventional_gc_units - steady.conventional_gc_units;
        let waf = (host + moved) as f64 / host as f64;
        let want = greedy_waf(spare);
        assert!(waf >= 1.0);
        assert!(
            (waf / want - 1.0).abs() < 0.08,
            "{spare} spare: WAF {waf:.3}, closed form {want:.3}"
        );
        // The erases are the victims': a segment is one block on every
        // plane, a multi-plane erase on each of the 4 dies.
        assert!(s.conventional_gc_segments > 0);
        assert_eq!(s.conventional_erases, s.conventional_gc_segments * 4);
        assert_eq!(unwritten_after_reading_all(&mut d, t), 0, "{spare} spare");
        let timing = zns(&d).nand().timing;
        let serial = s.rows_programmed * (timing.t_prog + 100_000)
            + s.blocks_erased * timing.t_erase
            + s.nand_reads * (timing.t_read + 100_000)
            + 31 * UNITS * 10_000;
        assert!(
            t <= serial,
            "{spare} spare: ended at {t} ns, bound {serial}"
        );
    }
}

/// Sequential overwrites of the whole area: each victim holds only units
/// written again since, so the collection reclaims segments and moves
/// nothing (write amplification exactly 1).
#[test]
fn sequential_overwrites_move_nothing() {
    let mut d = device(2);
    let mut t = 0;
    for _pass in 0..4 {
        for u in (0..UNITS).step_by(32) {
            t = write(&mut d, t, u, 32);
        }
    }
    let s = *zns(&d).stats();
    assert!(zns(&d).conventional_log_consistent());
    // 64 segments filled; the first 17 were erased ones (16 and a spare,
    // the other spare kept erased), each after needed a victim.
    assert_eq!(s.conventional_gc_segments, 4 * CONV - (CONV + 1), "{s:?}");
    assert_eq!(s.conventional_gc_units, 0, "{s:?}");
    assert_eq!(unwritten_after_reading_all(&mut d, t), 0);
}

/// Units unmapped by UNMAP are stale: after filling the area and unmapping
/// all of it, random overwrites of a quarter of it move almost nothing
/// (the quarter over 17 segments: the closed form gives 1.02, where the
/// whole area gives 8.7), and the unmapped units read as unwritten.
#[test]
fn unmapped_units_are_not_moved() {
    let mut d = device(2);
    let mut t = 0;
    for u in (0..UNITS).step_by(16) {
        t = write(&mut d, t, u, 16);
    }
    t += 1_000_000;
    assert_eq!(d.admit(Op::Trim, 0, (UNITS * UNIT) as u32), Status::Ok);
    t = d.trim(t, 0, (UNITS * UNIT) as u32).max(t);
    assert!(zns(&d).conventional_log_consistent());
    let before = *zns(&d).stats();
    let mut rng = RngStream::new(3, "conventional gc");
    for _ in 0..8 * UNITS {
        t = write(&mut d, t + 10_000, rng.below(UNITS / 4), 1);
    }
    assert!(zns(&d).conventional_log_consistent());
    let s = *zns(&d).stats();
    let host = s.conventional_write_units - before.conventional_write_units;
    let moved = s.conventional_gc_units - before.conventional_gc_units;
    assert!(s.conventional_gc_segments > before.conventional_gc_segments);
    assert!(
        ((host + moved) as f64 / host as f64) < 1.1,
        "{host} written, {moved} moved"
    );
    // The three quarters never written again are unmapped.
    let unwritten = unwritten_after_reading_all(&mut d, t);
    assert!(unwritten >= UNITS - UNITS / 4, "{unwritten}");
}

/// Conventional zones need two spare zones' worth of blocks: one kept
/// erased, one for stale data; fewer is refused by name.
#[test]
fn conventional_zones_need_two_spare_zones() {
    common::assert_set_refused(
        "[j]\nrw=read\nbs=4k\nsize=1m\n",
        "ufs40-zoned-like",
        "device.zns.conventional_spare_zones=1",
        "at least two spare zones' blocks",
    );
}
