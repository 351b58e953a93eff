//! Every command has an outcome: a device fails a command over its
//! `device.badblocks` (null_blk's configfs attribute) with EIO, the
//! kernel fails a discard on a disk that cannot discard with EOPNOTSUPP,
//! and fio 3.33 reports both as it does on a real machine.
//!
//! The expected texts and counts come from real fio 3.33 runs on this
//! machine: a 1 MiB file whose bytes 16384..20480 fail with EIO (an
//! LD_PRELOAD shim over pread/pwrite and libaio's io_getevents), e.g.
//!
//! ```text
//! fio --name=j --filename=f --rw=read --bs=4k --size=64k \
//!     --ioengine=libaio --direct=1 --iodepth=4
//! fio: io_u error on file f: Input/output error: read offset=16384, buflen=4096   (stderr)
//! fio: pid=18827, err=5/file:io_u.c:1876, func=io_u error, error=Input/output error
//! j: (groupid=0, jobs=1): err= 5 (file:io_u.c:1876, func=io_u error, error=Input/output error): ...
//!      issued rwts: total=8,0,0,0 ...       (4 before the bad one, it, and 3 in flight)
//! JSON: "error" : 5, read total_ios 8, slat N 8, clat N 7, io_bytes 28672; exit status 1
//! ```
//!
//! and with `--iodepth=1 --continue_on_error=read`: no io_u error line,
//! `err= 5 ():`, all 16 issued, 15 with bytes, `errors    : total=1,
//! first_error=5/<Input/output error>`, JSON `total_err` 1, `first_error`
//! 5, exit status 0. A trim that fails (a BLKDISCARD ioctl) prints no
//! io_u error line: `err=25 (file:ioengines.c:399, func=td_io_queue, ...)`
//! and `issued rwts: total=0,0,1,0`.

use flashpath::report::{render, OutputFormat};
use flashpath::run::{run_text, RunOutput};
use std::path::Path;

/// Sectors 32..=39: bytes 16384..20480, the fifth 4 KiB block of the file
/// (fio's file for a job with no filename starts on the disk's first MiB).
const BAD: &str = "device.badblocks=[32, 39]";

fn run(job: &str, device: &str, overrides: &[&str]) -> RunOutput {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    run_text(job, "job.fio", Path::new("."), device, &o, 1).expect("the job runs")
}

fn json(out: &RunOutput) -> serde_json::Value {
    serde_json::from_str(&render(&out.result, OutputFormat::Json)).expect("valid JSON")
}

const READ_QD4: &str = "[j]\nrw=read\nbs=4k\nsize=64k\nioengine=libaio\ndirect=1\niodepth=4\n";

#[test]
fn a_read_over_a_bad_block_stops_the_job_with_eio_as_fio_does() {
    let out = run(READ_QD4, "nullblk", &[BAD]);
    assert_eq!(
        out.notes,
        vec!["fio: io_u error on file j.0.0: Input/output error: read offset=16384, buflen=4096"]
    );
    let normal = render(&out.result, OutputFormat::Normal);
    assert!(
        normal.contains(
            "Starting 1 process\nfio: pid=1, err=5/file:io_u.c:1876, func=io_u error, \
             error=Input/output error\n"
        ),
        "{normal}"
    );
    assert!(
        normal.contains(
            "j: (groupid=0, jobs=1): err= 5 (file:io_u.c:1876, func=io_u error, \
             error=Input/output error): pid=1:"
        ),
        "{normal}"
    );
    // Four issued before the failing read, it, and three more that were in
    // flight when it was reaped: 8 issued, 7 with data.
    assert!(normal.contains("issued rwts: total=8,0,0,0"), "{normal}");
    assert!(
        !normal.contains("errors    :"),
        "no continue_on_error: {normal}"
    );
    let j = json(&out);
    let job = &j["jobs"][0];
    assert_eq!(job["error"], 5);
    assert!(
        job.get("total_err").is_none(),
        "fio omits it without continue_on_error"
    );
    let r = &job["read"];
    assert_eq!(r["total_ios"], 8);
    assert_eq!(r["io_bytes"], 7 * 4096);
    assert_eq!(r["slat_ns"]["N"], 8);
    assert_eq!(r["clat_ns"]["N"], 7);
    assert_eq!(r["lat_ns"]["N"], 7);
    assert_eq!(out.failed_jobs(), 1, "fio exits 1");
}

#[test]
fn continue_on_error_read_goes_on_and_counts_as_fio_does() {
    let job = "[j]\nrw=read\nbs=4k\nsize=64k\nioengine=libaio\ndirect=1\niodepth=1\n\
               continue_on_error=read\n";
    let out = run(job, "nullblk", &[BAD]);
    assert!(
        out.notes.is_empty(),
        "a non-fatal error is not logged: {:?}",
        out.notes
    );
    let normal = render(&out.result, OutputFormat::Normal);
    assert!(normal.contains("err= 5 (): pid=1:"), "{normal}");
    assert!(!normal.contains("fio: pid="), "{normal}");
    assert!(normal.contains("issued rwts: total=16,0,0,0"), "{normal}");
    assert!(
        normal.contains(
            "     issued rwts: total=16,0,0,0 short=0,0,0,0 dropped=0,0,0,0\n     errors    : \
             total=1, first_error=5/<Input/output error>\n     latency   :"
        ),
        "{normal}"
    );
    let j = json(&out);
    let job = &j["jobs"][0];
    assert_eq!(job["error"], 5);
    assert_eq!(job["total_err"], 1);
    assert_eq!(job["first_error"], 5);
    assert_eq!(job["read"]["total_ios"], 16);
    assert_eq!(job["read"]["io_bytes"], 15 * 4096);
    assert_eq!(job["read"]["clat_ns"]["N"], 15);
    // The keys sit where fio's JSON has them: after latency_ms, before
    // latency_depth.
    let text = render(&out.result, OutputFormat::Json);
    let at = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
    assert!(at("latency_ms") < at("total_err"));
    assert!(at("total_err") < at("first_error"));
    assert!(at("first_error") < at("latency_depth"));
    assert_eq!(out.failed_jobs(), 0, "fio exits 0");
    // The terse line ends with the count and the first error.
    let terse = render(&out.result, OutputFormat::Terse);
    assert!(terse.trim_end().ends_with(";1;5"), "{terse}");
}

#[test]
fn continue_on_error_write_does_not_cover_reads() {
    let job = "[j]\nrw=read\nbs=4k\nsize=64k\nioengine=psync\ndirect=1\n\
               continue_on_error=write\n";
    let out = run(job, "nullblk", &[BAD]);
    assert_eq!(out.failed_jobs(), 1);
    let j = json(&out);
    // A synchronous engine stops at the bad block: 4 good, then it.
    assert_eq!(j["jobs"][0]["read"]["total_ios"], 5);
    assert_eq!(j["jobs"][0]["read"]["io_bytes"], 4 * 4096);
    // continue_on_error is set (fio prints the fields) but covers only
    // writes: the fatal read error is not counted.
    assert_eq!(j["jobs"][0]["total_err"], 0);
}

#[test]
fn ignore_error_makes_another_error_non_fatal_and_error_dump_logs_it() {
    // ignore_error=EIO for reads sets continue_on_error's read bit.
    let job = "[j]\nrw=read\nbs=4k\nsize=64k\nioengine=libaio\ndirect=1\niodepth=2\n\
               ignore_error=EIO\nerror_dump=1\n";
    let out = run(job, "nullblk", &[BAD]);
    assert_eq!(out.failed_jobs(), 0);
    assert_eq!(
        out.notes,
        vec!["fio: io_u error on file j.0.0: Input/output error: read offset=16384, buflen=4096"]
    );
    let j = json(&out);
    assert_eq!(j["jobs"][0]["total_err"], 1);
    assert_eq!(j["jobs"][0]["read"]["io_bytes"], 15 * 4096);
}

/// Every shipped device profile, by name (`profiles/*.toml`; `hosts/`
/// holds host profiles, which have no device).
fn shipped_devices() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the profiles folder")
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "toml").then(|| path.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    assert!(names.len() >= 10, "found {names:?} in {}", dir.display());
    names
}

/// `device.badblocks` is a knob of every device kind and of every shipped
/// profile, whether the profile lists it (as most do, with `[]`) or not
/// (`--set` takes a declared optional parameter a profile leaves out):
/// the NVMe flash SSDs, the zoned devices and MQSim's default included.
#[test]
fn badblocks_fail_commands_on_every_shipped_device() {
    for device in shipped_devices() {
        let out = run(READ_QD4, &device, &[BAD]);
        let j = json(&out);
        assert_eq!(j["jobs"][0]["error"], 5, "{device}");
        assert_eq!(out.failed_jobs(), 1, "{device}");
        assert_eq!(
            out.notes.last().map(String::as_str),
            Some(
                "fio: io_u error on file j.0.0: Input/output error: read offset=16384, buflen=4096"
            ),
            "{device}"
        );
    }
}

/// A `--set` of a key no component declares is still refused by name, and
/// a declared optional key the profile leaves out takes the declaration's
/// checks (a sector past the range is refused as the profile's own would
/// be).
#[test]
fn a_set_of_an_undeclared_key_is_still_refused() {
    let o = vec!["device.badblock=[32, 39]".to_string()];
    let err = run_text(READ_QD4, "job.fio", Path::new("."), "mqsim-default", &o, 1)
        .err()
        .expect("an unknown key is refused");
    let msg = err.to_string();
    assert!(
        msg.contains("--set") && msg.contains("device.badblock"),
        "{msg}"
    );
    let o = vec!["device.badblocks=[39, 32]".to_string()];
    let err = run_text(READ_QD4, "job.fio", Path::new("."), "mqsim-default", &o, 1)
        .err()
        .expect("a reversed range is refused");
    assert!(err.to_string().contains("device.badblocks"), "{err}");
}

#[test]
fn a_write_over_a_bad_block_fails_too() {
    let job = "[j]\nrw=write\nbs=8k\nsize=64k\nioengine=psync\ndirect=1\n";
    // Sector 40 lies in the third 8 KiB block (bytes 16384..24576).
    let out = run(job, "nvme-samsung", &["device.badblocks=[40, 40]"]);
    assert_eq!(
        out.notes,
        vec!["fio: io_u error on file j.0.0: Input/output error: write offset=16384, buflen=8192"]
    );
    let j = json(&out);
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 3);
    assert_eq!(j["jobs"][0]["write"]["io_bytes"], 2 * 8192);
}

#[test]
fn a_discard_on_null_blk_fails_with_eopnotsupp_as_the_kernel_fails_it() {
    // null_blk without memory backing sets no discard limit
    // (null_config_discard), so BLKDISCARD returns EOPNOTSUPP; fio's trim
    // is synchronous and its error is recorded by td_io_queue.
    let job = "[j]\nrw=trim\nbs=4k\nsize=64k\nioengine=libaio\ndirect=1\niodepth=4\n";
    let out = run(job, "nullblk", &[]);
    assert!(out.notes.is_empty(), "{:?}", out.notes);
    let normal = render(&out.result, OutputFormat::Normal);
    assert!(
        normal.contains(
            "fio: pid=1, err=95/file:ioengines.c:399, func=td_io_queue, error=Operation not \
             supported\n"
        ),
        "{normal}"
    );
    assert!(normal.contains("err=95 (file:ioengines.c:399"), "{normal}");
    assert!(normal.contains("issued rwts: total=0,0,1,0"), "{normal}");
    assert_eq!(out.failed_jobs(), 1);
    assert_eq!(out.completed_ios, 0, "nothing reached the device");
    // A disk that can discard takes the same job.
    let out = run(job, "nvme-samsung", &[]);
    assert_eq!(out.failed_jobs(), 0);
    assert_eq!(json(&out)["jobs"][0]["trim"]["total_ios"], 16);
}

#[test]
fn a_run_without_faults_has_no_error_fields() {
    let out = run(READ_QD4, "nullblk", &[]);
    assert!(out.notes.is_empty());
    assert_eq!(out.failed_jobs(), 0);
    let j = json(&out);
    assert_eq!(j["jobs"][0]["error"], 0);
    assert_eq!(j["jobs"][0]["read"]["total_ios"], 16);
}

#[test]
fn a_bad_badblocks_value_is_one_clear_message() {
    let o = vec!["device.badblocks=[1, 2, 3]".to_string()];
    let err = match run_text(READ_QD4, "job.fio", Path::new("."), "nullblk", &o, 1) {
        Ok(_) => panic!("an odd list must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("device.badblocks") && err.contains("pairs"),
        "{err}"
    );
}

#[test]
fn a_sync_engine_that_goes_on_keeps_the_xfer_text() {
    // fio_io_end records the error as "xfer" when nothing logged it first
    // (real fio 3.33: `err= 5 (file:engines/sync.c:126, func=xfer, ...)`).
    let job = "[j]\nrw=read\nbs=4k\nsize=64k\nioengine=psync\ndirect=1\ncontinue_on_error=read\n";
    let out = run(job, "nullblk", &[BAD]);
    assert_eq!(out.failed_jobs(), 0);
    let normal = render(&out.result, OutputFormat::Normal);
    assert!(
        normal.contains(
            "err= 5 (file:engines/sync.c:126, func=xfer, error=Input/output error): pid=1:"
        ),
        "{normal}"
    );
}

#[test]
fn ignored_trim_errors_are_all_counted() {
    // As real fio 3.33 with `rw=trim ignore_error=,25` on a file whose
    // BLKDISCARD fails: `errors    : total=16, first_error=25/<...>` and
    // the td_io_queue text; here the error is null_blk's EOPNOTSUPP.
    let job = "[j]\nrw=trim\nbs=4k\nsize=64k\nioengine=libaio\ndirect=1\nignore_error=,95\n";
    let out = run(job, "nullblk", &[]);
    assert_eq!(out.failed_jobs(), 0);
    let normal = render(&out.result, OutputFormat::Normal);
    assert!(
        normal.contains(
            "err=95 (file:ioengines.c:399, func=td_io_queue, error=Operation not supported)"
        ),
        "{normal}"
    );
    assert!(
        normal.contains("errors    : total=16, first_error=95/<Operation not supported>"),
        "{normal}"
    );
    assert!(normal.contains("issued rwts: total=0,0,16,0"), "{normal}");
    for line in [
        "  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%",
        "     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%",
        "     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%",
    ] {
        assert!(normal.contains(line), "{line}\n{normal}");
    }
}

#[test]
fn a_buffered_job_with_faults_is_refused_by_name() {
    let job = "[j]\nrw=read\nbs=4k\nsize=64k\nioengine=psync\ndirect=0\n";
    let o = vec![BAD.to_string()];
    let err = match run_text(job, "job.fio", Path::new("."), "nullblk", &o, 1) {
        Ok(_) => panic!("the page cache does not pass errors on: refuse"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("job.fio") && err.contains("direct=0"), "{err}");
    // Without faults the same job runs.
    run(job, "nullblk", &[]);
}
