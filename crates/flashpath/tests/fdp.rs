//! NVMe Flexible Data Placement end to end: fio 3.38's data placement
//! options (`fdp`, `plids`/`fdp_pli`, `plid_select`, `dataplacement`; fio
//! 3.33 has none) on io_uring_cmd, the placement identifier carried from
//! fio's io_u through the passthrough request and the NVMe command
//! (DTYPE 2h, DSPEC) to the FDP layer (`device/fdp.rs`, profile
//! `nvme-fdp-like`), and its counters in the JSON. The reference for the
//! options is the real fio 3.38 (built from fio's tag fio-3.38): its
//! verdicts are in tests/fixtures/fio-verdicts/fdp-3.38.tsv, and the
//! round-robin order below is what its `--debug=io` prints ("dspec set
//! to ...") for the same lists.

use flashpath::report::{render, OutputFormat};
use flashpath::run::run_text;
use std::path::Path;

fn run(job: &str, profile: &str) -> serde_json::Value {
    let out = run_text(job, "job.fio", Path::new("."), profile, &[], 1).expect("the job runs");
    serde_json::from_str(&render(&out.result, OutputFormat::Json)).expect("valid JSON")
}

fn refusal(job: &str, profile: &str) -> String {
    match run_text(job, "job.fio", Path::new("."), profile, &[], 1) {
        Ok(_) => panic!("must be refused: {job}"),
        Err(e) => e.to_string(),
    }
}

fn fixture(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn per_handle(j: &serde_json::Value) -> Vec<u64> {
    j["flashpath"]["driver"]["device"]["fdp"]["per_handle"]
        .as_array()
        .expect("the fdp section")
        .iter()
        .map(|h| h["host_bytes"].as_u64().unwrap())
        .collect()
}

fn write_bytes(j: &serde_json::Value, job: usize) -> u64 {
    j["jobs"][job]["write"]["io_bytes"].as_u64().unwrap()
}

/// fio's own examples/uring-cmd-fdp.fio (tests/fixtures/fio/examples,
/// copied from fio's repository), with two edits: its 1000 s runtime cut
/// to 20 ms of simulated time (the mechanism is the same; 1000 s of 4 KiB
/// random I/O is hundreds of millions of commands), and its `offset=N%`
/// written as the bytes fio 3.38 computes for this namespace
/// (filesetup.c get_start_offset: capacity x N / 100, aligned up to the
/// smallest block size), because flashpath refuses `offset=N%` as not
/// modelled (workload/fio/setup.rs). Its three jobs write with the
/// placement indices 0-3, 4-5 and 6: on the 8 handles of nvme-fdp-like,
/// handle 7 receives nothing, the bytes of each job spread round robin
/// over its own handles (equal to one write), and the handles' bytes add
/// up to the jobs' writes, which are all placed writes.
#[test]
fn fios_fdp_example_places_each_jobs_writes_on_its_handles() {
    let capacity: u64 = 3_840_000_000_000;
    let at = |pct: u64| (capacity * pct / 100).div_ceil(4096) * 4096;
    let text = fixture("fio/examples/uring-cmd-fdp.fio")
        .replace("runtime=1000", "runtime=20ms")
        .replace("offset=0%", "offset=0")
        .replace("offset=30%", &format!("offset={}", at(30)))
        .replace("offset=60%", &format!("offset={}", at(60)));
    assert!(text.contains("runtime=20ms") && !text.contains("offset=30%"));
    let j = run(&text, "nvme-fdp-like");
    for k in 0..3 {
        assert_eq!(j["jobs"][k]["error"], 0);
        assert!(write_bytes(&j, k) > 0);
    }
    let h = per_handle(&j);
    assert_eq!(h.len(), 8);
    assert_eq!(h[7], 0, "no job names handle 7");
    let groups: [&[usize]; 3] = [&[0, 1, 2, 3], &[4, 5], &[6]];
    for (k, g) in groups.iter().enumerate() {
        let sum: u64 = g.iter().map(|&i| h[i]).sum();
        assert_eq!(sum, write_bytes(&j, k), "job {k}'s writes on its handles");
        let (lo, hi) = (
            g.iter().map(|&i| h[i]).min().unwrap(),
            g.iter().map(|&i| h[i]).max().unwrap(),
        );
        assert!(hi - lo <= 4096, "round robin over {g:?}: {lo}..{hi}");
    }
    let fdp = &j["flashpath"]["driver"]["device"]["fdp"];
    let writes: u64 = (0..3)
        .map(|k| j["jobs"][k]["write"]["total_ios"].as_u64().unwrap())
        .sum();
    assert_eq!(fdp["placed_writes"].as_u64(), Some(writes));
    assert_eq!(fdp["events"]["invalid_placement_identifier"], 0);
    let stats = &fdp["statistics"];
    assert_eq!(
        stats["host_bytes_with_metadata_written"].as_u64(),
        Some(h.iter().sum::<u64>())
    );
}

/// The same job without placement writes everything to handle 0 (the
/// default placement handle), and plid_select=random still spreads a
/// job's writes over its handles only.
#[test]
fn no_directive_goes_to_handle_zero_and_random_stays_on_the_list() {
    let job = |extra: &str| {
        format!(
            "[j]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\ncmd_type=nvme\niodepth=8\n\
             bs=4k\nrw=randwrite\nnumber_ios=2000\nsize=1g\nrandseed=1\n{extra}"
        )
    };
    let none = run(&job(""), "nvme-fdp-like");
    let h = per_handle(&none);
    assert_eq!(h[0], write_bytes(&none, 0));
    assert!(h[1..].iter().all(|&b| b == 0));
    assert_eq!(
        none["flashpath"]["driver"]["device"]["fdp"]["placed_writes"],
        0
    );
    let random = run(
        &job("fdp=1\nfdp_pli=2,5\nfdp_pli_select=random\n"),
        "nvme-fdp-like",
    );
    let h = per_handle(&random);
    assert_eq!(h[2] + h[5], write_bytes(&random, 0));
    // 2000 fair draws: each handle gets 1000 +- 5 sigma (sigma = 22).
    for i in [2, 5] {
        assert!(
            (h[i] / 4096).abs_diff(1000) < 112,
            "handle {i}: {}",
            h[i] / 4096
        );
    }
}

/// fio 3.38's setup refusals, with its messages: FDP needs an engine that
/// can fetch the reclaim unit handles (only io_uring_cmd), a namespace
/// with an FDP configuration, and indices below the handle count; fdp=1
/// contradicts dataplacement=none; streams need ids.
#[test]
fn placement_setup_fails_as_fio_does() {
    let base = "[j]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\ncmd_type=nvme\nbs=4k\n\
                rw=randwrite\nnumber_ios=10\nsize=1m\n";
    let e = refusal(&format!("{base}fdp=1\nfdp_pli=7,8\n"), "nvme-fdp-like");
    assert!(
        e.contains("fio: for /dev/ng0n1 PID index 8 must be smaller than 8"),
        "{e}"
    );
    let e = refusal(&format!("{base}fdp=1\n"), "nvme-d7p5510-3t84");
    assert!(e.contains("/dev/ng0n1: fdp fetch ruhs failed"), "{e}");
    let e = refusal(
        "[j]\nioengine=io_uring\ndirect=1\nbs=4k\nrw=randwrite\nnumber_ios=10\nsize=1m\nfdp=1\n",
        "nvme-fdp-like",
    );
    assert!(e.contains("engine (io_uring) lacks fetch ruhs"), "{e}");
    let e = refusal(
        &format!("{base}fdp=1\ndataplacement=none\n"),
        "nvme-fdp-like",
    );
    assert!(
        e.contains("fio: fdp=1 is not compatible with dataplacement={streams, none}"),
        "{e}"
    );
    let e = refusal(&format!("{base}dataplacement=streams\n"), "nvme-fdp-like");
    assert!(
        e.contains("fio: stream IDs must be provided for dataplacement=streams"),
        "{e}"
    );
    // FDP is an NVMe feature: the UFS front end refuses the layer.
    let sets = vec!["device.flash.layer=fdp".to_string()];
    let e = match run_text(
        base,
        "job.fio",
        Path::new("."),
        "ufs40-zoned-like",
        &sets,
        1,
    ) {
        Ok(_) => panic!("a UFS device with the FDP layer must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("Flexible Data Placement is an NVMe feature"),
        "{e}"
    );
}

/// fio 3.38's verdict on each data placement pair of
/// tests/fixtures/fio-verdicts/fdp-3.38.tsv (made by
/// tests/fio_verdicts_fdp.py with the real fio 3.38): what fio runs,
/// flashpath runs (or refuses by name as not modelled), what fio refuses,
/// flashpath refuses, and a setup failure's message is fio's own.
#[test]
fn data_placement_verdicts_follow_fio_3_38() {
    let tsv = fixture("fio-verdicts/fdp-3.38.tsv");
    let mut rows = 0;
    for line in tsv.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (job, fio_ok, message) = (cols[2].replace("\\n", "\n"), cols[3] == "ok", cols[4]);
        let text = format!("[fv]\n{job}\n");
        let got = run_text(&text, "job.fio", Path::new("."), "nvme-fdp-like", &[], 1);
        match (fio_ok, got) {
            (true, Ok(_)) => {}
            (true, Err(e)) => assert!(
                e.message.contains(flashpath::workload::fio::NOT_MODELLED),
                "fio 3.38 runs {job:?}; flashpath: {e}"
            ),
            (false, Ok(_)) => panic!("fio 3.38 refuses {job:?} ({message}); flashpath runs it"),
            (false, Err(e)) => {
                // The message after fio's "<file>: " prefix, for the setup
                // failures (parse failures are worded by flashpath's parser).
                let setup = message.split_once(": engine").map_or(message, |(_, m)| m);
                if !message.contains("failed parsing") {
                    assert!(
                        e.message.contains(setup.trim_start_matches(' ')),
                        "{job:?}: fio says {message:?}, flashpath {e}"
                    );
                }
            }
        }
        rows += 1;
    }
    assert_eq!(rows, 32);
}

/// A small drive of the nvme-fdp-like kind (2 dies of 128 blocks of
/// 64 x 16 KiB pages, 35 % spare), for runs that reach steady-state GC in
/// well under a second of simulated time.
const SMALL: &[&str] = &[
    "device.flash.channels=2",
    "device.flash.chips_per_channel=1",
    "device.flash.dies_per_chip=1",
    "device.flash.planes_per_die=1",
    "device.flash.blocks_per_plane=128",
    "device.flash.pages_per_block=64",
    "device.flash.over_provisioning=0.35",
    "device.flash.write_buffer_units=256",
    "device.flash.map_cache_pages=64",
];

/// Two streams of different lifetimes through the whole path: a cold job
/// writing 110 MiB of the 190 MiB drive once, sequentially, and a hot job
/// rewriting an 8 MiB range 30 times over at random, at the same time. With both on placement
/// handle 0 every block holds cold and hot data, and GC must move the cold
/// data out of each block it reclaims; with the hot job on handle 1 the
/// hot blocks are (nearly) all invalid when GC picks them. The FDP
/// statistics log's WAF orders the two, and the separated run moves far
/// less data.
#[test]
fn separated_streams_write_less_through_the_whole_path() {
    let job = |hot_pli: u32| {
        format!(
            "[global]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\ncmd_type=nvme\nbs=16k\n\
             iodepth=4\nfdp=1\nrandseed=7\n\
             [cold]\nrw=write\noffset=0\nsize=110m\nfdp_pli=0\n\
             [hot]\nrw=randwrite\noffset=120m\nsize=8m\nio_size=240m\nfdp_pli={hot_pli}\n"
        )
    };
    let sets: Vec<String> = SMALL.iter().map(|s| s.to_string()).collect();
    let go = |hot_pli: u32| {
        let out = run_text(
            &job(hot_pli),
            "job.fio",
            Path::new("."),
            "nvme-fdp-like",
            &sets,
            1,
        )
        .expect("the job runs");
        let j: serde_json::Value =
            serde_json::from_str(&render(&out.result, OutputFormat::Json)).unwrap();
        j
    };
    let (mixed, separated) = (go(0), go(1));
    let waf = |j: &serde_json::Value| {
        j["flashpath"]["driver"]["device"]["fdp"]["waf"]
            .as_f64()
            .unwrap()
    };
    let moved = |j: &serde_json::Value| {
        j["flashpath"]["driver"]["device"]["gc"]["units_programmed_gc"]
            .as_u64()
            .unwrap()
    };
    let p99 = |j: &serde_json::Value| {
        j["jobs"][1]["write"]["clat_ns"]["percentile"]["99.000000"]
            .as_u64()
            .unwrap_or(0)
    };
    let bw = |j: &serde_json::Value| j["jobs"][1]["write"]["bw"].as_u64().unwrap_or(0);
    println!(
        "WAF mixed {} separated {}; GC moved {} vs {} units; hot job bw {} vs {} KiB/s, \
         p99 clat {} vs {} ns",
        waf(&mixed),
        waf(&separated),
        moved(&mixed),
        moved(&separated),
        bw(&mixed),
        bw(&separated),
        p99(&mixed),
        p99(&separated)
    );
    assert!(moved(&mixed) > 0, "the run must reach GC");
    assert!(waf(&mixed) > 1.15, "mixed: WAF {}", waf(&mixed));
    assert!(waf(&separated) < 1.05, "separated: WAF {}", waf(&separated));
    assert!(moved(&separated) * 10 < moved(&mixed));
    // Everything on one handle is the conventional FTL: the same job with
    // no placement on the same drive without FDP (nvme-d7p5510-3t84, the
    // profile nvme-fdp-like includes) moves exactly the same data.
    let plain = job(0).replace("fdp=1\n", "").replace("fdp_pli=0\n", "");
    let out = run_text(
        &plain,
        "job.fio",
        Path::new("."),
        "nvme-d7p5510-3t84",
        &sets,
        1,
    )
    .expect("the job runs");
    let page: serde_json::Value =
        serde_json::from_str(&render(&out.result, OutputFormat::Json)).unwrap();
    assert!(page["flashpath"]["driver"]["device"].get("fdp").is_none());
    assert_eq!(moved(&page), moved(&mixed));
}

/// The NVMe front end hands each Write's directive to the layer, for all
/// of the command's pieces (a 1 MiB write is 8 MDTS pieces, one handle):
/// DTYPE 2h with a handle the namespace has places there, one it lacks
/// goes to handle 0 with the Invalid Placement Identifier event, none goes
/// to handle 0; a Read's directive is not a placement.
#[test]
fn the_front_end_passes_each_writes_directive_to_the_layer() {
    use flashpath::device::fdp::Fdp;
    use flashpath::device::nvme_flash::NvmeFlashSsd;
    use flashpath::device::{BlockBackend, Command, Hint, Op};
    let mut p = flashpath::profile::Profile::load("nvme-fdp-like").unwrap();
    for s in SMALL {
        p.apply_override(s).unwrap();
    }
    let mut d = NvmeFlashSsd::from_profile(&p, 0).unwrap();
    let cmd = |op: Op, offset: u64, len: u32, hint: Hint| Command {
        hint,
        ..Command::of(op, offset, len)
    };
    let mut t = 0;
    for c in [
        cmd(Op::Write, 0, 1 << 20, Hint::Placement(3)),
        cmd(Op::Write, 1 << 20, 4096, Hint::Placement(99)),
        cmd(Op::Write, 2 << 20, 8192, Hint::None),
        cmd(Op::Read, 0, 4096, Hint::Placement(5)),
    ] {
        t = d.submit(t, &c).at;
    }
    let f = d.layer_as::<Fdp>().expect("the FDP layer");
    let units = &f.stats().host_units;
    assert_eq!(units[3], 256, "the 1 MiB write, all of its pieces");
    assert_eq!(units[0], 1 + 2);
    assert_eq!(units.iter().sum::<u64>(), 256 + 3);
    assert_eq!(f.stats().invalid_pid, 1);
    assert_eq!(f.stats().placed_writes, 2);
    let json = d.counters();
    assert_eq!(json["fdp"]["events"]["invalid_placement_identifier"], 1);
}

/// `device.fdp.isolation` through a run: `persistent` names the handles'
/// type in the JSON, a name the key does not take is refused with the
/// names it takes, and a drive without the spare for a GC frontier per
/// handle is refused at build, naming the key.
#[test]
fn the_isolation_type_is_a_profile_parameter() {
    let job = "[j]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\ncmd_type=nvme\nbs=16k\n\
               rw=randwrite\nnumber_ios=200\nsize=8m\nfdp=1\nfdp_pli=1\n";
    let go = |extra: &[&str]| {
        let sets: Vec<String> = SMALL.iter().chain(extra).map(|s| s.to_string()).collect();
        run_text(job, "job.fio", Path::new("."), "nvme-fdp-like", &sets, 1)
    };
    let persistent = go(&["device.fdp.isolation=persistent"]).expect("the job runs");
    let j: serde_json::Value =
        serde_json::from_str(&render(&persistent.result, OutputFormat::Json)).unwrap();
    let fdp = &j["flashpath"]["driver"]["device"]["fdp"];
    assert_eq!(fdp["ruh_type"], "persistently isolated");
    assert_eq!(per_handle(&j)[1], 200 * 16384);
    let e = go(&["device.fdp.isolation=sometimes"])
        .err()
        .expect("an unknown type is refused")
        .to_string();
    assert!(
        e.contains("device.fdp.isolation") && e.contains("persistent"),
        "{e}"
    );
    // 30 % spare: a die of 128 blocks holds 99 of data, the GC reserve of
    // 16 and 8 handles' open blocks; 1 shared GC frontier fits (124), one
    // per handle does not (131).
    let tight = ["device.flash.over_provisioning=0.30"];
    go(&tight).expect("initially isolated handles fit");
    let e = go(&[tight[0], "device.fdp.isolation=persistent"])
        .err()
        .expect("no room for a GC frontier per handle")
        .to_string();
    assert!(e.contains("8 GC frontier(s)"), "{e}");
}

/// Two reclaim groups on the small drive (one die each): fio's placement
/// index `i` is handle `i / 2` in group `i % 2` (the Reclaim Unit Handle
/// Status lists each handle's groups in turn). Group 0 takes a cold and
/// a hot job on one handle (indices 0 and 0), group 1 a cold and a hot job
/// on two handles (indices 1 and 3). Each group's host bytes are its jobs'
/// writes, both collect (GC runs per die, within its group), and the
/// group that mixes the lifetimes writes more media per host byte. The
/// per-handle and per-group media bytes add up to the statistics log's.
#[test]
fn reclaim_groups_keep_their_jobs_data_and_their_own_waf() {
    let job = "[global]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\ncmd_type=nvme\nbs=16k\n\
               iodepth=4\nfdp=1\nrandseed=7\n\
               [cold0]\nrw=write\noffset=0\nsize=56m\nfdp_pli=0\n\
               [hot0]\nrw=randwrite\noffset=60m\nsize=8m\nio_size=200m\nfdp_pli=0\n\
               [cold1]\nrw=write\noffset=96m\nsize=56m\nfdp_pli=1\n\
               [hot1]\nrw=randwrite\noffset=160m\nsize=8m\nio_size=200m\nfdp_pli=3\n";
    let sets: Vec<String> = SMALL
        .iter()
        .map(|s| s.to_string())
        .chain(["device.fdp.reclaim_groups=2".to_string()])
        .collect();
    let out =
        run_text(job, "job.fio", Path::new("."), "nvme-fdp-like", &sets, 1).expect("the job runs");
    let j: serde_json::Value =
        serde_json::from_str(&render(&out.result, OutputFormat::Json)).unwrap();
    let fdp = &j["flashpath"]["driver"]["device"]["fdp"];
    assert_eq!(fdp["reclaim_groups"], 2);
    assert_eq!(fdp["rgif"], 1);
    assert_eq!(fdp["spilled_bytes"], 0);
    let groups = fdp["per_group"].as_array().unwrap();
    let g = |k: usize, key: &str| groups[k][key].as_u64().unwrap();
    for (k, jobs) in [(0, [0, 1]), (1, [2, 3])] {
        assert_eq!(
            g(k, "host_bytes_with_metadata_written"),
            write_bytes(&j, jobs[0]) + write_bytes(&j, jobs[1]),
            "group {k}"
        );
        assert!(g(k, "media_bytes_erased") > 0, "group {k} collects");
    }
    let waf = |k: usize| groups[k]["waf"].as_f64().unwrap();
    println!("group WAF: mixed {} separated {}", waf(0), waf(1));
    assert!(
        waf(0) > waf(1) + 0.1,
        "mixed {} separated {}",
        waf(0),
        waf(1)
    );
    let stats = &fdp["statistics"];
    let total = stats["media_bytes_with_metadata_written"].as_u64().unwrap();
    assert_eq!(
        g(0, "media_bytes_with_metadata_written") + g(1, "media_bytes_with_metadata_written"),
        total
    );
    let handles = fdp["per_handle"].as_array().unwrap();
    let h = |k: usize, key: &str| handles[k][key].as_u64().unwrap();
    let shared = fdp["gc_bytes_moved_shared"].as_u64().unwrap();
    let media: u64 = (0..8).map(|k| h(k, "media_bytes")).sum();
    assert_eq!(media + shared, total);
    assert_eq!(
        h(1, "host_bytes"),
        write_bytes(&j, 3),
        "handle 1: hot1 only"
    );
    assert_eq!(
        h(0, "host_bytes"),
        write_bytes(&j, 0) + write_bytes(&j, 1) + write_bytes(&j, 2)
    );
}

/// Reclaim groups and fio's setup: with 8 handles in 2 groups the namespace
/// has 16 placement identifiers, so index 15 is taken and 16 is fio's
/// refusal; a group count that does not divide the dies is refused naming
/// the key.
#[test]
fn reclaim_groups_widen_fios_index_range_and_must_split_the_dies() {
    let base = "[j]\nfilename=/dev/ng0n1\nioengine=io_uring_cmd\ncmd_type=nvme\nbs=4k\n\
                rw=randwrite\nnumber_ios=10\nsize=1m\nfdp=1\n";
    let go = |extra: &str, groups: &str| {
        let sets: Vec<String> = SMALL
            .iter()
            .map(|s| s.to_string())
            .chain([format!("device.fdp.reclaim_groups={groups}")])
            .collect();
        run_text(
            &format!("{base}{extra}"),
            "job.fio",
            Path::new("."),
            "nvme-fdp-like",
            &sets,
            1,
        )
    };
    go("fdp_pli=15\n", "2").expect("index 15 of 16");
    let e = go("fdp_pli=16\n", "2")
        .err()
        .expect("index 16 of 16")
        .to_string();
    assert!(
        e.contains("fio: for /dev/ng0n1 PID index 16 must be smaller than 16"),
        "{e}"
    );
    let e = go("", "3").err().expect("3 groups of 2 dies").to_string();
    assert!(
        e.contains("device.fdp.reclaim_groups = 3") && e.contains("2 dies"),
        "{e}"
    );
}
