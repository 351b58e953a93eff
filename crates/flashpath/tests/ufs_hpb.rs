//! UFS + HPB + iozone front end: behaviour that can fail.

mod common;

use common::Sides;
use flashpath::device::{FlashDevice, FlashParams};
use flashpath::driver::ufshpb::{HpbDevicePolicy, HpbMode, HpbParams, Prep};
use flashpath::run::run_iozone;
use flashpath::sim::rng::RngStream;
use flashpath::workload::iozone::parse_args;

fn params() -> HpbParams {
    HpbParams {
        mode: HpbMode::Device,
        entries_per_region: 4096,
        entries_per_srgn: 1024,
        max_active_regions: 4,
        device_activation_reads: 1,
        device_policy: HpbDevicePolicy::Lru,
        eviction_thld_enter: 256,
        eviction_thld_exit: 128,
        normalization_factor: 1,
        activation_thld: 8,
        max_single_cmd_blocks: 1,
    }
}

/// Drive the host and device sides the way the driver does, loading maps
/// at once (READ BUFFER timing is the driver's).
fn read(h: &mut Sides, lpn: u64) -> bool {
    let p = h.prep_read(lpn, 1);
    match p {
        Prep::HpbRead(ppn) => {
            assert_eq!(ppn, lpn as u32 + 7, "host map returns the loaded PPN");
            h.device.hpb_read(lpn);
        }
        Prep::Normal => h.device.normal_read(lpn),
    }
    let rsp = h.device.take_rsp();
    if !rsp.is_empty() {
        h.host_rsp(&rsp);
        let mut loads = Vec::new();
        h.map_work(&mut loads);
        for (r, s) in loads {
            let (start, n) = h.srgn_span(r, s, 1 << 20);
            h.map_loaded(r, s, (start..start + n).map(|l| l as u32 + 7).collect());
        }
    }
    matches!(p, Prep::HpbRead(_))
}

#[test]
fn hpb_hit_ratio_zero_then_rising_and_dirty_falls_back() {
    let mut h = Sides::new(params(), 1 << 20);
    // Before any activation no read can be an HPB READ.
    assert!(!read(&mut h, 10));
    assert_eq!(h.stats.hit_cnt, 0);
    assert_eq!(h.stats.miss_cnt, 1);
    // The first read's response recommended its sub-region: now it hits.
    assert!(read(&mut h, 11));
    assert!(read(&mut h, 1000));
    // Another sub-region of the same region is not loaded yet.
    assert!(!read(&mut h, 1500));
    assert!(read(&mut h, 1501));
    assert_eq!(h.stats.rcmd_active_cnt, 2);
    assert_eq!(h.stats.map_req_cnt, 2);
    let ratio = |h: &Sides| h.stats.hit_cnt as f64 / (h.stats.hit_cnt + h.stats.miss_cnt) as f64;
    let before = ratio(&h);
    for l in 0..200 {
        read(&mut h, l * 5 % 2048);
    }
    assert!(
        ratio(&h) > before,
        "hit ratio rises as sub-regions activate"
    );
    // A write dirties the host entry: that block falls back to a normal
    // read (its neighbours still hit) until the device recommends a reload.
    h.prep_write(12, 1);
    h.device.write(12, 1);
    assert!(read(&mut h, 13));
    let misses = h.stats.miss_cnt;
    assert!(!read(&mut h, 12), "dirty entry -> normal READ");
    assert_eq!(h.stats.miss_cnt, misses + 1);
    // That normal read made the device recommend the sub-region again; the
    // reload cleared the dirty bit.
    assert!(read(&mut h, 12));
}

#[test]
fn hpb_region_lru_respects_the_active_limit() {
    let mut h = Sides::new(params(), 1 << 20);
    for r in 0..10u64 {
        read(&mut h, r * 4096);
    }
    assert!(h.active_regions() <= 4);
    assert!(h.stats.rcmd_inactive_cnt + h.stats.lru_evictions >= 6);
}

/// Activate and load every sub-region the way the driver does (bulk copy,
/// or the factory rule when the entries still follow it), then every HPB
/// READ must carry what a per-entry lookup of the device gave at load time.
fn load_all(h: &mut Sides, dev: &FlashDevice, lpns: u64) -> (u32, u32) {
    let (mut factory_loads, mut copied_loads) = (0, 0);
    let mut l = 0;
    while l < lpns {
        // A normal read makes the device recommend the sub-region.
        assert_eq!(h.prep_read(l, 1), Prep::Normal);
        h.device.normal_read(l);
        let rsp = h.device.take_rsp();
        h.host_rsp(&rsp);
        let mut loads = Vec::new();
        h.map_work(&mut loads);
        for (r, s) in loads {
            let (start, n) = h.srgn_span(r, s, dev.user_lpns());
            let factory = dev.run_is_factory(start, n);
            if factory {
                factory_loads += 1;
            } else {
                copied_loads += 1;
            }
            assert!(h.map_loaded_with(r, s, factory, |buf| {
                let (live, rest) = buf.split_at_mut(n as usize);
                dev.ppns_into(start, live);
                rest.fill(u32::MAX);
            }));
        }
        l += h.p.entries_per_srgn;
    }
    (factory_loads, copied_loads)
}

#[test]
fn hpb_loads_carry_the_devices_ppns_copied_or_as_the_factory_rule() {
    let p = FlashParams::small(2, 2, 64, 64);
    let mut dev = FlashDevice::new(&p, 5).unwrap();
    // Rewrite part of the second 4096-entry map chunk so that one chunk
    // leaves the factory layout and the others keep it.
    let mut now = 0;
    for l in (4096..4096 + 600).step_by(3) {
        now = dev.write(now, l, 1);
    }
    dev.flush(now);
    let lpns = 3 * 4096;
    let hp = HpbParams {
        max_active_regions: 16,
        ..params()
    };
    let mut h = Sides::new(hp, dev.user_lpns());
    h.set_factory_layout(dev.factory_layout());
    let (factory_loads, copied_loads) = load_all(&mut h, &dev, lpns);
    assert_eq!(
        (factory_loads, copied_loads),
        (8, 4),
        "chunks 0 and 2 follow the rule"
    );
    for l in 0..lpns {
        let want = dev.ppn_of(l).unwrap();
        assert_eq!(h.prep_read(l, 1), Prep::HpbRead(want), "lpn {l}");
    }
    // The host copy is a snapshot: after the device moves an entry of a
    // factory-rule sub-region, the host still sends the old PPN and the
    // device finds it stale.
    let before = dev.ppn_of(10).unwrap();
    let now = dev.write(now, 10, 1);
    dev.flush(now);
    assert!(!dev.run_is_factory(0, 1024));
    assert_eq!(h.prep_read(10, 1), Prep::HpbRead(before));
    let (_, valid) = dev.read_with_ppn(now, 10, before);
    assert!(!valid, "the device detects the stale entry");
}

/// Uniform random single-block reads over the first `range` LPNs through
/// host and device sides with instant loads; returns (hits, misses) of the
/// last `n` of `warm + n` reads and the distinct sub-regions touched.
fn uniform_reads(h: &mut Sides, range: u64, warm: u32, n: u32, seed: u64) -> (u64, u64, usize) {
    let mut rng = RngStream::new(seed, "hpb.uniform");
    let mut touched = std::collections::BTreeSet::new();
    for _ in 0..warm {
        let l = rng.below(range);
        touched.insert(l / h.p.entries_per_srgn);
        read(h, l);
    }
    let (h0, m0) = (h.stats.hit_cnt, h.stats.miss_cnt);
    for _ in 0..n {
        let l = rng.below(range);
        touched.insert(l / h.p.entries_per_srgn);
        read(h, l);
    }
    (h.stats.hit_cnt - h0, h.stats.miss_cnt - m0, touched.len())
}

/// With the whole range within the active-region limit and loads that
/// complete at once, a sub-region misses exactly once (its first read makes
/// the device recommend it), so the misses of n uniform reads over N
/// sub-regions are the distinct sub-regions touched, whose expectation is
/// N (1 - (1 - 1/N)^n).
#[test]
fn hpb_misses_are_first_touches_coupon_collector() {
    let hp = HpbParams {
        max_active_regions: 64,
        ..params()
    };
    let n_srgn = 64u64; // 16 regions x 4 sub-regions
    let reads = 120u32;
    let mut mean_misses = 0.0;
    let seeds = 40;
    for seed in 0..seeds {
        let mut h = Sides::new(hp, 1 << 20);
        let (hits, misses, distinct) = uniform_reads(&mut h, n_srgn * 1024, 0, reads, seed);
        assert_eq!(
            misses, distinct as u64,
            "seed {seed}: one miss per sub-region"
        );
        assert_eq!(hits + misses, u64::from(reads));
        mean_misses += misses as f64 / f64::from(seeds as u32);
    }
    let n = n_srgn as f64;
    let want = n * (1.0 - (1.0 - 1.0 / n).powi(reads as i32));
    eprintln!("mean misses {mean_misses:.2} vs N(1-(1-1/N)^n) = {want:.2}");
    assert!(
        (mean_misses - want).abs() < 1.5,
        "mean misses {mean_misses:.2} vs N(1-(1-1/N)^n) = {want:.2}"
    );
}

/// One sub-region per region and an active-region limit A below the R
/// regions read: the host map is an LRU cache of regions under independent
/// uniform references, so the steady-state HPB hit ratio is A / R.
#[test]
fn hpb_hit_ratio_is_active_limit_over_regions() {
    for (a, r) in [(16u32, 64u64), (8, 16), (32, 32)] {
        let hp = HpbParams {
            entries_per_region: 1024,
            entries_per_srgn: 1024,
            max_active_regions: a,
            ..params()
        };
        let mut h = Sides::new(hp, 1 << 20);
        let (hits, misses, _) = uniform_reads(&mut h, r * 1024, 5_000, 40_000, 3);
        let ratio = hits as f64 / (hits + misses) as f64;
        let want = (f64::from(a) / r as f64).min(1.0);
        eprintln!("A={a} R={r}: hit ratio {ratio:.4} vs A/R {want:.4}");
        assert!(
            (ratio - want).abs() < 0.02,
            "A={a} R={r}: hit ratio {ratio:.4} vs A/R {want:.4}"
        );
        assert!(h.active_regions() <= a);
    }
}

/// Regions of four sub-regions, an active-region limit A of half the R
/// regions read, uniform references and instant loads. Any fixed set of A
/// regions, once all its sub-regions are loaded, hits A / R of the reads.
/// The `reads` policy (ufshpb's eviction hysteresis) keeps the first A
/// regions, since no region is read much less than another, and so reaches
/// A / R; `lru` evicts on every read of an inactive region, before the new
/// region's other sub-regions are loaded, and stays below it (issue 16.2:
/// "no policy collapses below what a static set of active regions would
/// give").
#[test]
fn hpb_reads_policy_holds_a_static_set_and_lru_falls_below_it() {
    let (a, r) = (8u32, 16u64);
    let ratio = |policy| {
        let hp = HpbParams {
            max_active_regions: a,
            device_policy: policy,
            ..params()
        };
        let mut h = Sides::new(hp, 1 << 20);
        let (hits, misses, _) = uniform_reads(&mut h, r * 4096, 40_000, 60_000, 5);
        assert!(h.active_regions() <= a);
        hits as f64 / (hits + misses) as f64
    };
    let (reads, lru) = (ratio(HpbDevicePolicy::Reads), ratio(HpbDevicePolicy::Lru));
    let static_set = f64::from(a) / r as f64;
    eprintln!("hit ratio: reads {reads:.4}, lru {lru:.4}, a static set {static_set:.4}");
    assert!(
        (reads - static_set).abs() < 0.02,
        "reads policy {reads:.4} vs a static set's A/R {static_set:.4}"
    );
    assert!(
        lru < static_set - 0.05,
        "lru {lru:.4} thrashes below A/R {static_set:.4}"
    );
}

/// The hysteresis is not a pin: when the reads move to other regions, the
/// old ones' counts halve at each normalization until they reach zero and
/// are inactivated (ufshpb_normalization_work_handler), and the new ones
/// take their places.
#[test]
fn hpb_reads_policy_follows_a_moved_working_set() {
    let a = 8u32;
    let hp = HpbParams {
        max_active_regions: a,
        device_policy: HpbDevicePolicy::Reads,
        ..params()
    };
    let mut h = Sides::new(hp, 1 << 20);
    let mut rng = RngStream::new(9, "hpb.moved");
    let span = u64::from(a) * 4096;
    for _ in 0..50_000 {
        read(&mut h, rng.below(span));
    }
    // The working set moves to the next A regions.
    for _ in 0..150_000 {
        read(&mut h, span + rng.below(span));
    }
    let (h0, m0) = (h.stats.hit_cnt, h.stats.miss_cnt);
    for _ in 0..20_000 {
        read(&mut h, span + rng.below(span));
    }
    let ratio =
        (h.stats.hit_cnt - h0) as f64 / (h.stats.hit_cnt - h0 + h.stats.miss_cnt - m0) as f64;
    eprintln!("hit ratio on the moved working set: {ratio:.4}");
    assert!(
        ratio > 0.99,
        "hit ratio {ratio:.4} on the moved working set"
    );
}

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

#[test]
fn iozone_bad_arguments_name_the_argument() {
    for (line, want) in [
        ("-r 4k -i2 -I -s 1m", "-t"),
        ("-r 4k -i 5 -I -t 2 -s 1m", "-i 5"),
        ("-r 4k -i2 -I -t 2 -s 1x", "-s 1x"),
        ("-r 4k -i2 -I -t 2 -s 1m -Z", "-Z"),
        ("-r 4k -i2 -I -t 4 -s 1m -F a b", "-F"),
        ("-r 3k -i2 -I -t 2 -s 1m", "-r"),
    ] {
        let e = parse_args(&args(line)).unwrap_err();
        assert!(e.to_string().contains(want), "{line}: {e}");
    }
    let a = parse_args(&args(
        "-r 4k -+n -i2 -ecI -t 16 -l 16 -u 16 -s 64m -F a b c d e f g h i j k l m n o p",
    ))
    .unwrap();
    assert_eq!(
        (a.reclen, a.size, a.procs.clone()),
        (4096, 64 << 20, vec![16])
    );
    assert!(a.direct && a.fsync && a.close && a.no_retest);
}

/// iozone's throughput-mode lines, parsed as a script parses iozone.
#[test]
fn iozone_output_lines_parse_like_iozone() {
    let out = run_iozone(
        &args("-r 4k -+n -i 0 -i 2 -I -t 2 -s 2m -F f1 f2"),
        "ufs21-64g",
        &[],
        0,
    )
    .unwrap();
    let mut children = Vec::new();
    for line in out.text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("Children see throughput for ") {
            let (lhs, rhs) = rest.split_once('=').unwrap();
            let mut w = lhs.split_whitespace();
            let n: u32 = w.next().unwrap().parse().unwrap();
            let name = w.collect::<Vec<_>>().join(" ");
            let v: f64 = rhs
                .trim()
                .strip_suffix("kB/sec")
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            children.push((n, name, v));
        }
        for p in [
            "Parent sees",
            "Min throughput per process",
            "Max throughput per process",
            "Avg throughput per process",
        ] {
            if l.starts_with(p) {
                let v = l
                    .split('=')
                    .nth(1)
                    .unwrap()
                    .trim()
                    .trim_end_matches("kB/sec")
                    .trim();
                assert!(v.parse::<f64>().unwrap() > 0.0, "{l}");
            }
        }
    }
    let names: Vec<_> = children.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(
        names,
        ["initial writers", "random readers", "random writers"]
    );
    assert!(children.iter().all(|c| c.0 == 2 && c.2 > 0.0));
    let tests = out.json["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3);
    assert!((tests[1]["children_kBps"].as_f64().unwrap() - children[1].2).abs() < 0.01);
}

fn randread_mbps(range_mb: u64, hpb: bool, cache_pages: u32) -> (f64, serde_json::Value) {
    let files: Vec<String> = (0..4).map(|k| format!("f{k}")).collect();
    let line = format!(
        "-r 4k -+n -i2 -I -t 4 -s {}m -F {}",
        range_mb / 4,
        files.join(" ")
    );
    let sets = vec![
        format!("ufs.hpb.enabled={}", u8::from(hpb)),
        format!("device.flash.map_cache_pages={cache_pages}"),
    ];
    let out = run_iozone(&args(&line), "ufs21-64g", &sets, 1).unwrap();
    let t = &out.json["tests"][0];
    assert_eq!(t["test"], "random readers");
    (
        t["children_kBps"].as_f64().unwrap() / 1024.0,
        out.json["flashpath"]["driver"].clone(),
    )
}

/// Scaled-down hpb scenario: with a map cache covering 64 MiB, HPB off
/// falls once the range's map no longer fits; HPB on stays flat.
#[test]
fn hpb_off_falls_once_the_map_no_longer_fits() {
    let (small_off, d) = randread_mbps(32, false, 4);
    assert!(d["read_map_hit_ratio"].as_f64().unwrap() > 0.95);
    let (big_off, d) = randread_mbps(256, false, 4);
    let h = d["read_map_hit_ratio"].as_f64().unwrap();
    assert!(
        (h - 0.25).abs() < 0.05,
        "map-cache hit ratio {h} ~ C/R = 0.25"
    );
    assert!(big_off < 0.8 * small_off, "off: {small_off} -> {big_off}");
    let (big_on, d) = randread_mbps(256, true, 4);
    assert!(d["hpb"]["hit_ratio"].as_f64().unwrap() > 0.9);
    assert!(big_on > 1.3 * big_off, "on {big_on} vs off {big_off}");
}
