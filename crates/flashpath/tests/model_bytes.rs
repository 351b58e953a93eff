//! The simulator's own memory as the JSON reports it (`model_bytes`,
//! docs/fio-json.md): the capacities of the model's structures, which must
//! follow the LPNs a run touches, not the device's size (issue 27: 1,000,000
//! random 4 KiB writes, 4 GiB touched on MQSim's 512 GiB device, held 508 MiB
//! before the map went sparse and should hold a few tens of MiB).

mod common;

use flashpath::device::{FlashDevice, FlashParams};
use flashpath::sim::rng::RngStream;
use flashpath::sim::Ns;

const MIB: usize = 1 << 20;

/// `mqsim-default` (512 GiB of user space) with `overrides`, without the
/// integrity oracle (a release run's setting: the oracle is a test aid
/// whose version arrays would double the map's bytes).
fn mqsim(overrides: &[&str]) -> FlashDevice {
    let p = common::profile("mqsim-default", overrides);
    let mut fp = FlashParams::from_profile(&p).unwrap();
    fp.check_integrity = false;
    FlashDevice::new(&fp, 1).unwrap()
}

/// `n` uniform random 4 KiB writes below `range` LPNs, then a flush.
fn random_writes(dev: &mut FlashDevice, range: u64, n: u64, rng: &mut RngStream, now: Ns) -> Ns {
    let mut now = now;
    for _ in 0..n {
        now = dev.write(now, rng.below(range), 1);
    }
    dev.flush(now)
}

/// 4 GiB of random writes on the 512 GiB device: a few tens of MiB, four
/// times the growth of the first GiB within a quarter, and the same growth
/// on a device twice the size; the empty device's bytes (per block and per
/// 1024 LPNs) are a few MiB.
#[test]
fn model_bytes_follow_the_touched_lpns_not_the_device() {
    let gib_units = (1u64 << 30) / 4096;
    let mut dev = mqsim(&[]);
    let range = dev.user_lpns();
    let empty = dev.model_bytes().total();
    assert!(
        empty < 8 * MIB,
        "the empty 512 GiB device's structures: {empty} B"
    );
    let mut rng = RngStream::new(5, "model-bytes");
    let now = random_writes(&mut dev, range, gib_units, &mut rng, 0);
    let one = dev.model_bytes().total();
    random_writes(&mut dev, range, 3 * gib_units, &mut rng, now);
    let four = dev.model_bytes();
    eprintln!("empty {empty} B, 1 GiB {one} B, 4 GiB {four:?}");
    assert!(
        four.total() < 64 * MIB,
        "4 GiB touched on 512 GiB: {} B",
        four.total()
    );
    let (g1, g4) = ((one - empty) as f64, (four.total() - empty) as f64);
    assert!(
        (3.0..=5.0).contains(&(g4 / g1)),
        "growth over 4 GiB {g4} B is not about 4 x that over 1 GiB {g1} B"
    );
    // The map and the reverse maps are what grows.
    assert!((four.l2p + four.reverse_map) as f64 > 0.8 * g4, "{four:?}");

    // The same first GiB of writes (the same LPNs) on twice the device.
    let mut big = mqsim(&["device.flash.blocks_per_plane=4096"]);
    assert_eq!(
        big.user_lpns(),
        2 * range,
        "the override doubles the device"
    );
    let big_empty = big.model_bytes().total();
    let mut rng = RngStream::new(5, "model-bytes");
    random_writes(&mut big, range, gib_units, &mut rng, 0);
    let g1_big = (big.model_bytes().total() - big_empty) as f64;
    assert!(
        (g1_big - g1).abs() <= 0.1 * g1,
        "1 GiB touched grows the 1 TiB device by {g1_big} B, the 512 GiB one by {g1} B"
    );
    assert!(
        big_empty < 16 * MIB,
        "the empty 1 TiB device: {big_empty} B"
    );
}

/// The JSON's `model_bytes`: its total is the sum of its parts, the device's
/// part is the FTL's own count, and two runs give the same bytes.
#[test]
fn json_model_bytes_are_the_sum_of_their_parts_and_deterministic() {
    let job = "[w]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=4k\niodepth=32\n\
               filename=/dev/nvme0n1\nnorandommap\nnumber_ios=3000\n";
    let run = || {
        common::run_str("mqsim-default", job, &[], 1)
            .result
            .flashpath
    };
    let a = run();
    let m = &a["model_bytes"];
    let part = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("{k} in {m}"));
    assert_eq!(
        part("total"),
        part("device") + part("event_queue") + part("latency_histograms")
    );
    let ftl = &a["driver"]["device"]["ftl"]["model_bytes"];
    assert_eq!(part("device"), ftl["total"].as_u64().unwrap(), "{ftl}");
    let parts: u64 = [
        "l2p",
        "oracle",
        "reverse_map",
        "blocks",
        "map_cache",
        "dies",
    ]
    .iter()
    .map(|k| ftl[k].as_u64().unwrap())
    .sum();
    assert_eq!(parts, part("device"));
    assert!(
        part("event_queue") > 0 && part("latency_histograms") > 0,
        "{m}"
    );
    assert_eq!(run()["model_bytes"], *m, "same run, same bytes");
}
