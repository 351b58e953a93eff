//! Issue 6: UFS clock scaling with devfreq and seed 3's block-layer
//! `dev_freq_timeout_ms`, end to end through the machine.

use flashpath::run::run_file;
use std::io::Write;

/// Case 1's job (rate=10ms, 10 MiB/s) shortened to `jobs` jobs.
fn job(rate: &str, jobs: u32, runtime_s: u32) -> tempfile_path::Path {
    let mut g = format!(
        "[global]\nfilename=/dev/sda\nsize=1G\nrw=randread\nbs=64k\niodepth=1\ntime_based\n\
         runtime={runtime_s}\nioengine=libaio\ndirect=1\ncpus_allowed=3\nrate={rate}\n"
    );
    for i in 0..jobs {
        g += &format!("\n[job{}]\nstartdelay={}\n", i + 1, 2 * runtime_s * i);
    }
    tempfile_path::Path::with(&g)
}

mod tempfile_path {
    use super::Write;
    pub struct Path(pub std::path::PathBuf);
    impl Path {
        pub fn with(text: &str) -> Path {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "flashpath-devfreq-{}-{}.fio",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::File::create(&p)
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            Path(p)
        }
    }
    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

struct Clat {
    min: f64,
    max: f64,
    mean: f64,
    n: u64,
    counters: serde_json::Value,
}

fn run(path: &tempfile_path::Path, sets: &[&str]) -> Clat {
    run_on("ufs41-snapdragon", path, sets)
}

/// A profile file that includes the shipped ufs41-snapdragon and adds
/// `extra` (TOML tables), removed when dropped.
struct VariantProfile(std::path::PathBuf);

impl VariantProfile {
    fn with(extra: &str) -> VariantProfile {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../profiles/ufs41-snapdragon.toml")
            .canonicalize()
            .unwrap();
        let p = std::env::temp_dir().join(format!(
            "flashpath-devfreq-{}-{}.toml",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let text = format!(
            "[profile]\nname = \"variant\"\ndescription = \"test variant\"\n\
             include = [\"{}\"]\n\n{extra}",
            base.display()
        );
        std::fs::write(&p, text).unwrap();
        VariantProfile(p)
    }
    fn device(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for VariantProfile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn run_on(device: &str, path: &tempfile_path::Path, sets: &[&str]) -> Clat {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let out = run_file(&path.0, device, &sets, 1).unwrap();
    let mut min = u64::MAX;
    let mut max = 0;
    let (mut sum, mut n) = (0.0, 0);
    for j in &out.result.jobs {
        let c = &j.dirs[0].clat.stat;
        if c.samples == 0 {
            continue;
        }
        min = min.min(c.min);
        max = max.max(c.max);
        sum += c.mean() * c.samples as f64;
        n += c.samples;
    }
    Clat {
        min: min as f64 / 1e3,
        max: max as f64 / 1e3,
        mean: sum / n as f64 / 1e3,
        n,
        counters: out.result.flashpath.clone(),
    }
}

#[test]
fn knob_on_gives_lower_clat_than_off_for_intermittent_reads() {
    let p = job("10ms", 2, 2);
    let on = run(&p, &["block.dev_freq_timeout_ms=30"]);
    let off = run(&p, &["block.dev_freq_timeout_ms=0"]);
    eprintln!(
        "on: min {:.1} max {:.1} avg {:.1} n {}; off: min {:.1} max {:.1} avg {:.1} n {}",
        on.min, on.max, on.mean, on.n, off.min, off.max, off.mean, off.n
    );
    assert!(on.n > 500 && off.n > 500);
    assert!(on.mean < off.mean, "the knob must lower the mean clat");
    assert!(on.min < off.min, "with the knob reads run at the max clock");
    eprintln!("{}", clk(&on));
    assert!(clk(&on)["transitions"].as_u64().unwrap() >= 1);
}

#[test]
fn service_time_is_monotone_in_the_clock() {
    // One job, clock pinned by the initial state and a governor that never
    // moves it (polling 0 = no monitor): min < max clock never serves faster.
    let p = job("10ms", 1, 1);
    let lo = run(
        &p,
        &["ufs.clk_scaling.initial=min", "ufs.clk_scaling.polling=0"],
    );
    let hi = run(
        &p,
        &["ufs.clk_scaling.initial=max", "ufs.clk_scaling.polling=0"],
    );
    eprintln!("lo {:.1} hi {:.1}", lo.min, hi.min);
    assert!(hi.min < lo.min && hi.mean < lo.mean);
}

fn clk(c: &Clat) -> serde_json::Value {
    c.counters["driver"]["clk_scaling"].clone()
}

fn pairs(v: &serde_json::Value) -> Vec<(u64, u64)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect()
}

const MS: u64 = 1_000_000;

#[test]
fn knob_max_clock_from_the_next_evaluation_and_request_drops_timeout_after_last_io() {
    // One 1-s job of intermittent reads at the min clock, knob at 30 ms.
    let p = job("10ms", 1, 1);
    let on = run(&p, &["block.dev_freq_timeout_ms=30"]);
    let c = clk(&on);
    let trace = pairs(&c["trace"]);
    let resumes: Vec<u64> = c["resumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    // Starts at 75 MHz; the first read resumes monitoring; the request is
    // added at once but sits on the disk's device, so devfreq's notifier
    // does not fire: the clock goes up at the next evaluation, exactly
    // polling_ms (60 ms) after the resume, and never comes down.
    assert_eq!(trace[0], (0, 75_000_000));
    assert_eq!(trace.len(), 2, "{trace:?}");
    assert_eq!(trace[1], (resumes[0] + 60 * MS, 300_000_000));
    let q = &on.counters["dev_freq_qos"];
    let added = pairs(&q["added"]);
    let removed = pairs(&q["removed"]);
    assert_eq!(added.len(), 1);
    assert!(added[0].0 < resumes[0] + 60 * MS);
    // Removed exactly dev_freq_timeout_ms after the last I/O's submission.
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].0, removed[0].1 + 30 * MS);
    // Without the knob the clock stays at the minimum: every evaluation
    // sees a few percent busy.
    let off = run(&p, &["block.dev_freq_timeout_ms=0"]);
    assert_eq!(pairs(&clk(&off)["trace"]), vec![(0, 75_000_000)]);
}

#[test]
fn continuous_load_from_idle_scales_up_at_the_first_evaluation() {
    // rate=0: QD1 back to back. The device is busy from the first request
    // to the last completion, i.e. all but the host's share of each I/O,
    // well above upthreshold 70%: the first window (from the resume) is
    // enough, so the max clock comes exactly polling_ms after the resume.
    let p = job("0ms", 1, 1);
    let c = clk(&run(&p, &["block.dev_freq_timeout_ms=0"]));
    let trace = pairs(&c["trace"]);
    let r0 = c["resumes"][0].as_u64().unwrap();
    assert_eq!(trace[1], (r0 + 60 * MS, 300_000_000), "{trace:?}");
}

/// Entries into `state` of `cpu` (the simulated `cpuidle/stateN/usage`).
fn usage(c: &Clat, cpu: usize, state: &str) -> u64 {
    c.counters["cpus"][cpu]["cstates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == state)
        .map(|s| s["usage"].as_u64().unwrap())
        .unwrap()
}

#[test]
fn ufs_qcom_vote_keeps_the_readers_cpu_out_of_power_collapse() {
    // Intermittent reads on CPU 3: while waiting for a read it has no timer
    // armed, so with NOHZ idle the menu governor predicts a long sleep.
    // ufs-qcom's resume-latency vote on CPU 3's group (100 us, below the
    // gold state's entry + exit of 1900 us) keeps it in WFI; with a vote
    // above 1900 us the gold state is allowed and every read it is taken
    // in pays on top either its exit-latency-us (1300 us) or, when the
    // read completes while CPU 3 is still entering the state (600 us
    // entry-latency-us, longer than a read), the rest of that entry.
    let p = job("10ms", 1, 1);
    let voted = run(&p, &["block.dev_freq_timeout_ms=30"]);
    let free = run(
        &p,
        &["block.dev_freq_timeout_ms=30", "ufs.qcom_qos.vote=2ms"],
    );
    let pc = "cpu-power-collapse";
    assert_eq!(usage(&voted, 3, pc), 0, "voted CPU 3 never leaves WFI");
    assert!(usage(&voted, 3, "WFI") > 100);
    let deep = usage(&free, 3, pc);
    assert!(deep > 10, "unvoted CPU 3 reaches power collapse ({deep})");
    eprintln!(
        "voted mean {:.1} max {:.1}; free mean {:.1} max {:.1} ({deep} deep)",
        voted.mean, voted.max, free.mean, free.max
    );
    // Each deep wait pays at least the entry left when its read completes:
    // 600 us less the wait, which is at most the voted run's mean read
    // (its reads wait in WFI, 1 us exit). The mean rises by at least the
    // share of reads that waited deep times that (the other CPUs are the
    // same), and by less than the share times the 1300 us exit plus the
    // longest path.
    let share = deep as f64 / free.n as f64;
    let least = 600.0 - voted.mean;
    let rise = free.mean - voted.mean;
    assert!(rise >= 0.9 * share * least, "{rise} vs {share} x {least}");
    assert!(rise <= share * 1300.0 + 10.0, "{rise} vs {share} x 1300");
    assert!(free.max - voted.max >= 1000.0);
    assert!(voted.counters["driver"]["qcom_qos_votes"].as_u64().unwrap() >= 1);
}

#[test]
fn ufs_qcom_gating_delay_follows_the_clock() {
    // Reads every 31.25 ms (64 KiB at 2 MiB/s), clock pinned (no monitor):
    // at the min clock the 10 ms PWR_SAVE delay gates the clocks before
    // every read; at the max clock the 50 ms PERF delay never does.
    let p = job("2m", 1, 1);
    let lo = run(
        &p,
        &["ufs.clk_scaling.initial=min", "ufs.clk_scaling.polling=0"],
    );
    let hi = run(
        &p,
        &["ufs.clk_scaling.initial=max", "ufs.clk_scaling.polling=0"],
    );
    let g = |c: &Clat| clk(c)["gatings"].as_u64().unwrap();
    eprintln!("n {} gatings lo {} hi {}", lo.n, g(&lo), g(&hi));
    assert!(lo.n >= 30);
    // The clocks start ungated (idle since time 0), so the first read at
    // ~0 ms finds them on; every later read comes 31 ms after the last.
    assert_eq!(g(&hi), 0);
    assert_eq!(g(&lo), lo.n - 1);
    // Each gated read pays the ungate cost (200 us) on top.
    assert!(lo.mean - hi.mean > 200.0);
}

#[test]
fn gic_one_of_n_routing_never_wakes_a_powered_down_cpu_while_one_is_awake() {
    // Case 1's reads, the UFS interrupt's affinity the silver mask 0x0f.
    // Routed to the first CPU of the mask (CPU 0, as profiled) some
    // completions reach CPU 0 in power collapse and pay its 750 us exit.
    // With GIC 1-of-N routing (gic_intr_routing.c) the distributor picks
    // an awake CPU of the mask: CPU 0 in WFI, else CPU 2, which the
    // ufs-qcom vote on the gold group keeps in WFI while the clocks are
    // on. So no read pays a power-collapse exit: every read is within the
    // 750 us exit of the fastest one, and the mean cannot rise.
    let p = job("10ms", 2, 2);
    let first = run(&p, &["block.dev_freq_timeout_ms=30"]);
    let v = VariantProfile::with(
        "[host]\nirq_cpu = { value = \"one-of-n\", unit = \"name\", source = \"test\" }\n\
         irq_affinity = { value = 15, unit = \"count\", source = \"test: 0x0f\" }\n",
    );
    let one_of_n = run_on(v.device(), &p, &["block.dev_freq_timeout_ms=30"]);
    assert!(first.max > first.min + 750.0, "{} {}", first.max, first.min);
    assert!(
        one_of_n.max < one_of_n.min + 750.0,
        "{} {}",
        one_of_n.max,
        one_of_n.min
    );
    assert!(one_of_n.mean <= first.mean);
    assert_eq!(one_of_n.n, first.n, "the same reads complete");
}

#[test]
fn one_of_n_routing_needs_a_mask_of_the_hosts_cpus() {
    let p = job("10ms", 1, 1);
    let run_err = |extra: &str| {
        let v = VariantProfile::with(extra);
        run_file(&p.0, v.device(), &[], 1)
            .err()
            .map(|e| e.to_string())
    };
    let no_mask =
        run_err("[host]\nirq_cpu = { value = \"one-of-n\", unit = \"name\", source = \"test\" }\n");
    assert!(no_mask.unwrap().contains("host.irq_affinity"));
    let stray_mask =
        run_err("[host]\nirq_affinity = { value = 15, unit = \"count\", source = \"test\" }\n");
    assert!(stray_mask.unwrap().contains("one-of-n"));
    let outside = run_err(
        "[host]\nirq_cpu = { value = \"one-of-n\", unit = \"name\", source = \"test\" }\n\
         irq_affinity = { value = 256, unit = \"count\", source = \"test\" }\n",
    );
    assert!(outside.unwrap().contains("names no CPU"));
}

#[test]
fn clock_scaling_work_runs_on_its_cpu_once_per_idle_to_busy_request() {
    // QD1 reads: every read finds no other active, so ufshcd queues
    // resume_work for each; the devfreq monitor adds one work per
    // evaluation. On CPU 1 (off the I/O path: fio on CPU 3, the interrupt
    // on CPU 0) they wake CPU 1 and change no read's latency.
    let p = job("10ms", 1, 1);
    let none = run(&p, &["block.dev_freq_timeout_ms=30"]);
    let on1 = run(
        &p,
        &[
            "block.dev_freq_timeout_ms=30",
            "ufs.clk_scaling.work_cpu=cpu1",
        ],
    );
    let clk = &on1.counters["driver"]["clk_scaling"];
    let works = clk["works_run"].as_u64().unwrap();
    let evals = clk["evaluations"].as_u64().unwrap();
    assert_eq!(
        works,
        on1.n + evals,
        "{works} works, {} reads, {evals} evaluations",
        on1.n
    );
    assert!(none.counters["driver"]["clk_scaling"]
        .get("works_run")
        .is_none());
    let wakes = on1.counters["cpus"][1]["wakeups_from_idle"]
        .as_u64()
        .unwrap();
    assert!(
        wakes >= on1.n,
        "CPU 1 woken {wakes} times for {} reads",
        on1.n
    );
    assert_eq!(
        (on1.mean, on1.min, on1.max),
        (none.mean, none.min, none.max)
    );
}

#[test]
fn background_wakeups_are_a_poisson_process_on_their_cpus() {
    // Two 2 s jobs 4 s apart: the run lasts ~6 s. At 200/s on CPU 1 (off
    // the I/O path) the count is Poisson with mean ~1200: within 5 sigma
    // (~175), the same with the same seed, and no read changes.
    let p = job("10ms", 2, 2);
    let v = VariantProfile::with(
        "[host.background_wakeups]\ncpus = { value = 2, unit = \"count\", source = \"test\" }\n\
         rate = { value = 200, unit = \"Hz\", source = \"test\" }\n\
         cost = { value = 5, unit = \"us\", source = \"test\" }\n",
    );
    let sets = [
        "block.dev_freq_timeout_ms=30",
        "host.background_wakeups.rate=0.001Hz",
    ];
    let quiet = run_on(v.device(), &p, &sets);
    let a = run_on(v.device(), &p, &["block.dev_freq_timeout_ms=30"]);
    let b = run_on(v.device(), &p, &["block.dev_freq_timeout_ms=30"]);
    let n = a.counters["background_wakeups"].as_u64().unwrap();
    assert_eq!(n, b.counters["background_wakeups"].as_u64().unwrap());
    let end_s = 6.0;
    let mean = 200.0 * end_s;
    assert!(
        (n as f64 - mean).abs() < 5.0 * mean.sqrt() + 20.0,
        "{n} vs {mean}"
    );
    // Nothing else wakes CPU 1; a wake-up that comes while CPU 1 is still
    // leaving power collapse (750 us) for the previous one finds it awake:
    // at 200/s that is 1 - exp(-200 x 755 us) = 14% of them at most.
    let wakes = a.counters["cpus"][1]["wakeups_from_idle"].as_u64().unwrap();
    assert!(
        wakes <= n && wakes as f64 >= 0.8 * n as f64,
        "CPU 1 woken {wakes} times for {n} wake-ups"
    );
    assert_eq!((a.mean, a.min, a.max), (quiet.mean, quiet.min, quiet.max));
    // A mask that names no CPU of the host is refused.
    let bad = VariantProfile::with(
        "[host.background_wakeups]\ncpus = { value = 256, unit = \"count\", source = \"test\" }\n\
         rate = { value = 200, unit = \"Hz\", source = \"test\" }\n\
         cost = { value = 5, unit = \"us\", source = \"test\" }\n",
    );
    let e = run_file(&p.0, bad.device(), &[], 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("names no CPU"), "{e}");
}
