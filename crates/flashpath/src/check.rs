//! Every check flashpath makes on an input, without simulating: the entry
//! points of the fuzz targets (`fuzz/`) and of the test that replays what
//! they found (`tests/fuzz_regressions.rs`). Each returns the error a user
//! would see, or `Ok` when a run would start; none may panic, hang or
//! exhaust memory, whatever the input.
//!
//! The `*_input` functions read one fuzz input (bytes) in its target's
//! format, so a saved crash replays exactly as the fuzzer ran it.

use crate::error::Result;
use crate::profile::Profile;
use crate::run;
use crate::workload::fio::parse_job_str;
use std::collections::BTreeMap;
use std::path::Path;

/// The shipped machine profiles (not the host fragments).
pub fn shipped_profiles() -> Vec<&'static str> {
    Profile::builtin_names()
        .filter(|n| !n.contains('/'))
        .collect()
}

thread_local! {
    /// Profiles already loaded: a fuzz target runs thousands of inputs a
    /// second on the same few, and loading parses their TOML.
    static LOADED: std::cell::RefCell<BTreeMap<String, Profile>> =
        const { std::cell::RefCell::new(BTreeMap::new()) };
}

fn load(name: &str) -> Result<Profile> {
    if let Some(p) = LOADED.with(|l| l.borrow().get(name).cloned()) {
        return Ok(p);
    }
    let p = Profile::load(name)?;
    LOADED.with(|l| l.borrow_mut().insert(name.to_string(), p.clone()));
    Ok(p)
}

/// A profile's TOML text (named `fuzz.toml`), parsed and built into the
/// machine it describes. Includes name built-in profiles (or files
/// relative to the current directory).
pub fn profile_text(text: &str) -> Result<()> {
    let profile = Profile::from_text("fuzz.toml", text, None)?;
    run::build_model(&profile)?;
    Ok(())
}

/// A small direct job, to build a whole machine (blk-mq queues, threads)
/// on a profile under test.
const SMALL_JOB: &str = "[j]\nioengine=psync\ndirect=1\nrw=randread\nsize=1m\n";

/// `--set` assignments applied to the profile `name`, then every builder
/// and the machine of a small job (`dir` holds nothing it reads).
pub fn overrides(name: &str, assignments: &[&str], dir: &Path) -> Result<()> {
    prepare_text(SMALL_JOB, dir, &overridden(name, assignments)?)
}

fn overridden(name: &str, assignments: &[&str]) -> Result<Profile> {
    let mut profile = load(name)?;
    for a in assignments {
        crate::parameters::apply_override(&mut profile, a)?;
    }
    Ok(profile)
}

/// Whether building `profile` preconditions its FTL: a valid request for
/// work that takes seconds per GiB of device (every 4 KiB rewritten once
/// per unit of `device.flash.precondition_random_overwrites`), not a hang.
/// Fuzz inputs that ask for it are skipped; values out of range are not
/// (building refuses them at once).
fn preconditions(profile: &Profile) -> bool {
    use crate::device::flash::PreconditionParams;
    PreconditionParams::DECLS.iter().all(|d| profile.has(d.key))
        && PreconditionParams::read(profile).is_ok_and(|p| p.precondition_random_overwrites > 0.0)
}

/// A job file's text, as `dir/job.fio` (its includes and iologs are looked
/// for in `dir`), parsed for the profile `name` and prepared to run.
/// `${NAME}` expands to nothing, so the environment changes nothing.
pub fn job_text(text: &str, dir: &Path, name: &str) -> Result<()> {
    prepare_text(text, dir, &load(name)?)
}

fn prepare_text(text: &str, dir: &Path, profile: &Profile) -> Result<()> {
    let mut ctx = run::parse_context(profile)?;
    ctx.env.clear();
    let path = dir.join("job.fio");
    let jobs = parse_job_str(&path.display().to_string(), text, dir, &ctx)?;
    run::prepare(&jobs, profile, 0, &run::fio_source, dir)?;
    Ok(())
}

/// The fio iolog at `path` replayed by a job (`read_iolog`, psync,
/// direct) on the profile `name`, prepared to run.
pub fn iolog_file(path: &Path, name: &str) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file = path.file_name().unwrap_or_default().to_string_lossy();
    let job = format!("[replay]\nread_iolog={file}\nioengine=psync\ndirect=1\n");
    job_text(&job, dir, name)
}

/// An iozone command line (the arguments after `--`) on the profile
/// `name`, prepared to run.
pub fn iozone_args(args: &[String], name: &str) -> Result<()> {
    use crate::workload::iozone;
    let a = iozone::parse_args(args)?;
    let profile = load(name)?;
    let (_, jobs) = iozone::build_jobs(&a);
    run::prepare(&jobs, &profile, 0, &run::fio_source, Path::new("."))?;
    Ok(())
}

/// What one fuzz input did: the outcome per profile or file it ran on, or
/// `Skipped` when the input would leave the sandbox.
#[derive(Debug)]
pub enum Outcome {
    Ran(Vec<Result<()>>),
    Skipped,
}

/// A file name the fuzz input may create in the sandbox: plain, short.
fn sandbox_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Whether a job text only opens files in the sandbox: `include` and
/// `read_iolog` lines name sandbox files, or the endless `/dev/zero` and
/// the empty `/dev/null` (a fuzzer must not read `/dev/stdin` or the
/// machine's files).
fn stays_in_sandbox(text: &str) -> bool {
    text.lines().all(|line| {
        let l = line.trim_start();
        let opens = l.starts_with("include") || l.to_ascii_lowercase().contains("iolog");
        if !opens {
            return true;
        }
        let value = l.split_once(['=', ' ', '\t']).map_or("", |(_, v)| v).trim();
        matches!(value, "/dev/zero" | "/dev/null") || !(value.contains('/') || value.contains(".."))
    })
}

/// `fio_job` input: a job file, and more files for it to include. A line
/// `#@ NAME` (a comment to fio) starts the file NAME in the sandbox; the
/// text before the first one is `job.fio`. A first line `#@profile NAME`
/// picks the shipped profile (default `nullblk`). Runs [`job_text`].
pub fn fio_job_input(data: &[u8], sandbox: &Path) -> Outcome {
    let text = String::from_utf8_lossy(data);
    if !stays_in_sandbox(&text) {
        return Outcome::Skipped;
    }
    let mut profile = "nullblk";
    let mut body = text.as_ref();
    if let Some(rest) = body.strip_prefix("#@profile ") {
        let (name, after) = rest.split_once('\n').unwrap_or((rest, ""));
        match shipped_profiles().into_iter().find(|n| *n == name.trim()) {
            Some(n) => profile = n,
            None => return Outcome::Skipped,
        }
        body = after;
    }
    clear_sandbox(sandbox);
    let mut parts = body.split("\n#@ ");
    let job = parts.next().unwrap_or_default();
    for part in parts {
        let (name, content) = part.split_once('\n').unwrap_or((part, ""));
        let name = name.trim();
        if !sandbox_name(name) || name == "job.fio" {
            return Outcome::Skipped;
        }
        if std::fs::write(sandbox.join(name), content).is_err() {
            return Outcome::Skipped;
        }
    }
    Outcome::Ran(vec![job_text(job, sandbox, profile)])
}

/// `profile` input: a profile's TOML text. Runs [`profile_text`].
pub fn profile_input(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        // Not text: the TOML reader takes only UTF-8 (a profile file that
        // is not is refused when it is read).
        return Outcome::Skipped;
    };
    // An include line that may name a file outside the sandbox (an
    // absolute path or `..`; an array spread over lines gets through, the
    // fuzzer hardly writes one).
    let leaves = |l: &&str| ["\"/", "'/", ".."].iter().any(|p| l.contains(p));
    if text
        .lines()
        .filter(|l| l.contains("include"))
        .any(|l| leaves(&l))
    {
        return Outcome::Skipped;
    }
    match Profile::from_text("fuzz.toml", text, None) {
        Ok(p) if preconditions(&p) => Outcome::Skipped,
        _ => Outcome::Ran(vec![profile_text(text)]),
    }
}

/// `set_override` input: one `key=value` per line, applied to each shipped
/// profile in turn ([`overrides`]).
pub fn set_override_input(data: &[u8], sandbox: &Path) -> Outcome {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().collect();
    let mut results = Vec::new();
    for name in shipped_profiles() {
        match overridden(name, &lines) {
            Ok(p) if preconditions(&p) => return Outcome::Skipped,
            Ok(p) => results.push(prepare_text(SMALL_JOB, sandbox, &p)),
            Err(e) => results.push(Err(e)),
        }
    }
    Outcome::Ran(results)
}

/// `iolog` input: an iolog's text, written to the sandbox as
/// `trace.iolog` and replayed on `nullblk` (no FTL) and `emmc51-intel`
/// (an FTL under the block device) ([`iolog_file`]).
pub fn iolog_input(data: &[u8], sandbox: &Path) -> Outcome {
    clear_sandbox(sandbox);
    let path = sandbox.join("trace.iolog");
    if std::fs::write(&path, data).is_err() {
        return Outcome::Skipped;
    }
    Outcome::Ran(
        ["nullblk", "emmc51-intel"]
            .into_iter()
            .map(|name| iolog_file(&path, name))
            .collect(),
    )
}

/// The block trace at `path` read to its end in `format`, then, when it
/// reads, checked as a replay would (the pass before the run, and every
/// address against a 1 GiB device, wrapped).
pub fn trace_file(path: &Path, format: &crate::workload::trace::Format) -> Result<()> {
    use crate::workload::trace::replay::{Remap, TraceJob, TraceOptions};
    let mut r = crate::workload::trace::open(path, format)?;
    while r.next_record()?.is_some() {}
    let opts = TraceOptions {
        format: Some(format.clone()),
        remap: Remap::Wrap,
        ..TraceOptions::default()
    };
    let job = TraceJob::load(
        path.to_path_buf(),
        format.clone(),
        opts,
        crate::workload::iolog::ReplayOptions::default(),
    )?;
    job.check_within(1 << 30)?;
    let mut src = crate::workload::trace::replay::source_of(&std::sync::Arc::new(job), 0, 1 << 30);
    while let Some(u) = src.next_io() {
        assert!(
            u.offset + u64::from(u.len) <= 1 << 30,
            "a wrapped I/O past the device"
        );
    }
    Ok(())
}

/// `trace` input: a block trace, written to the sandbox as `trace`, read
/// by every trace reader in turn (detection first), each to its end or to
/// its one error ([`trace_file`]).
pub fn trace_input(data: &[u8], sandbox: &Path) -> Outcome {
    use crate::workload::trace::{self, Format};
    clear_sandbox(sandbox);
    let path = sandbox.join("trace");
    if std::fs::write(&path, data).is_err() {
        return Outcome::Skipped;
    }
    let mut results = vec![trace::detect(&path).map(|_| ())];
    let csv = trace::delimited::Mapping::parse(
        "time=0:us,op=1:R|r/W|w/T,offset=2:bytes,len=3:sectors,device=4,latency=5:ns",
    )
    .map(Format::Csv);
    for f in [
        Ok(Format::Blktrace),
        Ok(Format::Blkparse),
        Ok(Format::Msr),
        Ok(Format::Mqsim),
        Ok(Format::Disksim),
        Ok(Format::Blkreplay),
        Ok(Format::Spc),
        Ok(Format::Alibaba),
        Ok(Format::Tencent),
        csv,
    ]
    .into_iter()
    .flatten()
    {
        results.push(trace_file(&path, &f));
    }
    // merge_blktrace_file: the input merged with itself (half time, and
    // twice over), then the merge read as a replay reads it.
    let merged = sandbox.join("merged");
    let merge = trace::merge::merge(&[path.clone(), path.clone()], &[50, 100], &[1, 2], &merged);
    results.push(merge.and_then(|_| trace_file(&merged, &Format::Blktrace)));
    // The depth fio probes from a blktrace a job replays without iodepth.
    results.push(trace::blktrace::fio_probed_depth(&path, [1, 1, 1]).map(|_| ()));
    Outcome::Ran(results)
}

/// `trace_columns` input: a column mapping (`flashpath replay --columns`)
/// or a blkparse `-f` format (`--blkparse-format`, a line starting with
/// `%`) on the first line, the trace after it. The mapping or format is
/// parsed; when it parses, the trace is read with it, checked and replayed
/// as [`trace_file`] does.
pub fn trace_columns_input(data: &[u8], sandbox: &Path) -> Outcome {
    use crate::workload::trace::{delimited::Mapping, Format};
    clear_sandbox(sandbox);
    let split = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
    let Ok(map_text) = std::str::from_utf8(&data[..split]) else {
        return Outcome::Skipped;
    };
    let body = data.get(split + 1..).unwrap_or(&[]);
    // A first line that starts with '%' is a blkparse -f format
    // (--blkparse-format), read the same way.
    let parsed = if map_text.starts_with('%') {
        crate::workload::trace::blkparse::LineFormat::parse(map_text).map(Format::BlkparseFormat)
    } else {
        Mapping::parse(map_text).map(Format::Csv)
    };
    let format = match parsed {
        Ok(f) => f,
        // A refused mapping is a message, never a panic.
        Err(m) => {
            assert!(!m.is_empty(), "an empty message for mapping {map_text:?}");
            return Outcome::Ran(vec![Err(crate::error::InputError::new(
                "--columns",
                None,
                m,
            ))]);
        }
    };
    let path = sandbox.join("trace.csv");
    if std::fs::write(&path, body).is_err() {
        return Outcome::Skipped;
    }
    Outcome::Ran(vec![trace_file(&path, &format)])
}

/// `iozone_args` input: one argument per line, run on `nullblk` (the
/// cheapest machine to build: this target is about the command line and
/// the jobs it makes; the device builders have their own targets)
/// ([`iozone_args`]).
pub fn iozone_args_input(data: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(data);
    let args: Vec<String> = text.lines().map(str::to_string).collect();
    Outcome::Ran(vec![iozone_args(&args, "nullblk")])
}

/// A dd command line (one operand a line, bytes as given: dd reads its
/// argv as bytes) parsed as dd parses it, and the job it makes prepared on
/// `nullblk`, as `flashpath dd` would run it.
pub fn dd_args(operands: &[&[u8]]) -> Result<()> {
    let dd = crate::workload::dd::DdCommand::parse(operands)?;
    let profile = load("nullblk")?;
    let base = Path::new(".");
    let jobs = parse_job_str(
        &dd.display,
        &dd.job_text(),
        base,
        &run::parse_context(&profile)?,
    )?;
    run::prepare(&jobs, &profile, 0, &run::fio_source, base)?;
    Ok(())
}

/// The `dd_args` fuzz target's input: one dd operand a line.
pub fn dd_args_input(data: &[u8]) -> Outcome {
    let operands: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    Outcome::Ran(vec![dd_args(&operands)])
}

/// Remove what the previous input wrote.
fn clear_sandbox(sandbox: &Path) {
    if let Ok(entries) = std::fs::read_dir(sandbox) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
