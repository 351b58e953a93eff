//! Every profile parameter the model reads, gathered from each component's
//! declaration list (`params!`, `profile/decl.rs`): what `flashpath
//! profile show` prints beside a profile's values, and what
//! `docs/parameters.md` is made from. This module sits above the layers
//! (as `model.rs` does) because it names every one of them.

use crate::profile::{one_line, show_range, Decl, Group, Kind, Profile, Value};

/// Each component's declarations, in the I/O path's order (host, block,
/// DMA, driver, link, device).
pub const GROUPS: &[Group] = &[
    ("host (host/config.rs)", crate::host::config::HostParams::DECLS),
    ("host: CPU costs (host/cpu.rs)", crate::host::cpu::HostCosts::DECLS),
    ("host: background wake-ups, when `host.background_wakeups.rate` is given (host/config.rs)", crate::host::config::BackgroundParams::DECLS),
    ("host: cpuidle, when `host.idle.table` is given (host/config.rs)", crate::host::config::IdleParams::DECLS),
    ("host: PSCI idle states, when `host.idle.table` is \"psci\" (host/config.rs)", crate::host::config::PsciParams::DECLS),
    ("host: CPU frequency governor, when `host.cpufreq.governor` is given (host/cpufreq.rs)", crate::host::cpufreq::CpuFreqParams::DECLS),
    ("memory management (mm/thp.rs)", crate::mm::thp::ThpParams::DECLS),
    ("page cache costs, when `host.cost.copy_user` is given (mm/buffered.rs)", crate::mm::buffered::CacheCostParams::DECLS),
    ("block layer: request queue (block/mod.rs)", crate::block::BlockParams::DECLS),
    ("DMA: swiotlb, when `dma.swiotlb.boot_param` is given (dma/bounce.rs)", crate::dma::bounce::SwiotlbParams::DECLS),
    ("DMA: paravirtual spinlocks, both or neither (dma/bounce.rs)", crate::dma::bounce::PvSpinlockParams::DECLS),
    ("driver probe (driver/probe.rs)", crate::driver::probe::ProbeParams::DECLS),
    ("driver: blk-mq CPU costs, every driver but brd (driver/mod.rs)", crate::driver::DriverCostParams::DECLS),
    ("driver: poll cost, nvme and null_blk (driver/mod.rs)", crate::driver::PollCostParams::DECLS),
    ("driver: null_blk (driver/null_blk.rs)", crate::driver::null_blk::NullBlkParams::DECLS),
    ("driver: nvme (driver/nvme.rs)", crate::driver::nvme::NvmeDriverParams::DECLS),
    ("driver: brd (driver/brd.rs)", crate::driver::brd::BrdParams::DECLS),
    ("driver: sdhci (driver/sdhci.rs)", crate::driver::sdhci::SdhciParams::DECLS),
    ("driver: virtio-blk (driver/virtio.rs)", crate::driver::virtio::VirtioParams::DECLS),
    ("driver: virtio-blk's I/O thread, both keys or neither (driver/virtio.rs)", crate::driver::virtio::IoThreadParams::DECLS),
    ("driver: generic, a fitted queueing device (driver/generic.rs)", crate::driver::generic::GenericParams::DECLS),
    ("driver: mmc host (driver/mmc/mod.rs)", crate::driver::mmc::MmcParams::DECLS),
    ("driver: ufshcd and the UFS link (driver/ufs/mod.rs)", crate::driver::ufs::UfsParams::DECLS),
    ("driver: UFS clock scaling switch (driver/ufs/clk_scaling.rs)", crate::driver::ufs::clk_scaling::ClkScalingGate::DECLS),
    ("driver: UFS clock scaling and gating, when `ufs.clk_scaling.enabled` is true (driver/ufs/clk_scaling.rs)", crate::driver::ufs::clk_scaling::ClkScalingParams::DECLS),
    ("driver: ufs-qcom PM QoS vote, when `ufs.qcom_qos.groups` is given (driver/ufs_qcom_qos.rs)", crate::driver::ufs_qcom_qos::QcomQosParams::DECLS),
    ("link: PCIe (link/pcie.rs)", crate::link::pcie::PcieParams::DECLS),
    ("link: SD bus (link/sd.rs)", crate::link::sd::SdBusParams::DECLS),
    ("link: eMMC bus (link/emmc.rs)", crate::link::emmc::EmmcBusKeys::DECLS),
    ("device: every device (device/mod.rs)", crate::device::CapacityParams::DECLS),
    ("device: injected media errors (device/badblocks.rs)", crate::device::badblocks::BadBlocksParams::DECLS),
    ("device: NVMe SSD service-time model, without `[device.flash]` (device/nvme.rs)", crate::device::nvme::NvmeSsdParams::DECLS),
    ("device: NVMe flash SSD front end, with `[device.flash]` (device/nvme_flash.rs)", crate::device::nvme_flash::FrontEndKeys::DECLS),
    ("device: microSD card service-time model, without `[device.flash]` (device/sd.rs)", crate::device::sd::SdCardParams::DECLS),
    ("device: microSD card front end, with `[device.flash]` (device/sd.rs)", crate::device::sd::SdFlashParams::DECLS),
    ("device: eMMC card (device/emmc.rs)", crate::device::emmc::CardKeys::DECLS),
    ("device: UFS device (device/ufs/mod.rs)", crate::device::ufs::UfsDeviceParams::DECLS),
    ("device: UFS HPB (device/ufs/hpb.rs)", crate::device::ufs::hpb::HpbKeys::DECLS),
    ("device: NAND (device/flash.rs)", crate::device::flash::NandKeys::DECLS),
    ("device: the translation layer (device/ftl/layer.rs)", crate::device::ftl::layer::LayerParams::DECLS),
    ("device: the page-mapping FTL (device/flash.rs)", crate::device::flash::FlashKeys::DECLS),
    ("device: the zoned namespace, with `device.flash.layer = \"zns\"` (device/zns.rs)", crate::device::zns::ZnsKeys::DECLS),
    ("device: NVMe Flexible Data Placement, with `device.flash.layer = \"fdp\"` (device/fdp.rs)", crate::device::fdp::FdpKeys::DECLS),
    ("device: FTL preconditioning, UFS and NVMe flash (device/flash.rs)", crate::device::flash::PreconditionParams::DECLS),
    ("device: the FTL's SLC cache, with `device.flash.slc_static` (device/flash.rs, device/ftl/slc.rs)", crate::device::flash::SlcKeys::DECLS),
];

/// Every declaration, with the component that declares it.
pub fn all() -> impl Iterator<Item = (&'static str, &'static Decl)> {
    GROUPS
        .iter()
        .flat_map(|(group, decls)| decls.iter().map(move |d| (*group, d)))
}

/// The declaration of `key`, if any component declares it.
pub fn find(key: &str) -> Option<&'static Decl> {
    all().map(|(_, d)| d).find(|d| d.key == key)
}

/// Apply one `--set key=value` to `profile`. A key the profile does not
/// give but a component declares as optional (`device.badblocks` on a
/// profile written without it) is taken in the declaration's unit family,
/// so every declared knob can be set on every profile; its value is then
/// checked as the profile's own would be, and a key no component of the
/// profile's machine reads is refused when the machine is built. A
/// required key the profile lacks, or a key nothing declares, stays an
/// unknown parameter.
pub fn apply_override(profile: &mut Profile, assignment: &str) -> crate::error::Result<()> {
    if let Some((key, _)) = assignment.split_once('=') {
        let key = key.trim();
        if let Some(d) = find(key).filter(|d| !d.required && !profile.has(key)) {
            let (template, unit) = match d.kind {
                Kind::Number(f) => (Value::Float(0.0), declared_unit(f)),
                Kind::Flag => (Value::Bool(false), "bool"),
                Kind::Choice(_) => (Value::Str(String::new()), "enum"),
                Kind::Text => (Value::Str(String::new()), "name"),
                Kind::List(f, _) => (Value::List(Vec::new()), declared_unit(f)),
            };
            profile.admit_declared(key, template, unit);
        }
    }
    profile.apply_override(assignment)
}

/// A unit of family `f` as a profile names it (`count` has no base-unit
/// name of its own).
fn declared_unit(f: &str) -> &'static str {
    match crate::profile::base_unit(f) {
        "" => "count",
        "(ratio)" => "ratio",
        u => u,
    }
}

/// A profile's parameters with their values, units and sources, and what
/// each is and accepts from its declaration: `flashpath profile show`.
pub fn describe(profile: &Profile) -> String {
    let mut out = format!("profile {}\n", profile.name);
    if !profile.description.is_empty() {
        out.push_str(&format!("  {}\n", profile.description));
    }
    out.push_str(&format!("  files: {}\n\n", profile.files.join(", ")));
    let width = profile.params().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, p) in profile.params() {
        out.push_str(&format!(
            "{k:width$}  {} {}\n{:width$}    source: {}\n",
            p.value, p.unit, "", p.source
        ));
        if let Some(d) = find(k) {
            out.push_str(&format!("{:width$}    what: {}\n", "", d.doc_line()));
            let accepts = d.accepts();
            if !accepts.is_empty() {
                out.push_str(&format!("{:width$}    accepts: {accepts}\n", ""));
            }
        }
    }
    out
}

/// A declared default as a profile would give it: a choice's variant
/// (`ThpMode::Never`) by its name (`never`), anything else as declared.
fn shown_default(d: &Decl) -> Option<String> {
    let v = d.default?;
    Some(match (d.kind, v.rsplit_once("::")) {
        (Kind::Choice(_), Some((_, variant))) => variant.to_lowercase(),
        _ => v.to_string(),
    })
}

/// docs/parameters.md: every declared parameter, made from the
/// declarations so that it cannot drift (the test
/// `parameters_doc_is_current` compares it; run it with
/// `FLASHPATH_UPDATE_DOCS=1` to rewrite the page).
pub fn markdown() -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "# Profile parameters\n\n\
         Made from the parameter declarations (each component's `params!` list; the\n\
         registry is `crates/flashpath/src/parameters.rs`) by\n\
         `FLASHPATH_UPDATE_DOCS=1 cargo test -p flashpath --lib parameters_doc_is_current`;\n\
         a test fails when this page and the declarations differ.\n\n\
         A profile gives each parameter as `{ value = ..., unit = \"...\", source = \"...\" }`\n\
         (docs/model.md). The unit may be any unit of the parameter's family (a time\n\
         in `ns`, `us`, `ms` or `s`; bytes in `B`, `KiB`, `MiB`, `GiB`, `MB`, `GB`; a\n\
         rate in `B/s`, `MiB/s`, `MB/s`, `GB/s`; a frequency in `Hz` to `GHz`; a ratio\n\
         as `ratio` or `percent`); the range below is in the family's base unit. A\n\
         value outside its range is refused with the range and the reason given\n\
         here. A required parameter must be in every profile whose machine has the\n\
         component; an optional one's declaration gives the value its absence stands\n\
         for (in the family's base unit), or its description says what its absence\n\
         means when no value does. A\n\
         key no component of the profile's machine reads is refused.\n",
    );
    for (group, decls) in GROUPS {
        let _ = write!(
            out,
            "\n## {group}\n\n| key | family | required | accepts | what |\n|---|---|---|---|---|\n"
        );
        for d in decls.iter() {
            let accepts = match (d.kind, d.range) {
                (Kind::Choice(names), _) => names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                (Kind::Number(f) | Kind::List(f, _), Some(r)) => {
                    let many = match d.kind {
                        Kind::List(_, n) => format!("at most {n} values, each "),
                        _ => String::new(),
                    };
                    format!("{many}{} ({})", show_range(&r, f), one_line(r.why))
                }
                (Kind::Flag, _) => "true, false".to_string(),
                _ => "text".to_string(),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                d.key,
                d.family(),
                match (d.required, shown_default(d)) {
                    (true, _) => "yes".to_string(),
                    (false, Some(v)) => format!("no (absent: {v})"),
                    (false, None) => "no".to_string(),
                },
                accepts.replace('|', "\\|"),
                d.doc_line().replace('|', "\\|")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn parameters_doc_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/parameters.md");
        let want = markdown();
        if std::env::var_os("FLASHPATH_UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "docs/parameters.md is not the declarations'; rewrite it with \
             FLASHPATH_UPDATE_DOCS=1 cargo test -p flashpath --lib parameters_doc_is_current"
        );
    }

    /// One key, one declaration: no two components (or two fields) read
    /// the same key.
    #[test]
    fn every_key_is_declared_once() {
        let mut seen = BTreeSet::new();
        for (group, d) in all() {
            assert!(
                seen.insert(d.key),
                "{} declared twice (again in {group})",
                d.key
            );
        }
    }

    /// Every key of every shipped profile is declared by some component,
    /// in the unit family its declaration reads.
    #[test]
    fn every_shipped_profile_key_is_declared() {
        for name in Profile::builtin_names() {
            let p = Profile::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (key, param) in p.params() {
                let d = find(key).unwrap_or_else(|| panic!("{name}: {key} is not declared"));
                let family = crate::profile::unit_family(&param.unit);
                match d.kind {
                    Kind::Number(f) | Kind::List(f, _) => {
                        assert_eq!(family, Some(f), "{name}: {key} in {}", param.unit)
                    }
                    Kind::Flag => assert_eq!(family, Some("bool"), "{name}: {key}"),
                    Kind::Choice(_) | Kind::Text => {
                        assert_eq!(family, Some("enum"), "{name}: {key}")
                    }
                }
            }
        }
    }

    /// The source of the crate outside `profile/`, file by file.
    fn sources() -> Vec<(String, String)> {
        fn walk(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
            let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
            entries.sort_by_key(|e| e.path());
            for e in entries {
                let path = e.path();
                if path.is_dir() {
                    if !path.ends_with("profile") {
                        walk(&path, out);
                    }
                } else if path.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    out.push((path.display().to_string(), text));
                }
            }
        }
        let mut out = Vec::new();
        walk(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
            &mut out,
        );
        out
    }

    /// The lines of `text` that read a profile value without a
    /// declaration, or check the presence of an undeclared key.
    fn raw_reads(path: &str, text: &str) -> Vec<String> {
        const ACCESSORS: &[&str] = &[
            "ns",
            "ns_f",
            "bytes",
            "rate",
            "hz",
            "ratio",
            "count",
            "count_u32",
            "signed",
            "flag",
            "choice",
            "text",
            "list",
        ];
        let mut found = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for var in ["p.", "profile."] {
                for acc in ACCESSORS {
                    let call = format!("{var}{acc}(");
                    let raw = code
                        .match_indices(&call)
                        .any(|(at, _)| at == 0 || !code.as_bytes()[at - 1].is_ascii_alphanumeric());
                    if raw {
                        found.push(format!("{path}:{}: {}", i + 1, line.trim()));
                    }
                }
            }
            for (at, _) in code.match_indices(".has(\"") {
                let key = &code[at + 6..];
                let key = &key[..key.find('"').unwrap_or(key.len())];
                if find(key).is_none() {
                    found.push(format!("{path}:{}: has({key}) is not declared", i + 1));
                }
            }
        }
        found
    }

    /// Values are read only through a declaration (`params!`): no
    /// component calls a profile accessor itself, so no key is read in a
    /// second place with another range. Presence checks (`has`) name
    /// declared keys.
    #[test]
    fn no_component_reads_a_raw_key() {
        let files = sources();
        assert!(files.iter().any(|(path, _)| path.ends_with("host/cpu.rs")));
        let found: Vec<String> = files.iter().flat_map(|(p, t)| raw_reads(p, t)).collect();
        assert!(found.is_empty(), "raw profile reads:\n{}", found.join("\n"));
    }

    /// The scan finds a raw read and an undeclared presence check: the
    /// test above is not vacuous.
    #[test]
    fn the_raw_read_scan_finds_raw_reads() {
        let text = format!(
            "let a = p.{}(\"host.cost.ipi\", COST)?;\nlet b = profile.{}(\"x.y\", R)?;\n\
             if p.has(\"no.such.key\") {{}}\nif p.has(\"host.cpus\") {{}}\n\
             let c = cap.count(3); // p.{}(\"in a comment\")\n",
            "ns", "count_u32", "flag"
        );
        let found = raw_reads("t.rs", &text);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[2].contains("no.such.key"), "{found:?}");
    }

    /// A declared default is a value its parameter accepts, and the
    /// kernel defaults stated twice agree.
    #[test]
    fn every_declared_default_is_accepted() {
        let mut n = 0;
        for (group, d) in all() {
            let Some(v) = d.default else {
                continue;
            };
            n += 1;
            assert!(!d.required, "{} ({group}): required with a default", d.key);
            match (d.kind, d.range) {
                (Kind::Number(_), Some(r)) => {
                    let x: f64 = v
                        .parse()
                        .unwrap_or_else(|_| panic!("{}: default {v} is not a number", d.key));
                    assert!(
                        r.min <= x && x <= r.max,
                        "{}: default {v} out of {r:?}",
                        d.key
                    );
                }
                (Kind::Flag, _) => assert!(v == "true" || v == "false", "{}: {v}", d.key),
                (Kind::Choice(names), _) => {
                    let shown = shown_default(d).unwrap();
                    assert!(names.contains(&shown.as_str()), "{}: {shown}", d.key);
                }
                _ => {}
            }
        }
        assert!(n >= 10, "{n} defaults");
        // VM_READAHEAD_PAGES, as the page cache's default window.
        assert_eq!(find("block.read_ahead_kb").unwrap().default, Some("128"));
        assert_eq!(4 * crate::mm::readahead::DEFAULT_RA_PAGES, 128);
    }

    /// A declaration says what it is, and a range holds some value.
    #[test]
    fn every_declaration_is_complete() {
        for (group, d) in all() {
            assert!(!d.doc_line().is_empty(), "{} ({group}) has no doc", d.key);
            if let Some(r) = d.range {
                assert!(
                    r.min <= r.max && !r.why.is_empty(),
                    "{}: range {r:?}",
                    d.key
                );
            }
            match d.kind {
                Kind::Number(_) | Kind::List(..) => assert!(d.range.is_some(), "{}", d.key),
                Kind::Choice(names) => {
                    let set: BTreeSet<_> = names.iter().collect();
                    assert!(!names.is_empty() && set.len() == names.len(), "{}", d.key);
                }
                Kind::Flag | Kind::Text => assert!(d.range.is_none(), "{}", d.key),
            }
        }
    }
}
