//! Python bindings of the flashpath core. Binding only: every function here
//! converts arguments, calls the core, and converts the answer or the
//! error. A Rust panic is caught and raised as `FlashpathError`, never as a
//! crash of the interpreter.

use flashpath::report::{render_all, OutputFormat};
use flashpath::{profile::Profile, run, InputError};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

create_exception!(
    _core,
    FlashpathError,
    PyException,
    "Bad input to flashpath: names the file, the line and what is wrong."
);

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

/// (report, json+ report, events, I/Os completed, notes, log files).
type RunJobOutput = (String, String, u64, u64, Vec<String>, Vec<(String, String)>);

/// Run a fio job file on a profile. Returns (rendered output, json+ text
/// for the Python API, events handled, I/Os completed, ignored-option and
/// warning messages, the log files the job asked for as (name, text)).
#[pyfunction]
#[pyo3(signature = (job, device, overrides=Vec::new(), seed=0, output_format="normal".to_string()))]
fn run_job(
    py: Python<'_>,
    job: String,
    device: String,
    overrides: Vec<String>,
    seed: u64,
    output_format: String,
) -> PyResult<RunJobOutput> {
    guarded(py, move || {
        let formats = OutputFormat::from_fio_name(&output_format)?;
        let (jobs, profile) = run::load(Path::new(&job), &device, &overrides)?;
        let notes: Vec<String> = jobs
            .warnings
            .iter()
            .chain(jobs.ignored.iter())
            .map(|d| d.to_string())
            .collect();
        let out = run::run_jobs(&jobs, &profile, seed, &run::fio_source)?;
        let text = render_all(&out.result, &formats);
        let json = render_all(&out.result, &[OutputFormat::JsonPlus]);
        Ok((text, json, out.events, out.completed_ios, notes, out.files))
    })
}

/// Run an iozone command line on a profile. Returns (iozone's text, JSON
/// of the same numbers with flashpath's counters, events, I/Os completed).
#[pyfunction]
#[pyo3(signature = (args, device, overrides=Vec::new(), seed=0))]
fn run_iozone(
    py: Python<'_>,
    args: Vec<String>,
    device: String,
    overrides: Vec<String>,
    seed: u64,
) -> PyResult<(String, String, u64, u64)> {
    guarded(py, move || {
        let out = run::run_iozone(&args, &device, &overrides, seed)?;
        Ok((
            out.text,
            out.json.to_string(),
            out.events,
            out.completed_ios,
        ))
    })
}

/// Parse a job file and make every check a run makes, without simulating;
/// returns the warnings and the options listed as ignored.
#[pyfunction]
#[pyo3(signature = (job, device, overrides=Vec::new()))]
fn parse_only(
    py: Python<'_>,
    job: String,
    device: String,
    overrides: Vec<String>,
) -> PyResult<Vec<String>> {
    guarded(py, move || {
        let jobs = run::parse_only(Path::new(&job), &device, &overrides)?;
        Ok(jobs
            .warnings
            .iter()
            .chain(jobs.ignored.iter())
            .map(|d| d.to_string())
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
fn profile_description(py: Python<'_>, name: String) -> PyResult<String> {
    guarded(py, move || Ok(Profile::load(&name)?.description))
}

/// Every parameter of a profile with its unit and source.
#[pyfunction]
#[pyo3(signature = (name, overrides=Vec::new()))]
fn profile_show(py: Python<'_>, name: String, overrides: Vec<String>) -> PyResult<String> {
    guarded(py, move || {
        let mut p = Profile::load(&name)?;
        for o in &overrides {
            p.apply_override(o)?;
        }
        Ok(p.describe())
    })
}

/// Scenario files shipped with flashpath: (name, TOML text).
#[pyfunction]
fn scenario_files() -> Vec<(String, String)> {
    flashpath::profile::BUILTIN_SCENARIOS
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
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
    m.add_function(wrap_pyfunction!(run_job, m)?)?;
    m.add_function(wrap_pyfunction!(run_iozone, m)?)?;
    m.add_function(wrap_pyfunction!(parse_only, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(profile_description, m)?)?;
    m.add_function(wrap_pyfunction!(profile_show, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_files, m)?)?;
    m.add_function(wrap_pyfunction!(build_profile, m)?)?;
    Ok(())
}
