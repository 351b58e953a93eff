//! The zoned namespace behind the NVMe front end (`device/zns.rs`,
//! profile `nvme-zn540-like`): the invariants issue 29 names, checked on
//! random command sequences and on closed forms, and the way a broken
//! rule reaches fio.
//!
//! The small device: the profile's NAND (16 dies, rows of 2 x 16 KiB) with
//! zones of 64 MiB holding 48 MiB (1536 rows, 96 a die: one block of each
//! die), and open/active limits of 3 and 4, so that the limits are reached
//! in a few commands.

mod common;

use flashpath::device::nvme_flash::NvmeFlashSsd;
use flashpath::device::zns::{Zns, ZoneState};
use flashpath::device::{BlockBackend, Command, Op, Status, ZoneAction, ZoneStatus};
use flashpath::report::{render, OutputFormat};
use flashpath::run::run_text;
use proptest::prelude::*;
use std::path::Path;

const MIB: u64 = 1 << 20;
const ZONE: u64 = 64 * MIB;
const CAP: u64 = 48 * MIB;
const ZONES: u32 = 8;

fn small(max_open: u32, max_active: u32) -> NvmeFlashSsd {
    let sets = [
        "device.zns.zone_size=64MiB".to_string(),
        "device.zns.zone_capacity=48MiB".to_string(),
        format!("device.zns.zones={ZONES}"),
        format!("device.zns.max_open={max_open}"),
        format!("device.zns.max_active={max_active}"),
    ];
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    NvmeFlashSsd::from_profile(&common::profile("nvme-zn540-like", &sets), 0).unwrap()
}

fn zns(d: &NvmeFlashSsd) -> &Zns {
    d.layer_as::<Zns>().expect("the zoned layer")
}

fn cmd(op: Op, offset: u64, len: u32) -> Command {
    Command::of(op, offset, len)
}

/// A command of a random sequence: which zone, and what.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A write at the zone's write pointer plus `skew` 4 KiB units.
    Write {
        zone: u32,
        units: u32,
        skew: i8,
    },
    Append {
        zone: u32,
        units: u32,
    },
    Action {
        zone: u32,
        action: u8,
    },
    Read {
        zone: u32,
        units: u32,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let zone = 0..ZONES;
    prop_oneof![
        4 => (zone.clone(), 1..64u32, prop_oneof![4 => Just(0i8), 1 => -3..4i8])
            .prop_map(|(zone, units, skew)| Step::Write { zone, units, skew }),
        2 => (zone.clone(), 1..48u32).prop_map(|(zone, units)| Step::Append { zone, units }),
        1 => (zone.clone(), 0..4u8).prop_map(|(zone, action)| Step::Action { zone, action }),
        1 => (zone, 1..32u32).prop_map(|(zone, units)| Step::Read { zone, units }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Over any command sequence: a write succeeds exactly when it starts
    /// at its zone's write pointer in a writable state within the
    /// capacity (else the status says which rule it broke), the write
    /// pointer moves by what was written and by nothing else, an append
    /// returns the write pointer it found, the open and active counts
    /// match the zone report and never pass their limits, and a reset
    /// gives the whole capacity back.
    #[test]
    fn zone_rules_hold_over_any_command_sequence(
        steps in prop::collection::vec(step(), 1..120),
        max_open in 1..4u32,
        extra_active in 0..3u32,
    ) {
        let max_active = max_open + extra_active;
        let mut d = small(max_open, max_active);
        let mut t = 0;
        for s in steps {
            t += 1_000;
            match s {
                Step::Write { zone, units, skew } => {
                    let before = zns(&d).report(zone);
                    let at = (before.wp as i64 + i64::from(skew) * 4096)
                        .clamp(before.start as i64, (before.start + ZONE - 4096) as i64) as u64;
                    let len = units * 4096;
                    let c = d.submit(t, &cmd(Op::Write, at, len));
                    let after = zns(&d).report(zone);
                    let expect = if before.state == ZoneState::Full {
                        Some(ZoneStatus::Full)
                    } else if at != before.wp {
                        Some(ZoneStatus::InvalidWrite)
                    } else if at + u64::from(len) > before.start + CAP {
                        Some(ZoneStatus::BoundaryError)
                    } else {
                        None
                    };
                    match expect {
                        Some(z) => {
                            prop_assert_eq!(c.status, Status::Zone(z));
                            prop_assert_eq!(after, before, "a failed write changes nothing");
                        }
                        None if c.status == Status::Ok => {
                            prop_assert_eq!(after.wp, before.wp + u64::from(len));
                        }
                        None => {
                            // Only the resource rules may refuse a write at
                            // the write pointer.
                            prop_assert!(matches!(
                                c.status,
                                Status::Zone(ZoneStatus::TooManyActive | ZoneStatus::TooManyOpen)
                            ), "{:?}", c.status);
                            prop_assert_eq!(after.wp, before.wp);
                        }
                    }
                }
                Step::Append { zone, units } => {
                    let before = zns(&d).report(zone);
                    let c = d.submit(t, &cmd(Op::ZoneAppend, before.start, units * 4096));
                    let after = zns(&d).report(zone);
                    if c.status == Status::Ok {
                        prop_assert_eq!(c.result, Some(before.wp), "the LBA the data landed at");
                        prop_assert_eq!(after.wp, before.wp + u64::from(units) * 4096);
                    } else {
                        prop_assert_eq!(c.result, None);
                        prop_assert_eq!(after.wp, before.wp);
                    }
                }
                Step::Action { zone, action } => {
                    let a = [ZoneAction::Open, ZoneAction::Close, ZoneAction::Finish, ZoneAction::Reset]
                        [action as usize];
                    let start = u64::from(zone) * ZONE;
                    let c = d.submit(t, &cmd(Op::ZoneMgmt(a), start, 0));
                    let after = zns(&d).report(zone);
                    if c.status == Status::Ok {
                        match a {
                            ZoneAction::Reset => {
                                prop_assert_eq!(after.state, ZoneState::Empty);
                                prop_assert_eq!(after.wp, start);
                            }
                            ZoneAction::Finish => {
                                prop_assert_eq!(after.state, ZoneState::Full);
                                prop_assert_eq!(after.wp, start + CAP);
                            }
                            ZoneAction::Open => {
                                prop_assert_eq!(after.state, ZoneState::ExplicitlyOpened)
                            }
                            ZoneAction::Close => prop_assert!(matches!(
                                after.state,
                                ZoneState::Closed | ZoneState::Empty
                            )),
                        }
                    }
                }
                Step::Read { zone, units } => {
                    let start = u64::from(zone) * ZONE;
                    let c = d.submit(t, &cmd(Op::Read, start, units * 4096));
                    prop_assert_eq!(c.status, Status::Ok);
                }
            }
            let z = zns(&d);
            let states: Vec<ZoneState> = (0..ZONES).map(|i| z.report(i).state).collect();
            let open = states
                .iter()
                .filter(|s| matches!(s, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened))
                .count() as u32;
            let active = open + states.iter().filter(|s| **s == ZoneState::Closed).count() as u32;
            prop_assert_eq!((z.open_zones(), z.active_zones()), (open, active));
            prop_assert!(open <= max_open, "{} open > {}", open, max_open);
            prop_assert!(active <= max_active, "{} active > {}", active, max_active);
            for i in 0..ZONES {
                let r = z.report(i);
                prop_assert!(r.wp >= r.start && r.wp <= r.start + CAP);
                if r.wp == r.start + CAP {
                    prop_assert_eq!(r.state, ZoneState::Full);
                }
            }
        }
    }
}

#[test]
fn a_reset_gives_back_the_whole_capacity_and_costs_the_erases_of_what_was_written() {
    let mut d = small(14, 14);
    let mut t = 0;
    for round in 0..2 {
        let mut off = 0;
        while off < CAP {
            let c = d.submit(t, &cmd(Op::Write, off, 128 * 1024));
            assert_eq!(c.status, Status::Ok, "round {round} offset {off}");
            t = c.at;
            off += 128 * 1024;
        }
        assert_eq!(zns(&d).report(0).state, ZoneState::Full);
        let c = d.submit(t, &cmd(Op::Write, off, 4096));
        assert_eq!(c.status, Status::Zone(ZoneStatus::Full));
        let erases_before = zns(&d).stats().blocks_erased;
        let r = d.submit(t, &cmd(Op::ZoneMgmt(ZoneAction::Reset), 0, 0));
        assert_eq!(r.status, Status::Ok);
        // 48 MiB over 16 dies is 96 rows a die, one block of each die.
        assert_eq!(zns(&d).stats().blocks_erased - erases_before, 16);
        let nand = zns(&d).nand();
        assert!(
            r.at - t >= nand.timing.t_erase,
            "a reset waits for its erases: {} ns",
            r.at - t
        );
        assert_eq!(zns(&d).report(0).wp, 0);
        assert_eq!(zns(&d).report(0).state, ZoneState::Empty);
        t = r.at;
    }
}

#[test]
fn finish_pads_the_rest_of_the_zone_with_programs() {
    let mut d = small(14, 14);
    let c = d.submit(0, &cmd(Op::Write, 0, 64 * 1024));
    assert_eq!(c.status, Status::Ok);
    let rows_before = zns(&d).stats().rows_programmed;
    let f = d.submit(c.at, &cmd(Op::ZoneMgmt(ZoneAction::Finish), 0, 0));
    assert_eq!(f.status, Status::Ok);
    let s = zns(&d).stats();
    assert_eq!(s.units_padded, (CAP - 64 * 1024) / 4096);
    // 1536 rows in all, two (64 KiB) programmed by the write.
    assert_eq!(s.rows_programmed - rows_before, 1536 - 2);
    // 1534 rows over 16 dies: 96 program times on the busiest die at least.
    let t_prog = zns(&d).nand().timing.t_prog;
    assert!(f.at - c.at >= 95 * t_prog, "{} ns", f.at - c.at);
    assert_eq!(zns(&d).report(0).state, ZoneState::Full);
    assert_eq!(zns(&d).open_zones(), 0);
}

#[test]
fn the_open_limit_closes_the_oldest_implicitly_opened_zone_and_explicit_opens_fail() {
    let mut d = small(2, 4);
    for z in 0..3u64 {
        let c = d.submit(0, &cmd(Op::Write, z * ZONE, 4096));
        assert_eq!(c.status, Status::Ok);
    }
    // Zone 0, opened first, was closed implicitly for zone 2.
    assert_eq!(zns(&d).report(0).state, ZoneState::Closed);
    assert_eq!(zns(&d).report(2).state, ZoneState::ImplicitlyOpened);
    assert_eq!(zns(&d).stats().implicit_closes, 1);
    // Two explicit opens take every open resource; then a write to a
    // closed zone has no implicitly opened zone to close.
    for z in [1u64, 2] {
        let c = d.submit(0, &cmd(Op::ZoneMgmt(ZoneAction::Open), z * ZONE, 0));
        assert_eq!(c.status, Status::Ok);
    }
    let c = d.submit(0, &cmd(Op::Write, 4096, 4096));
    assert_eq!(c.status, Status::Zone(ZoneStatus::TooManyOpen));
    // Zone 3 is a fourth active zone (0 closed, 1 and 2 open): allowed;
    // zone 4 would be the fifth.
    d.submit(0, &cmd(Op::ZoneMgmt(ZoneAction::Close), ZONE, 0));
    let c = d.submit(0, &cmd(Op::Write, 3 * ZONE, 4096));
    assert_eq!(c.status, Status::Ok);
    let c = d.submit(0, &cmd(Op::Write, 4 * ZONE, 4096));
    assert_eq!(c.status, Status::Zone(ZoneStatus::TooManyActive));
}

#[test]
fn an_append_past_zasl_or_off_a_zone_start_is_an_invalid_field() {
    let mut d = small(14, 14);
    let zasl = zns(&d).params().zasl as u32;
    let c = d.submit(0, &cmd(Op::ZoneAppend, 0, zasl + 4096));
    assert_eq!(c.status, Status::InvalidField);
    let c = d.submit(0, &cmd(Op::ZoneAppend, 4096, 4096));
    assert_eq!(c.status, Status::InvalidField);
    let c = d.submit(0, &cmd(Op::ZoneAppend, ZONE, zasl));
    assert_eq!((c.status, c.result), (Status::Ok, Some(ZONE)));
    let c = d.submit(0, &cmd(Op::ZoneAppend, ZONE, 4096));
    assert_eq!(c.result, Some(ZONE + u64::from(zasl)));
}

#[test]
fn data_written_is_read_from_nand_and_past_the_write_pointer_is_not() {
    let mut d = small(14, 14);
    let c = d.submit(0, &cmd(Op::Write, 0, 1 << 20));
    let t = c.at + 10_000_000;
    let reads = zns(&d).stats().nand_reads;
    let r = d.submit(t, &cmd(Op::Read, 0, 4096));
    assert_eq!(zns(&d).stats().nand_reads, reads + 1);
    let t_read = zns(&d).nand().timing.t_read;
    assert!(r.at - t >= t_read, "a programmed unit costs a tR");
    let r = d.submit(t, &cmd(Op::Read, 2 << 20, 4096));
    assert_eq!(zns(&d).stats().nand_reads, reads + 1, "no NAND past the wp");
    assert!(r.at - t < t_read);
}

#[test]
fn the_conventional_ftl_still_refuses_zone_commands() {
    let mut d = NvmeFlashSsd::from_profile(&common::profile("nvme-d7p5510-3t84", &[]), 0).unwrap();
    for op in [Op::ZoneAppend, Op::ZoneMgmt(ZoneAction::Reset)] {
        assert_eq!(d.submit(0, &cmd(op, 0, 4096)).status, Status::Unsupported);
    }
}

fn run(job: &str) -> flashpath::run::RunOutput {
    run_text(job, "job.fio", Path::new("."), "nvme-zn540-like", &[], 1).expect("the job runs")
}

/// A random write on a zoned namespace lands off a write pointer: the
/// device answers Zone Invalid Write, which nvme_error_status makes
/// BLK_STS_IOERR, and fio stops the job with EIO as for any I/O error
/// (the texts of tests/outcomes.rs, from real fio 3.33).
#[test]
fn a_write_off_the_write_pointer_reaches_fio_as_eio() {
    let out = run("[j]\nrw=randwrite\nbs=4k\nsize=1m\nioengine=psync\ndirect=1\nrandseed=7\n");
    assert_eq!(out.failed_jobs(), 1);
    assert_eq!(out.notes.len(), 1, "{:?}", out.notes);
    assert!(
        out.notes[0]
            .starts_with("fio: io_u error on file j.0.0: Input/output error: write offset="),
        "{:?}",
        out.notes
    );
    let normal = render(&out.result, OutputFormat::Normal);
    assert!(
        normal.contains(
            "j: (groupid=0, jobs=1): err= 5 (file:io_u.c:1876, func=io_u error, \
             error=Input/output error)"
        ),
        "{normal}"
    );
}

/// A sequential write at each zone's start fits, one zone more than the
/// active limit does not: the device answers Too Many Active Zones,
/// nvme_error_status makes it BLK_STS_ZONE_ACTIVE_RESOURCE and
/// blk_status_to_errno EOVERFLOW (block/blk-core.c's blk_errors), which
/// fio prints with glibc's strerror.
#[test]
fn one_zone_past_the_active_limit_fails_with_eoverflow() {
    let job = "[global]\nrw=write\nbs=4k\nsize=4k\nioengine=psync\ndirect=1\n\
               filename=/dev/nvme0n1\noffset_increment=2g\nnumjobs=15\n[j]\n";
    let out = run(job);
    assert_eq!(out.failed_jobs(), 1, "14 active zones, 15 jobs");
    let normal = render(&out.result, OutputFormat::Normal);
    assert!(
        normal.contains("err=75 (file:io_u.c:1876, func=io_u error, error=Value too large for defined data type)"),
        "{normal}"
    );
}

fn json(out: &flashpath::run::RunOutput) -> serde_json::Value {
    serde_json::from_str(&render(&out.result, OutputFormat::Json)).expect("valid JSON")
}

fn write_iops(j: &serde_json::Value) -> f64 {
    j["jobs"][0]["write"]["iops"].as_f64().unwrap()
}

/// The host sees the zoned limits nvme_update_zone_info sets, and zone
/// write plugging keeps one write per zone in flight: a sequential write
/// at iodepth 8 in one zone is no faster than at iodepth 1 (every write
/// but the first of a batch waits in the plug), and nothing fails.
#[test]
fn zone_write_plugging_keeps_one_write_in_flight_per_zone() {
    let job = |qd: u32| {
        format!(
            "[j]\nrw=write\nbs=16k\nsize=64m\nioengine=libaio\ndirect=1\niodepth={qd}\n\
             filename=/dev/nvme0n1\n"
        )
    };
    let qd1 = json(&run(&job(1)));
    let qd8 = json(&run(&job(8)));
    for j in [&qd1, &qd8] {
        assert_eq!(j["jobs"][0]["error"], 0);
        let z = &j["flashpath"]["block"]["zoned"];
        assert_eq!(z["zoned"], "host-managed");
        assert_eq!(z["nr_zones"], 904);
        assert_eq!(z["chunk_sectors"], (2u64 << 30) >> 9);
        assert_eq!(
            (z["max_open_zones"].clone(), z["max_active_zones"].clone()),
            (14.into(), 14.into())
        );
        assert_eq!(z["zone_append_max_bytes"], 128 * 1024);
    }
    assert_eq!(qd1["flashpath"]["block"]["zoned"]["plugged_writes"], 0);
    let plugged = qd8["flashpath"]["block"]["zoned"]["plugged_writes"]
        .as_u64()
        .unwrap();
    assert!(plugged > 4000 - 8, "{plugged} of 4096 writes waited");
    let (a, b) = (write_iops(&qd1), write_iops(&qd8));
    assert!(
        b < a * 1.15,
        "QD8 {b} IOPS vs QD1 {a}: the plug serialises a zone's writes"
    );
}

/// Writes to different zones are not plugged by each other: four jobs in
/// four zones at iodepth 1 write together, so the run is as long as one
/// job's alone, and nothing waits in a plug.
#[test]
fn writes_to_different_zones_go_on_in_parallel() {
    let job = "[global]\nrw=write\nbs=16k\nsize=32m\nioengine=libaio\ndirect=1\niodepth=1\n\
               filename=/dev/nvme0n1\noffset_increment=2g\n[j]\nnumjobs=4\n";
    let j = json(&run(job));
    assert_eq!(j["flashpath"]["block"]["zoned"]["plugged_writes"], 0);
    for k in 0..4 {
        assert_eq!(j["jobs"][k]["error"], 0);
    }
}

/// A zoned profile that cannot be built is one clear message naming where
/// the value came from, the key and the rule, not a panic.
#[test]
fn an_impossible_zone_layout_is_one_clear_message() {
    let job = "[j]\nrw=read\nbs=4k\nsize=64k\nioengine=psync\n";
    for (set, words) in [
        ("device.zns.zone_size=3GiB", "not a power of two"),
        ("device.zns.zone_capacity=3GiB", "at most the zone size"),
        ("device.zns.zones=2000", "blocks on each die"),
        ("device.zns.max_open=20", "an open zone is active"),
    ] {
        common::assert_set_refused(job, "nvme-zn540-like", set, words);
    }
}

/// One zone's sequential write rate follows from the mechanism: at most
/// `buffer_rows` rows per tPROG, and at most one row per die per tPROG.
/// With 32 rows (the profile) every die of the 16 is busy: 16 x 32 KiB /
/// 600 us = 874 MB/s; with 2 rows, 2 x 32 KiB / 600 us = 109 MB/s. The
/// link and front end take a little of each (within 10% below).
#[test]
fn one_zones_write_rate_is_its_buffer_or_its_dies_over_tprog() {
    let job = "[j]\nrw=write\nbs=128k\nsize=256m\nioengine=libaio\ndirect=1\niodepth=4\n\
               filename=/dev/nvme0n1\n";
    let row = 2.0 * 16384.0;
    let t_prog = 600e-6;
    for (rows, want) in [(32u32, 16.0 * row / t_prog), (2, 2.0 * row / t_prog)] {
        let o = vec![format!("device.zns.buffer_rows={rows}")];
        let out = run_text(job, "job.fio", Path::new("."), "nvme-zn540-like", &o, 1).unwrap();
        let bw = json(&out)["jobs"][0]["write"]["bw_bytes"].as_f64().unwrap();
        assert!(
            bw <= want * 1.001 && bw > want * 0.9,
            "{rows} rows: {bw} B/s vs {want} B/s"
        );
    }
}

/// The zoned layer's own bytes (`zns.model_bytes`, summed into the run's
/// `model_bytes.device`): its structures are sized by the zones when the
/// namespace is made, so they grow with the zones, by the same bytes for
/// each (a zone's state and its `buffer_rows` rows' free times, at least
/// 8 bytes a row), and a run's I/O (writes filling zones, appends, resets,
/// finishes) leaves them as they were.
#[test]
fn model_bytes_grow_with_the_zones_not_with_the_io() {
    let with_zones = |zones: u32| {
        let sets = [
            "device.zns.zone_size=64MiB".to_string(),
            "device.zns.zone_capacity=48MiB".to_string(),
            format!("device.zns.zones={zones}"),
        ];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        NvmeFlashSsd::from_profile(&common::profile("nvme-zn540-like", &sets), 0).unwrap()
    };
    let four = zns(&with_zones(4)).model_bytes();
    let mut d = with_zones(8);
    let eight = zns(&d).model_bytes();
    assert_eq!(eight.conventional_map, 0);
    assert_eq!(eight.total(), 2 * four.total(), "{four:?} {eight:?}");
    let rows = u64::from(zns(&d).params().buffer_rows);
    assert!(eight.write_buffer as u64 >= 8 * rows * 8, "{eight:?}");
    assert!(
        eight.zones >= 8 * 9,
        "a write pointer and a state a zone: {eight:?}"
    );
    // Every zone written, some full, finished, reset and written again.
    let mut t = 0;
    for round in 0..2 {
        for z in 0..8u64 {
            let len = if z % 2 == 0 { CAP } else { 4 * MIB };
            let mut off = 0;
            while off < len {
                let c = d.submit(t, &cmd(Op::Write, z * ZONE + off, 128 * 1024));
                assert_eq!(c.status, Status::Ok, "round {round} zone {z}");
                t = c.at;
                off += 128 * 1024;
            }
            let a = d.submit(t, &cmd(Op::ZoneAppend, z * ZONE, 4096));
            if z % 2 == 1 {
                assert_eq!(a.status, Status::Ok);
                let f = d.submit(a.at, &cmd(Op::ZoneMgmt(ZoneAction::Finish), z * ZONE, 0));
                assert_eq!(f.status, Status::Ok);
                t = f.at;
            }
        }
        assert_eq!(zns(&d).model_bytes(), eight, "after round {round}");
        for z in 0..8u64 {
            let r = d.submit(t, &cmd(Op::ZoneMgmt(ZoneAction::Reset), z * ZONE, 0));
            assert_eq!(r.status, Status::Ok);
            t = r.at;
        }
    }
    assert!(zns(&d).stats().resets >= 8);
    assert_eq!(zns(&d).model_bytes(), eight);
}

/// The run's JSON shows the zoned layer's bytes in its section and counts
/// them in the top-level `model_bytes.device` (a zoned namespace has no
/// page FTL, so they are the device's whole count); a ZBC LU's (zoned UFS)
/// include its conventional zones' log: 4 bytes a 4 KiB unit of their map
/// and of the log's positions, and 8 a segment.
#[test]
fn the_json_counts_the_zone_state_in_model_bytes() {
    for (profile, section) in [("nvme-zn540-like", "zns"), ("ufs40-zoned-like", "zbc")] {
        let out = run_text(
            "[j]\nrw=write\nbs=128k\nsize=4m\nioengine=psync\ndirect=1\n",
            "job.fio",
            Path::new("."),
            profile,
            &[],
            1,
        )
        .expect("the job runs");
        let j = json(&out);
        // The NVMe driver's counters hold the device's; the UFS driver's
        // are the device's.
        let driver = &j["flashpath"]["driver"];
        let dev = if driver["device"].is_object() {
            &driver["device"]
        } else {
            driver
        };
        let mb = &dev[section]["model_bytes"];
        let total = mb["total"].as_u64().unwrap();
        let parts: u64 = ["zones", "write_buffer", "conventional_map"]
            .iter()
            .map(|k| mb[k].as_u64().unwrap())
            .sum();
        assert_eq!(total, parts, "{profile}: {mb}");
        assert!(dev.get("ftl").is_none(), "{profile}: no page FTL");
        assert_eq!(j["flashpath"]["model_bytes"]["device"], total, "{profile}");
        let zones = dev[section]["zones"].as_u64().unwrap();
        assert!(
            mb["zones"].as_u64().unwrap() >= zones * 9,
            "{profile}: {mb}"
        );
        let conventional = dev[section]["conventional_zones"].as_u64().unwrap_or(0);
        assert_eq!(section == "zbc", conventional > 0, "{profile}");
        // The log's segments: the conventional zones' and the spare ones'.
        let segments = if conventional > 0 {
            conventional + dev[section]["conventional_spare_zones"].as_u64().unwrap()
        } else {
            0
        };
        let zone_units = 64 * MIB / 4096;
        // 4 bytes a conventional unit (the map), a log position (the
        // reverse map) and a segment (its valid count, its place in the
        // erased list).
        assert_eq!(
            mb["conventional_map"].as_u64().unwrap(),
            (conventional * zone_units + segments * zone_units + 2 * segments) * 4,
            "{profile}: {mb}"
        );
    }
}
