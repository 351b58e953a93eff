//! The FTL's SLC cache (device/ftl/slc.rs) against closed forms: its size
//! (static plus a dynamic part that shrinks as the drive fills), the
//! program time of rows inside and past it, the read time of data in it
//! and after folding, idle folding that never delays the host, and
//! foreground folding when full.

use flashpath::device::ftl::slc::SlcWhenFull;
use flashpath::device::{FlashDevice, FlashParams, SlcParams};
use flashpath::sim::Ns;

const T_SLC: Ns = 20_000;
const T_TLC: Ns = 300_000;
const T_READ_SLC: Ns = 5_000;
const FOLD_IDLE: Ns = 1_000_000;

/// One die, one plane of 4 KiB pages: a row is one unit, so every write
/// of one unit programs one row. 64 blocks of 60 pages (20 rows in SLC
/// mode); static region 40 rows (2 blocks), dynamic up to 100 rows.
fn params(when_full: SlcWhenFull) -> FlashParams {
    let mut p = FlashParams::small(1, 1, 64, 60);
    p.prefilled = false;
    p.timing.t_prog = T_TLC;
    p.slc = Some(SlcParams {
        static_bytes: 40 * 4096,
        dynamic_bytes: 100 * 4096,
        bits_per_cell: 3,
        t_prog: T_SLC,
        t_read: T_READ_SLC,
        fold_idle: FOLD_IDLE,
        when_full,
    });
    p
}

/// The device with its whole map in the controller (one map page here), so
/// that the die does nothing but the rows and folds the tests count.
fn dev(when_full: SlcWhenFull) -> FlashDevice {
    let mut d = FlashDevice::new(&params(when_full), 1).unwrap();
    assert!(d.load_whole_map());
    d
}

/// One row program on an idle die and channel: command cycles, data in,
/// tPROG (device/nand.rs `program`).
fn row_ns(d: &FlashDevice, t_prog: Ns) -> Ns {
    d.nand().chan.cmd_ns + d.nand().xfer_ns(4096) + t_prog
}

/// One fold: SLC-mode sense and data out, data in and TLC program.
fn fold_ns(d: &FlashDevice) -> Ns {
    2 * d.nand().chan.cmd_ns + T_READ_SLC + 2 * d.nand().xfer_ns(4096) + T_TLC
}

#[test]
fn the_dynamic_region_shrinks_as_the_drive_fills() {
    let mut d = dev(SlcWhenFull::Bypass);
    let user = d.user_lpns();
    assert_eq!(user, 3072);
    // Empty: 3072 free units hold 1024 SLC rows, capped at 100.
    assert_eq!(d.slc_capacity_rows(0), 40 + 100);
    // 3000 written: 72 free units hold 24 SLC rows.
    for l in 0..3000 {
        d.write(0, l, 1);
    }
    d.flush(0);
    assert_eq!(d.slc_capacity_rows(0), 40 + 24);
    // Full: the static region alone.
    for l in 3000..user {
        d.write(0, l, 1);
    }
    assert_eq!(d.slc_capacity_rows(0), 40);
    // A trim frees space again: 600 units, 200 rows, capped at 100.
    d.trim(0, 0, 600);
    assert_eq!(d.slc_capacity_rows(0), 40 + 100);
    d.audit().unwrap();
}

#[test]
fn rows_inside_the_cache_program_at_slc_speed_and_past_it_at_tlc_speed() {
    let mut d = dev(SlcWhenFull::Bypass);
    let cap = u64::from(d.slc_capacity_rows(0));
    assert_eq!(cap, 140);
    let n = cap + 30;
    for l in 0..n {
        d.write(0, l, 1);
    }
    let busy = d.nand().die_busy_until(0);
    let want = cap * row_ns(&d, T_SLC) + 30 * row_ns(&d, T_TLC);
    assert_eq!(busy, want, "{cap} SLC rows then 30 TLC rows");
    let s = d.slc_stats().unwrap();
    assert_eq!((s.slc_rows, s.direct_rows), (cap, 30));
    assert_eq!(d.slc_rows(0) as u64, cap);
    // Without the cache every row is TLC.
    let mut p = params(SlcWhenFull::Bypass);
    p.slc = None;
    let mut plain = FlashDevice::new(&p, 1).unwrap();
    assert!(plain.load_whole_map());
    for l in 0..n {
        plain.write(0, l, 1);
    }
    assert_eq!(plain.nand().die_busy_until(0), n * row_ns(&plain, T_TLC));
    assert!(plain.slc_stats().is_none());
}

#[test]
fn idle_folding_fills_the_gap_and_never_delays_the_host() {
    let mut d = dev(SlcWhenFull::Bypass);
    for l in 0..50 {
        d.write(0, l, 1);
    }
    let written = d.nand().die_busy_until(0);
    assert_eq!(written, 50 * row_ns(&d, T_SLC));
    // The next command comes 10.5 folds after the drive went idle (the
    // last command at 0 plus fold_idle, the die being free by then).
    let start = FOLD_IDLE.max(written);
    let now = start + 10 * fold_ns(&d) + fold_ns(&d) / 2;
    let done = d.flush(now);
    assert_eq!(done, now, "nothing buffered: the flush is immediate");
    let s = d.slc_stats().unwrap();
    assert_eq!(s.folded_idle_rows, 10, "10 whole folds fit in the gap");
    assert_eq!(d.slc_rows(0), 40);
    assert_eq!(d.nand().die_busy_until(0), start + 10 * fold_ns(&d));
    assert!(d.nand().die_busy_until(0) <= now, "the host never waits");
    // A gap shorter than fold_idle folds nothing.
    d.flush(now + FOLD_IDLE / 2);
    assert_eq!(d.slc_stats().unwrap().folded_idle_rows, 10);
    // A long one folds the rest; the data reads back intact.
    let later = now + FOLD_IDLE / 2 + FOLD_IDLE + 100 * fold_ns(&d);
    d.read(later, 0, 50);
    assert_eq!(d.slc_rows(0), 0);
    assert_eq!(d.slc_stats().unwrap().folded_idle_rows, 50);
    d.audit().unwrap();
}

/// One read of a unit on an idle die and channel: command cycles, the
/// sense, data out (device/nand.rs `read`).
fn read_ns(d: &FlashDevice, t_read: Ns) -> Ns {
    d.nand().chan.cmd_ns + t_read + d.nand().xfer_ns(4096)
}

#[test]
fn data_in_the_cache_reads_at_slc_speed_and_after_folding_at_tlc_speed() {
    let t_tlc_read = params(SlcWhenFull::Bypass).timing.t_read;
    assert!(T_READ_SLC < t_tlc_read);
    let mut d = dev(SlcWhenFull::Bypass);
    for l in 0..3 {
        d.write(0, l, 1);
    }
    let t0 = d.flush(0);
    // Right after the write, inside the fold delay: an SLC-mode read.
    assert_eq!(d.read(t0, 1, 1), t0 + read_ns(&d, T_READ_SLC));
    assert_eq!(d.slc_rows(0), 3);
    // After an idle gap long enough to fold all three rows, the same
    // data is read from TLC.
    let idle = FOLD_IDLE + 10 * fold_ns(&d) + t0;
    d.flush(idle);
    assert_eq!(d.slc_rows(0), 0);
    let t1 = d.nand().die_busy_until(0).max(idle);
    assert_eq!(d.read(t1, 1, 1), t1 + read_ns(&d, t_tlc_read));

    // Past the cache (bypass), rows are TLC from the start.
    let mut full = dev(SlcWhenFull::Bypass);
    let cap = u64::from(full.slc_capacity_rows(0));
    for l in 0..cap + 1 {
        full.write(0, l, 1);
    }
    let t2 = full.flush(0);
    assert_eq!(full.slc_stats().unwrap().direct_rows, 1);
    assert_eq!(full.read(t2, cap, 1), t2 + read_ns(&full, t_tlc_read));
    // The first rows are still in SLC mode.
    let t3 = full.nand().die_busy_until(0);
    assert_eq!(full.read(t3, 0, 1), t3 + read_ns(&full, T_READ_SLC));
    full.audit().unwrap();
}

#[test]
fn a_full_cache_folds_in_the_foreground_when_so_configured() {
    let mut d = dev(SlcWhenFull::Fold);
    let cap = u64::from(d.slc_capacity_rows(0));
    for l in 0..cap + 10 {
        d.write(0, l, 1);
    }
    let s = d.slc_stats().unwrap();
    assert_eq!(
        (s.slc_rows, s.direct_rows, s.folded_foreground_rows),
        (cap + 10, 0, 10)
    );
    assert_eq!(d.slc_rows(0) as u64, cap);
    assert_eq!(
        d.nand().die_busy_until(0),
        (cap + 10) * row_ns(&d, T_SLC) + 10 * fold_ns(&d),
        "each row past the cache costs a fold before its SLC program"
    );
}

#[test]
fn a_static_region_larger_than_the_spare_is_refused() {
    let mut p = params(SlcWhenFull::Bypass);
    // 400 rows = 20 SLC blocks of the die's 64: no room for the data.
    p.slc.as_mut().unwrap().static_bytes = 400 * 4096;
    let e = FlashDevice::new(&p, 1).err().expect("refused");
    assert!(e.message.contains("static SLC region"), "{}", e.message);
}
