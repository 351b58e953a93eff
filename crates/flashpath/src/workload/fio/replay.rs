//! `read_iolog`: a job that replays an I/O log takes its file, size,
//! directions and largest block size from the log, as fio's iolog.c does.

use crate::error::{InputError, Result};
use crate::workload::fio::{BlockSize, JobFile, RwKind};
use crate::workload::Ddir;
use std::path::{Path, PathBuf};

/// The bytes of one iolog read: a million I/Os are 40 MiB of text, and
/// the bound keeps `read_iolog=/dev/zero` from reading until memory runs
/// out.
const MAX_IOLOG_BYTES: u64 = 1 << 30;
const IOLOG_BOUND: &str = "an iolog is read up to 1 GiB";

/// Where `read_iolog=name` points: relative to `dir` (the job file's
/// folder, or the folder job text is run from).
pub fn iolog_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// Read each job's `read_iolog` (relative to `dir`) and
/// let the log decide the job's file and size, as fio does: the I/O goes to
/// the file the log names (or to `replay_redirect`), and fio's `size` is the
/// sum of the log's lengths while the file must hold its highest offset.
pub fn load_iologs(jobs: &JobFile, dir: &Path) -> Result<JobFile> {
    let mut out = jobs.clone();
    for spec in &mut out.jobs {
        if spec.read_iolog.is_some() {
            // fio writes no iolog while it replays one: iolog.c init_iolog
            // opens write_iolog only when read_iolog is not set.
            spec.write_iolog = None;
        }
        let Some(name) = spec.read_iolog.clone() else {
            if spec.merge_blktrace_file.is_some() {
                // fio 3.33 crashes here (merge_blktrace_iologs strdup()s the
                // missing read_iolog: a segmentation fault).
                return Err(InputError::new(
                    jobs.path.clone(),
                    Some(spec.line),
                    format!(
                        "job '{}': merge_blktrace_file needs read_iolog, the blktrace files to \
                         merge (separated by ':')",
                        spec.name
                    ),
                ));
            }
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
        let name = match &spec.merge_blktrace_file {
            Some(merged) => merge_traces(&jobs.path, spec, dir, &name, merged)?,
            None => {
                let one = clone_log(&jobs.path, spec, &name)?;
                spec.read_iolog = Some(one.clone());
                one
            }
        };
        let path = iolog_path(dir, &name);
        // A FIFO or a device is no log (and opening a FIFO would block).
        crate::workload::trace::check_regular(&path)?;
        // A block trace rather than fio's own log: fio reads blktrace
        // files here (it checks the magic); flashpath reads every format
        // it can tell, and the one `flashpath replay --format` names.
        let format = match &spec.trace_opts.format {
            Some(f) => Some(f.clone()),
            None => match crate::workload::trace::detect(&path) {
                Ok(f) => Some(f),
                // What starts as a fio iolog, or cannot be read at all,
                // gets the iolog reader's message (naming the job's line);
                // anything else the detection's.
                Err(_) if starts_as_iolog(&path) || !readable_file(&path) => None,
                Err(e) => return Err(e),
            },
        };
        if let Some(format) = format.filter(|f| *f != crate::workload::trace::Format::Iolog) {
            load_trace(spec, path, format)?;
            continue;
        }
        let text =
            crate::input::read_bounded(&path, MAX_IOLOG_BYTES, IOLOG_BOUND).map_err(|e| {
                // fio's own line when the log is not there (iolog.c
                // init_iolog: perror("fopen read iolog")), so that a user
                // sees what fio would have said.
                let fio = if path.exists() {
                    String::new()
                } else {
                    " (fio: \"fopen read iolog: No such file or directory\")".to_string()
                };
                InputError::new(
                    jobs.path.clone(),
                    Some(spec.line),
                    format!(
                        "job '{}': read_iolog={name}: cannot read {}: {e}{fio}",
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
        // O_DIRECT I/O must be whole sectors (Linux's EINVAL), as a job's
        // bs must: the first entry that is not is named.
        if spec.direct && spec.ioengine != crate::workload::fio::IoEngine::Null {
            if let Some(e) = log
                .ios()
                .find(|e| !e.unit.offset.is_multiple_of(512) || !e.unit.len.is_multiple_of(512))
            {
                return Err(InputError::new(
                    path.display().to_string(),
                    Some(e.line),
                    format!(
                        "a {} of {} bytes at offset {}: O_DIRECT I/O must be whole 512-byte \
                         sectors; fio's I/O fails with EINVAL (err=22){}",
                        ["read", "write", "trim"][e.unit.ddir.index()],
                        e.unit.len,
                        e.unit.offset,
                        if !e.unit.offset.is_multiple_of(512) {
                            "; replay_align=512 rounds offsets down to a sector"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        // fio reports the log's directions and raises max_bs to its
        // largest I/O per direction (iolog.c read_iolog).
        let mut ios = [0u64; 3];
        let mut largest = [0u64; 3];
        for e in log.ios() {
            let i = e.unit.ddir.index();
            ios[i] += 1;
            largest[i] = largest[i].max(u64::from(e.unit.len));
        }
        fit_job_to_log(spec, ios, largest);
        if log.backwards.0 > 0 {
            // fio's rule (iolog.c delay_since_ttime), said, not silent.
            out.warnings.push(crate::error::Diagnostic {
                file: path.display().to_string(),
                line: Some(log.backwards.1),
                message: format!(
                    "the timestamp goes backwards ({} such entr{} in the log): fio issues \
                     such an entry at once, with no delay (iolog.c delay_since_ttime), and so \
                     does flashpath",
                    log.backwards.0,
                    if log.backwards.0 == 1 { "y" } else { "ies" }
                ),
            });
        }
        if log.trims_skipped.0 > 0 {
            out.warnings.push(crate::error::Diagnostic {
                file: path.display().to_string(),
                line: Some(log.trims_skipped.1),
                message: format!(
                    "{} trim entr{} left out: fio 3.33 does not replay an iolog's trims (iolog.c \
                     read_iolog2 prints \"bad ddir: 2\" for each and skips it; fio 3.34 \
                     replays them), and neither does flashpath",
                    log.trims_skipped.0,
                    if log.trims_skipped.0 == 1 { "y" } else { "ies" }
                ),
            });
        }
        spec.filename = Some(spec.replay_redirect.clone().unwrap_or(log.file.clone()));
        spec.size = Some(log.end);
        spec.offset = 0;
        spec.iolog = Some(std::sync::Arc::new(log));
    }
    Ok(out)
}

/// merge_blktrace_file: the blktrace files `read_iolog` lists merged into
/// `merged` (relative to `dir`), as fio's init.c add_job does before the
/// job runs (blktrace.c merge_blktrace_iologs); the job replays the merge.
fn merge_traces(
    job_file: &str,
    spec: &crate::workload::fio::JobSpec,
    dir: &Path,
    list: &str,
    merged: &str,
) -> Result<String> {
    use crate::workload::trace::merge;
    let names = merge::split_names(list);
    let inputs: Vec<PathBuf> = names.iter().map(|n| iolog_path(dir, n)).collect();
    let option = |values: &[f64], default: u64, option: &str| {
        merge::per_file(values, inputs.len(), default, option).map_err(|m| {
            InputError::new(
                job_file,
                Some(spec.line),
                format!("job '{}': {m}", spec.name),
            )
        })
    };
    let scalars = option(&spec.merge_blktrace_scalars, 100, "merge_blktrace_scalars")?;
    let iters = option(&spec.merge_blktrace_iters, 1, "merge_blktrace_iters")?;
    merge::merge(&inputs, &scalars, &iters, &iolog_path(dir, merged)).map_err(|e| {
        InputError::new(
            e.file.clone(),
            e.line,
            format!("job '{}': merge_blktrace_file: {}", spec.name, e.message),
        )
    })?;
    Ok(merged.to_string())
}

/// The log a job replays when `read_iolog` lists several (`a.log:b.log`,
/// a `\:` part of a name): fio 3.33 gives each numjobs clone its own,
/// clone i the (i mod n)-th (init.c and iolog.c init_iolog:
/// `get_name_by_idx(read_iolog_file, td->subjob_number)`), so a job of one
/// clone replays the first. flashpath replays one log per job section:
/// several clones of a list are refused, naming the way to write it.
fn clone_log(job_file: &str, spec: &crate::workload::fio::JobSpec, list: &str) -> Result<String> {
    let names = crate::workload::trace::merge::split_names(list);
    match names.as_slice() {
        [] => Ok(list.to_string()),
        [one] => Ok(one.clone()),
        [first, ..] if spec.numjobs <= 1 => Ok(first.clone()),
        many => Err(InputError::new(
            job_file,
            Some(spec.line),
            format!(
                "job '{}': read_iolog={list} lists {} logs for numjobs={}: fio replays log i \
                 mod {} in clone i; flashpath replays one log per job section, so give each \
                 log a section of its own",
                spec.name,
                many.len(),
                spec.numjobs,
                many.len()
            ),
        )),
    }
}

/// Whether the file begins as fio's iologs do.
fn starts_as_iolog(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 12];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|_| &head == b"fio version ")
}

/// Whether `path` is a file that opens.
fn readable_file(path: &Path) -> bool {
    std::fs::File::open(path).is_ok() && !path.is_dir()
}

/// A trace decides the job as a log does: its directions and largest
/// I/Os, its size; the I/O goes to the whole simulated device (the
/// trace's addresses are the device's).
fn load_trace(
    spec: &mut crate::workload::fio::JobSpec,
    path: PathBuf,
    format: crate::workload::trace::Format,
) -> Result<()> {
    use crate::workload::trace::replay::TraceJob;
    let t = TraceJob::load(path, format, spec.trace_opts.clone(), spec.replay.clone())?;
    if spec.direct && spec.ioengine != crate::workload::fio::IoEngine::Null {
        if let Some(e) = t.unaligned_error() {
            return Err(e);
        }
    }
    if spec.trace_opts.recorded_depth {
        if t.max_depth == 0 {
            return Err(InputError::new(
                t.path.display().to_string(),
                None,
                "the trace records no completions, so no queue depth: give --iodepth",
            ));
        }
        spec.iodepth = u32::try_from(t.max_depth).unwrap_or(u32::MAX);
    } else if t.format == crate::workload::trace::Format::Blktrace && !spec.iodepth_set {
        // fio's blktrace.c read_blktrace: "If depth wasn't manually set,
        // use probed depth" (iodepth and iodepth_low; init_iolog runs in
        // the job's thread after fixup_options, so iodepth_batch keeps
        // what the default depth gave it).
        let depth = crate::workload::trace::blktrace::fio_probed_depth(&t.path, t.ios)?;
        spec.iodepth = depth;
        spec.iodepth_low = depth;
    }
    fit_job_to_log(spec, t.ios, t.largest);
    // A raw device name: the job's region is the whole device.
    spec.filename = Some(
        spec.replay_redirect
            .clone()
            .unwrap_or_else(|| "/dev/trace".to_string()),
    );
    spec.size = None;
    spec.offset = 0;
    spec.trace = Some(std::sync::Arc::new(t));
    Ok(())
}

/// Every replayed I/O lies on the device (the first one past `capacity`
/// is the log's mistake, named with its line).
pub fn check_iologs_within(jobs: &JobFile, dir: &Path, capacity: u64) -> Result<()> {
    for spec in &jobs.jobs {
        if let (Some(log), Some(name)) = (&spec.iolog, &spec.read_iolog) {
            log.check_within(&iolog_path(dir, name).display().to_string(), capacity)?;
        }
        if let Some(t) = &spec.trace {
            t.check_within(capacity)?;
        }
    }
    Ok(())
}

/// A log or trace decides the job's directions (`rw`) from the I/Os it
/// holds per direction, and raises each direction's largest block size to
/// the log's largest I/O, as fio's iolog.c `read_iolog` does.
fn fit_job_to_log(spec: &mut crate::workload::fio::JobSpec, ios: [u64; 3], largest: [u64; 3]) {
    let has = |d: Ddir| ios[d.index()] > 0;
    spec.rw = match (has(Ddir::Read), has(Ddir::Write), has(Ddir::Trim)) {
        (true, true, _) => RwKind::ReadWrite,
        (false, true, true) => RwKind::TrimWrite,
        (false, true, false) => RwKind::Write,
        (false, false, true) => RwKind::Trim,
        _ => RwKind::Read,
    };
    for d in Ddir::ALL {
        let largest = largest[d.index()];
        let (min, max) = match &spec.bs[d.index()] {
            BlockSize::Fixed(b) => (*b, *b),
            BlockSize::Range { min, max } => (*min, *max),
            BlockSize::Split(v) => (
                v.iter().map(|x| x.0).min().unwrap_or(4096),
                v.iter().map(|x| x.0).max().unwrap_or(4096),
            ),
        };
        if largest > max {
            spec.bs[d.index()] = BlockSize::Range { min, max: largest };
        }
    }
}
