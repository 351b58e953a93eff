//! Zone Append from the workload: io_uring_cmd's `write_mode=zone_append`
//! (fio after 3.41, commit ebf4b46d; fio 3.33 sends no zone append) on a
//! ZNS namespace's generic character device. fio's zbd.c picks each
//! write's offset at its zone's write pointer (io_u->offset), the engine
//! sends the append to the zone's start (engines/nvme.c
//! fio_nvme_uring_cmd_prep), the device picks the LBA and returns it in
//! the completion (io_uring's big CQE), which fio does not read
//! (engines/io_uring.c fio_ioring_cmd_event reads cqe->res only).

use flashpath::report::{render, OutputFormat};
use flashpath::run::run_text;
use std::path::Path;

fn run(job: &str) -> flashpath::run::RunOutput {
    run_text(job, "job.fio", Path::new("."), "nvme-zn540-like", &[], 1).expect("the job runs")
}

fn json(out: &flashpath::run::RunOutput) -> serde_json::Value {
    serde_json::from_str(&render(&out.result, OutputFormat::Json)).expect("valid JSON")
}

/// Random zone appends at iodepth 4 over eight zones, four open at most,
/// then a second job reads the zones back where zbd.c knows data is
/// (read_beyond_wp=0: below each zone's write pointer as fio tracks it).
/// Each append's returned LBA is the offset fio chose for it (zbd.c keeps
/// one write in flight per zone: its zone lock is held until the write
/// completes), every read-back finds written data (no read past a write
/// pointer), no append broke a zone rule and the open limit held.
#[test]
fn every_append_lands_where_fio_put_it_and_reads_back() {
    let job = "[global]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\ncmd_type=nvme\n\
               zonemode=zbd\nmax_open_zones=4\nsize=8z\nbs=16k\niodepth=4\nnumber_ios=600\n\
               randseed=5\n[w]\nwrite_mode=zone_append\nrw=randwrite\n\
               [r]\nstonewall\nrw=randread\n";
    let out = run(job);
    assert_eq!(out.failed_jobs(), 0, "{:?}", out.notes);
    let j = json(&out);
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 600);
    assert_eq!(j["jobs"][1]["read"]["total_ios"], 600);
    let block = &j["flashpath"]["block"];
    assert_eq!(block["zone_appends"], 600);
    assert_eq!(block["appends_off_fio_offset"], 0);
    assert_eq!(block["zoned"]["plugged_writes"], 0);
    let zns = &j["flashpath"]["driver"]["device"]["zns"];
    assert_eq!(zns["appends"], 600);
    assert_eq!(zns["zone_errors"], 0);
    assert_eq!(zns["unwritten_reads"], 0);
    let seen = zns["max_open_seen"].as_u64().unwrap();
    assert!((1..=4).contains(&seen), "{zns}");
}

/// The same job with plain writes moves the same bytes: the device's
/// write units agree, and no append is counted.
#[test]
fn plain_writes_and_appends_write_the_same_units() {
    let job = |mode: &str| {
        format!(
            "[j]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\ncmd_type=nvme\nzonemode=zbd\n\
             write_mode={mode}\nmax_open_zones=4\nsize=8z\nbs=16k\nrw=randwrite\niodepth=4\n\
             number_ios=300\nrandseed=5\n"
        )
    };
    let append = json(&run(&job("zone_append")));
    let write = json(&run(&job("write")));
    let zns = |j: &serde_json::Value, k: &str| j["flashpath"]["driver"]["device"]["zns"][k].clone();
    assert_eq!(
        zns(&append, "host_write_units"),
        zns(&write, "host_write_units")
    );
    assert_eq!(zns(&append, "appends"), 300);
    assert_eq!(zns(&write, "appends"), 0);
    assert!(write["flashpath"]["block"].get("zone_appends").is_none());
}

/// Without zonemode=zbd fio refuses write_mode=zone_append; another
/// write_mode is not modelled.
#[test]
fn zone_append_needs_zonemode_zbd() {
    let refusal =
        |job: &str| match run_text(job, "job.fio", Path::new("."), "nvme-zn540-like", &[], 1) {
            Ok(_) => panic!("must be refused: {job}"),
            Err(e) => e.to_string(),
        };
    let no_zbd = refusal(
        "[j]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\nwrite_mode=zone_append\nrw=write\n\
         bs=16k\nsize=1m\n",
    );
    assert!(
        no_zbd.contains("io_uring_cmd with write_mode=zone_append requires zonemode=zbd"),
        "{no_zbd}"
    );
    let uncor = refusal(
        "[j]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\nwrite_mode=uncor\nrw=write\n\
         bs=16k\nsize=1m\n",
    );
    assert!(uncor.contains("write_mode=uncor"), "{uncor}");
}
