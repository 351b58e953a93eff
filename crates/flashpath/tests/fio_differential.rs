//! The real fio 3.33's verdict on thousands of option/value pairs
//! (`tests/fixtures/fio-verdicts/verdicts.tsv`, made by
//! `tests/fio_verdicts.py`; its README says how) against flashpath's parse
//! and the checks a run makes (`run::check_jobs`, what `--parse-only` runs):
//! every pair fio refused is refused, and every pair fio accepted is
//! accepted or refused by name as not modelled, never called invalid.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use flashpath::profile::Profile;
use flashpath::run::{check_jobs, parse_context};
use flashpath::workload::fio::{parse_job_str, ParseContext};

struct Row {
    option: String,
    value: Option<String>,
    job: String,
    fio_ok: bool,
    fio_message: String,
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            other => panic!("bad escape \\{other:?} in verdicts.tsv"),
        }
    }
    out
}

fn verdicts_tsv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fio-verdicts/verdicts.tsv")
}

fn rows() -> Vec<Row> {
    let path = verdicts_tsv();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("test data missing: {}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("option\tvalue\tjob\tfio\tfio_message"),
        "{}: header",
        path.display()
    );
    lines
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 5, "{}: {line}", path.display());
            Row {
                option: cols[0].to_string(),
                value: (cols[1] != "<bare>").then(|| unescape(cols[1])),
                job: unescape(cols[2]),
                fio_ok: match cols[3] {
                    "ok" => true,
                    "refused" => false,
                    other => panic!("{}: verdict '{other}'", path.display()),
                },
                fio_message: unescape(cols[4]),
            }
        })
        .collect()
}

/// What flashpath made of one pair.
#[derive(Debug, PartialEq, Eq, Clone, Copy, PartialOrd, Ord)]
enum Verdict {
    Accepted,
    /// Refused by name as a valid fio value that flashpath does not model.
    NotModelled,
    Refused,
    /// A bug whatever fio says.
    Panicked,
}

/// The message flashpath gives a valid fio value it does not simulate.
const NOT_MODELLED: &str = "not modelled by flashpath";

fn judge(job: &str, ctx: &ParseContext, profile: &Profile, dir: &Path) -> (Verdict, String) {
    let text = format!("[fv]\n{job}\n");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse_job_str("fv.fio", &text, dir, ctx).and_then(|jf| check_jobs(&jf, profile))
    }));
    let Ok(result) = result else {
        return (Verdict::Panicked, "panicked".into());
    };
    match result {
        Ok(()) => (Verdict::Accepted, String::new()),
        Err(e) if e.message.contains(NOT_MODELLED) => (Verdict::NotModelled, e.to_string()),
        Err(e) => (Verdict::Refused, e.to_string()),
    }
}

/// Refusals that came from the machine the verdicts were made on, not from
/// the value: its I/O latency (latency_target), it had no huge pages reserved (vm.nr_hugepages=0), where the
/// simulated host is taken to have them (mm/thp.rs models hugetlb buffers),
/// and no such directory (flashpath takes directories as the simulated
/// machine's).
fn machine_refusal(row: &Row) -> bool {
    (row.option == "mem" && row.fio_message.contains("no huge pages available"))
        || (row.option == "directory" && row.fio_message.ends_with("is not a directory"))
        // latency_target's lat_fatal: that machine's first I/O took longer
        // than the target at depth 1, a run-time verdict on its speed (a
        // simulated run gives its own, tests/test_fio_latency_target.py).
        || (row.option == "latency_target" && row.fio_message.contains("exceeds specified max"))
}

#[test]
fn flashpath_refuses_what_fio_refuses_and_calls_nothing_valid_invalid() {
    let rows = rows();
    assert!(rows.len() > 5000, "only {} rows", rows.len());
    let profile = Profile::load("nullblk").unwrap();
    // The fio runs had no UNSET in their environment: `${UNSET}` is empty.
    let ctx = ParseContext {
        env: BTreeMap::new(),
        ..parse_context(&profile).unwrap()
    };
    // The fio runs ran in an empty directory: a log the job names is not
    // there.
    let dir = std::env::temp_dir().join(format!("flashpath-verdicts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut wrong = Vec::new();
    let mut machine_refused = 0;
    let mut counts: BTreeMap<(bool, Verdict), usize> = BTreeMap::new();
    for row in &rows {
        let (verdict, message) = judge(&row.job, &ctx, &profile, &dir);
        *counts.entry((row.fio_ok, verdict)).or_default() += 1;
        if machine_refusal(row) {
            // Still a valid value: flashpath must take it.
            assert_eq!(
                verdict,
                Verdict::Accepted,
                "{}={:?}: {message}",
                row.option,
                row.value
            );
            machine_refused += 1;
            continue;
        }
        let agrees = match verdict {
            Verdict::Accepted => row.fio_ok,
            Verdict::NotModelled => true,
            Verdict::Refused => !row.fio_ok,
            Verdict::Panicked => false,
        };
        if !agrees {
            wrong.push(format!(
                "{}={:?}: fio {} ({}); flashpath {:?}: {}",
                row.option,
                row.value,
                if row.fio_ok { "accepts" } else { "refuses" },
                row.fio_message,
                verdict,
                message
            ));
        }
    }
    let _ = std::fs::remove_dir(&dir);
    println!(
        "{} pairs; by (fio accepted, flashpath): {counts:?}; refused by fio for the \
         machine's sake: {machine_refused}",
        rows.len()
    );
    // mem=shmhuge, mem=mmaphuge, and the directories of the battery that
    // are none on that machine (0, 1, abc, ...): a few dozen, no more.
    assert!(
        (2..60).contains(&machine_refused),
        "{machine_refused} rows refused for the machine's sake"
    );
    assert!(
        wrong.is_empty(),
        "{} of {} pairs disagree with fio 3.33 (counts by (fio accepted, flashpath): {counts:?}):\n{}",
        wrong.len(),
        rows.len(),
        wrong.join("\n")
    );
}
