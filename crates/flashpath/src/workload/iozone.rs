//! iozone command lines (iozone 3.4xx semantics) turned into stonewalled
//! phases of per-process jobs, and iozone's throughput-mode report.
//!
//! Options: `-s SIZE` (per file; k default, k/m/g suffixes), `-r RECLEN`,
//! `-i N` (0 write/rewrite, 1 read/re-read, 2 random read/random write,
//! 8 mixed workload; repeatable), `-I` (O_DIRECT), `-t N` (throughput mode
//! with N processes), `-l N` / `-u N` (lower/upper process count: every
//! count from l to u is run), `-F f1 f2 ...` (one file per process), `-e`
//! (fsync in timing), `-c` (close in timing), `-+n` (no retests), `-w`
//! (keep files), `-x` (stonewalling off). Single-letter flags combine as
//! getopt allows (`-ecI`).
//!
//! Each test is a wave of one synchronous job per process over its own
//! file: iozone's children start together (stonewall barrier) and each
//! does up to `size / reclen` records. Stonewalling (iozone's default; `-x`
//! turns it off): the first child to finish its records sets `*stop_flag`
//! and every other child leaves its loop at the next record, without
//! counting the record that was in flight when the flag was set (iozone.c
//! 3.414, thread_ranread_test and the other child tests: `if(*stop_flag)
//! ... break;` at the loop top, `so_far -= reclen/1024` after a record
//! that ends with the flag set, `*stop_flag=1` after the loop `if(!xflag)`).
//! Modelled as fio's `exitall` within the phase's group (the stonewall
//! starts a new group), the child's bytes taken when it was terminated
//! (`JobResult::stopped_bytes`) and its time when it ends. "Children see
//! throughput" is the sum of each child's bytes over its own elapsed
//! time; "Parent sees" is all bytes over the wave's elapsed time.
//! The mixed workload (-i 8) gives even children random reads and odd
//! children random writes (iozone.c thread_mix_test: "Simple round robin",
//! `selector = xx % 2`, random unless `-+p`/seq_mix).
//!
//! Without `-I` the tests go through the page cache (`mm/`), and `-e` adds
//! the fsync of what a writing test left dirty to its timing. Not
//! modelled: the fsync/close that `-e`/`-c` add with O_DIRECT (no cost on a
//! device without a volatile cache model); file creation (the files exist
//! on the device: tests 1, 2 and 8 may run without test 0).

use crate::error::{clip, InputError, Result};
use crate::report::RunResult;
use crate::workload::fio::{BlockSize, IoEngine, JobFile, JobSpec, RwKind};

#[derive(Clone, Debug, PartialEq)]
pub struct IozoneArgs {
    pub size: u64,
    pub reclen: u64,
    pub tests: Vec<u32>,
    pub direct: bool,
    pub procs: Vec<u32>,
    pub files: Vec<String>,
    pub fsync: bool,
    pub close: bool,
    pub no_retest: bool,
    pub keep_files: bool,
    /// iozone's stonewalling (on unless `-x`): the first child to finish
    /// stops the others.
    pub stonewall: bool,
}

fn err(msg: String) -> InputError {
    InputError::new("iozone command line", None, msg)
}

/// Processes of one throughput test: iozone's own limit (iozone.c
/// `MAXSTREAMS`, "Invalid options: maximum streams for throughput is
/// MAXSTREAMS"); each is a simulated thread with its own file.
const MAX_PROCS: u32 = 256;

/// Simulated processes of one command, all phases and counts: `-t 256`
/// (MAXSTREAMS) with all seven phases is 1792.
const MAX_PROCESS_RUNS: u64 = 2048;

/// The largest `-s`/`-r`: 1 PiB, past any device simulated, and far from
/// where bytes overflow u64.
const MAX_SIZE: u64 = 1 << 50;

/// iozone sizes: a number in kB, or with a k/m/g suffix.
fn parse_size(opt: &str, v: &str) -> Result<u64> {
    let v = v.trim();
    let (num, mult) = match v.chars().last() {
        Some('k' | 'K') => (&v[..v.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&v[..v.len() - 1], 1 << 20),
        Some('g' | 'G') => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1 << 10),
    };
    let n: u64 = num.parse().map_err(|_| {
        err(format!(
            "{opt} {}: not a size (a number of kB, or with k, m or g)",
            clip(v)
        ))
    })?;
    if n == 0 {
        return Err(err(format!("{opt} {v}: must be positive")));
    }
    n.checked_mul(mult)
        .filter(|b| *b <= MAX_SIZE)
        .ok_or_else(|| err(format!("{opt} {v}: more than 1 PiB")))
}

fn parse_count(opt: &str, v: &str) -> Result<u32> {
    let n = v
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| err(format!("{opt} {}: not a positive count", clip(v))))?;
    if n > MAX_PROCS {
        return Err(err(format!(
            "{opt} {n}: more than iozone's {MAX_PROCS} processes (MAXSTREAMS)"
        )));
    }
    Ok(n)
}

pub fn parse_args(args: &[String]) -> Result<IozoneArgs> {
    let mut size = None;
    let mut reclen = None;
    let mut tests = Vec::new();
    let mut direct = false;
    let (mut t, mut l, mut u) = (None, None, None);
    let mut files = Vec::new();
    let (mut fsync, mut close, mut no_retest, mut keep) = (false, false, false, false);
    let mut stonewall = true;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "-+n" {
            no_retest = true;
            continue;
        }
        if a.starts_with("-+") {
            return Err(err(format!(
                "{}: option not supported by flashpath",
                clip(a)
            )));
        }
        let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) else {
            return Err(err(format!("{}: unexpected argument", clip(a))));
        };
        let chars = flags.char_indices();
        for (k, c) in chars {
            let with_value = matches!(c, 's' | 'r' | 'i' | 't' | 'l' | 'u');
            if with_value {
                let rest = &flags[k + 1..];
                let v = if !rest.is_empty() {
                    rest.to_string()
                } else if i < args.len() {
                    i += 1;
                    args[i - 1].clone()
                } else {
                    return Err(err(format!("-{c}: needs a value")));
                };
                let opt = format!("-{c}");
                match c {
                    's' => size = Some(parse_size(&opt, &v)?),
                    'r' => reclen = Some(parse_size(&opt, &v)?),
                    'i' => {
                        let n: u32 = v
                            .parse()
                            .map_err(|_| err(format!("-i {}: not a test number", clip(&v))))?;
                        if !matches!(n, 0 | 1 | 2 | 8) {
                            return Err(err(format!(
                                "-i {n}: test not supported (flashpath runs 0, 1, 2 and 8)"
                            )));
                        }
                        tests.push(n);
                    }
                    't' => t = Some(parse_count(&opt, &v)?),
                    'l' => l = Some(parse_count(&opt, &v)?),
                    _ => u = Some(parse_count(&opt, &v)?),
                }
                break;
            }
            match c {
                'I' => direct = true,
                'e' => fsync = true,
                'c' => close = true,
                'w' => keep = true,
                'x' => stonewall = false,
                'F' => {
                    while i < args.len() && !args[i].starts_with('-') {
                        files.push(args[i].clone());
                        i += 1;
                    }
                    if files.is_empty() {
                        return Err(err("-F: needs file names".into()));
                    }
                }
                _ => {
                    return Err(err(format!(
                        "-{}: option not supported by flashpath (supported: -s -r -i -I -t -l -u -F -e -c -+n -w -x)",
                        clip(&c.to_string())
                    )))
                }
            }
        }
    }
    let procs: Vec<u32> = match (l, u, t) {
        (Some(l), Some(u), _) if l > u => {
            return Err(err(format!("-l {l} -u {u}: lower limit above upper limit")))
        }
        (Some(l), Some(u), _) => (l..=u).collect(),
        (Some(n), None, _) | (None, Some(n), _) => vec![n],
        (None, None, Some(n)) => vec![n],
        (None, None, None) => {
            return Err(err(
                "-t N (throughput mode) is required: flashpath runs iozone's throughput mode"
                    .into(),
            ))
        }
    };
    if tests.is_empty() {
        return Err(err("-i: name at least one test (0, 1, 2 or 8)".into()));
    }
    let size = size.ok_or_else(|| err("-s: the file size is required".into()))?;
    let reclen = reclen.unwrap_or(4 << 10);
    if reclen > size || !size.is_multiple_of(reclen) {
        return Err(err(format!(
            "-r {}k: the record size must divide the file size -s {}k",
            reclen >> 10,
            size >> 10
        )));
    }
    if !reclen.is_multiple_of(4096) {
        return Err(err(format!(
            "-r {reclen}: O_DIRECT records must be multiples of 4 KiB"
        )));
    }
    // Every process of every phase of every count is a simulated thread
    // with fio's statistics (latency histograms, ~150 KiB): `-l 10 -u 113`
    // of two tests is 12688 of them, 2 GiB.
    let runs = phase_names(&tests, no_retest).len() as u64
        * procs.iter().map(|&n| u64::from(n)).sum::<u64>();
    if runs > MAX_PROCESS_RUNS {
        return Err(err(format!(
            "{runs} process runs (the processes of every count from -l to -u, in each test \
             phase) is more than the {MAX_PROCESS_RUNS} flashpath simulates in one command"
        )));
    }
    let maxp = *procs.iter().max().unwrap() as usize;
    if files.is_empty() {
        files = (0..maxp).map(|k| format!("iozone.DUMMY.{k}")).collect();
    } else if files.len() < maxp {
        return Err(err(format!(
            "-F: {} file names for {maxp} processes",
            files.len()
        )));
    }
    Ok(IozoneArgs {
        size,
        reclen,
        tests,
        direct,
        procs,
        files,
        fsync,
        close,
        no_retest,
        keep_files: keep,
        stonewall,
    })
}

/// One iozone test phase: its name as iozone prints it and the direction
/// pattern of child `k`.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub name: &'static str,
    pub procs: u32,
}

fn phase_rw(name: &str, child: u32) -> RwKind {
    match name {
        "initial writers" | "rewriters" => RwKind::Write,
        "readers" | "re-readers" => RwKind::Read,
        "random readers" => RwKind::RandRead,
        "random writers" => RwKind::RandWrite,
        _ => {
            if child.is_multiple_of(2) {
                RwKind::RandRead
            } else {
                RwKind::RandWrite
            }
        }
    }
}

/// The phases in iozone's order and the job file that runs them.
/// The test phases `-i` asks for, in iozone's order.
fn phase_names(tests: &[u32], no_retest: bool) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    let mut tests = tests.to_vec();
    tests.sort_unstable();
    tests.dedup();
    for t in tests {
        match t {
            0 => {
                names.push("initial writers");
                if !no_retest {
                    names.push("rewriters");
                }
            }
            1 => {
                names.push("readers");
                if !no_retest {
                    names.push("re-readers");
                }
            }
            2 => {
                names.push("random readers");
                names.push("random writers");
            }
            _ => names.push("mixed workload"),
        }
    }
    names
}

pub fn build_jobs(a: &IozoneArgs) -> (Vec<Phase>, JobFile) {
    let names = phase_names(&a.tests, a.no_retest);
    let mut phases = Vec::new();
    let mut jobs = Vec::new();
    for &n in &a.procs {
        for name in &names {
            phases.push(Phase { name, procs: n });
            for k in 0..n {
                let spec = JobSpec {
                    name: format!("{name}#{k}"),
                    rw: phase_rw(name, k),
                    bs: std::array::from_fn(|_| BlockSize::Fixed(a.reclen)),
                    size: Some(a.size),
                    ioengine: IoEngine::Psync,
                    // Without -I iozone reads and writes through the page
                    // cache, never drops it between tests (a re-read
                    // finds what the write left) and gives no fadvise; -e
                    // fsyncs after a writing test, inside its timing.
                    direct: a.direct,
                    invalidate: false,
                    fadvise_hint: crate::workload::fio::FadviseHint::None,
                    end_fsync: a.fsync
                        && !a.direct
                        && phase_rw(name, k).has(crate::workload::Ddir::Write),
                    norandommap: true,
                    stonewall: k == 0,
                    // iozone's stop_flag: the first child of the phase to
                    // end stops the rest of its phase (its fio group).
                    exitall: a.stonewall,
                    exit_what: "group".to_string(),
                    filename: Some(a.files[k as usize].clone()),
                    ..JobSpec::default()
                };
                jobs.push(spec);
            }
        }
    }
    (
        phases,
        JobFile {
            path: "iozone command line".into(),
            jobs,
            global_options: None,
            ignored: Vec::new(),
            warnings: Vec::new(),
            fio_messages: Vec::new(),
            bandwidth_log: None,
        },
    )
}

/// One phase's throughput figures, kB/s (1 kB = 1024 B, as iozone).
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseResult {
    pub name: String,
    pub procs: u32,
    pub children_kbps: f64,
    pub parent_kbps: f64,
    pub min_kbps: f64,
    pub max_kbps: f64,
    pub avg_kbps: f64,
    pub min_xfer_kb: f64,
}

pub fn summarize(phases: &[Phase], result: &RunResult) -> Vec<PhaseResult> {
    let mut out = Vec::new();
    let mut idx = 0usize;
    for ph in phases {
        let jobs = &result.jobs[idx..idx + ph.procs as usize];
        idx += ph.procs as usize;
        let mut per = Vec::new();
        let mut bytes = 0u64;
        let mut wall = 0u64;
        let mut min_xfer = f64::INFINITY;
        for j in jobs {
            // A child stopped by the stonewall counts what it had done
            // when the flag was set, not the record it then finished.
            let b: u64 = j
                .stopped_bytes
                .unwrap_or_else(|| j.dirs.iter().map(|d| d.io_bytes).sum());
            bytes += b;
            wall = wall.max(j.job_runtime);
            min_xfer = min_xfer.min(b as f64 / 1024.0);
            let secs = j.job_runtime as f64 / 1e9;
            per.push(if secs > 0.0 {
                b as f64 / 1024.0 / secs
            } else {
                0.0
            });
        }
        let children: f64 = per.iter().sum();
        let parent = if wall > 0 {
            bytes as f64 / 1024.0 / (wall as f64 / 1e9)
        } else {
            0.0
        };
        out.push(PhaseResult {
            name: ph.name.to_string(),
            procs: ph.procs,
            children_kbps: children,
            parent_kbps: parent,
            min_kbps: per.iter().cloned().fold(f64::INFINITY, f64::min),
            max_kbps: per.iter().cloned().fold(0.0, f64::max),
            avg_kbps: children / per.len() as f64,
            min_xfer_kb: min_xfer,
        });
    }
    out
}

/// iozone's throughput-mode lines (iozone.c's printf formats).
pub fn render_text(a: &IozoneArgs, rs: &[PhaseResult]) -> String {
    let mut s = String::new();
    s.push_str("\tIozone: Performance Test of File I/O (simulated by flashpath)\n\n");
    s.push_str(&format!(
        "\tFile size set to {} kB\n\tRecord Size {} kB\n",
        a.size >> 10,
        a.reclen >> 10
    ));
    if a.direct {
        s.push_str("\tO_DIRECT feature enabled\n");
    }
    if a.fsync {
        s.push_str("\tInclude fsync in write timing\n");
    }
    if a.close {
        s.push_str("\tInclude close in write timing\n");
    }
    s.push_str("\tCommand line used: iozone ...\n\tOutput is in kBytes/sec\n");
    let mut last = 0;
    for r in rs {
        if r.procs != last {
            s.push_str(&format!(
                "\tThroughput test with {} processes\n\tEach process writes a {} kByte file in {} kByte records\n\n",
                r.procs,
                a.size >> 10,
                a.reclen >> 10
            ));
            last = r.procs;
        }
        s.push_str(&format!(
            "\tChildren see throughput for {:2} {}\t= {:10.2} kB/sec\n",
            r.procs, r.name, r.children_kbps
        ));
        s.push_str(&format!(
            "\tParent sees throughput for {:2} {}\t= {:10.2} kB/sec\n",
            r.procs, r.name, r.parent_kbps
        ));
        s.push_str(&format!(
            "\tMin throughput per process\t\t\t= {:10.2} kB/sec \n",
            r.min_kbps
        ));
        s.push_str(&format!(
            "\tMax throughput per process\t\t\t= {:10.2} kB/sec\n",
            r.max_kbps
        ));
        s.push_str(&format!(
            "\tAvg throughput per process\t\t\t= {:10.2} kB/sec\n",
            r.avg_kbps
        ));
        s.push_str(&format!(
            "\tMin xfer\t\t\t\t\t= {:10.2} kB\n\n",
            r.min_xfer_kb
        ));
    }
    s.push_str("\niozone test complete.\n");
    s
}

pub fn to_json(rs: &[PhaseResult]) -> serde_json::Value {
    serde_json::Value::Array(
        rs.iter()
            .map(|r| {
                serde_json::json!({
                    "test": r.name,
                    "procs": r.procs,
                    "children_kBps": r.children_kbps,
                    "parent_kBps": r.parent_kbps,
                    "min_kBps": r.min_kbps,
                    "max_kBps": r.max_kbps,
                    "avg_kBps": r.avg_kbps,
                    "min_xfer_kB": r.min_xfer_kb,
                })
            })
            .collect(),
    )
}
