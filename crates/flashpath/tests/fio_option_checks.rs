//! What the real fio 3.33 refuses, flashpath refuses with one message that
//! names the file, the line and what is wrong; a valid value flashpath
//! does not model is refused by name as not modelled; what fio runs,
//! flashpath runs as fio does. Each case is one the fuzz campaign or the
//! differential run found (the full table is fio_differential.rs).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use common::{profile, write};
use flashpath::run::{check_jobs, fio_source, parse_context, parse_only, run_jobs};
use flashpath::workload::fio::{parse_job_str, JobFile, ParseContext, RandomDistribution};

fn ctx() -> ParseContext {
    ParseContext {
        env: BTreeMap::new(),
        ..parse_context(&profile("nullblk", &[])).unwrap()
    }
}

fn parse(job: &str) -> flashpath::Result<JobFile> {
    parse_job_str("t.fio", job, Path::new("."), &ctx())
}

/// The message of a job file refused by the parse or the run's checks.
fn refusal(job: &str) -> String {
    let p = profile("nullblk", &[]);
    match parse(job).and_then(|jf| check_jobs(&jf, &p)) {
        Ok(()) => panic!("accepted:\n{job}"),
        Err(e) => e.to_string(),
    }
}

fn accepted(job: &str) -> JobFile {
    let p = profile("nullblk", &[]);
    let jf = parse(job).unwrap_or_else(|e| panic!("{e}"));
    check_jobs(&jf, &p).unwrap_or_else(|e| panic!("{e}"));
    jf
}

const BASE: &str = "[j]\nioengine=null\nsize=64k\n";

// 1. Every option has fio's value type and checks, ignored ones included.

#[test]
fn ignored_options_get_their_value_checks() {
    for (line, why) in [
        (
            "random_generator=lfsrx",
            "valid values: tausworthe, lfsr, tausworthe64",
        ),
        ("significant_figures=11", "max value out of range"),
        ("log_entries=10", "min value out of range"),
        ("verify_interval=8", "min value out of range"),
        ("buffer_compress_percentage=101", "max value out of range"),
        ("zone_reset_threshold=2", "value out of range"),
        ("unique_filename=2", "max value out of range"),
        ("clocksource=tsc", "valid values"),
        ("percentage_sequential=50", "deprecated"),
    ] {
        let m = refusal(&format!("{BASE}{line}\n"));
        assert!(
            m.starts_with("t.fio:4: failed parsing ") && m.contains(why),
            "{line}: {m}"
        );
    }
    // A fio quirk stays accepted: a BOOL reads "-1" as UINT_MAX, an int -1.
    accepted(&format!("{BASE}unique_filename=-1\n"));
    // STR_SET has no upper bound (time_based=2 is on).
    accepted(&format!("{BASE}time_based=2\nruntime=1\n"));
}

// 2. An empty value is refused as fio refuses it, never the default.

#[test]
fn empty_values_are_refused_not_defaulted() {
    for line in [
        "bs=",
        "rate=",
        "thinktime=",
        "bs=${UNSET}",
        "iodepth=",
        "runtime=",
        "rw=",
    ] {
        let m = refusal(&format!("{BASE}{line}\n"));
        let shown = line.replace("${UNSET}", "");
        assert!(
            m.starts_with(&format!("t.fio:4: failed parsing {shown}")),
            "{line}: {m}"
        );
    }
}

// 3. fio's setup checks, and bounds on what a valid job allocates.

#[test]
fn size_below_the_block_size_is_refused() {
    let m = refusal("[j]\nioengine=null\nsize=1k\nbs=4k\n");
    assert!(
        m.contains("t.fio:1")
            && m.contains("size too small, must not be less than minimum block size: 1024 < 4096"),
        "{m}"
    );
}

#[test]
fn a_file_without_jobs_is_refused() {
    for text in ["", "; nothing\n", "[global]\nbs=4k\n"] {
        let m = refusal(text);
        assert!(m.contains("No job(s) defined"), "{text:?}: {m}");
    }
}

#[test]
fn job_slots_run_out_as_in_fio() {
    // fio 3.33: 4087 clones run, 4089 do not (511 segments of 8 slots).
    accepted(&format!("{BASE}numjobs=4088\n"));
    for n in ["4089", "100000", "0"] {
        let m = refusal(&format!("{BASE}numjobs={n}\n"));
        assert!(m.contains("maximum number of jobs reached"), "{n}: {m}");
    }
    let m = refusal(
        "[a]\nioengine=null\nsize=64k\nnumjobs=4000\n[b]\nioengine=null\nsize=64k\nnumjobs=100\n",
    );
    assert!(
        m.contains("t.fio:5") && m.contains("maximum number of jobs"),
        "{m}"
    );
}

#[test]
fn iodepth_beyond_memory_is_refused_and_a_large_valid_one_runs() {
    let started = Instant::now();
    let m = refusal(&format!("{BASE}iodepth=100000000\n"));
    assert!(m.contains("unable to allocate"), "{m}");
    // Valid and far above what 16 I/Os can use: allocations follow use.
    let p = profile("nullblk", &[]);
    let jf = parse(&format!("{BASE}iodepth=5000000\n")).unwrap();
    let out = run_jobs(&jf, &p, 1, &fio_source).unwrap();
    assert_eq!(out.result.jobs[0].dirs[0].total_ios, 16);
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
}

#[test]
fn time_based_without_runtime_runs_the_size_once() {
    let p = profile("nullblk", &[]);
    for extra in ["time_based\n", "time_based\nruntime=0\n"] {
        let jf = parse(&format!("{BASE}{extra}")).unwrap();
        assert!(
            jf.warnings.iter().any(|w| w
                .message
                .contains("time_based requires a runtime/timeout setting")),
            "{:?}",
            jf.warnings
        );
        let out = run_jobs(&jf, &p, 1, &fio_source).unwrap();
        assert_eq!(out.result.jobs[0].dirs[0].io_bytes, 64 << 10, "{extra}");
    }
}

#[test]
fn a_rate_limited_time_based_job_ends_at_its_runtime() {
    // rate=1 (byte/s) with 4 KiB blocks: the second I/O is due after 4096
    // s; io_u.c rate_ddir sleeps only to the runtime's end.
    let p = profile("nullblk", &[]);
    let jf =
        parse("[j]\nioengine=psync\ndirect=1\nsize=64k\nrate=1\ntime_based\nruntime=3\n").unwrap();
    let out = run_jobs(&jf, &p, 1, &fio_source).unwrap();
    let ms = out.result.jobs[0].job_runtime / 1_000_000;
    assert!((3000..3010).contains(&ms), "job_runtime {ms} ms");
}

#[test]
fn direct_io_needs_whole_sectors() {
    // A real run on ext4 (/var/tmp): bs=100 with direct=1 fails its first
    // I/O with EINVAL.
    for (line, what) in [
        ("bs=100", "block size of 100 bytes"),
        ("bsrange=512-1000", "block size of 1000 bytes"),
        ("offset=100", "offset 100"),
    ] {
        let m = refusal(&format!(
            "[j]\nioengine=psync\ndirect=1\nsize=64k\n{line}\n"
        ));
        assert!(m.contains(what) && m.contains("err=22"), "{line}: {m}");
    }
    accepted("[j]\nioengine=psync\ndirect=1\nsize=64k\nbs=1k\n");
    // The null engine does no I/O: fio takes any size.
    accepted("[j]\nioengine=null\ndirect=1\nsize=64k\nbs=100\n");
}

// 4. --parse-only makes every check a run makes; valid values flashpath
// does not model are refused by name.

#[test]
fn parse_only_refuses_what_the_run_refuses() {
    let path = write(
        "job.fio",
        "[j]\nioengine=psync\ndirect=1\nsize=1m\nnrfiles=2\nfile_service_type=zipf:1.2\n",
    );
    let e = parse_only(&path, "nullblk", &[]).unwrap_err();
    assert!(e.message.contains("file_service_type=zipf"), "{e}");
    assert!(e.message.contains("not modelled by flashpath"), "{e}");
    let path = write("job.fio", "[j]\nioengine=psync\ndirect=1\nsize=100\n");
    let e = parse_only(&path, "nullblk", &[]).unwrap_err();
    assert!(e.message.contains("size too small"), "{e}");
}

#[test]
fn valid_values_not_modelled_are_named_so() {
    for (line, name) in [
        ("sync_file_range=write:8", "sync_file_range"),
        ("random_distribution=zipf:1.2:0.5", "center"),
        ("filesize=4k-8k", "filesize"),
    ] {
        let m = refusal(&format!("{BASE}{line}\n"));
        assert!(
            m.contains("not modelled by flashpath") && m.contains(name),
            "{line}: {m}"
        );
    }
    // And an invalid one is called invalid.
    let m = refusal(&format!("{BASE}sync_file_range=read\n"));
    assert!(
        m.contains("failed parsing") && m.contains("wait_before, write, wait_after"),
        "{m}"
    );
}

#[test]
fn zoned_abs_is_modelled() {
    let jf = accepted(&format!(
        "{BASE}rw=randread\nrandom_distribution=zoned_abs:60/16k:40/48k\n"
    ));
    assert_eq!(
        jf.jobs[0].random_distribution,
        RandomDistribution::ZonedAbs(vec![(60.0, 16 << 10), (40.0, 48 << 10)])
    );
    // 60% of the reads fall in the first 16 KiB, 40% in the next 48 KiB.
    let p = profile("nullblk", &[]);
    let jf = parse("[j]\nioengine=null\nsize=64k\nrw=randread\nio_size=16000k\nnorandommap\nrandom_distribution=zoned_abs:60/16k:40/48k\nwrite_iolog=x\n").unwrap();
    let out = run_jobs(&jf, &p, 1, &fio_source).unwrap();
    let log = &out.files.iter().find(|f| f.name == "x").unwrap().contents;
    let offsets: Vec<u64> = log
        .lines()
        .filter(|l| l.contains(" read "))
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
        .collect();
    assert_eq!(offsets.len(), 4000);
    let first = offsets.iter().filter(|o| **o < 16 << 10).count() as f64 / 4000.0;
    assert!(
        (first - 0.6).abs() < 0.05,
        "share in the first zone {first}"
    );
    // Zones past the file's end: fio's "zoned_abs sizes exceed file size".
    let m = refusal(&format!(
        "{BASE}rw=randread\nrandom_distribution=zoned_abs:60/10G:30/20G:10/30G\n"
    ));
    assert!(m.contains("zoned_abs sizes exceed file size"), "{m}");
    // Its access percentages must add up to 100, as zoned's.
    let m = refusal(&format!(
        "{BASE}random_distribution=zoned_abs:60/16k:30/48k\n"
    ));
    assert!(m.contains("access percentage don't add up to 100"), "{m}");
}

// 5. A huge option name: a bounded "did you mean" and a bounded message.

#[test]
fn a_megabyte_option_name_is_refused_quickly_and_briefly() {
    let name = "x".repeat(1 << 20);
    let started = Instant::now();
    let m = refusal(&format!("[j]\n{name}=1\n"));
    assert!(
        started.elapsed().as_millis() < 500,
        "{:?}",
        started.elapsed()
    );
    assert!(
        m.len() < 300 && m.contains("t.fio:2") && m.contains("not a fio option"),
        "{m}"
    );
    // A near miss still gets its hint.
    let m = refusal(&format!("{BASE}ioedepth=4\n"));
    assert!(m.contains("did you mean 'iodepth'"), "{m}");
}

/// size=N% is N% of the file's real size, rounded down to the smallest
/// block size (filesetup.c setup_files, `o->size_percent`): of a raw
/// device, its capacity. A file that does not exist yet has no size, and
/// fio 3.33 fails the job ("you need to specify size=", checked with the
/// real fio on parse-probes/ranges-and-splits.fio: tests/fio_coverage.py).
#[test]
fn size_percent_is_of_the_device() {
    let cap: u64 = 8 << 20;
    let o = format!("device.capacity={cap}B");
    for (pct, bs) in [(20u64, 4096u64), (50, 65536), (100, 4096)] {
        let job = format!(
            "[j]\nfilename=/dev/nullb0\nioengine=psync\ndirect=1\nrw=read\nbs={bs}\nsize={pct}%\n"
        );
        let out = common::run_str("nullblk", &job, &[&o], 1);
        let want = cap * pct / 100 / bs * bs;
        assert_eq!(out.result.jobs[0].dirs[0].io_bytes, want, "size={pct}%");
    }
    let m = refusal("[j]\nioengine=psync\nrw=read\nsize=20%\n");
    assert!(m.contains("you need to specify size="), "{m}");
}

/// flashpath's host is one NUMA node, like this machine: node 0 is every
/// CPU and all memory, and a node past it fails as fio 3.33 with libnuma
/// fails it (examples/numa.fio on this machine: "numa_parse_nodestring
/// failed", then "failed parsing numa_cpu_nodes=0-1"; the same for
/// numa_mem_policy=interleave:0-1).
#[test]
fn numa_placement_is_on_the_one_node_host() {
    accepted(&format!("{BASE}numa_cpu_nodes=0\nnuma_mem_policy=bind:0\n"));
    accepted(&format!("{BASE}numa_mem_policy=interleave:0\n"));
    for line in ["numa_cpu_nodes=0-1", "numa_mem_policy=interleave:0-1"] {
        let m = refusal(&format!("{BASE}{line}\n"));
        assert!(
            m.contains("numa_parse_nodestring failed")
                && m.contains(&format!("failed parsing {line}")),
            "{line}: {m}"
        );
    }
}

/// verify_state_load=1: fio opens `local-NAME-N-verify.state` in its
/// working directory before the jobs start and, without it, fails the run
/// ("open state file: No such file or directory", "state file:
/// local-job-0-verify.state (for_write=0)": fio 3.33 on
/// upstream-tests/t0036-post.fio alone, tests/fio_coverage.py); N counts
/// the clones of earlier jobs. With the file there the job is refused, as
/// flashpath does not replay a state file.
#[test]
fn verify_state_load_opens_fios_state_file() {
    let path = write(
        "job.fio",
        "[a]\nioengine=null\nsize=64k\nnumjobs=2\n[job]\nioengine=null\nsize=64k\nverify=md5\nverify_state_load=1\n",
    );
    let e = parse_only(&path, "nullblk", &[]).unwrap_err().to_string();
    assert!(
        e.contains("open state file: No such file or directory")
            && e.contains("state file: local-job-2-verify.state (for_write=0)"),
        "{e}"
    );
    std::fs::write(path.with_file_name("local-job-2-verify.state"), b"").unwrap();
    let e = parse_only(&path, "nullblk", &[]).unwrap_err().to_string();
    assert!(e.contains("not modelled by flashpath"), "{e}");
    let off = write(
        "job.fio",
        "[job]\nioengine=null\nsize=64k\nverify_state_load=0\n",
    );
    parse_only(&off, "nullblk", &[]).unwrap();
}

/// log_unix_epoch (and log_alternate_epoch): every log sample's time is
/// the job's start in ms since the Unix epoch plus its time since the job
/// started (time.c set_epoch_time as the job starts, stat.c
/// __add_log_sample `t + td->alternate_epoch`); flashpath's virtual clock
/// starts at the epoch, so a job that starts 1 s in shifts each line by
/// exactly 1000 ms, averaged windows included, and the values are the same.
#[test]
fn log_unix_epoch_shifts_log_times_by_the_job_start() {
    let base = "[j]\nioengine=psync\ndirect=1\nsize=4m\nrw=randread\nstartdelay=1\n\
                write_lat_log=l\nwrite_bw_log=b\n";
    let lines = |extra: &str| -> Vec<Vec<Vec<u64>>> {
        let out = common::run_str("nullblk", &format!("{base}{extra}"), &[], 1);
        let mut files: Vec<_> = out.files.iter().collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        files
            .iter()
            .map(|f| {
                f.contents
                    .lines()
                    .map(|l| l.split(", ").map(|v| v.parse().unwrap()).collect())
                    .collect()
            })
            .collect()
    };
    for (avg, epoch) in [
        ("", "log_unix_epoch=1\n"),
        ("log_avg_msec=1\n", "log_alternate_epoch=1\n"),
    ] {
        let plain = lines(avg);
        let shifted = lines(&format!("{avg}{epoch}"));
        assert_eq!(plain.len(), shifted.len());
        // lat, clat and bw have lines (slat: none for a sync engine).
        assert!(plain.iter().filter(|f| !f.is_empty()).count() >= 3, "{avg}");
        for (p, s) in plain.iter().zip(&shifted) {
            assert_eq!(p.len(), s.len());
            for (pl, sl) in p.iter().zip(s) {
                assert_eq!(sl[0], pl[0] + 1000, "{epoch}");
                assert_eq!(sl[1..], pl[1..]);
            }
        }
    }
}
