//! Helpers shared by the integration tests: `mod common;` in a test file.
//!
//! Each test file is a crate of its own and uses only some of these, so
//! every item carries `#[allow(dead_code)]`.

#[allow(dead_code)]
pub mod counting_alloc;

use flashpath::device::ufs::hpb::HpbDevice;
use flashpath::driver::ufshpb::{Hpb, HpbParams};
use flashpath::profile::Profile;
use flashpath::run::{fio_source, parse_context, run_file, run_jobs, run_text, RunOutput};
use flashpath::workload::fio::{parse_job_str, JobFile};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The profile `name` (built in, or a file) with `--set`-style overrides.
#[allow(dead_code)]
pub fn profile(name: &str, overrides: &[&str]) -> Profile {
    let mut p = Profile::load(name).unwrap();
    for o in overrides {
        p.apply_override(o).unwrap();
    }
    p
}

/// fio job-file text parsed for `profile`, relative paths from `.`. Errors
/// name the job file `t.fio`; tests match messages on that name.
#[allow(dead_code)]
pub fn parse(job: &str, profile: &Profile) -> JobFile {
    parse_job_str(
        "t.fio",
        job,
        Path::new("."),
        &parse_context(profile).unwrap(),
    )
    .unwrap()
}

/// fio job-file text run in memory on the profile `name` with `overrides`,
/// each job's stream from `seed` (unless the job names a randseed).
#[allow(dead_code)]
pub fn run_str(name: &str, job: &str, overrides: &[&str], seed: u64) -> RunOutput {
    let p = profile(name, overrides);
    run_jobs(&parse(job, &p), &p, seed, &fio_source).unwrap()
}

/// fio job-file text written to a file and run as `flashpath run` does
/// (`run_file`): the profile `name` with `overrides`, and `seed`.
#[allow(dead_code)]
pub fn run_job_file(name: &str, job: &str, overrides: &[&str], seed: u64) -> RunOutput {
    let path = write("job.fio", job);
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    run_file(&path, name, &o, seed).unwrap_or_else(|e| panic!("{e}"))
}

/// A file in a directory of its own: tests run in parallel threads of one
/// process, so a shared name would let one test run another's job file.
#[allow(dead_code)]
pub fn write(name: &str, text: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("flashpath-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

/// A duration (ns) from the profile `name` as shipped.
#[allow(dead_code)]
pub fn ns(name: &str, key: &str) -> u64 {
    Profile::load(name)
        .unwrap()
        .ns(key, flashpath::profile::limits::COST)
        .unwrap()
}

/// swiotlb maps per CPU, from the run's `flashpath` section.
#[allow(dead_code)]
pub fn maps_by_cpu(out: &RunOutput) -> Vec<u64> {
    out.result.flashpath["swiotlb"]["maps_by_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

/// The fio fixtures, carried by the repository (`tests/fixtures/fio`, see
/// `tests/fixtures/README.md` for how each file was made). A test whose
/// data is missing fails: nothing here skips.
#[allow(dead_code)]
pub fn fio_fixtures() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fio");
    assert!(p.is_dir(), "test data missing: {}", p.display());
    p
}

/// Both sides of HPB as the driver pairs them: the host (ufshpb) and the
/// device (its recommendations).
#[allow(dead_code)]
pub struct Sides {
    pub host: Hpb,
    pub device: HpbDevice,
}

impl Sides {
    #[allow(dead_code)]
    pub fn new(p: HpbParams, user_lpns: u64) -> Sides {
        Sides {
            host: Hpb::new(p, user_lpns),
            device: HpbDevice::new(p, user_lpns),
        }
    }
}

impl std::ops::Deref for Sides {
    type Target = Hpb;
    fn deref(&self) -> &Hpb {
        &self.host
    }
}

impl std::ops::DerefMut for Sides {
    fn deref_mut(&mut self) -> &mut Hpb {
        &mut self.host
    }
}

/// `job` on `profile` with the one override `set` must be refused, with
/// a message that names `--set` as the value's source, the key and
/// `words`.
#[allow(dead_code)]
pub fn assert_set_refused(job: &str, profile: &str, set: &str, words: &str) {
    let o = vec![set.to_string()];
    let err = match run_text(job, "job.fio", Path::new("."), profile, &o, 1) {
        Ok(_) => panic!("{set} must be refused"),
        Err(e) => e.to_string(),
    };
    let key = set.split('=').next().unwrap();
    assert!(
        err.starts_with("--set: ") && err.contains(key) && err.contains(words),
        "{set}: {err}"
    );
}
