//! fio's `zonemode=zbd` (workload/fio/zbd.rs, fio 3.33's zbd.c) on a run:
//! on the zoned namespace (profile `nvme-zn540-like`, made small) every
//! write lands on its zone's write pointer (the device counts no zone
//! error), the open zones stay within the limit, full zones are reset on
//! the device, and trims are zone resets; on a conventional disk fio
//! emulates the zones; fio's setup messages where a job does not fit.

use flashpath::report::{render, OutputFormat};
use flashpath::run::{run_text, RunOutput};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// The ZN540-like NAND with 8 zones of 64 MiB holding 48 MiB, 3 open and
/// 4 active (as tests/zns.rs makes it small).
fn small_zns() -> Vec<String> {
    [
        "device.zns.zone_size=64MiB",
        "device.zns.zone_capacity=48MiB",
        "device.zns.zones=8",
        "device.zns.max_open=3",
        "device.zns.max_active=4",
    ]
    .map(String::from)
    .to_vec()
}

fn run_on(job: &str, device: &str, sets: &[String]) -> flashpath::error::Result<RunOutput> {
    run_text(job, "job.fio", Path::new("."), device, sets, 1)
}

fn json(out: &RunOutput) -> serde_json::Value {
    serde_json::from_str(&render(&out.result, OutputFormat::Json)).expect("valid JSON")
}

/// (offset, length) of every write in a version-3 iolog, in issue order.
fn iolog_writes(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[2] == "write")
                .then(|| (f[3].parse().unwrap(), f[4].parse().unwrap()))
        })
        .collect()
}

/// Random writes of 1 GiB into 8 zones of 48 MiB capacity: fio writes
/// each at its zone's write pointer, within the device's 3 open zones
/// (zbd_set_max_open_zones takes the disk's limit), and resets a zone
/// when it is full, on the device (BLKRESETZONE). The device, which fails
/// any write off a write pointer (Zone Invalid Write) or past its open
/// and active limits, fails none.
#[test]
fn random_writes_follow_the_write_pointers_and_reset_full_zones() {
    let job = "[j]\nrw=randwrite\nbs=64k\nzonemode=zbd\nfilename=/dev/nvme0n1\n\
               direct=1\nioengine=psync\nio_size=1g\nwrite_iolog=w.log\n";
    let out = run_on(job, "nvme-zn540-like", &small_zns()).expect("the job runs");
    let j = json(&out);
    assert_eq!(j["jobs"][0]["error"], 0, "{:?}", out.notes);
    assert_eq!(j["jobs"][0]["write"]["io_bytes"], 1u64 << 30);
    let zns = &j["flashpath"]["driver"]["device"]["zns"];
    assert_eq!(zns["zone_errors"], 0, "{zns}");
    assert!(zns["max_open_seen"].as_u64().unwrap() <= 3, "{zns}");
    // 1 GiB into zones of 48 MiB: at least 1024/48 - 8 zones filled again.
    let resets = zns["resets"].as_u64().unwrap();
    assert!(resets >= 1024 / 48 - 8, "{resets} resets");
    // fio counts each reset (zbd_reset_zone) and prints the count on the
    // write line (zbd_write_status).
    let normal = render(&out.result, OutputFormat::Normal);
    assert!(
        normal.contains(&format!("; {resets} zone resets\n")),
        "{normal}"
    );
    // Each write at its zone's write pointer, a reset zone from its start.
    let log = out
        .files
        .iter()
        .find(|f| f.name == "w.log")
        .expect("the iolog");
    let mut wp = [0u64; 8];
    let mut seen_open = std::collections::BTreeSet::new();
    for (off, len) in iolog_writes(&log.contents) {
        let z = (off / (64 * MIB)) as usize;
        if off == z as u64 * 64 * MIB && wp[z] == 48 * MIB {
            wp[z] = 0;
        }
        assert_eq!(
            off,
            z as u64 * 64 * MIB + wp[z],
            "a write off zone {z}'s write pointer"
        );
        wp[z] += len;
        assert!(wp[z] <= 48 * MIB);
        if wp[z] == 48 * MIB {
            seen_open.remove(&z);
        } else {
            seen_open.insert(z);
            assert!(
                seen_open.len() <= 3,
                "more than 3 zones open: {seen_open:?}"
            );
        }
    }
}

/// max_open_zones below the device's: fio keeps to it.
#[test]
fn max_open_zones_bounds_the_zones_written_at_once() {
    let job = "[j]\nrw=randwrite\nbs=64k\nzonemode=zbd\nfilename=/dev/nvme0n1\n\
               direct=1\nioengine=psync\nio_size=256m\nmax_open_zones=2\n";
    let out = run_on(job, "nvme-zn540-like", &small_zns()).expect("the job runs");
    let j = json(&out);
    assert_eq!(j["jobs"][0]["error"], 0, "{:?}", out.notes);
    assert_eq!(j["flashpath"]["driver"]["device"]["zns"]["zone_errors"], 0);
    assert_eq!(
        j["flashpath"]["driver"]["device"]["zns"]["max_open_seen"],
        2
    );
}

/// A job that writes the zones and a job that trims them after it: on a
/// zoned disk a trim is its zone's reset (zbd_do_io_u_trim), so the
/// device resets each zone the trims find written, and fio counts the
/// trims as I/Os.
#[test]
fn trims_are_zone_resets() {
    let job = "[global]\nzonemode=zbd\nfilename=/dev/nvme0n1\ndirect=1\nioengine=psync\n\
               size=256m\n[w]\nrw=write\nbs=1m\n[t]\nstonewall\nrw=trim\nbs=64m\n";
    let out = run_on(job, "nvme-zn540-like", &small_zns()).expect("the job runs");
    let j = json(&out);
    assert_eq!(j["jobs"][0]["error"], 0, "{:?}", out.notes);
    assert_eq!(j["jobs"][1]["error"], 0, "{:?}", out.notes);
    // 256 MiB is four zones of 48 MiB written each: 192 writes of 1 MiB.
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 192);
    assert_eq!(j["jobs"][1]["trim"]["total_ios"], 4);
    assert_eq!(j["flashpath"]["driver"]["device"]["zns"]["resets"], 4);
    assert_eq!(j["flashpath"]["driver"]["device"]["zns"]["zone_errors"], 0);
}

/// zonecapacity below zonesize on emulated zones (a conventional disk):
/// a sequential writer jumps from each zone's capacity to the next zone,
/// as the real fio 3.33 does on a regular file
/// (tests/fixtures/zbd/seq-write-zcap.log, `fio --name=z
/// --filename=/tmp/zbdf --size=8m --zonemode=zbd --zonesize=1m
/// --zonecapacity=768k --rw=write --bs=256k --ioengine=psync
/// --write_iolog=...` on a file of 8 MiB).
#[test]
fn zone_capacity_skips_as_the_real_fio_does() {
    let job = "[z]\nfilename=zbdf\nsize=8m\nzonemode=zbd\nzonesize=1m\nzonecapacity=768k\n\
               rw=write\nbs=256k\nioengine=psync\ndirect=1\nwrite_iolog=z.log\n";
    let out = run_on(job, "nullblk", &[]).expect("the job runs");
    let ours = iolog_writes(
        &out.files
            .iter()
            .find(|f| f.name == "z.log")
            .unwrap()
            .contents,
    );
    let real = iolog_writes(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/zbd/seq-write-zcap.log"),
        )
        .unwrap(),
    );
    assert_eq!(real.len(), 24);
    assert_eq!(ours, real);
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/zbd")
            .join(name),
    )
    .unwrap()
}

/// (direction, offset) of every read or write in a version-3 iolog.
fn iolog_ios(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && (f[2] == "read" || f[2] == "write"))
                .then(|| (f[2].to_string(), f[3].parse().unwrap()))
        })
        .collect()
}

/// The real fio 3.33's random writes with max_open_zones=2 on emulated
/// zones (tests/fixtures/zbd/rand-write-open2.log) keep the properties
/// flashpath's do: each write at its zone's write pointer, a full zone
/// written again only from its start (reset), never more than two zones
/// holding partly written data. (The offsets themselves come from fio's
/// own random generator.)
#[test]
fn the_real_fios_random_writes_keep_the_same_rules() {
    let mut wp = [0u64; 4];
    let mut open = std::collections::BTreeSet::new();
    let writes = iolog_writes(&fixture("rand-write-open2.log"));
    assert_eq!(writes.len(), 16);
    for (off, len) in writes {
        let z = (off / MIB) as usize;
        if wp[z] == MIB && off == z as u64 * MIB {
            wp[z] = 0;
        }
        assert_eq!(off, z as u64 * MIB + wp[z]);
        wp[z] += len;
        if wp[z] == MIB {
            open.remove(&z);
        } else {
            open.insert(z);
        }
        assert!(open.len() <= 2);
    }
}

/// zonemode=strided (io_u.c setup_strided_zone_mode): a sequential reader
/// reads zonesize bytes of each zone of zonerange, skips zoneskip, and
/// starts over at the file's start, for the job's size in all: the real
/// fio 3.33's offsets (tests/fixtures/zbd/strided-*.log).
#[test]
fn strided_reads_follow_the_real_fio() {
    for (extra, log) in [
        ("zonesize=4m\n", "strided-4m-skip-8m.log"),
        (
            "zonesize=2m\nzonerange=4m\n",
            "strided-2m-range-4m-skip-8m.log",
        ),
    ] {
        let job = format!(
            "[s]\nfilename=sf\nsize=64m\nzonemode=strided\n{extra}zoneskip=8m\nrw=read\n\
             bs=1m\nioengine=psync\ndirect=1\nwrite_iolog=s.log\n"
        );
        let out = run_on(&job, "nullblk", &[]).expect("the job runs");
        let ours = iolog_ios(
            &out.files
                .iter()
                .find(|f| f.name == "s.log")
                .unwrap()
                .contents,
        );
        let real = iolog_ios(&fixture(log));
        assert_eq!(real.len(), 64, "{log}");
        assert_eq!(ours, real, "{log}");
    }
}

/// fio's setup messages (zbd.c parse_zone_info, init_zone_info,
/// zbd_set_max_open_zones), each one error naming the job.
#[test]
fn jobs_that_do_not_fit_the_zones_get_fios_messages() {
    let zns = small_zns();
    let cases: [(&str, &str, &[String], &str); 4] = [
        (
            "zonesize=128m\n",
            "nvme-zn540-like",
            &zns,
            "fio: /dev/nvme0n1 job parameter zonesize 134217728 does not match disk zone size 67108864.",
        ),
        (
            "max_open_zones=5\n",
            "nvme-zn540-like",
            &zns,
            "Specified --max_open_zones (5) is larger than max (3)",
        ),
        (
            "",
            "nullblk",
            &[],
            "/dev/nvme0n1: Specifying the zone size is mandatory for regular file/block device with --zonemode=zbd",
        ),
        (
            "zonesize=1m\nzonecapacity=2m\n",
            "nullblk",
            &[],
            "/dev/nvme0n1: job parameter zonecapacity 2097152 is larger than zone size 1048576",
        ),
    ];
    for (extra, device, sets, want) in cases {
        let job = format!(
            "[j]\nrw=randwrite\nbs=64k\nzonemode=zbd\nfilename=/dev/nvme0n1\ndirect=1\n\
             size=64m\n{extra}"
        );
        let e = run_on(&job, device, sets).err().expect("refused");
        let msg = e.to_string();
        assert!(
            msg.contains("job 'j'") && msg.contains(want),
            "{msg}\nwant: {want}"
        );
    }
}

/// fio sets the zones up when a job starts (filesetup.c setup_files ->
/// zbd_init_files), so `--parse-only` accepts a zbd job without a zone
/// size on a conventional disk, as the real fio 3.33's does, and the run
/// fails with fio's message (the real fio prints it and exits 1).
#[test]
fn zone_setup_is_checked_by_the_run_not_by_parse_only() {
    let text = "[j]\nrw=randwrite\nzonemode=zbd\nfilename=/dev/sdb\ndirect=1\nsize=64m\n";
    let profile = flashpath::profile::Profile::load("nullblk").unwrap();
    let ctx = flashpath::run::parse_context(&profile).unwrap();
    let jobs =
        flashpath::workload::fio::parse_job_str("t.fio", text, Path::new("."), &ctx).unwrap();
    flashpath::run::check_jobs(&jobs, &profile).expect("parse-only accepts it");
    let e = run_on(text, "nullblk", &[]).err().expect("the run fails");
    assert!(
        e.to_string().contains(
            "/dev/sdb: Specifying the zone size is mandatory for regular file/block device"
        ),
        "{e}"
    );
}

/// Reads on emulated zones nothing has written: with read_beyond_wp=0 a
/// reader finds no zone with data and does nothing (zbd_find_zone fails,
/// io_u_eof); with read_beyond_wp=1 it reads the whole file. The real fio
/// 3.33 on a regular file of 8 MiB (`--zonemode=zbd --zonesize=1m
/// --rw=read --bs=256k`): 0 reads, and 32 with read_beyond_wp=1.
#[test]
fn reads_of_unwritten_zones_follow_read_beyond_wp() {
    for (beyond, want) in [(0, 0), (1, 32)] {
        let job = format!(
            "[r]\nfilename=zbdf\nsize=8m\nzonemode=zbd\nzonesize=1m\nrw=read\nbs=256k\n\
             ioengine=psync\ndirect=1\nread_beyond_wp={beyond}\n"
        );
        let j = json(&run_on(&job, "nullblk", &[]).expect("the job runs"));
        assert_eq!(j["jobs"][0]["error"], 0);
        assert_eq!(
            j["jobs"][0]["read"]["total_ios"], want,
            "read_beyond_wp={beyond}"
        );
    }
}

/// fio's zoned example jobs (tests/fixtures/fio/examples) run on a
/// conventional disk, as fio 3.33 runs them on one (emulated zones), with
/// their runtimes cut short: no job fails, and the garbage-collection
/// examples reset zones (zone_reset_threshold/frequency, trims).
#[test]
fn fios_zoned_examples_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fio/examples");
    let short = |name: &str, cuts: &[(&str, &str)]| {
        let mut t = std::fs::read_to_string(dir.join(name)).unwrap();
        for (a, b) in cuts {
            assert!(t.contains(a), "{name}: {a}");
            t = t.replace(a, b);
        }
        run_on(&t, "nullblk", &[]).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let resets = |out: &RunOutput| -> u64 {
        let normal = render(&out.result, OutputFormat::Normal);
        normal
            .lines()
            .filter_map(|l| {
                l.split("; ")
                    .nth(1)?
                    .strip_suffix(" zone resets")?
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    };
    let gc = short(
        "zbd-rand-write-zone-reset-gc.fio",
        &[("runtime=40", "runtime=200ms")],
    );
    assert_eq!(gc.failed_jobs(), 0);
    assert!(resets(&gc) > 0);
    let rw = short("zbd-rand-write.fio", &[("runtime=180", "runtime=20ms")]);
    assert_eq!(rw.failed_jobs(), 0);
    let trim = short(
        "zbd-rand-write-trim-gc.fio",
        &[
            ("runtime=30", "runtime=400ms"),
            ("runtime=3\n", "runtime=100ms\n"),
        ],
    );
    assert_eq!(trim.failed_jobs(), 0);
    let j = json(&trim);
    // group_reporting: one entry for the three jobs.
    assert!(
        j["jobs"][0]["trim"]["total_ios"].as_u64().unwrap() > 0,
        "trimjob trims"
    );
    assert!(resets(&trim) > 0);
    let sr = short("zbd-seq-read.fio", &[]);
    assert_eq!(sr.failed_jobs(), 0);
    // Nothing was written: the reader has nothing below a write pointer.
    assert_eq!(json(&sr)["jobs"][0]["read"]["total_ios"], 0);
    let dz = short(
        "disk-zone-profile.fio",
        &[("zoneskip=2g", "zoneskip=2g\nsize=4g")],
    );
    assert_eq!(dz.failed_jobs(), 0);
    // 4 GiB read in zones of 256 MiB every 2.25 GiB of the disk.
    assert_eq!(json(&dz)["jobs"][0]["read"]["io_bytes"], 4u64 << 30);
}

/// A kernel before 6.10 (`block.zoned_writes=locking`) keeps a zone's
/// writes in order in mq-deadline instead of plugging them: a sequential
/// write at iodepth 8 into one zone has one write in flight (the device
/// fails none), nothing waits in a plug, and it goes no faster than at
/// iodepth 1, as with 6.10's plugs.
#[test]
fn mq_deadline_zone_write_locking_keeps_one_write_per_zone_in_flight() {
    let job = |qd: u32| {
        format!(
            "[j]\nrw=write\nbs=16k\nsize=16m\nioengine=libaio\ndirect=1\niodepth={qd}\n\
             filename=/dev/nvme0n1\n"
        )
    };
    let mut sets = small_zns();
    sets.push("block.scheduler=mq-deadline".into());
    sets.push("block.zoned_writes=locking".into());
    let qd1 = json(&run_on(&job(1), "nvme-zn540-like", &sets).unwrap());
    let qd8 = json(&run_on(&job(8), "nvme-zn540-like", &sets).unwrap());
    for j in [&qd1, &qd8] {
        assert_eq!(j["jobs"][0]["error"], 0);
        assert_eq!(j["flashpath"]["driver"]["device"]["zns"]["zone_errors"], 0);
        // No plugs: the scheduler orders the writes.
        assert!(
            j["flashpath"]["block"]["zoned"].is_null(),
            "{}",
            j["flashpath"]["block"]
        );
    }
    let iops = |j: &serde_json::Value| j["jobs"][0]["write"]["iops"].as_f64().unwrap();
    assert!(
        iops(&qd8) < iops(&qd1) * 1.15,
        "{} vs {}",
        iops(&qd8),
        iops(&qd1)
    );
}
