//! The polled-I/O seed (SEEDS.md section 3) on its three NVMe profiles:
//! runs the `io-poll` scenario's job in both modes and checks the
//! calibration (polled latency) and the model's interrupt-mode result.

mod common;

use flashpath::profile::{Profile, BUILTIN_SCENARIOS};
use flashpath::run::{fio_source, run_jobs, RunOutput};

fn scenario() -> toml::Table {
    let text = BUILTIN_SCENARIOS
        .iter()
        .find(|(n, _)| *n == "io-poll/scenario")
        .expect("scenarios/io-poll/scenario.toml is embedded")
        .1;
    text.parse().unwrap()
}

/// `job` on `profile` with `overrides`, seed 0.
fn run(profile: &str, job: &str, overrides: &[&str]) -> RunOutput {
    common::run_str(profile, job, overrides, 0)
}

/// dd's figures: elapsed time per read (us) and MB/s (10^6 bytes/s).
fn dd(out: &RunOutput) -> (f64, f64) {
    let r = &out.result.jobs[0].dirs[0];
    let secs = r.runtime as f64 / 1e9;
    (
        secs * 1e6 / r.total_ios as f64,
        r.io_bytes as f64 / secs / 1e6,
    )
}

#[test]
fn io_poll_scenario_reproduces_the_seed() {
    let doc = scenario();
    let modes = doc["modes"].as_table().unwrap();
    println!(
        "{:16} {:5} {:>9} {:>9} {:>9} {:>9}   breakdown ns/io",
        "case", "mode", "lat_us", "pub", "MB/s", "pub"
    );
    for case in doc["cases"].as_array().unwrap() {
        let name = case["case"].as_str().unwrap();
        let profile = case["profile"].as_str().unwrap();
        let job = case["job"].as_str().unwrap();
        let published = case["published"].as_table().unwrap();
        for mode in ["irq", "poll"] {
            let sets: Vec<&str> = modes[mode]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let out = run(profile, job, &sets);
            let (lat, bw) = dd(&out);
            assert_eq!(out.result.jobs[0].dirs[0].total_ios, 204_800);
            let get = |m: &str| {
                published
                    .get(&format!("{m}.{mode}"))
                    .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
            };
            let b = &out.result.flashpath["breakdown_ns_per_io"];
            println!(
                "{name:16} {mode:5} {lat:9.2} {:>9} {bw:9.1} {:>9}   {b}",
                get("latency_us").map(|v| v.to_string()).unwrap_or_default(),
                get("bandwidth_MBps")
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
            );
            let cpus = out.result.flashpath["cpus"].as_array().unwrap();
            for (i, c) in cpus.iter().enumerate().take(2) {
                let used: Vec<String> = c["cstates"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|s| s["usage"].as_u64().unwrap() > 0)
                    .map(|s| format!("{} x{}", s["name"].as_str().unwrap(), s["usage"]))
                    .collect();
                println!("    cpu{i} idle states: {}", used.join(", "));
            }
            println!("    sys_cpu {:.1}%", out.result.jobs[0].sys_cpu);
            if let Some(p) = get("latency_us") {
                // Polled: the calibration target (each device's one fitted
                // number); interrupt: the model's own result.
                let tol = if mode == "poll" { 0.02 } else { 0.10 };
                assert!(
                    ((lat - p) / p).abs() <= tol,
                    "{name} {mode}: {lat:.2} us vs published {p} us"
                );
            }
            if let Some(p) = get("bandwidth_MBps") {
                assert!(
                    ((bw - p) / p).abs() <= 0.10,
                    "{name} {mode}: {bw:.1} MB/s vs {p}"
                );
            }
            if mode == "poll" {
                // A poller holds its core: ~100% system time.
                assert!(out.result.jobs[0].sys_cpu > 80.0);
            }
        }
    }
}

#[test]
fn classic_poll_interrupt_on_the_pollers_core_delays_the_poll() {
    // v4.4: the interrupt still fires on a polled request's queue. On
    // another CPU (the profile's choice) it costs the poller nothing; on
    // the poller's own core it preempts the spin, and the poll that
    // notices the completion comes after the handler.
    let job = scenario()["cases"][0]["job"].as_str().unwrap().to_string();
    let p = Profile::load("nvme-dram").unwrap();
    let ns = |key: &str| p.ns(key, flashpath::profile::limits::COST).unwrap();
    let cost = ns("host.cost.irq_entry") + ns("driver.irq_handler");
    let iter = ns("driver.poll");
    let other = run("nvme-dram", &job, &["block.io_poll=1"]);
    let same = run(
        "nvme-dram",
        &job,
        &["block.io_poll=1", "host.irq_cpu=submitter"],
    );
    let (lo, _) = dd(&other);
    let (ls, _) = dd(&same);
    let extra_ns = (ls - lo) * 1000.0;
    assert!(
        extra_ns > (cost - iter) as f64 && extra_ns < (cost + iter) as f64,
        "{extra_ns} ns vs {cost}"
    );
    // With poll queues (v5.0+) polled I/O raises no interrupt at all.
    let pq = run(
        "nvme-dram",
        &job,
        &[
            "block.io_poll=1",
            "host.irq_cpu=submitter",
            "driver.poll_queues=1",
        ],
    );
    let (lq, _) = dd(&pq);
    assert!((lq - lo).abs() * 1000.0 < iter as f64, "{lq} vs {lo}");
}

#[test]
fn nvme_latency_spread_keeps_the_mean_and_has_its_standard_deviation() {
    // Polled QD1 reads: every cost but the device's fixed time is fixed,
    // and a polled completion is found within one poll iteration (60 ns).
    // With device.latency_cv = cv the fixed 9470 ns becomes a shifted
    // exponential: the mean clat stays (within 1%), its standard
    // deviation becomes cv x 9470 ns (within 5%, 20k samples).
    let job = "[dd]\nfilename=/dev/nvme0n1\nioengine=pvsync2\nhipri\nrw=read\nbs=4k\n\
               direct=1\nnumber_ios=20000\nsize=800M\ncpus_allowed=0\n";
    let clat = |cv: &str| {
        let set = format!("device.latency_cv={cv}");
        let out = run("nvme-samsung", job, &["block.io_poll=1", &set]);
        let s = &out.result.jobs[0].dirs[0].clat.stat;
        (s.mean(), s.stddev())
    };
    let (m0, sd0) = clat("0");
    assert!(sd0 < 100.0, "fixed device: {sd0} ns");
    for cv in [0.2, 0.5] {
        let (m, sd) = clat(&cv.to_string());
        assert!((m - m0).abs() / m0 < 0.01, "cv {cv}: mean {m} vs {m0}");
        let want = cv * 9470.0;
        assert!(
            (sd - want).abs() / want < 0.05,
            "cv {cv}: sd {sd} vs {want}"
        );
    }
}

/// The DRAM device on the intel-2015 host with v4.4 intel_pstate (E5-2623
/// v3's range, docs/io-poll.md) and the tick stopped in idle or not,
/// written side by side so that the device's include finds the host.
fn governed_dram(nohz: bool) -> Profile {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
    let mut host = std::fs::read_to_string(root.join("hosts/intel-2015.toml")).unwrap();
    if nohz {
        host = host.replace(
            "[host.idle]\n",
            "[host.idle]\nnohz = { value = true, unit = \"bool\", source = \"test\" }\n",
        );
    }
    host.push_str(
        r#"
[host.cpufreq]
governor = { value = "intel_pstate", unit = "name", source = "test" }
min_pstate = { value = 12, unit = "count", source = "test" }
max_pstate = { value = 30, unit = "count", source = "test" }
turbo_pstate = { value = 35, unit = "count", source = "test" }
"#,
    );
    let dev = common::write(
        "nvme-dram.toml",
        &std::fs::read_to_string(root.join("nvme-dram.toml")).unwrap(),
    );
    let hosts = dev.parent().unwrap().join("hosts");
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::write(hosts.join("intel-2015.toml"), host).unwrap();
    Profile::load(dev.to_str().unwrap()).unwrap()
}

/// (mean MHz, MHz at the end, samples) of core `cpu`.
fn freq(out: &RunOutput, cpu: usize) -> (u64, u64, u64) {
    let f = &out.result.flashpath["cpus"][cpu]["cpufreq"];
    let get = |k: &str| f[k].as_u64().unwrap_or_else(|| panic!("{k} in {f}"));
    (get("mhz_mean"), get("mhz_at_end"), get("samples"))
}

#[test]
fn v44_intel_pstate_samples_only_cores_whose_tick_runs() {
    // 40,000 reads: 0.4-0.8 s, past the 0.28 s climb from 1.2 to 3.5 GHz.
    let job = "[dd]\nfilename=/dev/nvme0n1\nioengine=pvsync2\nhipri\nrw=read\nbs=4k\ndirect=1\nnumber_ios=40000\nsize=800M\ncpus_allowed=0\n";
    let go = |nohz: bool, poll: u32| {
        let mut p = governed_dram(nohz);
        p.apply_override(&format!("block.io_poll={poll}")).unwrap();
        run_jobs(&common::parse(job, &p), &p, 0, &fio_source).unwrap()
    };
    // NO_HZ_IDLE, interrupts: the interrupt CPU never runs a task, so its
    // deferrable timer never fires and it keeps intel_pstate's initial
    // min_pstate; dd's core, idle at runs of tick boundaries, has late
    // samples (busy x 10 ms / duration) and stays below nominal.
    let irq = go(true, 0);
    assert_eq!(freq(&irq, 1), (1200, 1200, 0));
    let (dd_mean, _, dd_samples) = freq(&irq, 0);
    assert!(
        dd_samples > 0 && dd_mean < 3000,
        "{dd_mean} MHz, {dd_samples}"
    );
    // Polling: dd's core runs at every boundary, climbs one P-state per
    // 12 ms sample (busy ~100 > setpoint 97) and ends at turbo.
    let poll = go(true, 1);
    assert_eq!(freq(&poll, 0).1, 3500);
    assert!(freq(&poll, 0).0 > dd_mean);
    // The tick running on idle cores: the interrupt CPU is sampled on
    // time, one sample per msecs_to_jiffies(10) = 12 ms, so it climbs
    // too: the end-of-run samples are floor(runtime / 12 ms).
    let tick = go(false, 0);
    let (mean1, end1, samples1) = freq(&tick, 1);
    let secs = tick.result.jobs[0].dirs[0].runtime as f64 / 1e9;
    assert!(secs > 0.28, "{secs}");
    assert_eq!(end1, 3500);
    assert!(
        (samples1 as f64 - secs / 0.012).abs() <= 2.0,
        "{samples1} in {secs} s"
    );
    assert!(mean1 > 2300 && mean1 < 3500, "{mean1}");
}
