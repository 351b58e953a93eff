//! fio's libzbc engine (engines/libzbc.c) on the zoned UFS LU: each read
//! or write one zbc_pread / zbc_pwrite, which libzbc's SCSI backend sends
//! as one SG_IO command (a passthrough request: no elevator, no zone write
//! plug, not in the disk's statistics), synchronous (FIO_SYNCIO), over
//! fio's zbd.c zone model with the zones libzbc reports.

use flashpath::report::{render, OutputFormat};
use flashpath::run::run_text;
use std::path::Path;

fn run(job: &str, profile: &str, sets: &[&str]) -> flashpath::run::RunOutput {
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    run_text(job, "job.fio", Path::new("."), profile, &o, 1).expect("the job runs")
}

fn json(out: &flashpath::run::RunOutput) -> serde_json::Value {
    serde_json::from_str(&render(&out.result, OutputFormat::Json)).expect("valid JSON")
}

fn refusal(job: &str, profile: &str, sets: &[&str]) -> String {
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match run_text(job, "job.fio", Path::new("."), profile, &o, 1) {
        Ok(_) => panic!("must be refused: {job}"),
        Err(e) => e.to_string(),
    }
}

/// fio's libzbc-rand-write.fio shape, smaller: two jobs writing random
/// zones of the sequential area at most four at a time. zbd.c sends each
/// write to its zone's write pointer, so the LU refuses none (no CHECK
/// CONDITION), every write is a passthrough request (none in the disk's
/// statistics, none held in a zone write plug), and no more than four zones
/// were ever open on the device at once.
#[test]
fn libzbc_random_writes_land_at_write_pointers_as_passthrough_commands() {
    let job = "[global]\nrw=randwrite\nzonemode=zbd\nmax_open_zones=4\nbs=512k\ndirect=1\n\
               numjobs=2\nnumber_ios=150\noffset=2g\nsize=1g\nrandseed=11\n\
               [dev1]\nfilename=/dev/sda\nioengine=libzbc\n";
    let out = run(job, "ufs40-zoned-like", &[]);
    assert_eq!(out.failed_jobs(), 0, "{:?}", out.notes);
    let j = json(&out);
    for k in 0..2 {
        assert_eq!(j["jobs"][k]["error"], 0);
        assert_eq!(j["jobs"][k]["write"]["total_ios"], 150);
    }
    let fp = &j["flashpath"];
    assert_eq!(fp["block"]["passthrough_requests"], 300);
    assert_eq!(fp["driver"]["check_conditions"], 0);
    assert_eq!(fp["driver"]["writes"], 300);
    assert_eq!(fp["block"]["zoned"]["plugged_writes"], 0);
    assert_eq!(
        j["disk_util"][0]["write_ios"].as_u64().unwrap_or(0),
        0,
        "passthrough requests are not in the disk's statistics"
    );
    let zbc = &fp["driver"]["zbc"];
    let seen = zbc["max_open_seen"].as_u64().unwrap();
    assert!((1..=4).contains(&seen), "{zbc}");
    assert_eq!(zbc["zone_errors"], 0);
}

/// The same job through psync goes through the block layer: the zone
/// write plugs see its writes and the disk's statistics count them, for
/// the same writes at the same write pointers.
#[test]
fn the_same_job_through_psync_is_a_block_layer_one() {
    let job = |engine: &str| {
        format!(
            "[global]\nrw=randwrite\nzonemode=zbd\nmax_open_zones=4\nbs=512k\ndirect=1\n\
             number_ios=100\noffset=2g\nsize=1g\nrandseed=11\n\
             [dev1]\nfilename=/dev/sda\nioengine={engine}\n"
        )
    };
    let zbc = json(&run(&job("libzbc"), "ufs40-zoned-like", &[]));
    let psync = json(&run(&job("psync"), "ufs40-zoned-like", &[]));
    assert_eq!(psync["disk_util"][0]["write_ios"], 100);
    assert!(psync["flashpath"]["block"]
        .get("passthrough_requests")
        .is_none());
    assert_eq!(zbc["flashpath"]["block"]["passthrough_requests"], 100);
    // zbd.c chose the same zones and offsets: the device took the same
    // writes in both.
    assert_eq!(
        zbc["flashpath"]["driver"]["zbc"],
        psync["flashpath"]["driver"]["zbc"]
    );
}

/// libzbc opens only a zoned SCSI (or ATA) disk, and only a device file:
/// each other case is refused with what fio prints.
#[test]
fn libzbc_needs_a_zoned_scsi_disk() {
    let job = |file: &str| format!("[j]\nrw=read\nbs=4k\nsize=1m\nioengine=libzbc\n{file}");
    let nvme = refusal(&job("filename=/dev/nvme0n1\n"), "nvme-d7p5510-3t84", &[]);
    assert!(
        nvme.contains("is not a SCSI or ATA disk") && nvme.contains("zbc_open() failed"),
        "{nvme}"
    );
    let conventional = refusal(&job("filename=/dev/sda\n"), "ufs41-snapdragon", &[]);
    assert!(
        conventional.contains("is a SCSI disk that is not zoned")
            && conventional.contains("zbc_open() failed"),
        "{conventional}"
    );
    let file = refusal(&job(""), "ufs40-zoned-like", &[]);
    assert!(
        file.contains("ioengine libzbc only works on block or character devices"),
        "{file}"
    );
}

/// fio's own libzbc examples ask for 256 MiB zones: on the zoned UFS
/// profile's 64 MiB zones zbd.c refuses the job as fio does.
#[test]
fn fios_libzbc_examples_check_the_disks_zone_size() {
    for name in ["libzbc-rand-write.fio", "libzbc-seq-read.fio"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/fio/examples")
            .join(name);
        let text = std::fs::read_to_string(&path).expect("the fixture");
        let why = refusal(&text, "ufs40-zoned-like", &[]);
        assert!(
            why.contains("job parameter zonesize 268435456 does not match disk zone size 67108864"),
            "{name}: {why}"
        );
    }
}
