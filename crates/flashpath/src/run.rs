//! Running a fio job file on a profile: load both, check the jobs against
//! what fio accepts and what flashpath models, build the machine the
//! profile describes (`model`), lay the jobs' files out on the device and
//! plan their threads (`workload::fio`), run, and gather the results in
//! fio's terms (`report`). iozone and dd command lines run the same way.

use crate::error::{InputError, Result};
use crate::machine::Machine;
use crate::profile::Profile;
use crate::report::RunResult;
use crate::sim::Ns;
use crate::workload::fio::{
    layout::layout,
    parse_job_file, parse_job_str,
    plan::plan_threads,
    replay::{check_iologs_within, load_iologs},
    setup::{check_fio_setup, check_memory, check_modelled, check_polled, check_verify_state},
    zbd, AggBwSampling, JobFile, ParseContext, ZoneMode, NOT_MODELLED,
};
use std::path::Path;

pub use crate::host::config::{host_facts, HostFacts, HOST_CPUS, HOST_MEMORY};
pub use crate::model::{build_model, Model};
pub use crate::report::logs::LogFile;
pub use crate::workload::fio::plan::{fio_source, SourceFactory};

/// Everything a run produced, plus engine figures for benchmarks.
pub struct RunOutput {
    pub result: RunResult,
    pub events: u64,
    pub completed_ios: u64,
    pub submitted_ios: u64,
    /// Files the jobs asked fio to write (`write_lat_log`, `write_iolog`).
    pub files: Vec<LogFile>,
    /// The job file's warnings and the options it lists as ignored, one
    /// message each (what fio prints on stderr before the run), then the
    /// `fio: io_u error ...` lines the jobs printed during it.
    pub notes: Vec<String>,
}

impl RunOutput {
    /// fio's exit status: one for each job clone that ended on an error
    /// (backend.c reap_threads: `if (td->error) exit_value++`).
    pub fn failed_jobs(&self) -> u32 {
        self.result
            .jobs
            .iter()
            .filter(|j| j.failed || j.setup_failed)
            .count() as u32
    }
}

/// The parser's view of the simulated machine: `$ncpus`, `$mb_memory` and
/// `$pagesize` describe it, not the machine flashpath runs on.
pub fn parse_context(profile: &Profile) -> Result<ParseContext> {
    let facts = host_facts(profile)?;
    // 4 KiB pages: x86-64 and the arm64 kernels of the seed devices.
    Ok(ParseContext::from_process_env(
        facts.ncpus,
        facts.mb_memory,
        4096,
    ))
}

/// Load a profile and apply its `--set` overrides.
fn load_profile(device: &str, overrides: &[String]) -> Result<Profile> {
    let mut profile = Profile::load(device)?;
    for o in overrides {
        crate::parameters::apply_override(&mut profile, o)?;
    }
    Ok(profile)
}

/// Load the profile with its overrides, parse the job file for it.
pub fn load(job_path: &Path, device: &str, overrides: &[String]) -> Result<(JobFile, Profile)> {
    let profile = load_profile(device, overrides)?;
    let jobs = parse_job_file(job_path, &parse_context(&profile)?)?;
    Ok((jobs, profile))
}

/// Load the profile with its overrides, parse job text for it. `name`
/// names the text in messages (`<job text>`, a dd command line);
/// `base_dir` is where its relative `include` files are looked for.
pub fn load_text(
    text: &str,
    name: &str,
    base_dir: &Path,
    device: &str,
    overrides: &[String],
) -> Result<(JobFile, Profile)> {
    let profile = load_profile(device, overrides)?;
    let jobs = parse_job_str(name, text, base_dir, &parse_context(&profile)?)?;
    Ok((jobs, profile))
}

/// `flashpath run JOB --device PROFILE [--set k=v] [--seed N]`.
pub fn run_file(
    job_path: &Path,
    device: &str,
    overrides: &[String],
    seed: u64,
) -> Result<RunOutput> {
    run_file_with(job_path, device, overrides, seed, None)
}

/// `run_file` with fio's `--bandwidth-log` ([`with_bandwidth_log`]).
pub fn run_file_with(
    job_path: &Path,
    device: &str,
    overrides: &[String],
    seed: u64,
    bandwidth_log: Option<AggBwSampling>,
) -> Result<RunOutput> {
    let (mut jobs, profile) = load(job_path, device, overrides)?;
    with_bandwidth_log(&mut jobs, bandwidth_log);
    run_jobs(&jobs, &profile, seed, &fio_source)
}

/// fio's `--bandwidth-log` (init.c write_bw_log): the run writes
/// `agg-{read,write,trim}_bw.log`, sampled when fio samples them
/// (report::logs::agg_bw_logs), which needs every job's completions kept.
pub fn with_bandwidth_log(jobs: &mut JobFile, bandwidth_log: Option<AggBwSampling>) {
    jobs.bandwidth_log = bandwidth_log;
    if bandwidth_log.is_some_and(AggBwSampling::samples) {
        for j in &mut jobs.jobs {
            j.keep_completions = true;
        }
    }
}

/// Run a job given as text (the Python API's `run(text)`, the CLI's dd and
/// replay): no file is written. `name` names it in messages; relative
/// `include` and `read_iolog` files are looked for in `base_dir`.
pub fn run_text(
    text: &str,
    name: &str,
    base_dir: &Path,
    device: &str,
    overrides: &[String],
    seed: u64,
) -> Result<RunOutput> {
    run_text_with(text, name, base_dir, device, overrides, seed, None)
}

/// `run_text` with fio's `--bandwidth-log` ([`with_bandwidth_log`]).
pub fn run_text_with(
    text: &str,
    name: &str,
    base_dir: &Path,
    device: &str,
    overrides: &[String],
    seed: u64,
    bandwidth_log: Option<AggBwSampling>,
) -> Result<RunOutput> {
    let (mut jobs, profile) = load_text(text, name, base_dir, device, overrides)?;
    with_bandwidth_log(&mut jobs, bandwidth_log);
    run_jobs_in(&jobs, &profile, seed, &fio_source, base_dir)
}

/// Run a parsed job file on a loaded profile; its `read_iolog` files are
/// relative to the job file's folder.
pub fn run_jobs(
    jobs: &JobFile,
    profile: &Profile,
    seed: u64,
    make_source: SourceFactory<'_>,
) -> Result<RunOutput> {
    let dir = Path::new(&jobs.path).parent().unwrap_or(Path::new("."));
    run_jobs_in(jobs, profile, seed, make_source, dir)
}

/// `flashpath replay`: the job text that replays a trace, with the
/// trace options fio has no words for (format, device filter, remap,
/// open-loop timing) set on every job that reads one. The output's
/// `flashpath.trace` section holds, per job, what the trace held and, when
/// it recorded completions, its latency percentiles beside the simulated
/// ones.
pub fn run_trace_text(
    text: &str,
    name: &str,
    base_dir: &Path,
    device: &str,
    overrides: &[String],
    seed: u64,
    opts: &crate::workload::trace::replay::TraceOptions,
) -> Result<RunOutput> {
    let (mut jobs, profile) = load_text(text, name, base_dir, device, overrides)?;
    for spec in &mut jobs.jobs {
        if spec.read_iolog.is_some() {
            spec.trace_opts = opts.clone();
        }
    }
    run_jobs_in(&jobs, &profile, seed, &fio_source, base_dir)
}

/// Percentiles the trace comparison reports (fio's default list).
const TRACE_PERCENTILES: [f64; 7] = [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99];

/// The `flashpath.trace` section: per trace job, its format and counts
/// and, when the trace recorded completions, recorded latency percentiles
/// beside the simulated total latency (fio's `lat`: submission to
/// completion) of the same I/Os.
fn trace_section(jobs: &JobFile, results: &[crate::report::JobResult]) -> serde_json::Value {
    let mut out = Vec::new();
    for (i, spec) in jobs.jobs.iter().enumerate() {
        let Some(t) = &spec.trace else { continue };
        let mut sim = crate::sim::hist::LatencyHist::default();
        for r in results.iter().filter(|r| r.section_index as usize == i) {
            for d in &r.dirs {
                sim.merge(&d.lat);
            }
        }
        let pct = |h: &crate::sim::hist::LatencyHist| {
            if h.samples() == 0 {
                return serde_json::Value::Null;
            }
            let v = h.percentiles(&TRACE_PERCENTILES);
            serde_json::Value::Object(
                TRACE_PERCENTILES
                    .iter()
                    .zip(v)
                    .map(|(p, ns)| (format!("{p:.6}"), serde_json::json!(ns)))
                    .collect(),
            )
        };
        out.push(serde_json::json!({
            "job": spec.name,
            "file": t.path.display().to_string(),
            "format": t.format.name(),
            "ios": {"read": t.ios[0], "write": t.ios[1], "trim": t.ios[2]},
            "bytes": t.bytes,
            // Each flush replays as a sync (fio's blktrace.c
            // handle_trace_flush), unless replay_skip=sync drops it.
            "flushes": t.flushes,
            "flushes_replayed_as_syncs": if t.replay.skip & crate::workload::iolog::SKIP_SYNC != 0 {
                0
            } else {
                t.flushes
            },
            "other_devices_left_out": t.other_devices,
            "empty_left_out": t.empty,
            "events_replayed": t.events,
            "recorded_ios_with_completion": t.recorded.samples(),
            "recorded_max_depth": t.max_depth,
            "recorded_lat_ns_percentiles": pct(&t.recorded),
            "simulated_lat_ns_percentiles": pct(&sim),
        }));
    }
    serde_json::Value::Array(out)
}

/// The side-by-side table of [`trace_section`], for the normal output's
/// notes.
fn trace_notes(section: &serde_json::Value) -> Vec<String> {
    let mut notes = Vec::new();
    for t in section.as_array().into_iter().flatten() {
        let ios = &t["ios"];
        let mut s = format!(
            "flashpath: trace {} ({}): {} reads, {} writes, {} trims replayed",
            t["file"].as_str().unwrap_or(""),
            t["format"].as_str().unwrap_or(""),
            ios["read"],
            ios["write"],
            ios["trim"]
        );
        let flushes = t["flushes"].as_u64().unwrap_or(0);
        let synced = t["flushes_replayed_as_syncs"].as_u64().unwrap_or(0);
        if synced > 0 {
            s += &format!("; {synced} flushes replayed as syncs");
        }
        if flushes > synced {
            s += &format!("; {} flushes left out (replay_skip=sync)", flushes - synced);
        }
        let other = t["other_devices_left_out"].as_u64().unwrap_or(0);
        if other > 0 {
            s += &format!("; {other} records of other devices left out");
        }
        // A trace filtered to one action has no queue events: say which
        // events stood for the I/Os.
        if let Some(ev) = t["events_replayed"]
            .as_str()
            .filter(|e| !e.starts_with("queue"))
        {
            s += &format!("; the trace has no queue (Q) events: its {ev} events were replayed");
        }
        notes.push(s);
        if let (Some(rec), Some(sim)) = (
            t["recorded_lat_ns_percentiles"].as_object(),
            t["simulated_lat_ns_percentiles"].as_object(),
        ) {
            let mut table = String::from("flashpath: latency (us)   recorded   simulated");
            for (p, r) in rec {
                let sv = sim.get(p).and_then(|v| v.as_u64()).unwrap_or(0);
                table += &format!(
                    "\n  p{:<8} {:>18.2} {:>11.2}",
                    p.trim_end_matches('0').trim_end_matches('.'),
                    r.as_u64().unwrap_or(0) as f64 / 1000.0,
                    sv as f64 / 1000.0
                );
            }
            notes.push(table);
        }
    }
    notes
}

/// Run parsed jobs whose relative `read_iolog` files are in `base_dir`
/// (job text has no folder of its own).
pub fn run_jobs_in(
    jobs: &JobFile,
    profile: &Profile,
    seed: u64,
    make_source: SourceFactory<'_>,
    base_dir: &Path,
) -> Result<RunOutput> {
    prepare(jobs, profile, seed, make_source, base_dir)?.run()
}

/// Every check a run makes (the job file against what fio accepts and what
/// flashpath models, the profile's machine, the file layout and the thread
/// plan), without simulating; relative iologs are read from the job file's
/// folder. `flashpath run --parse-only` runs this.
pub fn check_jobs(jobs: &JobFile, profile: &Profile) -> Result<()> {
    let dir = Path::new(&jobs.path).parent().unwrap_or(Path::new("."));
    prepare_checked(jobs, profile, 0, &fio_source, dir, Checks::ParseOnly).map(|_| ())
}

/// Which checks `prepare` makes: a run's all, or those of fio's
/// `--parse-only`. fio sets up zonemode=zbd's zones when the job starts
/// (filesetup.c setup_files -> zbd_init_files, zbd_setup_files), so a job
/// whose zones do not fit passes `--parse-only` and its run fails with
/// fio's message.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Checks {
    Run,
    ParseOnly,
}

/// `flashpath run JOB --parse-only`: parse the job file for the profile's
/// machine and make every check a run makes; the parsed file (its warnings
/// and ignored options) when all pass.
pub fn parse_only(job_path: &Path, device: &str, overrides: &[String]) -> Result<JobFile> {
    let (jobs, profile) = load(job_path, device, overrides)?;
    check_jobs(&jobs, &profile)?;
    Ok(jobs)
}

/// `flashpath run --parse-only` on job text (jobs on the command line, a
/// job file on standard input), as fio's `--parse-only` takes them: every
/// check a run makes; `base_dir` is where relative files are looked for.
pub fn parse_only_text(
    text: &str,
    name: &str,
    base_dir: &Path,
    device: &str,
    overrides: &[String],
) -> Result<JobFile> {
    let (jobs, profile) = load_text(text, name, base_dir, device, overrides)?;
    prepare_checked(&jobs, &profile, 0, &fio_source, base_dir, Checks::ParseOnly)?;
    Ok(jobs)
}

/// A run ready to go: the job file (with its iologs read) and the machine
/// built, with every check a run makes on its inputs done.
pub struct Prepared<'a> {
    jobs: std::borrow::Cow<'a, JobFile>,
    machine: Machine,
    profile_name: String,
    seed: u64,
    /// The simulated device's bytes (a trace job's region).
    disk_capacity: u64,
}

/// A fault the profile injects (`device.badblocks`) reaches fio only on
/// its direct I/O: the page cache's readahead and writeback requests do
/// not carry a request's error back to a read, a write or an fsync in
/// flashpath yet, so a buffered job with faults is refused rather than
/// run as if nothing failed.
fn check_faults_direct(jobs: &JobFile, profile: &Profile) -> Result<()> {
    if crate::device::BadBlocks::from_profile(profile)?.is_empty() {
        return Ok(());
    }
    let buffered = jobs
        .jobs
        .iter()
        .find(|s| !s.direct && s.ioengine.moves_data());
    match buffered {
        None => Ok(()),
        Some(spec) => Err(InputError::new(
            jobs.path.clone(),
            Some(spec.line),
            format!(
                "job '{}': direct=0 goes through the page cache, which does not pass a                  device's I/O errors on to fio in flashpath; device.badblocks needs direct=1",
                spec.name
            ),
        )),
    }
}

/// fio's `ioscheduler=` (backend.c switch_ioscheduler): the queue's
/// scheduler for the run (a null-engine job sets none, as fio's). A name
/// the queue does not offer fails as fio's
/// read-back check does ("unable to set io scheduler"); jobs that ask for
/// different schedulers are refused (the run has one queue setting).
fn apply_ioscheduler(jobs: &JobFile, settings: &mut crate::block::QueueSettings) -> Result<()> {
    use crate::block::Scheduler;
    use crate::profile::Choice;
    let mut chosen: Option<(&str, u32)> = None;
    for spec in &jobs.jobs {
        let Some(name) = spec.ioscheduler.as_deref() else {
            continue;
        };
        // switch_ioscheduler returns at once for a FIO_DISKLESSIO engine
        // (the null engine): it opens no device and sets nothing.
        if spec.ioengine == crate::workload::fio::IoEngine::Null {
            continue;
        }
        if Scheduler::from_name(name).is_none() {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': ioscheduler={name}: the queue offers {} (fio: unable to set io \
                     scheduler to {name})",
                    spec.name,
                    Scheduler::NAMES.join(", ")
                ),
            ));
        }
        match chosen {
            Some((first, line)) if first != name => {
                return Err(InputError::new(
                    jobs.path.clone(),
                    Some(spec.line),
                    format!(
                        "job '{}': ioscheduler={name}, but the job at line {line} set {first}: \
                         flashpath keeps one scheduler for the whole run",
                        spec.name
                    ),
                ))
            }
            Some(_) => {}
            None => chosen = Some((name, spec.line)),
        }
    }
    if let Some((name, _)) = chosen {
        settings.scheduler = Scheduler::from_name(name).expect("checked above");
        settings.scheduler_default = false;
    }
    Ok(())
}

/// Everything [`run_jobs`] does before it simulates: read the iologs,
pub fn prepare<'a>(
    jobs: &'a JobFile,
    profile: &Profile,
    seed: u64,
    make_source: SourceFactory<'_>,
    base_dir: &Path,
) -> Result<Prepared<'a>> {
    prepare_checked(jobs, profile, seed, make_source, base_dir, Checks::Run)
}

fn prepare_checked<'a>(
    jobs: &'a JobFile,
    profile: &Profile,
    seed: u64,
    make_source: SourceFactory<'_>,
    base_dir: &Path,
    checks: Checks,
) -> Result<Prepared<'a>> {
    let mut jobs_read = if jobs
        .jobs
        .iter()
        .any(|j| j.read_iolog.is_some() || j.merge_blktrace_file.is_some())
    {
        std::borrow::Cow::Owned(load_iologs(jobs, base_dir)?)
    } else {
        std::borrow::Cow::Borrowed(jobs)
    };
    check_fio_setup(&jobs_read)?;
    check_verify_state(&jobs_read, base_dir)?;
    check_modelled(&jobs_read)?;
    let mut model = build_model(profile)?;
    // zonemode=zbd reads the disk's zones (zbd.c zbd_init_files), then
    // fio turns sizes in zones into bytes and aligns a zbd job's area
    // (filesetup.c setup_files).
    let disk_zones = zbd::DiskZones {
        report: model.driver.report_zones(),
        max_open_zones: model.driver.zoned().map_or(0, |z| z.max_open_zones),
    };
    if jobs_read
        .jobs
        .iter()
        .any(|j| j.zones.mode != ZoneMode::None || j.zones.nz.any())
    {
        let capacity = model.driver.info().capacity;
        match zbd::resolve_sizes(jobs_read.to_mut(), &disk_zones, capacity) {
            Err(e) if checks == Checks::Run || e.message.contains(NOT_MODELLED) => return Err(e),
            _ => {}
        }
    }
    let jobs: &JobFile = &jobs_read;
    apply_ioscheduler(jobs, &mut model.settings)?;
    check_faults_direct(jobs, profile)?;
    let disk = model.driver.info();
    check_iologs_within(jobs, base_dir, disk.capacity)?;
    let cache = model.page_cache(jobs, disk.capacity)?;
    check_polled(jobs, &model.settings, disk.can_poll)?;
    crate::workload::fio::setup::check_passthrough(
        jobs,
        model
            .driver
            .sg_io()
            .then(|| model.driver.logical_block_size()),
        model.driver.zoned().is_some(),
        model.driver.nvme_generic(),
        &disk.name,
    )?;
    crate::workload::fio::setup::check_direct_blocks(
        jobs,
        model.driver.logical_block_size(),
        &disk.name,
    )?;
    crate::workload::fio::placement::resolve(
        jobs_read.to_mut(),
        model.driver.placement_ids().as_deref(),
    )?;
    crate::workload::fio::layout::resolve_offset_percent(jobs_read.to_mut(), disk.capacity)?;
    let jobs: &JobFile = &jobs_read;
    let regions = layout(jobs, disk.capacity)?;
    check_memory(jobs, &regions, model.memory)?;
    let zbd_jobs = match zbd::setup(jobs, &regions, &disk_zones) {
        Ok(z) => z,
        Err(e) if checks == Checks::Run || e.message.contains(NOT_MODELLED) => return Err(e),
        Err(_) => Vec::new(),
    };
    let plans = plan_threads(
        jobs,
        &regions,
        model.cpus.len() as u32,
        seed,
        make_source,
        zbd_jobs,
    )?;
    let machine = Machine::new(model.into_parts(cache), &jobs.jobs, plans, seed);
    Ok(Prepared {
        jobs: jobs_read,
        machine,
        profile_name: profile.name.clone(),
        seed,
        disk_capacity: disk.capacity,
    })
}

impl Prepared<'_> {
    /// Simulate, and gather the results in fio's terms.
    pub fn run(self) -> Result<RunOutput> {
        let Prepared {
            jobs,
            mut machine,
            profile_name,
            seed,
            disk_capacity,
        } = self;
        let jobs: &JobFile = &jobs;
        machine.run();
        // A trace that changed between the check and the run ended its
        // replay early: the run fails, naming the file and record.
        for spec in &jobs.jobs {
            if let Some(e) = spec.trace.as_ref().and_then(|t| t.failure.get()) {
                return Err(e.clone());
            }
        }
        let events = machine.events_handled();
        let completed = machine.completed_ios;
        let submitted = machine.submitted_ios;
        let (mut job_results, disk, mut extra, end): (_, _, _, Ns) = machine.results();
        // Clones fio fails as it sets their file up, with the line fio
        // prints for each as it starts it.
        let mut setup_lines = Vec::new();
        for r in job_results.iter_mut() {
            let spec = &jobs.jobs[r.section_index as usize];
            if crate::workload::fio::layout::offset_past_end(spec, r.clone_index, disk_capacity) {
                r.setup_failed = true;
                setup_lines.push(format!("{}: you need to specify valid offset=", spec.name));
            }
        }
        let mut csvs = Vec::new();
        for (i, spec) in jobs.jobs.iter().enumerate() {
            if let (Some(t), Some(name)) = (&spec.trace, &spec.trace_opts.lat_csv) {
                let samples: Vec<crate::report::LatSample> = job_results
                    .iter()
                    .filter(|r| r.section_index as usize == i)
                    .flat_map(|r| r.lat_log.iter().cloned())
                    .collect();
                csvs.push(LogFile {
                    name: name.clone(),
                    contents: crate::workload::trace::replay::per_io_csv(
                        t,
                        &samples,
                        disk_capacity,
                    )?,
                    option: format!("--lat-csv {name}"),
                    append: false,
                });
            }
        }
        let error_lines: Vec<String> = job_results
            .iter()
            .flat_map(|j| j.error_lines.iter().cloned())
            .collect();
        let mut files = crate::report::logs::log_files(jobs, &mut job_results);
        files.extend(csvs);
        extra["profile"] = serde_json::json!(profile_name);
        extra["seed"] = serde_json::json!(seed);
        let traces = trace_section(jobs, &job_results);
        let trace_lines = trace_notes(&traces);
        if !traces.as_array().is_none_or(|a| a.is_empty()) {
            extra["trace"] = traces;
        }
        // What a paced replay did while it waited for its next I/O: it
        // decides what clat means (fio 3.36 reaps, fio 3.33 sleeps; a job
        // file runs as fio 3.33, flashpath replay reaps unless asked).
        if let Some(spec) = jobs
            .jobs
            .iter()
            .find(|j| j.read_iolog.is_some() && !j.replay.no_stall)
        {
            extra["replay_delay"] = serde_json::json!(match spec.trace_opts.delay {
                crate::workload::trace::replay::ReplayDelay::Reap => {
                    "reap: completions reaped while waiting for the next I/O (fio >= 3.36)"
                }
                crate::workload::trace::replay::ReplayDelay::Sleep => {
                    "sleep: no reaping while waiting for the next I/O (fio 3.33); clat includes \
                     the wait"
                }
            });
        }
        extra["ignored_options"] = jobs
            .ignored
            .iter()
            .map(|d| serde_json::json!(d.to_string()))
            .collect();
        extra["warnings"] = jobs
            .warnings
            .iter()
            .map(|d| serde_json::json!(d.to_string()))
            .collect();
        Ok(RunOutput {
            result: RunResult {
                jobs: job_results,
                global_options: jobs.global_options.clone(),
                end_time: end,
                // fio keeps disk stats only for the devices of jobs whose
                // engine does device I/O (diskutil.c init_disk_util skips a
                // FIO_DISKLESSIO engine: null).
                disks: if jobs
                    .jobs
                    .iter()
                    .all(|j| j.ioengine == crate::workload::fio::IoEngine::Null)
                {
                    Vec::new()
                } else {
                    vec![disk]
                },
                flashpath: extra,
            },
            events,
            completed_ios: completed,
            submitted_ios: submitted,
            files,
            // fio's own messages, then flashpath's warnings; the options
            // flashpath ignores are not printed (fio prints nothing for
            // them): they are in the JSON's flashpath.ignored_options and
            // in --parse-only's list.
            notes: jobs
                .fio_messages
                .iter()
                .cloned()
                .chain(setup_lines)
                .chain(jobs.warnings.iter().map(ToString::to_string))
                .chain(trace_lines)
                .chain(error_lines)
                .collect(),
        })
    }
}

/// What `flashpath iozone` produced: iozone's text, the same numbers as
/// JSON (`{"tests": [...], "flashpath": {...}}`), and engine figures.
pub struct IozoneOutput {
    pub text: String,
    pub json: serde_json::Value,
    pub events: u64,
    pub completed_ios: u64,
}

/// `flashpath iozone --device PROFILE -- <iozone arguments>`.
pub fn run_iozone(
    args: &[String],
    device: &str,
    overrides: &[String],
    seed: u64,
) -> Result<IozoneOutput> {
    use crate::workload::iozone;
    let a = iozone::parse_args(args)?;
    let profile = load_profile(device, overrides)?;
    let (phases, jobs) = iozone::build_jobs(&a);
    let out = run_jobs(&jobs, &profile, seed, &fio_source)?;
    let rs = iozone::summarize(&phases, &out.result);
    Ok(IozoneOutput {
        text: iozone::render_text(&a, &rs),
        json: serde_json::json!({
            "tests": iozone::to_json(&rs),
            "flashpath": out.result.flashpath,
        }),
        events: out.events,
        completed_ios: out.completed_ios,
    })
}

/// What `flashpath dd` produced: dd's stderr, and engine figures.
pub struct DdOutput {
    /// dd's warnings, records in and out, transfer line (as its status=
    /// asks), and flashpath's notes.
    pub text: String,
    pub events: u64,
    pub completed_ios: u64,
}

/// `flashpath dd --device PROFILE <dd operands>`: the operands as bytes,
/// as dd reads its argv.
pub fn run_dd<S: AsRef<[u8]>>(
    operands: &[S],
    device: &str,
    overrides: &[String],
    seed: u64,
) -> Result<DdOutput> {
    use crate::workload::dd::DdCommand;
    let dd = DdCommand::parse(operands)?;
    let profile = load_profile(device, overrides)?;
    if dd.buffered() && !profile.has("host.cost.copy_user") {
        return Err(InputError::new(
            "dd",
            None,
            format!(
                "without iflag=direct dd reads through the page cache, which profile '{}' does \
                 not model (it gives no host.cost.copy_user and the other page cache costs); \
                 add iflag=direct",
                profile.name
            ),
        ));
    }
    // The job's messages name the dd command line, never the job text.
    let base = Path::new(".");
    let jobs = parse_job_str(&dd.display, &dd.job_text(), base, &parse_context(&profile)?)?;
    let out = match run_jobs_in(&jobs, &profile, seed, &fio_source, base) {
        Ok(out) => out,
        Err(e) if e.file == dd.display => {
            // Only the device's end refuses a checked dd job: say it as dd
            // does (lseek past the end of a block device is EINVAL,
            // block_llseek), or pass the reason on.
            let capacity = crate::model::build_model(&profile)?.driver.info().capacity;
            let message = if dd.skip_offset >= capacity {
                format!(
                    "{}: cannot skip: Invalid argument (skip= is at byte {} of a {capacity}-byte device)",
                    dd.input, dd.skip_offset
                )
            } else {
                e.message
            };
            return Err(InputError::new("dd", None, message));
        }
        Err(e) => return Err(e),
    };
    Ok(DdOutput {
        text: dd.report(&out.result),
        events: out.events,
        completed_ios: out.completed_ios,
    })
}
