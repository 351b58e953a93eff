//! Zoned UFS (profile `ufs40-zoned-like`): a host-managed SCSI ZBC
//! logical unit behind the UFS front end, the zoned layer of
//! `device/zns.rs` with ZBC's rules. The rules are checked on the device
//! (the order scsi_debug.c's check_zbc_access_params gives them), and the
//! way each broken rule reaches fio through the SCSI midlayer's sense
//! mapping (scsi_lib.c scsi_io_completion_action) and blk_errors.

mod common;

use flashpath::device::ufs::UfsDevice;
use flashpath::device::zns::{Zns, ZoneState};
use flashpath::device::{Op, Status, ZoneAction, ZoneStatus};
use flashpath::report::{render, OutputFormat};
use flashpath::run::run_text;
use proptest::prelude::*;
use std::path::Path;

const MIB: u64 = 1 << 20;
const ZONE: u64 = 64 * MIB;
const CONV: u64 = 32;

fn device(sets: &[&str]) -> UfsDevice {
    UfsDevice::from_profile(&common::profile("ufs40-zoned-like", sets), 0, None).unwrap()
}

/// A write as the firmware takes it: the rules first, then the data.
fn write(d: &mut UfsDevice, t: u64, offset: u64, len: u32) -> Status {
    match d.admit(Op::Write, offset, len) {
        Status::Ok => d.write(t, offset, len).status,
        s => s,
    }
}

fn zone(d: &UfsDevice, z: u64) -> flashpath::device::zns::ZoneDesc {
    d.layer_as::<Zns>().unwrap().report(z as u32)
}

#[test]
fn the_profile_has_conventional_zones_first_and_sequential_zones_after() {
    let d = device(&[]);
    for z in 0..CONV {
        assert_eq!(zone(&d, z).state, ZoneState::NotWritePointer);
    }
    assert_eq!(zone(&d, CONV).state, ZoneState::Empty);
    assert_eq!(d.capacity(), 7616 * ZONE);
}

/// The ZBC rules, each broken once, in scsi_debug's order: a write that
/// crosses its zone's end is a boundary violation even when it is also
/// off the write pointer; a full zone's write is refused as such before
/// its write pointer is looked at; a write off the write pointer is
/// UNALIGNED WRITE. A refused write changes no write pointer.
#[test]
fn a_sequential_zone_takes_writes_only_at_its_write_pointer() {
    let mut d = device(&[]);
    let z0 = CONV * ZONE;
    assert_eq!(write(&mut d, 0, z0, 4096), Status::Ok);
    assert_eq!(zone(&d, CONV).wp, z0 + 4096);
    assert_eq!(zone(&d, CONV).state, ZoneState::ImplicitlyOpened);
    assert_eq!(
        write(&mut d, 0, z0 + 8192, 4096),
        Status::Zone(ZoneStatus::InvalidWrite)
    );
    assert_eq!(
        write(&mut d, 0, z0 + ZONE - 4096, 8192),
        Status::Zone(ZoneStatus::BoundaryError),
        "off the write pointer and across the zone's end: the boundary first"
    );
    assert_eq!(zone(&d, CONV).wp, z0 + 4096);
    let f = d.zone_mgmt(0, ZoneAction::Finish, z0);
    assert_eq!(f.status, Status::Ok);
    assert_eq!(zone(&d, CONV).state, ZoneState::Full);
    assert_eq!(
        write(&mut d, f.at, z0 + ZONE - 4096, 4096),
        Status::Zone(ZoneStatus::Full)
    );
    let r = d.zone_mgmt(f.at, ZoneAction::Reset, z0);
    assert_eq!(r.status, Status::Ok);
    assert_eq!(zone(&d, CONV).wp, z0);
    assert_eq!(write(&mut d, r.at, z0, 4096), Status::Ok);
}

/// A write from the last conventional zone into the first sequential one
/// is a boundary violation, and zone actions on a conventional zone are
/// invalid fields.
#[test]
fn conventional_zones_end_where_the_sequential_ones_begin() {
    let mut d = device(&[]);
    let edge = CONV * ZONE;
    assert_eq!(
        write(&mut d, 0, edge - 4096, 8192),
        Status::Zone(ZoneStatus::BoundaryError)
    );
    assert_eq!(write(&mut d, 0, edge - 8192, 8192), Status::Ok);
    for a in [
        ZoneAction::Open,
        ZoneAction::Close,
        ZoneAction::Finish,
        ZoneAction::Reset,
    ] {
        assert_eq!(d.zone_mgmt(0, a, 0).status, Status::InvalidField);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Conventional zones take writes anywhere, in any order; the map
    /// finds every unit written there (from NAND, or from the buffer row
    /// still filling) and none that was not; nothing a conventional write
    /// does moves a sequential zone.
    #[test]
    fn conventional_zones_accept_random_writes(
        writes in prop::collection::vec((0..(CONV * ZONE / 4096 - 64), 1..64u32), 1..60),
    ) {
        let mut d = device(&[]);
        let mut t = 0;
        for &(unit, n) in &writes {
            prop_assert_eq!(write(&mut d, t, unit * 4096, n * 4096), Status::Ok);
            t += 1_000_000;
        }
        let done = d.flush(t);
        let found = |d: &UfsDevice| {
            let s = d.layer_as::<Zns>().unwrap().stats();
            (s.nand_reads + s.buffer_read_hits, s.unwritten_reads)
        };
        for &(unit, n) in &writes {
            let before = found(&d);
            d.read(done + 1, (unit + u64::from(n) - 1) * 4096, 4096);
            let after = found(&d);
            prop_assert_eq!((after.0 - before.0, after.1 - before.1), (1, 0));
        }
        // The last unit of the conventional zones is never written.
        let before = found(&d);
        d.read(done + 1, CONV * ZONE - 4096, 4096);
        prop_assert_eq!(found(&d), (before.0, before.1 + 1));
        let s = d.layer_as::<Zns>().unwrap().stats();
        let units: u64 = writes.iter().map(|&(_, n)| u64::from(n)).sum();
        prop_assert_eq!(s.conventional_write_units, units);
        prop_assert_eq!(zone(&d, CONV).wp, CONV * ZONE);
    }
}

/// The open limit: explicit opens take every open resource, then a write
/// to another zone has no implicitly opened zone to close and fails with
/// INSUFFICIENT ZONE RESOURCES (TooManyOpen here); with one implicitly
/// opened zone among them, the write closes it instead.
#[test]
fn the_open_limit_is_zbcs_only_zone_resource() {
    let mut d = device(&["device.zns.max_open=2"]);
    let z = |i: u64| (CONV + i) * ZONE;
    for i in 0..2 {
        assert_eq!(d.zone_mgmt(0, ZoneAction::Open, z(i)).status, Status::Ok);
    }
    assert_eq!(
        d.zone_mgmt(0, ZoneAction::Open, z(2)).status,
        Status::Zone(ZoneStatus::TooManyOpen)
    );
    assert_eq!(
        write(&mut d, 0, z(2), 4096),
        Status::Zone(ZoneStatus::TooManyOpen)
    );
    assert_eq!(d.zone_mgmt(0, ZoneAction::Close, z(1)).status, Status::Ok);
    assert_eq!(write(&mut d, 0, z(3), 4096), Status::Ok);
    assert_eq!(write(&mut d, 0, z(4), 4096), Status::Ok, "closes z(3)");
    assert_eq!(zone(&d, CONV + 3).state, ZoneState::Closed);
    // Many zones written, never more than two open, none active-limited.
    for i in 5..40 {
        assert_eq!(write(&mut d, 0, z(i), 4096), Status::Ok);
        assert!(d.layer_as::<Zns>().unwrap().open_zones() <= 2);
    }
}

fn run(job: &str) -> flashpath::run::RunOutput {
    run_text(job, "job.fio", Path::new("."), "ufs40-zoned-like", &[], 1).expect("the job runs")
}

fn normal(out: &flashpath::run::RunOutput) -> String {
    render(&out.result, OutputFormat::Normal)
}

fn json(out: &flashpath::run::RunOutput) -> serde_json::Value {
    serde_json::from_str(&render(&out.result, OutputFormat::Json)).expect("valid JSON")
}

/// A random write in the sequential zones lands off a write pointer: the
/// device answers ILLEGAL REQUEST / UNALIGNED WRITE COMMAND, the midlayer
/// makes it BLK_STS_IOERR, and fio stops the job with EIO (the texts of
/// tests/outcomes.rs, from real fio 3.33).
#[test]
fn a_write_off_the_write_pointer_reaches_fio_as_eio() {
    let out = run(
        "[j]\nrw=randwrite\nbs=4k\nsize=64m\noffset=2g\nioengine=psync\ndirect=1\nrandseed=7\n",
    );
    assert_eq!(out.failed_jobs(), 1);
    assert!(
        out.notes[0]
            .starts_with("fio: io_u error on file j.0.0: Input/output error: write offset="),
        "{:?}",
        out.notes
    );
    assert!(
        normal(&out)
            .contains("err= 5 (file:io_u.c:1876, func=io_u error, error=Input/output error)"),
        "{}",
        normal(&out)
    );
    let j = json(&out);
    assert_eq!(j["flashpath"]["driver"]["check_conditions"], 1);
}

/// The conventional zones take fio's random writes at any depth: nothing
/// fails and the zone write plugs hold none of them (blk_zone_plug_bio
/// leaves a conventional zone's writes alone).
#[test]
fn random_writes_in_the_conventional_zones_run_unplugged() {
    let out = run(
        "[j]\nrw=randwrite\nbs=4k\nsize=256m\nioengine=libaio\niodepth=8\ndirect=1\n\
         number_ios=2000\n",
    );
    assert_eq!(out.failed_jobs(), 0, "{:?}", out.notes);
    let j = json(&out);
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 2000);
    let z = &j["flashpath"]["block"]["zoned"];
    assert_eq!(z["zoned"], "host-managed");
    assert_eq!(z["plugged_writes"], 0);
    assert_eq!(z["max_active_zones"], 0);
    assert_eq!(z["max_open_zones"], 6);
    let zbc = &j["flashpath"]["driver"]["zbc"];
    assert_eq!(zbc["conventional_write_units"], 2000);
}

/// A sequential write fills a zone; one more write there finds it full:
/// ILLEGAL REQUEST / INVALID FIELD IN CDB, which the midlayer makes
/// BLK_STS_TARGET and blk_errors EREMOTEIO, "Remote I/O error" in fio.
#[test]
fn a_write_to_a_full_zone_reaches_fio_as_eremoteio() {
    let job = "[global]\nfilename=/dev/sda\nioengine=psync\ndirect=1\nrw=write\noffset=2g\n\
               [fill]\nbs=128k\nsize=64m\n[again]\nstonewall\nbs=4k\nsize=4k\n";
    let out = run(job);
    assert_eq!(out.failed_jobs(), 1, "{:?}", out.notes);
    let text = normal(&out);
    assert!(
        text.contains("err=121 (file:io_u.c:1876, func=io_u error, error=Remote I/O error)"),
        "{text}"
    );
}

/// What a zoned UFS LU cannot be is one clear message naming the key.
#[test]
fn an_impossible_zoned_lu_is_one_clear_message() {
    let job = "[j]\nrw=read\nbs=4k\nsize=64k\nioengine=psync\n";
    for (profile, set, words) in [
        (
            "ufs40-zoned-like",
            "device.zns.zone_capacity=32MiB",
            "writable up to its end",
        ),
        (
            "ufs40-zoned-like",
            "device.zns.max_active=8",
            "no active-zone limit",
        ),
        (
            "ufs40-zoned-like",
            "device.zns.conventional_zones=7616",
            "leaves none",
        ),
        (
            "ufs40-zoned-like",
            "ufs.hpb.enabled=true",
            "a zoned UFS LU has none",
        ),
    ] {
        common::assert_set_refused(job, profile, set, words);
    }
    // The same zones as an NVMe Zoned Namespace: ZNS has no conventional
    // zones, and the profile's file is named.
    let p = common::profile("ufs40-zoned-like", &[]);
    let err = Zns::from_profile(&p).err().expect("refused").to_string();
    assert!(
        err.contains("ufs40-zoned-like")
            && err.contains("device.zns.conventional_zones 32")
            && err.contains("Sequential Write Required"),
        "{err}"
    );
}

/// One sequential zone's write rate follows from the mechanism: at most
/// `buffer_rows` rows per tPROG and one row per die per tPROG. The
/// profile's 4 rows of 64 KiB (4 planes x 16 KiB) over 4 dies at a tPROG
/// of 700 us: 4 x 65536 B / 700 us = 374.5 MB/s; with 2 rows half that.
/// The link, the firmware and the host take a little (within 10% below).
#[test]
fn one_zones_write_rate_is_its_buffer_rows_over_tprog() {
    let job = "[j]\nioengine=libaio\niodepth=4\nrw=write\nbs=128k\nsize=256m\noffset=2g\n\
               filename=/dev/sda\ndirect=1\n";
    let row = 4.0 * 16384.0;
    let t_prog = 700e-6;
    for rows in [4u32, 2] {
        let o = vec![format!("device.zns.buffer_rows={rows}")];
        let out = run_text(job, "job.fio", Path::new("."), "ufs40-zoned-like", &o, 1).unwrap();
        let j = json(&out);
        assert_eq!(j["jobs"][0]["error"], 0);
        let bw = j["jobs"][0]["write"]["bw_bytes"].as_f64().unwrap();
        let want = f64::from(rows) * row / t_prog;
        assert!(
            bw <= want * 1.001 && bw > want * 0.9,
            "{rows} rows: {bw} B/s vs {want} B/s"
        );
    }
}
