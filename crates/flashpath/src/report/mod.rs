//! Results in fio's own output formats (normal, json, json+, terse), plus
//! flashpath's own section (per-layer breakdown, model counters) under one
//! extra top-level key that fio readers ignore.
//!
//! Layout follows fio's stat.c: [`group`] sums job clones into reporting
//! entries and group statistics (__show_run_stats, sum_thread_stats), then
//! [`json`], [`terse`] and [`normal`] print them, with [`fmt`] holding
//! fio's number formatting (num2str) and ctime.
//!
//! Decisions:
//! - Virtual time: the report time (`timestamp`, `time`, the normal job
//!   line's date) is `RunResult::end_time` read as time since the Unix epoch,
//!   so output is deterministic ("Thu Jan  1 00:00:05 1970" in UTC).
//! - fio's defaults for options that change the report are assumed:
//!   percentile_list (17 values), clat_percentiles=1, lat_percentiles=0,
//!   slat_percentiles=0, kb_base=1024, unit_base=bytes, sig_figs=4,
//!   terse_version=3, unified_rw_reporting=none.
//! - The normal output's `pid=` is the job's `pid` if set, else the clone's
//!   1-based start position.
//! - Several formats at once print in fio's order: header lines (when
//!   normal is asked for), terse lines, the JSON document, then the normal
//!   results, as `--output-format=normal,json+,terse` does.

pub mod fmt;
pub mod group;
pub mod json;
pub mod logs;
pub mod model;
pub mod normal;
pub mod terse;

pub use model::*;

use crate::error::InputError;

/// The version string fio 3.33 prints; readers (fio-plot, fio's own
/// tools) check for it.
pub const FIO_VERSION: &str = "fio-3.33";

/// One of fio's `--output-format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    Normal,
    Json,
    JsonPlus,
    Terse,
}

impl OutputFormat {
    /// Parse fio's `--output-format` argument: one name or a comma list
    /// (`normal,json+,terse`). Returns the formats in the order fio prints
    /// them (terse, json or json+, normal), each once; `json` together with
    /// `json+` is `json+` (fio ORs the bits and json+ includes json).
    pub fn from_fio_name(s: &str) -> Result<Vec<OutputFormat>, InputError> {
        let (mut normal, mut json, mut plus, mut terse) = (false, false, false, false);
        for name in s.split(',') {
            match name.trim() {
                "normal" => normal = true,
                "json" => json = true,
                "json+" => plus = true,
                "terse" => terse = true,
                other => {
                    let hint = crate::error::nearest(other, ["normal", "json", "json+", "terse"])
                        .map(|n| format!(" (did you mean '{n}'?)"))
                        .unwrap_or_default();
                    return Err(InputError::new(
                        "--output-format",
                        None,
                        format!(
                            "unknown output format '{other}'{hint}; valid: normal, json, json+, terse"
                        ),
                    ));
                }
            }
        }
        let mut out = Vec::new();
        if terse {
            out.push(OutputFormat::Terse);
        }
        if plus {
            out.push(OutputFormat::JsonPlus);
        } else if json {
            out.push(OutputFormat::Json);
        }
        if normal {
            out.push(OutputFormat::Normal);
        }
        Ok(out)
    }

    /// fio's name for this format.
    pub fn fio_name(self) -> &'static str {
        match self {
            OutputFormat::Normal => "normal",
            OutputFormat::Json => "json",
            OutputFormat::JsonPlus => "json+",
            OutputFormat::Terse => "terse",
        }
    }
}

/// A run's results in one of fio's formats. Normal includes the start-up
/// header lines fio prints before the results.
pub fn render(run: &RunResult, format: OutputFormat) -> String {
    match format {
        OutputFormat::Normal => normal::render_header(run) + &normal::render_results(run),
        OutputFormat::Json => json::render_json(run, false),
        OutputFormat::JsonPlus => json::render_json(run, true),
        OutputFormat::Terse => terse::render_terse(run),
    }
}

/// Several formats of one run, laid out as fio lays out one run with a
/// comma list of formats.
pub fn render_all(run: &RunResult, formats: &[OutputFormat]) -> String {
    let has = |f: OutputFormat| formats.contains(&f);
    let mut out = String::new();
    if has(OutputFormat::Normal) {
        out.push_str(&normal::render_header(run));
    }
    if has(OutputFormat::Terse) {
        out.push_str(&terse::render_terse(run));
    }
    if has(OutputFormat::JsonPlus) {
        out.push_str(&json::render_json(run, true));
    } else if has(OutputFormat::Json) {
        out.push_str(&json::render_json(run, false));
    }
    if has(OutputFormat::Normal) {
        out.push_str(&normal::render_results(run));
    }
    out
}

/// print_disk_util: percent of the run the device was busy, from whole
/// milliseconds as /proc/diskstats gives them, capped at 100.
pub fn disk_util_pct(d: &DiskUtil) -> f64 {
    let total = group::ms_floor(d.total);
    if total == 0 {
        return 0.0;
    }
    (100.0 * group::ms_floor(d.busy) as f64 / total as f64).min(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_format_names() {
        use OutputFormat::*;
        assert_eq!(OutputFormat::from_fio_name("json").unwrap(), vec![Json]);
        assert_eq!(
            OutputFormat::from_fio_name("normal,json+,terse").unwrap(),
            vec![Terse, JsonPlus, Normal]
        );
        assert_eq!(
            OutputFormat::from_fio_name("json,json+").unwrap(),
            vec![JsonPlus]
        );
        let e = OutputFormat::from_fio_name("jsn").unwrap_err();
        assert!(e.to_string().contains("did you mean 'json'"), "{e}");
    }

    #[test]
    fn empty_run_renders_without_panicking() {
        let run = RunResult::default();
        for f in [
            OutputFormat::Normal,
            OutputFormat::Json,
            OutputFormat::JsonPlus,
            OutputFormat::Terse,
        ] {
            let _ = render(&run, f);
        }
        let j: serde_json::Value = serde_json::from_str(&render(&run, OutputFormat::Json)).unwrap();
        assert_eq!(j["time"], "Thu Jan  1 00:00:00 1970");
    }
}
