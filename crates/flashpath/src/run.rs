//! Running a fio job file on a profile: build the machine the profile
//! describes, lay the jobs' files out on the device, run, and gather the
//! results in fio's terms.

use crate::block::QueueSettings;
use crate::driver::Driver;
use crate::error::{InputError, Result};
use crate::host::cpu::{Cpu, HostCosts};
use crate::host::idle::{IdleConfig, IntelIdleTable, MenuVariant};
use crate::host::sched::WakePlacement;
use crate::machine::{Ev, IrqCpu, Machine, MachineParts, ThreadPlan};
use crate::profile::{range, Profile, Range};
use crate::report::RunResult;
use crate::sim::Ns;
use crate::workload::fio::{
    parse_job_file, parse_job_str, IoStream, JobFile, JobSpec, ParseContext,
};
use crate::workload::{Ddir, IoSource};
use std::collections::BTreeMap;
use std::path::Path;

/// Everything a run produced, plus engine figures for benchmarks.
pub struct RunOutput {
    pub result: RunResult,
    pub events: u64,
    pub completed_ios: u64,
    pub submitted_ios: u64,
    /// Files the jobs asked fio to write (`write_lat_log`, `write_iolog`).
    pub files: Vec<LogFile>,
    /// The job file's warnings and the options it lists as ignored, one
    /// message each (what fio prints on stderr before the run).
    pub notes: Vec<String>,
}

/// A log a job asked fio to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// The name fio gives it, relative to where fio runs.
    pub name: String,
    pub contents: String,
    /// The option that asked for it, for messages: `job.fio:3: job 'j':
    /// write_lat_log=lat` (file, the job's line, job, option as written).
    pub option: String,
}

/// Host facts the job-file parser needs for `$ncpus` and friends.
pub struct HostFacts {
    pub ncpus: u32,
    pub mb_memory: u64,
}

/// `host.cpus`: every CPU gets its state, and the kernel's own limit is
/// NR_CPUS.
pub const HOST_CPUS: Range = range(
    1.0,
    8192.0,
    "CPUs of the host: at least one runs the job, at most NR_CPUS = 8192 \
     (arch/x86/Kconfig, MAXSMP)",
);
/// `host.memory`: what `$mb_memory` says and what the page cache may use.
pub const HOST_MEMORY: Range = range(
    (16u64 << 20) as f64,
    (64u64 << 40) as f64,
    "the host's memory: from 16 MiB to the 64 TiB that x86-64's 4-level paging maps \
     (Documentation/arch/x86/x86_64/mm.rst)",
);

pub fn host_facts(profile: &Profile) -> Result<HostFacts> {
    Ok(HostFacts {
        ncpus: profile.count_u32("host.cpus", HOST_CPUS)?,
        mb_memory: profile.bytes("host.memory", HOST_MEMORY)? >> 20,
    })
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
        profile.apply_override(o)?;
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

/// The stream of a fio job: its randseed when it names one, else the
/// run's seed.
pub fn fio_source(
    spec: &JobSpec,
    start: u64,
    len: u64,
    seed: u64,
    clone: u32,
) -> Box<dyn IoSource> {
    if let Some(log) = &spec.iolog {
        return Box::new(log.source(start));
    }
    Box::new(IoStream::new(
        spec,
        start,
        len,
        spec.randseed.unwrap_or(seed),
        clone,
    ))
}

/// `flashpath run JOB --device PROFILE [--set k=v] [--seed N]`.
pub fn run_file(
    job_path: &Path,
    device: &str,
    overrides: &[String],
    seed: u64,
) -> Result<RunOutput> {
    let (jobs, profile) = load(job_path, device, overrides)?;
    run_jobs(&jobs, &profile, seed, &fio_source)
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
    let (jobs, profile) = load_text(text, name, base_dir, device, overrides)?;
    run_jobs_in(&jobs, &profile, seed, &fio_source, base_dir)
}

/// `host.freq`, `host.reference_freq`: a cost given at the reference
/// clock takes reference / freq times as long.
const CPU_FREQ: Range = range(
    1e6,
    1e10,
    "a CPU clock from 1 MHz to 10 GHz: costs are scaled by the reference clock over it",
);

fn build_cpus(p: &Profile) -> Result<(Vec<Cpu>, IrqCpu)> {
    let n = p.count_u32("host.cpus", HOST_CPUS)?;
    let hz = p.hz("host.freq", CPU_FREQ)?;
    let reference = p.hz("host.reference_freq", CPU_FREQ)?;
    let names: Vec<String> = std::iter::once("submitter".to_string())
        .chain((0..n).map(|c| format!("cpu{c}")))
        .collect();
    let valid: Vec<&str> = names.iter().map(String::as_str).collect();
    let irq = p.choice("host.irq_cpu", &valid)?;
    let irq = match irq.strip_prefix("cpu") {
        Some(c) => IrqCpu::Fixed(c.parse().expect("choice() checked it")),
        None => IrqCpu::Submitter,
    };
    Ok(((0..n).map(|i| Cpu::new(i, reference, hz)).collect(), irq))
}

/// `host.wake_placement`: where a thread woken by a completion interrupt
/// runs. A host without the key keeps every thread on its CPU.
fn build_wake_placement(p: &Profile) -> Result<WakePlacement> {
    if !p.has("host.wake_placement") {
        return Ok(WakePlacement::PrevCpu);
    }
    let name = p.choice("host.wake_placement", &WakePlacement::NAMES)?;
    Ok(WakePlacement::from_name(&name).expect("choice() checked the name"))
}

/// The cpuidle model (`host.idle.*`): an `intel_idle` state table by
/// processor family, the menu governor's text, the tick, and the C1E
/// auto-promotion switch. A host without `host.idle.table` has no cpuidle
/// driver: its cores wait in C0 and wake at no cost.
fn build_idle(p: &Profile) -> Result<IdleConfig> {
    if !p.has("host.idle.table") {
        return Ok(IdleConfig::poll_only());
    }
    let mut names: Vec<&str> = IntelIdleTable::ALL.iter().map(|t| t.short_name()).collect();
    names.push("poll");
    names.push("psci");
    let table = p.choice("host.idle.table", &names)?;
    let mut per_cpu = Vec::new();
    let table = match IntelIdleTable::from_short_name(&table) {
        Some(t) => t.table(),
        None if table == "psci" => {
            per_cpu = psci_tables(p)?;
            per_cpu[0].clone()
        }
        None => IdleConfig::poll_only().table,
    };
    let governor = p.choice("host.idle.governor", &["menu-v4.4", "menu", "qcom-lpm"])?;
    let variant = match governor.as_str() {
        "menu-v4.4" => MenuVariant::Linux44,
        _ => MenuVariant::Modern,
    };
    Ok(IdleConfig {
        table,
        variant,
        tick_ns: p.ns(
            "host.idle.tick",
            range(
                1e5,
                1e8,
                "the scheduler tick, 1/HZ: CONFIG_HZ from 100 to 1000 (kernel/Kconfig.hz) and \
                 some room (0.1 to 100 ms)",
            ),
        )?,
        c1e_auto_promotion: p.flag("host.idle.c1e_auto_promotion")?,
        load_avg: p.ratio(
            "host.idle.load_avg",
            range(
                0.0,
                f64::from(1u32 << 20),
                "the load average the menu governor reads (get_loadavg): runnable tasks, \
                 kept where its FSHIFT fixed point (11 bits) fits 32 bits",
            ),
        )?,
        per_cpu,
        // CONFIG_NO_HZ_IDLE; a profile without the key keeps the tick.
        nohz_idle: p.has("host.idle.nohz") && p.flag("host.idle.nohz")?,
        qcom_lpm: governor == "qcom-lpm",
    })
}

/// `host.idle.table = "psci"`: one cpuidle-psci driver per CPU, state 0
/// architectural WFI and state 1 the CPU's device-tree power-collapse state,
/// given per CPU (`host.idle.psci.entry`, `.exit`, `.min_residency`, one
/// value per CPU, as the SoC's `idle-states` nodes give them).
fn psci_tables(p: &Profile) -> Result<Vec<crate::host::idle::CStateTable>> {
    use crate::host::idle::{CState, CStateTable};
    let n = p.count_u32("host.cpus", HOST_CPUS)? as usize;
    let per_cpu = |key: &str| -> Result<Vec<u64>> {
        let v = p.list(
            key,
            "time",
            range(
                0.0,
                1e10,
                "a device-tree idle-state latency (entry-latency-us, exit-latency-us, \
                 min-residency-us): microseconds, at most 10 s",
            ),
            HOST_CPUS.max as usize,
        )?;
        if v.len() != n {
            return Err(InputError::new(
                p.file_of(key),
                None,
                format!(
                    "{key} has {} values but host.cpus is {n}: give one per CPU",
                    v.len()
                ),
            ));
        }
        // Device-tree latencies are whole microseconds.
        Ok(v.iter().map(|ns| (ns / 1_000.0).round() as u64).collect())
    };
    let entry = per_cpu("host.idle.psci.entry")?;
    let exit = per_cpu("host.idle.psci.exit")?;
    let residency = per_cpu("host.idle.psci.min_residency")?;
    let tables: Vec<CStateTable> = (0..n)
        .map(|c| {
            CStateTable::new(
                &format!("psci:cpu{c}"),
                vec![
                    CState::arm_wfi(),
                    CState::psci("cpu-power-collapse", entry[c], exit[c], residency[c]),
                ],
            )
        })
        .collect();
    for t in &tables {
        t.validate()
            .map_err(|e| InputError::new(p.file_of("host.idle.psci.entry"), None, e))?;
    }
    Ok(tables)
}

/// Where a job's files live on the device: consecutive regions, one per
/// distinct file name, in order of first use. A job on a raw device path
/// (`/dev/...`) without a size uses the whole device.
fn layout(jobs: &JobFile, capacity: u64) -> Result<Vec<Vec<(u64, u64)>>> {
    const ALIGN: u64 = 1 << 20;
    let mut files: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut next = 0u64;
    let mut out = Vec::new();
    for spec in &jobs.jobs {
        let mut per_clone = Vec::new();
        for clone in 0..spec.numjobs.max(1) {
            let (key, raw_device) = match &spec.filename {
                Some(f) => (f.clone(), f.starts_with("/dev/")),
                None => (format!("{}.{}.0", spec.name, clone), false),
            };
            let size = match (spec.size, spec.filesize) {
                (Some(s), _) => s,
                (None, Some(f)) => f * u64::from(spec.nrfiles.max(1)),
                (None, None) if raw_device => capacity.saturating_sub(spec.offset),
                (None, None) => {
                    return Err(InputError::new(
                        jobs.path.clone(),
                        Some(spec.line),
                        format!(
                        "job '{}': you need to specify size= (fio: \"you need to specify size=\")",
                        spec.name
                    ),
                    ))
                }
            };
            let region = match files.get(&key) {
                Some(r) => *r,
                None => {
                    // The file holds every clone's area: offset_increment
                    // places clone i at offset + i * increment (fio's
                    // get_start_offset).
                    let span = spec
                        .offset
                        .saturating_add(
                            u64::from(spec.numjobs.max(1) - 1)
                                .saturating_mul(spec.offset_increment),
                        )
                        .saturating_add(size);
                    let len = if raw_device {
                        capacity
                    } else {
                        span.div_ceil(ALIGN).saturating_mul(ALIGN)
                    };
                    let start = if raw_device { 0 } else { next };
                    if start.saturating_add(len) > capacity {
                        // fio's null engine needs no space (it does no
                        // I/O); flashpath still lays its files out.
                        let why = if spec.ioengine == crate::workload::fio::IoEngine::Null {
                            "; a null-engine file larger than the simulated device is not \
                             modelled by flashpath"
                        } else {
                            ""
                        };
                        return Err(InputError::new(
                            jobs.path.clone(),
                            Some(spec.line),
                            format!(
                                "job '{}': its files need {} bytes past offset {} but the device has {} bytes{why}",
                                spec.name, len, start, capacity
                            ),
                        ));
                    }
                    if !raw_device {
                        next = start + len;
                    }
                    files.insert(key, (start, len));
                    (start, len)
                }
            };
            let offset = spec
                .offset
                .saturating_add(u64::from(clone).saturating_mul(spec.offset_increment));
            let len = size.min(region.1.saturating_sub(offset));
            if len == 0 {
                return Err(InputError::new(
                    jobs.path.clone(),
                    Some(spec.line),
                    format!(
                        "job '{}': offset {} leaves no room in its file",
                        spec.name, offset
                    ),
                ));
            }
            // The stream places the clone's area inside its file itself
            // (offset, offset_increment, size): it gets the whole file.
            per_clone.push(region);
        }
        out.push(per_clone);
    }
    Ok(out)
}

/// The bytes of one iolog read: a million I/Os are 40 MiB of text, and
/// the bound keeps `read_iolog=/dev/zero` from reading until memory runs
/// out.
const MAX_IOLOG_BYTES: u64 = 1 << 30;
const IOLOG_BOUND: &str = "an iolog is read up to 1 GiB";

/// Where `read_iolog=name` points: relative to `dir` (the job file's
/// folder, or the folder job text is run from).
fn iolog_path(dir: &Path, name: &str) -> std::path::PathBuf {
    dir.join(name)
}

/// Read each job's `read_iolog` (relative to `dir`) and
/// let the log decide the job's file and size, as fio does: the I/O goes to
/// the file the log names (or to `replay_redirect`), and fio's `size` is the
/// sum of the log's lengths while the file must hold its highest offset.
fn load_iologs(jobs: &JobFile, dir: &Path) -> Result<JobFile> {
    let mut out = jobs.clone();
    for spec in &mut out.jobs {
        let Some(name) = spec.read_iolog.clone() else {
            continue;
        };
        let refuse = |what: &str| {
            InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': {what} with read_iolog is not modelled by flashpath (the log alone decides the I/O)",
                    spec.name
                ),
            )
        };
        if spec.time_based {
            return Err(refuse("time_based"));
        }
        if spec.loops > 1 {
            return Err(refuse("loops"));
        }
        if spec.io_size.is_some() || spec.number_ios.is_some() {
            return Err(refuse("io_size or number_ios"));
        }
        let path = iolog_path(dir, &name);
        let text =
            crate::input::read_bounded(&path, MAX_IOLOG_BYTES, IOLOG_BOUND).map_err(|e| {
                InputError::new(
                    jobs.path.clone(),
                    Some(spec.line),
                    format!(
                        "job '{}': read_iolog={name}: cannot read {}: {e}",
                        spec.name,
                        path.display()
                    ),
                )
            })?;
        let log = crate::workload::iolog::parse(
            &path.display().to_string(),
            &String::from_utf8_lossy(&text),
            &spec.replay,
        )?;
        // fio reports the log's directions and raises max_bs to its
        // largest I/O per direction (iolog.c read_iolog).
        let has = |d: crate::workload::Ddir| log.entries.iter().any(|e| e.unit.ddir == d);
        use crate::workload::fio::{BlockSize, RwKind};
        spec.rw = match (has(Ddir::Read), has(Ddir::Write), has(Ddir::Trim)) {
            (true, true, _) => RwKind::ReadWrite,
            (false, true, true) => RwKind::TrimWrite,
            (false, true, false) => RwKind::Write,
            (false, false, true) => RwKind::Trim,
            _ => RwKind::Read,
        };
        for d in Ddir::ALL {
            let largest = log
                .entries
                .iter()
                .filter(|e| e.unit.ddir == d)
                .map(|e| u64::from(e.unit.len))
                .max();
            let (min, max) = match &spec.bs[d.index()] {
                BlockSize::Fixed(b) => (*b, *b),
                BlockSize::Range { min, max } => (*min, *max),
                BlockSize::Split(v) => (
                    v.iter().map(|x| x.0).min().unwrap_or(4096),
                    v.iter().map(|x| x.0).max().unwrap_or(4096),
                ),
            };
            if let Some(l) = largest.filter(|l| *l > max) {
                spec.bs[d.index()] = BlockSize::Range { min, max: l };
            }
        }
        spec.filename = Some(spec.replay_redirect.clone().unwrap_or(log.file.clone()));
        spec.size = Some(log.end);
        spec.offset = 0;
        spec.iolog = Some(std::sync::Arc::new(log));
    }
    Ok(out)
}

/// fio 3.33 keeps its jobs in shared-memory segments of 8 (JOBS_PER_SEG)
/// and stops at 512 (REAL_MAX_SEG, fio.h; add_thread_segment refuses the
/// last): every job and clone of a file must fit in 511 * 8.
const FIO_MAX_JOBS: u64 = 511 * 8;

/// What fio 3.33 allocates per iodepth slot besides its buffer: the io_u
/// (backend.c init_io_u, measured: 440 bytes a slot at iodepth=1000000).
const IO_U_BYTES: u64 = 448;

/// fio's shared-memory pool (smalloc.c: 16 pools of 16 MiB) holds each
/// file's struct fio_file and name; about 896 bytes a file (fio 3.33 runs
/// out at 299,218 to 300,000 files with short names).
const SMALLOC_BYTES: u64 = 16 * (16 << 20);
const SMALLOC_PER_FILE: u64 = 896;

/// O_DIRECT needs sizes and offsets in whole logical blocks, 512 bytes at
/// the least (SECTOR_SIZE); flashpath's devices do not model a larger one.
const DIRECT_ALIGN: u64 = 512;

/// The checks fio 3.33 makes when it sets the jobs up (init.c add_job and
/// fixup_options) and when they start: a job file fio refuses is refused.
fn check_fio_setup(jobs: &JobFile) -> Result<()> {
    let at = |spec: &JobSpec, what: String| {
        Err(InputError::new(
            jobs.path.clone(),
            Some(spec.line),
            format!("job '{}': {what}", spec.name),
        ))
    };
    if jobs.jobs.is_empty() {
        return Err(InputError::new(
            jobs.path.clone(),
            None,
            "No job(s) defined (fio: the file has no job section, only global ones or none)",
        ));
    }
    let mut total_jobs = 0u64;
    let mut files = 0u64;
    for spec in &jobs.jobs {
        // init.c add_job: numjobs=0 clones until the slots run out.
        let clones = if spec.numjobs == 0 {
            u64::MAX
        } else {
            u64::from(spec.numjobs)
        };
        total_jobs = total_jobs.saturating_add(clones);
        if total_jobs > FIO_MAX_JOBS {
            return at(
                spec,
                format!(
                    "numjobs={}: fio 3.33 has room for {FIO_MAX_JOBS} jobs and clones in all \
                     (\"error: maximum number of jobs reached\")",
                    spec.numjobs
                ),
            );
        }
        files = files.saturating_add(clones.saturating_mul(u64::from(spec.nrfiles.max(1))));
        if files.saturating_mul(SMALLOC_PER_FILE) > SMALLOC_BYTES {
            return at(
                spec,
                format!(
                    "nrfiles={}: fio 3.33's shared pool holds about {} files in all \
                     (\"smalloc: OOM\")",
                    spec.nrfiles,
                    SMALLOC_BYTES / SMALLOC_PER_FILE
                ),
            );
        }
        // fixup_options: a size below the smallest block size.
        let min_bs = spec.bs.iter().map(|b| b.bounds().0).min().unwrap_or(4096);
        if let Some(size) = spec.size.filter(|s| *s > 0 && *s < min_bs) {
            return at(
                spec,
                format!(
                    "size too small, must not be less than minimum block size: {size} < {min_bs}"
                ),
            );
        }
        // filesetup.c setup_files: the size is at most what the files
        // hold (filesize each).
        if let Some(filesize) = spec.filesize {
            let total = filesize.saturating_mul(u64::from(spec.nrfiles.max(1)));
            let size = spec.size.filter(|s| *s > 0 && *s <= total).unwrap_or(total);
            if size < min_bs {
                return at(
                    spec,
                    format!(
                        "blocksize is larger than data set range ({size} bytes of files, \
                         blocks of {min_bs})"
                    ),
                );
            }
        }
        if spec.rate.iter().any(|r| *r > 0) && spec.rate_iops.iter().any(|r| *r > 0) {
            return at(spec, "rate and rate_iops are mutually exclusive".into());
        }
        for (d, (rate, min)) in spec.rate.iter().zip(&spec.rate_min).enumerate() {
            if *rate > 0 && rate < min {
                return at(spec, format!("minimum rate exceeds rate, ddir {d}"));
            }
        }
        check_direct_alignment(spec).or_else(|what| at(spec, what))?;
        // io_u.c __get_next_rand_offset_zoned_abs: a zone past the end of
        // the file fails the job's I/O.
        if let crate::workload::fio::RandomDistribution::ZonedAbs(zones) = &spec.random_distribution
        {
            let zones_end = zones.iter().fold(0u64, |a, z| a.saturating_add(z.1));
            let file = spec
                .filesize
                .or(spec.size.map(|s| s / u64::from(spec.nrfiles.max(1))));
            if let Some(file) = file.filter(|f| spec.rw.is_random() && zones_end > *f) {
                return at(
                    spec,
                    format!(
                        "zoned_abs sizes exceed file size ({zones_end} bytes of zones, \
                         {file} bytes of file)"
                    ),
                );
            }
        }
    }
    Ok(())
}

/// O_DIRECT I/O that is not whole sectors fails with EINVAL: fio's first
/// I/O errors ("first direct IO errored", err=22; a real run on ext4 with
/// bs=100 and direct=1). The null engine does no I/O and never fails.
fn check_direct_alignment(spec: &JobSpec) -> std::result::Result<(), String> {
    use crate::workload::fio::{BlockSize, IoEngine};
    if !spec.direct || spec.ioengine == IoEngine::Null {
        return Ok(());
    }
    let misaligned = |v: u64| !v.is_multiple_of(DIRECT_ALIGN);
    for d in Ddir::ALL.iter().filter(|d| spec.rw.has(**d)) {
        let bad = match &spec.bs[d.index()] {
            BlockSize::Fixed(b) => misaligned(*b).then_some(*b),
            BlockSize::Range { min, max } => [*min, *max]
                .into_iter()
                .find(|b| misaligned(*b) || (spec.bs_unaligned && min != max)),
            BlockSize::Split(v) => v.iter().map(|e| e.0).find(|b| misaligned(*b)),
        };
        if let Some(b) = bad {
            return Err(format!(
                "direct=1 with a block size of {b} bytes: O_DIRECT I/O must be whole \
                 {DIRECT_ALIGN}-byte sectors; fio's first I/O fails with EINVAL \
                 (\"first direct IO errored\", err=22)"
            ));
        }
    }
    for (what, v) in [
        ("offset", spec.offset),
        ("offset_increment", spec.offset_increment),
        ("the rw= offset step", spec.rw_seq_add.unsigned_abs()),
    ] {
        if misaligned(v) {
            return Err(format!(
                "direct=1 with {what} {v}: O_DIRECT I/O must start on a {DIRECT_ALIGN}-byte \
                 sector; fio's I/O fails with EINVAL (err=22)"
            ));
        }
    }
    Ok(())
}

/// What fio allocates for a job before it runs: its io_us and buffers
/// (iodepth of each, backend.c init_io_u and init_io_u_buffers), and the
/// random map of a random job (one bit per block, filesetup.c
/// init_random_map). fio fails the job when that is more than the machine
/// has ("unable to allocate aligned memory", "failed allocating random
/// map"); flashpath refuses it against the simulated host's memory.
fn check_memory(jobs: &JobFile, regions: &[Vec<(u64, u64)>], memory: u64) -> Result<()> {
    use crate::workload::fio::RandomDistribution;
    let mut total = 0u64;
    for (si, spec) in jobs.jobs.iter().enumerate() {
        let max_bs = spec.bs.iter().map(|b| b.bounds().1).max().unwrap_or(4096);
        let min_bs = spec
            .bs
            .iter()
            .map(|b| b.bounds().0)
            .min()
            .unwrap_or(4096)
            .max(1);
        let buffers = u64::from(spec.iodepth).saturating_mul(IO_U_BYTES.saturating_add(max_bs));
        let map = if spec.rw.is_random()
            && !spec.norandommap
            && spec.random_distribution == RandomDistribution::Random
        {
            regions[si].first().map_or(0, |r| r.1 / min_bs / 8)
        } else {
            0
        };
        let each = buffers.saturating_add(map);
        total = total.saturating_add(each.saturating_mul(u64::from(spec.numjobs.max(1))));
        if total > memory {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': fio would allocate {each} bytes for it (iodepth {} of {} \
                     byte buffers and io_us, and its random map), more than the host's {memory} \
                     bytes of memory; fio's job fails (\"unable to allocate aligned memory\", \
                     ENOMEM)",
                    spec.name, spec.iodepth, max_bs
                ),
            ));
        }
    }
    Ok(())
}

fn check_modelled(jobs: &JobFile) -> Result<()> {
    for spec in &jobs.jobs {
        let logs = spec.logs_per_io() || spec.write_iolog.is_some();
        let unmodelled = [
            (spec.size_percent.is_some(), "size=N%"),
            (spec.offset_percent.is_some(), "offset=N%"),
            (spec.startdelay_high.is_some(), "a startdelay range"),
            (spec.exitall, "exitall"),
            (spec.wait_for.is_some(), "wait_for"),
            (spec.cpus_allowed_split, "cpus_allowed_policy=split"),
            (
                logs && !spec.per_job_logs,
                "per_job_logs=0 (one shared log)",
            ),
            (
                spec.write_iolog.is_some() && spec.numjobs > 1,
                "write_iolog with numjobs > 1",
            ),
        ];
        if let Some((_, what)) = unmodelled.iter().find(|(set, _)| *set) {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!("job '{}': {what} is not modelled by flashpath", spec.name),
            ));
        }
        use crate::workload::fio::IoEngine;
        let buffered = !spec.direct && spec.ioengine != IoEngine::Null;
        let refused = if buffered && spec.ioengine == IoEngine::IoUring {
            Some("io_uring with buffered I/O (direct=0: reads that miss the page cache go to io-wq workers) is not modelled by flashpath; set direct=1 or use libaio/psync")
        } else if spec.fsync_blocks > 0 && !buffered {
            Some("fsync=N / fdatasync=N with direct=1 or ioengine=null (only a device cache flush) is not modelled by flashpath")
        } else if spec.end_fsync && !buffered {
            Some("end_fsync / fsync_on_close with direct=1 or ioengine=null (only a device cache flush) is not modelled by flashpath")
        } else {
            None
        };
        if let Some(what) = refused {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!("job '{}': {what}", spec.name),
            ));
        }
    }
    Ok(())
}

/// A polled submission (hipri with pvsync2's RWF_HIPRI or io_uring's
/// IOPOLL) on a queue that cannot poll: kernels with the poll-queue check in
/// submit_bio_noacct fail every such I/O with EOPNOTSUPP, and fio stops the
/// job with err=95 (the real run in fixtures/fio/real-runs/iouring-hipri).
/// flashpath refuses the job up front rather than simulate a run of errors.
fn check_polled(jobs: &JobFile, settings: &QueueSettings, driver_can_poll: bool) -> Result<()> {
    use crate::workload::fio::IoEngine;
    if !settings.polled_without_poll_fails || (settings.io_poll && driver_can_poll) {
        return Ok(());
    }
    let polled = |spec: &&JobSpec| {
        spec.hipri && matches!(spec.ioengine, IoEngine::Pvsync2 | IoEngine::IoUring)
    };
    match jobs.jobs.iter().find(polled) {
        None => Ok(()),
        Some(spec) => {
            let why = if driver_can_poll {
                "the queue has io_poll=0 (set block.io_poll=1)"
            } else {
                "this device's driver has no poll queues"
            };
            Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': hipri asks for polled completion but {why}; this host's kernel \
                     fails such I/O with EOPNOTSUPP (fio: err=95, Operation not supported) \
                     (block.polled_without_poll_queue=eopnotsupp); drop hipri or set that key \
                     to 'interrupt' for a kernel without the check",
                    spec.name
                ),
            ))
        }
    }
}

pub type SourceFactory<'a> = &'a dyn Fn(&JobSpec, u64, u64, u64, u32) -> Box<dyn IoSource>;

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
    prepare(jobs, profile, 0, &fio_source, dir).map(|_| ())
}

/// `flashpath run JOB --parse-only`: parse the job file for the profile's
/// machine and make every check a run makes; the parsed file (its warnings
/// and ignored options) when all pass.
pub fn parse_only(job_path: &Path, device: &str, overrides: &[String]) -> Result<JobFile> {
    let (jobs, profile) = load(job_path, device, overrides)?;
    check_jobs(&jobs, &profile)?;
    Ok(jobs)
}

/// The machine a profile describes, built but not run: every profile value
/// read, checked against its range and turned into the model's parts.
pub struct Model {
    pub cpus: Vec<Cpu>,
    pub irq_cpu: IrqCpu,
    pub wake_placement: WakePlacement,
    pub idle: IdleConfig,
    pub costs: HostCosts,
    pub settings: QueueSettings,
    pub driver: Box<dyn Driver<Ev>>,
    pub dma: Option<crate::dma::bounce::SwiotlbPath>,
    pub thp: crate::mm::thp::ThpMode,
    pub cache_costs: Option<crate::machine::CacheCosts>,
    pub max_sectors_kb: u64,
    pub read_ahead_kb: u64,
    pub memory: u64,
    /// The largest request a bouncing DMA path maps, in pages.
    pub max_dma_pages: u64,
}

/// Build every part of the machine `profile` describes; a profile key no
/// part reads is an error.
pub fn build_model(profile: &Profile) -> Result<Model> {
    host_facts(profile)?;
    let (cpus, irq_cpu) = build_cpus(profile)?;
    let wake_placement = build_wake_placement(profile)?;
    let idle = build_idle(profile)?;
    let costs = HostCosts::from_profile(profile)?;
    let settings = QueueSettings::from_profile(profile)?;
    let driver = crate::driver::probe::probe(profile)?;
    let dma = crate::dma::bounce::SwiotlbPath::from_profile(profile, cpus.len() as u32)?;
    // Transparent huge pages decide how many DMA segments a request's
    // buffer makes; only a bouncing DMA path can tell (mm/thp.rs).
    let thp = if dma.is_some() || profile.has("host.thp") {
        let mode = profile.choice("host.thp", &["always", "madvise", "never"])?;
        crate::mm::thp::ThpMode::parse(&mode).expect("choice checked the value")
    } else {
        crate::mm::thp::ThpMode::Never
    };
    let cache_costs = if profile.has("host.cost.copy_user") {
        Some(crate::machine::CacheCosts::from_profile(profile)?)
    } else {
        None
    };
    // The queue's max_sectors_kb (BLK_DEF_MAX_SECTORS_CAP, 2560 sectors,
    // include/linux/blkdev.h) and read_ahead_kb (VM_READAHEAD_PAGES,
    // include/linux/mm.h) unless the profile sets them.
    let max_sectors_kb = if profile.has("block.max_sectors_kb") {
        profile.count(
            "block.max_sectors_kb",
            range(
                4.0,
                f64::from(1u32 << 22),
                "a request's largest size in KiB: at least a page (queue_max_sectors_store \
                 refuses less), at most 4 GiB",
            ),
        )?
    } else {
        1280
    };
    let read_ahead_kb = if profile.has("block.read_ahead_kb") {
        profile.count(
            "block.read_ahead_kb",
            range(
                0.0,
                f64::from(1u32 << 20),
                "the read-ahead window in KiB: 0 (off) to 1 GiB",
            ),
        )?
    } else {
        4 * crate::mm::readahead::DEFAULT_RA_PAGES
    };
    let memory = profile.bytes("host.memory", HOST_MEMORY)?;
    // A bouncing DMA path caps the request: drivers set max_hw_sectors
    // from dma_max_mapping_size(), which swiotlb bounds to IO_TLB_SEGSIZE
    // slots (swiotlb_max_mapping_size; virtio_max_dma_size).
    let max_dma_pages = if dma.is_some() {
        use crate::dma::swiotlb::{IO_TLB_SEGSIZE, IO_TLB_SIZE};
        u64::from(IO_TLB_SEGSIZE) * IO_TLB_SIZE / crate::mm::PAGE_SIZE
    } else {
        u64::MAX
    };
    profile.check_all_read()?;
    Ok(Model {
        cpus,
        irq_cpu,
        wake_placement,
        idle,
        costs,
        settings,
        driver,
        dma,
        thp,
        cache_costs,
        max_sectors_kb,
        read_ahead_kb,
        memory,
        max_dma_pages,
    })
}

/// A run ready to go: the job file (with its iologs read) and the machine
/// built, with every check a run makes on its inputs done.
pub struct Prepared<'a> {
    jobs: std::borrow::Cow<'a, JobFile>,
    machine: Machine,
    profile_name: String,
    seed: u64,
}

/// Everything [`run_jobs`] does before it simulates: read the iologs,
/// build the machine, lay the files out, plan the threads.
pub fn prepare<'a>(
    jobs: &'a JobFile,
    profile: &Profile,
    seed: u64,
    make_source: SourceFactory<'_>,
    base_dir: &Path,
) -> Result<Prepared<'a>> {
    let jobs_read = if jobs.jobs.iter().any(|j| j.read_iolog.is_some()) {
        std::borrow::Cow::Owned(load_iologs(jobs, base_dir)?)
    } else {
        std::borrow::Cow::Borrowed(jobs)
    };
    let jobs: &JobFile = &jobs_read;
    check_fio_setup(jobs)?;
    check_modelled(jobs)?;
    let Model {
        cpus,
        irq_cpu,
        wake_placement,
        idle,
        costs,
        settings,
        driver,
        dma,
        thp,
        cache_costs,
        max_sectors_kb,
        read_ahead_kb,
        memory,
        max_dma_pages,
    } = build_model(profile)?;
    let disk = driver.info();
    for spec in &jobs.jobs {
        if let (Some(log), Some(name)) = (&spec.iolog, &spec.read_iolog) {
            log.check_within(
                &iolog_path(base_dir, name).display().to_string(),
                disk.capacity,
            )?;
        }
    }
    let buffered_job = jobs
        .jobs
        .iter()
        .find(|s| !s.direct && s.ioengine != crate::workload::fio::IoEngine::Null);
    let cache = match (buffered_job, cache_costs) {
        (None, _) => None,
        (Some(spec), None) => {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': buffered I/O (direct=0, fio's default) needs the host's page cache costs (host.cost.copy_user, buffered_call, page_cache_lookup, page_cache_add, page_writeback), which this profile does not give; set direct=1 or add them",
                    spec.name
                ),
            ))
        }
        (Some(_), Some(costs)) => Some(crate::machine::CacheParts {
            costs,
            memory,
            disk_bytes: disk.capacity,
            ra_pages: read_ahead_kb / 4,
            max_rq_pages: (max_sectors_kb / 4).max(1).min(max_dma_pages),
        }),
    };
    check_polled(jobs, &settings, disk.can_poll)?;
    let regions = layout(jobs, disk.capacity)?;
    check_memory(jobs, &regions, memory)?;
    let ncpus = cpus.len() as u32;
    let mut plans = Vec::new();
    let mut wave = 0u32;
    let mut group = 0u32;
    let mut next_cpu = 0u32;
    for (si, spec) in jobs.jobs.iter().enumerate() {
        if si > 0 && spec.stonewall {
            wave += 1;
        }
        if si > 0 && (spec.stonewall || spec.new_group) {
            group += 1;
        }
        for clone in 0..spec.numjobs.max(1) {
            let allowed: Vec<u32> = match &spec.cpus_allowed {
                Some(list) => list.iter().copied().filter(|c| *c < ncpus).collect(),
                None => (0..ncpus).collect(),
            };
            if allowed.is_empty() {
                return Err(InputError::new(
                    jobs.path.clone(),
                    Some(spec.line),
                    format!(
                        "job '{}': cpus_allowed names no CPU of this {ncpus}-CPU host",
                        spec.name
                    ),
                ));
            }
            // The scheduler spreads threads: take the allowed CPUs in turn.
            let cpu = allowed[next_cpu as usize % allowed.len()];
            next_cpu += 1;
            let (start, len) = regions[si][clone as usize];
            plans.push(ThreadPlan {
                spec_index: si as u32,
                clone,
                cpu,
                allowed: if spec.cpus_allowed.is_some() {
                    allowed
                } else {
                    Vec::new()
                },
                wave,
                groupid: group,
                source: make_source(spec, start, len, seed, clone),
                file_start: start,
            });
        }
    }
    let machine = Machine::new(
        MachineParts {
            cpus,
            idle,
            costs,
            irq_cpu,
            wake_placement,
            settings,
            driver,
            dma,
            thp,
            cache,
        },
        &jobs.jobs,
        plans,
        seed,
    );
    Ok(Prepared {
        jobs: jobs_read,
        machine,
        profile_name: profile.name.clone(),
        seed,
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
        } = self;
        let jobs: &JobFile = &jobs;
        machine.run();
        let events = machine.events_handled();
        let completed = machine.completed_ios;
        let submitted = machine.submitted_ios;
        let (mut job_results, disk, mut extra, end): (_, _, _, Ns) = machine.results();
        let files = log_files(jobs, &mut job_results);
        extra["profile"] = serde_json::json!(profile_name);
        extra["seed"] = serde_json::json!(seed);
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
                disks: vec![disk],
                flashpath: extra,
            },
            events,
            completed_ios: completed,
            submitted_ios: submitted,
            files,
            notes: jobs
                .warnings
                .iter()
                .chain(jobs.ignored.iter())
                .map(ToString::to_string)
                .collect(),
        })
    }
}

/// A log averaged over `log_avg_msec` windows (stat.c), as fio writes it:
/// bs and offset columns 0.
/// - Latency logs are written inline (add_log_sample): a direction's
///   samples add to its window, and the first sample at least
///   log_avg_msec after the window's start writes the window's mean
///   (rounded) or, with log_max_value, its maximum, at that sample's time;
///   the next window starts at that time rounded down to the period. At the
///   job's end (finalize_logs) what is left is written at the end time.
/// - Bandwidth and IOPS logs are periodic (add_bw_samples, by the helper
///   thread): at every multiple of the period, each direction that
///   completed I/O in it gets its rate, KiB/s or I/O per second.
fn averaged_log(
    kind: &str,
    samples: &[crate::report::LatSample],
    spec: &JobSpec,
    end_ms: u64,
) -> String {
    use std::fmt::Write as _;
    let avg = spec.log_avg_msec;
    let mut text = String::new();
    let line = |text: &mut String, at: u64, value: u64, ddir: usize| {
        let _ = write!(text, "{at}, {value}, {ddir}, 0, ");
        if spec.log_offset {
            text.push_str("0, ");
        }
        text.push_str("0\n");
    };
    if matches!(kind, "bw" | "iops") {
        let mut bytes = [0u64; 3];
        let mut ios = [0u64; 3];
        let mut window_end = avg;
        let mut next = 0;
        while window_end <= end_ms {
            while next < samples.len() && samples[next].time_ms < window_end {
                let d = samples[next].ddir as usize;
                bytes[d] += u64::from(samples[next].bs);
                ios[d] += 1;
                next += 1;
            }
            for d in 0..3 {
                if ios[d] > 0 {
                    let value = if kind == "bw" {
                        bytes[d] * 1000 / avg / 1024
                    } else {
                        ios[d] * 1000 / avg
                    };
                    line(&mut text, window_end, value, d);
                }
            }
            bytes = [0; 3];
            ios = [0; 3];
            window_end += avg;
        }
        return text;
    }
    // (sum, count, max) per direction, and where each window began.
    let mut window = [(0u128, 0u64, 0u64); 3];
    let mut last = [0u64; 3];
    let flush = |text: &mut String, w: &mut (u128, u64, u64), at: u64, d: usize| {
        if w.1 > 0 {
            let value = if spec.log_max_value {
                w.2
            } else {
                // io_stat's mean + 0.50, truncated.
                ((w.0 as f64 / w.1 as f64) + 0.5) as u64
            };
            line(text, at, value, d);
        }
        *w = (0, 0, 0);
    };
    for s in samples {
        let value = match kind {
            "lat" => s.lat_ns,
            "clat" => s.clat_ns,
            _ => match s.slat_ns {
                Some(v) => v,
                None => continue,
            },
        };
        let d = s.ddir as usize;
        let w = &mut window[d];
        w.0 += u128::from(value);
        w.1 += 1;
        w.2 = w.2.max(value);
        let elapsed = s.time_ms;
        if elapsed < last[d] || elapsed - last[d] < avg {
            continue;
        }
        flush(&mut text, w, elapsed, d);
        last[d] = elapsed - elapsed % avg;
    }
    for (d, w) in window.iter_mut().enumerate() {
        flush(&mut text, w, end_ms, d);
    }
    text
}

/// The log files fio writes at the end of a job, taken out of the results
/// (stat.c flush_samples for the latency logs, iolog.c for the I/O log).
/// Job numbers count clones in order from 1, as fio's thread_number.
fn log_files(jobs: &JobFile, results: &mut [crate::report::JobResult]) -> Vec<LogFile> {
    use std::fmt::Write as _;
    let mut files = Vec::new();
    for (i, res) in results.iter_mut().enumerate() {
        let spec = &jobs.jobs[res.section_index as usize];
        let log = |name: String, contents: String, option: &str, value: &str| LogFile {
            name,
            contents,
            option: format!(
                "{}:{}: job '{}': {option}={value}",
                jobs.path, spec.line, spec.name
            ),
        };
        let samples = std::mem::take(&mut res.lat_log);
        // stat.c: lat/clat/slat samples per completion; per-I/O bw samples
        // are bytes * 10^6 / clat ns (add_bw_sample), iops samples are 1.
        let kinds: [(&Option<String>, &str, &str); 5] = [
            (&spec.write_lat_log, "write_lat_log", "lat"),
            (&spec.write_lat_log, "write_lat_log", "clat"),
            (&spec.write_lat_log, "write_lat_log", "slat"),
            (&spec.write_bw_log, "write_bw_log", "bw"),
            (&spec.write_iops_log, "write_iops_log", "iops"),
        ];
        for (asked, option, kind) in kinds {
            let Some(prefix) = asked else {
                continue;
            };
            let name = format!("{prefix}_{kind}.{}.log", i + 1);
            if spec.log_avg_msec > 0 {
                let end_ms = (res.job_runtime + spec.ramp_time) / 1_000_000;
                let text = averaged_log(kind, &samples, spec, end_ms);
                files.push(log(name, text, option, prefix));
                continue;
            }
            let mut text = String::new();
            for s in &samples {
                let value = match kind {
                    "lat" => s.lat_ns,
                    "clat" => s.clat_ns,
                    "bw" => u64::from(s.bs) * 1_000_000 / s.clat_ns.max(1),
                    "iops" => 1,
                    _ => match s.slat_ns {
                        Some(v) => v,
                        None => continue,
                    },
                };
                let _ = write!(text, "{}, {}, {}, {}, ", s.time_ms, value, s.ddir, s.bs);
                if spec.log_offset {
                    let _ = write!(text, "{}, ", s.offset);
                }
                text.push_str("0\n");
            }
            files.push(log(name, text, option, prefix));
        }
        let issued = std::mem::take(&mut res.io_log);
        if let Some(name) = &spec.write_iolog {
            let file = spec
                .filename
                .clone()
                .unwrap_or_else(|| format!("{}.{}.0", spec.name, res.clone_index));
            let mut text = format!("fio version 3 iolog\n0 {file} add\n0 {file} open\n");
            for (at_us, u) in &issued {
                let action = match u.ddir {
                    Ddir::Read => "read",
                    Ddir::Write => "write",
                    Ddir::Trim => "trim",
                };
                let _ = writeln!(text, "{at_us} {file} {action} {} {}", u.offset, u.len);
            }
            let _ = writeln!(text, "{} {file} close", res.job_runtime / 1_000);
            files.push(log(name.clone(), text, "write_iolog", name));
        }
    }
    files
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
    let mut profile = Profile::load(device)?;
    for o in overrides {
        profile.apply_override(o)?;
    }
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
            let capacity = crate::driver::probe::probe(&profile)?.info().capacity;
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

#[cfg(test)]
mod tests {
    use super::averaged_log;
    use crate::report::LatSample;
    use crate::workload::fio::JobSpec;

    fn sample(time_ms: u64, clat_ns: u64, ddir: u8) -> LatSample {
        LatSample {
            time_ms,
            lat_ns: clat_ns,
            clat_ns,
            slat_ns: None,
            ddir,
            bs: 4096,
            offset: 0,
        }
    }

    /// stat.c add_log_sample: a window closes at the first sample at least
    /// log_avg_msec after its start, with the mean rounded (or the
    /// maximum); the next starts at that time rounded down; each direction
    /// has its own; the rest is flushed at the end.
    #[test]
    fn latency_logs_average_per_direction_window() {
        let spec = JobSpec {
            log_avg_msec: 100,
            ..JobSpec::default()
        };
        let samples = [
            sample(10, 100, 0),
            sample(50, 201, 0),
            sample(60, 7, 1),
            sample(130, 300, 0),
            sample(150, 50, 0),
            sample(240, 10, 1),
        ];
        let mean = averaged_log("clat", &samples, &spec, 250);
        assert_eq!(
            mean,
            "130, 200, 0, 0, 0\n240, 9, 1, 0, 0\n250, 50, 0, 0, 0\n"
        );
        let max_spec = JobSpec {
            log_max_value: true,
            ..spec
        };
        let max = averaged_log("clat", &samples, &max_spec, 250);
        assert_eq!(
            max,
            "130, 300, 0, 0, 0\n240, 10, 1, 0, 0\n250, 50, 0, 0, 0\n"
        );
    }

    #[test]
    fn bandwidth_logs_are_periodic_rates() {
        let spec = JobSpec {
            log_avg_msec: 100,
            ..JobSpec::default()
        };
        let samples = [sample(10, 1, 0), sample(20, 1, 0), sample(150, 1, 1)];
        assert_eq!(
            averaged_log("bw", &samples, &spec, 200),
            "100, 80, 0, 0, 0\n200, 40, 1, 0, 0\n"
        );
        assert_eq!(
            averaged_log("iops", &samples, &spec, 200),
            "100, 20, 0, 0, 0\n200, 10, 1, 0, 0\n"
        );
    }
}
