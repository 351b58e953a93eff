//! Issue 24's "done means": every example job runs on `mqsim-default` and
//! on both NVMe flash profiles, and the FTL's counters (GC, write
//! amplification, the map cache) appear in the JSON as they do for the UFS
//! device, with the NVMe front end's data cache beside them.

use std::collections::BTreeSet;
use std::path::PathBuf;

const NVME_FLASH: [&str; 3] = ["mqsim-default", "nvme-970evoplus-1tb", "nvme-d7p5510-3t84"];

fn examples() -> Vec<PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut jobs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    jobs.sort();
    assert!(jobs.len() >= 2, "examples/*.fio: {jobs:?}");
    jobs
}

fn keys(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

#[test]
fn every_example_shows_the_ftl_counters_on_every_nvme_flash_profile_as_on_ufs() {
    for path in examples() {
        let ufs = flashpath::run::run_file(&path, "ufs21-64g", &[], 0)
            .unwrap_or_else(|e| panic!("{} on ufs21-64g: {e}", path.display()));
        let ufs_ftl = &ufs.result.flashpath["driver"]["ftl"];
        // What the UFS device shows: map-cache hits and misses, write
        // amplification and GC runs.
        for k in ["map_hits", "map_misses", "map_hit_ratio", "waf", "gc_runs"] {
            assert!(ufs_ftl.get(k).is_some(), "ufs {k}: {ufs_ftl}");
        }
        let want = keys(ufs_ftl);
        for name in NVME_FLASH {
            let what = format!("{} on {name}", path.display());
            let out = flashpath::run::run_file(&path, name, &[], 0)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(out.completed_ios > 0, "{what}");
            let dev = &out.result.flashpath["driver"]["device"];
            let ftl = &dev["ftl"];
            // The same FTL object (an SLC cache adds its own section).
            let mut have = keys(ftl);
            have.remove("slc");
            assert_eq!(have, want, "{what}: {ftl}");
            assert!(ftl["waf"].as_f64().is_some(), "{what}");
            let hits = ftl["map_hits"].as_u64().unwrap() + ftl["map_misses"].as_u64().unwrap();
            assert!(hits > 0, "{what}: every read looks its entry up: {ftl}");
            for k in [
                "runs",
                "victims",
                "units_programmed_host",
                "units_programmed_gc",
                "erases",
            ] {
                assert!(dev["gc"][k].as_u64().is_some(), "{what} gc.{k}: {dev}");
            }
            for k in ["write_units", "read_hits", "coalesced_writes"] {
                assert!(
                    dev["data_cache"][k].as_u64().is_some(),
                    "{what} data_cache.{k}: {dev}"
                );
            }
            assert!(dev["front_end"]["commands"].as_u64().unwrap() > 0, "{what}");
        }
    }
}
