//! Every input the fuzzers found a fault with (`fuzz/regressions/TARGET/`),
//! replayed through the same entry points (`flashpath::check`) as the fuzz
//! targets, so `cargo test` covers them without the fuzzer. Each input has
//! a `NAME.expected` beside it: one line per result of the target (one per
//! profile or file it runs on), `ok` or `error: TEXT` (the message contains
//! TEXT, the sandbox folder written `<sandbox>`). A panic fails with the
//! input's name. `FLASHPATH_BLESS=1` writes missing `.expected` files from
//! the current behaviour (review them before committing).

use flashpath::check::{self, Outcome};
use std::path::{Path, PathBuf};

const TARGETS: [&str; 7] = [
    "fio_job",
    "profile",
    "set_override",
    "iolog",
    "iozone_args",
    "trace",
    "trace_columns",
];

fn regressions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions")
}

fn run(target: &str, data: &[u8], sandbox: &Path) -> Outcome {
    match target {
        "fio_job" => check::fio_job_input(data, sandbox),
        "profile" => check::profile_input(data),
        "set_override" => check::set_override_input(data, sandbox),
        "iolog" => check::iolog_input(data, sandbox),
        "iozone_args" => check::iozone_args_input(data),
        "trace" => check::trace_input(data, sandbox),
        "trace_columns" => check::trace_columns_input(data, sandbox),
        _ => unreachable!("{target}"),
    }
}

/// One line per result: `ok` or `error: MESSAGE`.
fn render(outcome: &Outcome, sandbox: &Path) -> Vec<String> {
    let sandbox = sandbox.display().to_string();
    match outcome {
        Outcome::Skipped => vec!["skipped".into()],
        Outcome::Ran(results) => results
            .iter()
            .map(|r| match r {
                Ok(()) => "ok".to_string(),
                Err(e) => format!("error: {}", e.to_string().replace(&sandbox, "<sandbox>")),
            })
            .collect(),
    }
}

fn matches(expected: &str, got: &str) -> bool {
    match (
        expected.strip_prefix("error: "),
        got.strip_prefix("error: "),
    ) {
        (Some(want), Some(have)) => have.contains(want),
        _ => expected == got,
    }
}

#[test]
fn every_regression_input_replays_to_its_expected_outcome() {
    let bless = std::env::var_os("FLASHPATH_BLESS").is_some();
    let mut replayed = 0;
    let mut failures = Vec::new();
    for target in TARGETS {
        let dir = regressions().join(target);
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_none_or(|x| x != "expected"))
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "{}: no inputs", dir.display());
        for input in inputs {
            let name = format!("{target}/{}", input.file_name().unwrap().to_string_lossy());
            let data = std::fs::read(&input).unwrap();
            let sandbox = std::env::temp_dir().join(format!(
                "fp-regress-{}-{}",
                std::process::id(),
                name.replace('/', "-")
            ));
            std::fs::create_dir_all(&sandbox).unwrap();
            let outcome = std::panic::catch_unwind(|| run(target, &data, &sandbox)).map_err(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            });
            let got = match &outcome {
                Ok(o) => render(o, &sandbox),
                Err(panic) => {
                    failures.push(format!("{name}: panicked: {panic}"));
                    continue;
                }
            };
            std::fs::remove_dir_all(&sandbox).unwrap();
            let expected_path = PathBuf::from(format!("{}.expected", input.display()));
            let expected = match std::fs::read_to_string(&expected_path) {
                Ok(t) => t,
                Err(_) if bless => {
                    std::fs::write(&expected_path, got.join("\n") + "\n").unwrap();
                    continue;
                }
                Err(e) => {
                    failures.push(format!("{name}: {}: {e}", expected_path.display()));
                    continue;
                }
            };
            let expected: Vec<&str> = expected.lines().collect();
            let same = expected.len() == got.len()
                && expected.iter().zip(&got).all(|(e, g)| matches(e, g));
            if !same {
                failures.push(format!(
                    "{name}: expected\n  {}\ngot\n  {}",
                    expected.join("\n  "),
                    got.join("\n  ")
                ));
            }
            replayed += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(replayed > 0 || bless);
}

/// The iolog regressions on every shipped profile, not only the two the
/// target uses: an address past the device was a panic in the FTL
/// (emmc51-intel, ufs21-64g) and wrapped silently elsewhere (nullblk,
/// nvme-dram); it must be the log's error, at its line, everywhere.
#[test]
fn an_iolog_past_the_device_is_the_logs_error_on_every_profile() {
    let cases = [
        (
            "offset-2-63-beyond-the-device",
            "reaches past the end of the device",
        ),
        (
            "offset-plus-length-2-64-wraps",
            "passes the end of any device",
        ),
    ];
    let sandbox = std::env::temp_dir().join(format!("fp-regress-iolog-{}", std::process::id()));
    std::fs::create_dir_all(&sandbox).unwrap();
    for (case, what) in cases {
        let log = sandbox.join("trace.iolog");
        std::fs::copy(regressions().join("iolog").join(case), &log).unwrap();
        for profile in check::shipped_profiles() {
            let e = check::iolog_file(&log, profile).unwrap_err();
            assert_eq!(
                e.file,
                log.display().to_string(),
                "{case} on {profile}: {e}"
            );
            assert_eq!(e.line, Some(5), "{case} on {profile}: {e}");
            assert!(e.message.contains(what), "{case} on {profile}: {e}");
        }
    }
    std::fs::remove_dir_all(&sandbox).unwrap();
}
