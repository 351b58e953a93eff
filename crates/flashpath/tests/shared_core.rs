//! Every flash front end sits on the one controller core
//! (`device::ftl::layer`): the same NAND and FTL parameters under the same
//! workload give the same FTL, GC and NAND counts behind the NVMe
//! controller and behind the UFS device (only the front ends' timing
//! differs); a zoned layer behind a front end whose command set has no
//! zones (eMMC, SD) is refused by name; an SD card with a
//! `[device.flash]` section is a front end over the same core.

mod common;

use flashpath::device::emmc::EmmcCard;
use flashpath::device::sd::{SdDevice, SdFlashCard};
use flashpath::device::{BlockBackend, Command, FlashDevice, Op};
use flashpath::profile::Profile;

fn builtin(name: &str) -> String {
    flashpath::profile::BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t.to_string())
        .unwrap()
}

/// The lines of one `[section]` of a profile's text, its header included.
fn section(text: &str, header: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with('[') {
            inside = line.trim() == header;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(!out.is_empty(), "no {header} section");
    out
}

/// A profile file in a fresh temporary folder; its path.
fn write_profile(file: &str, text: &str) -> String {
    let d = std::env::temp_dir().join(format!("flashpath-shared-core-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join(file);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The same NAND and page FTL (ufs21-64g's `[device.flash]`, made small so
/// that GC runs within a short job: 320 blocks of 32 pages a plane, 1.25
/// GiB of NAND whose spare is about 21 000 units; the map cache 4 of its 73
/// map pages so misses happen) behind
/// the UFS device and behind mqsim-default's NVMe controller. A QD1
/// random write-then-read job sends the layer the same commands in the
/// same order through either front end, so every count of the layer must
/// agree; the NAND wait times may not (the front ends' timing differs).
#[test]
fn the_page_ftl_counts_the_same_behind_nvme_and_ufs() {
    let flash = section(&builtin("ufs21-64g"), "[device.flash]");
    let nvme = write_profile(
        "nvme-over-ufs21-nand.toml",
        &format!(
            "[profile]\nname = \"nvme-over-ufs21-nand\"\ninclude = [\"mqsim-default\"]\n\n{flash}"
        ),
    );
    let sets = [
        "device.flash.blocks_per_plane=320",
        "device.flash.pages_per_block=32",
        "device.flash.precondition_random_overwrites=0",
        "device.flash.map_cache_pages=4",
    ];
    let job = |dev: &str| {
        format!(
            "[global]\nfilename={dev}\nioengine=psync\ndirect=1\nbs=4k\nnorandommap\n\
             [w]\nrw=randwrite\nnumber_ios=60000\n\
             [r]\nstonewall\nrw=randread\nnumber_ios=20000\n"
        )
    };
    let ufs_out = common::run_str("ufs21-64g", &job("/dev/sda"), &sets, 7);
    let nvme_out = common::run_str(&nvme, &job("/dev/nvme0n1"), &sets, 7);
    let ufs = &ufs_out.result.flashpath["driver"];
    let nvme = &nvme_out.result.flashpath["driver"]["device"];
    // The run did what the comparison needs: GC ran and the map cache
    // missed, so the counts below are the mechanisms', not zeros.
    assert!(nvme["gc"]["runs"].as_u64().unwrap() > 0, "{nvme}");
    assert!(nvme["ftl"]["waf"].as_f64().unwrap() > 1.0, "{nvme}");
    assert!(nvme["ftl"]["map_misses"].as_u64().unwrap() > 0, "{nvme}");
    // Every count of the layer agrees but one, by a closed form: the UFS
    // firmware splits a read whose map page is not cached into the map
    // page's read and, once it is in, the data read, which looks the
    // entry up again and finds it (a map hit the NVMe controller's single
    // read does not make). So UFS has exactly one more hit per map-miss
    // read.
    let (mut u, mut n) = (ufs["ftl"].clone(), nvme["ftl"].clone());
    let hits = |v: &mut serde_json::Value| {
        v["map_hit_ratio"] = serde_json::Value::Null;
        v["map_hits"].take().as_u64().unwrap()
    };
    let (ufs_hits, nvme_hits) = (hits(&mut u), hits(&mut n));
    assert_eq!(u, n, "ftl: ufs {ufs}\nnvme {nvme}");
    let map_miss_reads = ufs["read_map_misses"].as_u64().unwrap();
    assert!(map_miss_reads > 0);
    assert_eq!(ufs_hits, nvme_hits + map_miss_reads);
    assert_eq!(ufs["nand"]["reads"], nvme["nand"]["reads"]);
    assert_eq!(ufs["nand"]["t_read_ns"], nvme["nand"]["t_read_ns"]);
    // The front ends' own timing is theirs: the same layer under a
    // different controller does not finish at the same time.
    assert_ne!(
        ufs_out.result.jobs[0].dirs[1].runtime,
        nvme_out.result.jobs[0].dirs[1].runtime
    );
}

/// A profile's text with `line` added under `[device.flash]`.
fn with_flash_line(text: &str, line: &str) -> String {
    assert!(text.contains("[device.flash]\n"));
    text.replace("[device.flash]\n", &format!("[device.flash]\n{line}\n"))
}

const ZNS_LAYER: &str = "layer = { value = \"zns\", unit = \"name\", source = \"test\" }";

#[test]
fn a_zoned_layer_behind_an_emmc_card_is_refused_by_name() {
    let text = with_flash_line(&builtin("emmc51-intel"), ZNS_LAYER);
    let p = Profile::from_text("my-emmc.toml", &text, None).unwrap();
    let err = EmmcCard::from_profile(&p, 0).err().expect("refused");
    let e = err.to_string();
    assert!(e.starts_with("my-emmc.toml: "), "{e}");
    assert!(e.contains("device.flash.layer = \"zns\""), "{e}");
    assert!(e.contains("an eMMC card has no zone commands"), "{e}");
    // And through the whole model, as `flashpath run` builds it.
    let err = flashpath::model::build_model(&p).err().expect("refused");
    assert!(err.to_string().contains("an eMMC card"), "{err}");
}

/// A microSD card over the flash core, for the tests: rpi4-sdcard's host,
/// bus and driver, without the service-time model's keys, with a NAND and
/// FTL section. Every value of the card is an ASSUMPTION (no microSD
/// card's controller and NAND are published), chosen as a small TLC card
/// of one channel and two dies: it is a test of the mechanism against the
/// A1 class minimums, not a product profile.
fn flash_sd_text() -> String {
    let service = [
        "capacity",
        "read_access",
        "read_rate",
        "write_access",
        "write_rate",
    ];
    let base: String = builtin("rpi4-sdcard")
        .lines()
        .filter(|l| !service.iter().any(|k| l.starts_with(&format!("{k} = "))))
        .map(|l| format!("{l}\n"))
        .collect();
    let src = "source = \"assumption: a small TLC microSD card (test only)\"";
    let v = |k: &str, val: &str, unit: &str| {
        format!("{k} = {{ value = {val}, unit = \"{unit}\", {src} }}\n")
    };
    let mut s = base;
    s.push_str("\n[device.flash]\n");
    for (k, val, unit) in [
        ("channels", "1", "count"),
        ("chips_per_channel", "1", "count"),
        ("dies_per_chip", "2", "count"),
        ("planes_per_die", "2", "count"),
        ("blocks_per_plane", "512", "count"),
        ("pages_per_block", "64", "count"),
        ("page_bytes", "16", "KiB"),
        ("t_read", "60", "us"),
        ("t_prog", "1500", "us"),
        ("t_erase", "5", "ms"),
        ("channel_rate", "200", "MB/s"),
        ("channel_cmd", "200", "ns"),
        ("channel_xfer_overhead", "200", "ns"),
        ("map_page_bytes", "16", "KiB"),
        ("map_entry_bytes", "4", "B"),
        ("map_cache_pages", "16", "count"),
        ("write_buffer_units", "64", "count"),
        ("over_provisioning", "0.07", "ratio"),
        ("gc_low_free_blocks", "4", "count"),
        ("gc_high_free_blocks", "8", "count"),
        ("prefilled", "true", "bool"),
    ] {
        s.push_str(&v(k, val, unit));
    }
    s.push_str(&format!(
        "gc_policy = {{ value = \"greedy\", unit = \"name\", {src} }}\n"
    ));
    s.push_str("\n[sd.card]\n");
    s.push_str(&v("fw_cmd", "100", "us"));
    s
}

#[test]
fn an_sd_card_with_a_flash_section_is_a_front_end_over_the_core() {
    let p = Profile::from_text("sd-flash.toml", &flash_sd_text(), None).unwrap();
    let SdDevice::Flash(mut card) = SdDevice::from_profile(&p).unwrap() else {
        panic!("a [device.flash] section makes the flash-backed card");
    };
    let ftl = card
        .layer_as::<FlashDevice>()
        .expect("the page FTL")
        .user_lpns();
    assert_eq!(card.capacity(), ftl * 4096);
    // One read: firmware, then the layer's NAND read (map page first: the
    // map cache starts cold on a fresh card), nothing else.
    let nand = card.layer().nand();
    let page_read = nand.timing.t_read + nand.chan.cmd_ns + nand.xfer_ns(4096);
    let at = 1_000_000;
    let c = card.submit(at, &Command::of(Op::Read, 0, 4096));
    assert!(c.at >= at + 100_000 + 2 * page_read, "{c:?}");
    // The same unit again: the map page is cached now.
    let c2 = card.submit(c.at, &Command::of(Op::Read, 0, 4096));
    assert_eq!(c2.at - c.at, 100_000 + page_read, "{c2:?}");
    // Without the section the service-time model stays.
    let p = Profile::load("rpi4-sdcard").unwrap();
    assert!(matches!(
        SdDevice::from_profile(&p).unwrap(),
        SdDevice::Service(_)
    ));
}

#[test]
fn a_zoned_layer_behind_an_sd_card_is_refused_by_name() {
    let text = with_flash_line(&flash_sd_text(), ZNS_LAYER);
    let p = Profile::from_text("my-sd.toml", &text, None).unwrap();
    let err = SdFlashCard::from_profile(&p, 0).err().expect("refused");
    let e = err.to_string();
    assert!(e.starts_with("my-sd.toml: "), "{e}");
    assert!(e.contains("an SD card has no zone commands"), "{e}");
}

/// SD Physical Layer Simplified Specification 6.00, "Application
/// Performance Class": A1 is at least 1500 random 4 KiB read IOPS and 500
/// random 4 KiB write IOPS. The flash-backed test card, through the
/// whole path (rpi4-sdcard's host, DDR50 bus, mmc driver), one request at
/// a time. The card comes full (prefilled) and its spare is about 33 000
/// units, so 80 000 random writes run well into GC: the write rate is the
/// sustained one.
#[test]
fn the_flash_backed_sd_card_meets_a1() {
    let path = write_profile("sd-flash.toml", &flash_sd_text());
    let job = |rw: &str, n: u64| {
        format!(
            "[j]\nfilename=/dev/mmcblk0\nioengine=psync\ndirect=1\nbs=4k\nsize=1g\n\
             norandommap\nrw={rw}\nnumber_ios={n}\n"
        )
    };
    let iops = |out: &flashpath::run::RunOutput, d: usize| {
        let r = &out.result.jobs[0].dirs[d];
        r.total_ios as f64 / (r.runtime as f64 / 1e9)
    };
    let r = common::run_str(&path, &job("randread", 4000), &[], 0);
    let read_iops = iops(&r, 0);
    assert!(read_iops >= 1500.0, "{read_iops}");
    let w = common::run_str(&path, &job("randwrite", 80_000), &[], 0);
    let write_iops = iops(&w, 1);
    let dev = &w.result.flashpath["driver"];
    assert!(dev["gc"]["runs"].as_u64().unwrap() > 0, "{dev}");
    assert!(write_iops >= 500.0, "{write_iops}");
}
