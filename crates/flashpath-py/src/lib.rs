//! Python bindings of the flashpath core. Binding only: every function here
//! converts arguments, calls the core, and converts the answer or the
//! error. A Rust panic is caught and raised as `FlashpathError`, never as a
//! crash of the interpreter.

use flashpath::profile::{Profile, Value};
use flashpath::report::{render_all, OutputFormat};
use flashpath::workload::fio::AggBwSampling;
use flashpath::{run, InputError};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

create_exception!(
    _core,
    FlashpathError,
    PyException,
    "Bad input to flashpath: names the file, the line and what is wrong."
);

/// A str argument as Rust text. Command-line strings carry the bytes
/// they cannot decode as lone surrogates (PEP 383), which a Rust String
/// refuses; they become U+FFFD here, so a message can name the argument
/// instead of the conversion failing.
struct Text(String);

impl<'py> FromPyObject<'py> for Text {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        let s: OsString = ob.extract()?;
        Ok(Text(s.to_string_lossy().into_owned()))
    }
}

fn strings(v: Vec<Text>) -> Vec<String> {
    v.into_iter().map(|t| t.0).collect()
}

fn to_py(e: InputError) -> PyErr {
    FlashpathError::new_err((e.to_string(), e.file, e.line, e.message))
}

/// Run `f` without the GIL, turning a panic into a FlashpathError.
fn guarded<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, InputError> + Send,
) -> PyResult<T> {
    let out = py.allow_threads(|| catch_unwind(AssertUnwindSafe(f)));
    match out {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(FlashpathError::new_err((
                format!("internal error (please report it): {what}"),
                "flashpath".to_string(),
                None::<u32>,
                what,
            )))
        }
    }
}

/// One fio run, as Python reads it: named, read-only fields.
#[pyclass(frozen, get_all, module = "flashpath._core")]
struct JobRun {
    /// The report in the output formats asked for.
    text: String,
    /// fio's json+ report with flashpath's own section, for the Python API.
    json_text: String,
    /// Simulation events handled (for benchmarks).
    events: u64,
    completed_ios: u64,
    /// Warnings and options listed as ignored, one message each.
    notes: Vec<String>,
    /// The logs the job asked for (write_lat_log, write_iolog): the API
    /// returns them, the CLI writes them.
    logs: Vec<LogFile>,
    /// Job clones that ended on an error: fio's exit status.
    failed_jobs: u32,
}

/// A log a job asked for.
#[pyclass(frozen, get_all, module = "flashpath._core")]
#[derive(Clone)]
struct LogFile {
    /// File name, relative to where fio runs.
    name: String,
    contents: String,
    /// The option that asked for it: `job.fio:3: job 'j': write_iolog=x`.
    option: String,
    /// Add to the end of an existing file (a shared per_job_logs=0 log).
    append: bool,
}

#[pymethods]
impl LogFile {
    fn __repr__(&self) -> String {
        format!("LogFile(name={:?}, option={:?})", self.name, self.option)
    }
}

#[pymethods]
impl JobRun {
    fn __repr__(&self) -> String {
        format!(
            "JobRun(completed_ios={}, events={}, notes={}, logs={})",
            self.completed_ios,
            self.events,
            self.notes.len(),
            self.logs.len()
        )
    }
}

/// Render a run's report in `formats`, with json+ for the Python API.
fn job_run(out: run::RunOutput, formats: &[OutputFormat]) -> JobRun {
    let mut notes = out.notes.clone();
    if !formats.contains(&OutputFormat::Normal) {
        // fio prints these on its standard output, ahead of a JSON or
        // terse report; here they go with the notes (stderr), so that the
        // report stays what its format parses as.
        notes.extend(flashpath::report::normal::error_exit_lines(&out.result));
    }
    JobRun {
        failed_jobs: out.failed_jobs(),
        text: render_all(&out.result, formats),
        json_text: render_all(&out.result, &[OutputFormat::JsonPlus]),
        events: out.events,
        completed_ios: out.completed_ios,
        notes,
        logs: out
            .files
            .into_iter()
            .map(|f| LogFile {
                name: f.name,
                contents: f.contents,
                option: f.option,
                append: f.append,
            })
            .collect(),
    }
}

/// Run a fio job file on a profile.
#[pyfunction]
#[pyo3(signature = (job, device, overrides=Vec::new(), seed=0, output_format=Text("normal".to_string()), bandwidth_log=None))]
fn run_job(
    py: Python<'_>,
    job: PathBuf,
    device: Text,
    overrides: Vec<Text>,
    seed: u64,
    output_format: Text,
    bandwidth_log: Option<(bool, bool)>,
) -> PyResult<JobRun> {
    let bandwidth_log = bandwidth_log.map(|(periodic, at_report)| AggBwSampling {
        periodic,
        at_report,
    });
    guarded(py, move || {
        let formats = OutputFormat::from_fio_name(&output_format.0)?;
        let out = run::run_file_with(&job, &device.0, &strings(overrides), seed, bandwidth_log)?;
        Ok(job_run(out, &formats))
    })
}

/// Run a fio job given as text: `name` names it in messages (`<job text>`),
/// relative `include` and `read_iolog` files are looked for in `base_dir`.
#[pyfunction]
#[pyo3(signature = (text, name, base_dir, device, overrides=Vec::new(), seed=0, output_format=Text("normal".to_string()), bandwidth_log=None))]
#[allow(clippy::too_many_arguments)]
fn run_job_text(
    py: Python<'_>,
    text: Text,
    name: Text,
    base_dir: PathBuf,
    device: Text,
    overrides: Vec<Text>,
    seed: u64,
    output_format: Text,
    bandwidth_log: Option<(bool, bool)>,
) -> PyResult<JobRun> {
    let bandwidth_log = bandwidth_log.map(|(periodic, at_report)| AggBwSampling {
        periodic,
        at_report,
    });
    guarded(py, move || {
        let formats = OutputFormat::from_fio_name(&output_format.0)?;
        let overrides = strings(overrides);
        let out = run::run_text_with(
            &text.0,
            &name.0,
            &base_dir,
            &device.0,
            &overrides,
            seed,
            bandwidth_log,
        )?;
        Ok(job_run(out, &formats))
    })
}

/// `flashpath replay`: the replay job text and the trace options fio has
/// no words for.
#[pyfunction]
#[pyo3(signature = (text, name, base_dir, device, overrides, seed, output_format, trace_format=None, columns=None, trace_device=None, remap=None, absolute=false, lat_csv=None, recorded_depth=false, replay_delay=None, per_cpu=None))]
#[allow(clippy::too_many_arguments)]
fn run_trace_text(
    py: Python<'_>,
    text: Text,
    name: Text,
    base_dir: PathBuf,
    device: Text,
    overrides: Vec<Text>,
    seed: u64,
    output_format: Text,
    trace_format: Option<Text>,
    columns: Option<Text>,
    trace_device: Option<Text>,
    remap: Option<Text>,
    absolute: bool,
    lat_csv: Option<Text>,
    recorded_depth: bool,
    replay_delay: Option<Text>,
    per_cpu: Option<Text>,
) -> PyResult<JobRun> {
    guarded(py, move || {
        let formats = OutputFormat::from_fio_name(&output_format.0)?;
        let opts = flashpath::workload::trace::replay::options_from_args(
            trace_format.as_ref().map(|t| t.0.as_str()),
            columns.as_ref().map(|t| t.0.as_str()),
            trace_device.as_ref().map(|t| t.0.as_str()),
            remap.as_ref().map_or("error", |t| t.0.as_str()),
            absolute,
            lat_csv.as_ref().map(|t| t.0.as_str()),
            recorded_depth,
            replay_delay.as_ref().map_or("reap", |t| t.0.as_str()),
            per_cpu.as_ref().map_or("merge", |t| t.0.as_str()),
        )?;
        let overrides = strings(overrides);
        let out = run::run_trace_text(
            &text.0, &name.0, &base_dir, &device.0, &overrides, seed, &opts,
        )?;
        Ok(job_run(out, &formats))
    })
}

/// One iozone run: iozone's text and the same numbers as JSON.
#[pyclass(frozen, get_all, module = "flashpath._core")]
struct IozoneRun {
    /// iozone's own report.
    text: String,
    /// `{"tests": [...], "flashpath": {...}}`.
    json_text: String,
    events: u64,
    completed_ios: u64,
}

#[pymethods]
impl IozoneRun {
    fn __repr__(&self) -> String {
        format!(
            "IozoneRun(completed_ios={}, events={})",
            self.completed_ios, self.events
        )
    }
}

/// Run an iozone command line on a profile.
#[pyfunction]
#[pyo3(signature = (args, device, overrides=Vec::new(), seed=0))]
fn run_iozone(
    py: Python<'_>,
    args: Vec<Text>,
    device: Text,
    overrides: Vec<Text>,
    seed: u64,
) -> PyResult<IozoneRun> {
    guarded(py, move || {
        let out = run::run_iozone(&strings(args), &device.0, &strings(overrides), seed)?;
        Ok(IozoneRun {
            text: out.text,
            json_text: out.json.to_string(),
            events: out.events,
            completed_ios: out.completed_ios,
        })
    })
}

/// One dd run: what dd prints on stderr.
#[pyclass(frozen, get_all, module = "flashpath._core")]
struct DdRun {
    /// dd's warnings, records in and out, transfer line, flashpath's notes.
    text: String,
    events: u64,
    completed_ios: u64,
}

#[pymethods]
impl DdRun {
    fn __repr__(&self) -> String {
        format!(
            "DdRun(completed_ios={}, events={})",
            self.completed_ios, self.events
        )
    }
}

/// dd's operands as the bytes of its argv (Python's file-system encoding
/// gives back what the shell passed, even when it is not UTF-8).
fn operand_bytes(operands: Vec<OsString>) -> Vec<Vec<u8>> {
    operands
        .into_iter()
        .map(OsString::into_encoded_bytes)
        .collect()
}

/// Run a dd command line (`if=/dev/X of=/dev/null bs= count= ...`).
#[pyfunction]
#[pyo3(signature = (operands, device, overrides=Vec::new(), seed=0))]
fn run_dd(
    py: Python<'_>,
    operands: Vec<OsString>,
    device: Text,
    overrides: Vec<Text>,
    seed: u64,
) -> PyResult<DdRun> {
    guarded(py, move || {
        let operands = operand_bytes(operands);
        let out = run::run_dd(&operands, &device.0, &strings(overrides), seed)?;
        Ok(DdRun {
            text: out.text,
            events: out.events,
            completed_ios: out.completed_ios,
        })
    })
}

/// The fio job a dd command line runs (for tests and the curious).
#[pyfunction]
fn dd_job(py: Python<'_>, operands: Vec<OsString>) -> PyResult<String> {
    guarded(py, move || {
        Ok(flashpath::workload::dd::DdCommand::parse(&operand_bytes(operands))?.job_text())
    })
}

/// Parse a job file (or, with `text`, job text that `job` names in
/// messages, its relative files looked for in `base_dir`) and make every
/// check a run makes, without simulating; returns the warnings and the
/// options listed as ignored.
#[pyfunction]
#[pyo3(signature = (job, device, overrides=Vec::new(), text=None, base_dir=None))]
fn parse_only(
    py: Python<'_>,
    job: PathBuf,
    device: Text,
    overrides: Vec<Text>,
    text: Option<Text>,
    base_dir: Option<PathBuf>,
) -> PyResult<Vec<String>> {
    guarded(py, move || {
        let overrides = strings(overrides);
        let jobs = match text {
            Some(t) => run::parse_only_text(
                &t.0,
                &job.to_string_lossy(),
                &base_dir.unwrap_or_else(|| PathBuf::from(".")),
                &device.0,
                &overrides,
            )?,
            None => run::parse_only(&job, &device.0, &overrides)?,
        };
        Ok(jobs
            .fio_messages
            .iter()
            .cloned()
            .chain(
                jobs.warnings
                    .iter()
                    .chain(jobs.ignored.iter())
                    .map(ToString::to_string),
            )
            .collect())
    })
}

/// The job sections that write or trim (fio's td_write, td_trim), each
/// with its line, for `run --readonly` (options.c rw_verify refuses them).
/// `text` is the job's text when it is not the file `job` (then `job`
/// names it in messages and `base_dir` holds its includes).
#[pyfunction]
#[pyo3(signature = (job, device, overrides=Vec::new(), text=None, base_dir=None))]
fn job_writers(
    py: Python<'_>,
    job: Text,
    device: Text,
    overrides: Vec<Text>,
    text: Option<Text>,
    base_dir: Option<PathBuf>,
) -> PyResult<Vec<(String, u32)>> {
    use flashpath::workload::Ddir;
    guarded(py, move || {
        let overrides = strings(overrides);
        let (jobs, _) = match text {
            Some(t) => run::load_text(
                &t.0,
                &job.0,
                &base_dir.unwrap_or_else(|| PathBuf::from(".")),
                &device.0,
                &overrides,
            )?,
            None => run::load(std::path::Path::new(&job.0), &device.0, &overrides)?,
        };
        Ok(jobs
            .jobs
            .iter()
            .filter(|s| s.rw.has(Ddir::Write) || s.rw.has(Ddir::Trim))
            .map(|s| (s.name.clone(), s.line))
            .collect())
    })
}

/// Names of the shipped profiles (machines, not the host fragments).
#[pyfunction]
fn profiles() -> Vec<String> {
    Profile::builtin_names()
        .filter(|n| !n.contains('/'))
        .map(str::to_string)
        .collect()
}

/// One profile's description line.
#[pyfunction]
fn profile_description(py: Python<'_>, name: Text) -> PyResult<String> {
    guarded(py, move || Ok(Profile::load(&name.0)?.description))
}

/// Every parameter of a profile with its unit and source.
#[pyfunction]
#[pyo3(signature = (name, overrides=Vec::new()))]
fn profile_show(py: Python<'_>, name: Text, overrides: Vec<Text>) -> PyResult<String> {
    guarded(py, move || {
        let mut p = Profile::load(&name.0)?;
        for o in &strings(overrides) {
            flashpath::parameters::apply_override(&mut p, o)?;
        }
        Ok(flashpath::parameters::describe(&p))
    })
}

/// A profile value from Python: a bool, an int (64-bit), a float, a str or
/// a list of them, nested at most `depth` lists deep (a profile's lists
/// are flat; the bound keeps a self-nested list from overflowing the
/// stack).
fn profile_value(key: &str, ob: &Bound<'_, PyAny>, depth: u32) -> Result<Value, InputError> {
    use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString};
    let wrong =
        |what: &str| InputError::new("profile writer", None, format!("parameter '{key}': {what}"));
    if ob.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(ob.extract().map_err(|_| wrong("not a bool"))?));
    }
    if ob.is_instance_of::<PyInt>() {
        let i: i64 = ob
            .extract()
            .map_err(|_| wrong("an integer outside 64 bits"))?;
        return Ok(Value::Int(i));
    }
    if ob.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(
            ob.extract().map_err(|_| wrong("not a float"))?,
        ));
    }
    if ob.is_instance_of::<PyString>() {
        let t: Text = ob.extract().map_err(|_| wrong("not text"))?;
        return Ok(Value::Str(t.0));
    }
    if let Ok(list) = ob.downcast::<PyList>() {
        if depth == 0 {
            return Err(wrong("lists nested too deeply"));
        }
        return list
            .iter()
            .map(|item| profile_value(key, &item, depth - 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::List);
    }
    Err(wrong(
        "a value is a bool, int, float, str or a list of them",
    ))
}

/// A profile's text from its header and `(key, value, unit, source)`
/// parameters, by the core's writer (profile/write.rs): `flashpath
/// calibrate fit` writes the profile it fitted with it.
#[pyfunction]
#[pyo3(signature = (name, description, include, params, comments=Vec::new()))]
fn write_profile(
    py: Python<'_>,
    name: Text,
    description: Text,
    include: Vec<Text>,
    params: Vec<(Text, Bound<'_, PyAny>, Text, Text)>,
    comments: Vec<Text>,
) -> PyResult<String> {
    use flashpath::profile::write::{write, Entry, Header};
    let mut entries = Vec::with_capacity(params.len());
    for (key, value, unit, source) in params {
        let value = profile_value(&key.0, &value, 4).map_err(to_py)?;
        entries.push(Entry {
            key: key.0,
            value,
            unit: unit.0,
            source: source.0,
        });
    }
    let header = Header {
        comments: strings(comments),
        name: name.0,
        description: description.0,
        include: strings(include),
    };
    guarded(py, move || write(&header, &entries))
}

/// Scenario files shipped with flashpath: (name, TOML text).
#[pyfunction]
fn scenario_files() -> Vec<(String, String)> {
    flashpath::profile::BUILTIN_SCENARIOS
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// The FTL's write amplification against the analytic model at each spare
/// of `WA_SPARES` (docs/ftl-write-amplification.md): one dict per row.
#[pyfunction]
#[pyo3(signature = (blocks=512, pages=512, warm=3.0, measure=2.0, seed=1))]
fn ftl_wa_table(
    py: Python<'_>,
    blocks: u32,
    pages: u32,
    warm: f64,
    measure: f64,
    seed: u64,
) -> PyResult<Vec<std::collections::BTreeMap<&'static str, f64>>> {
    use flashpath::device::ftl::analytic::wa_table;
    // Bounds checked here, where the arguments arrive: blocks=0 left no
    // spare (a panic in wa_lrw), and pages=10**9 allocated 8 GB before the
    // device refused its size. The default device is 512 x 512 units; at
    // the smallest over-provisioning (7%) a die needs 67 blocks for data
    // and GC reserve at 64 (the core's own check), so 128 is the smallest
    // power of two every row takes; 2^22 units (16x the default) bound
    // memory and time.
    let bad = |what: String| FlashpathError::new_err((format!("ftl_wa_table: {what}"),));
    if !(128..=65_536).contains(&blocks) {
        return Err(bad(format!("blocks={blocks}: from 128 to 65536")));
    }
    if !(1..=4096).contains(&pages) || u64::from(blocks) * u64::from(pages) > 1 << 22 {
        return Err(bad(format!(
            "pages={pages}: from 1 to 4096, and blocks x pages at most 2^22"
        )));
    }
    for (name, x) in [("warm", warm), ("measure", measure)] {
        if !(x.is_finite() && x > 0.0 && x <= 100.0) {
            return Err(bad(format!(
                "{name}={x}: capacities written, above 0 and at most 100"
            )));
        }
    }
    guarded(py, move || {
        Ok(wa_table(blocks, pages, warm, measure, seed)?
            .into_iter()
            .map(|r| {
                std::collections::BTreeMap::from([
                    ("over_provisioning", r.over_provisioning),
                    ("nominal_analytic_wa", r.nominal_analytic_wa),
                    ("effective_alpha", r.effective_alpha),
                    ("effective_spare_factor", r.effective_spare_factor),
                    ("analytic_wa", r.analytic_wa),
                    ("greedy_mean_field_wa", r.greedy_mean_field_wa),
                    ("simulated_wa", r.simulated_wa),
                ])
            })
            .collect())
    })
}

/// "release" or "debug": how the core was compiled (for benchmarks).
#[pyfunction]
fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("FlashpathError", m.py().get_type::<FlashpathError>())?;
    m.add_class::<JobRun>()?;
    m.add_class::<IozoneRun>()?;
    m.add_class::<DdRun>()?;
    m.add_class::<LogFile>()?;
    m.add_function(wrap_pyfunction!(run_job, m)?)?;
    m.add_function(wrap_pyfunction!(run_job_text, m)?)?;
    m.add_function(wrap_pyfunction!(run_trace_text, m)?)?;
    m.add_function(wrap_pyfunction!(run_iozone, m)?)?;
    m.add_function(wrap_pyfunction!(run_dd, m)?)?;
    m.add_function(wrap_pyfunction!(dd_job, m)?)?;
    m.add_function(wrap_pyfunction!(parse_only, m)?)?;
    m.add_function(wrap_pyfunction!(job_writers, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(profile_description, m)?)?;
    m.add_function(wrap_pyfunction!(profile_show, m)?)?;
    m.add_function(wrap_pyfunction!(write_profile, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_files, m)?)?;
    m.add_function(wrap_pyfunction!(build_profile, m)?)?;
    m.add_function(wrap_pyfunction!(ftl_wa_table, m)?)?;
    Ok(())
}
