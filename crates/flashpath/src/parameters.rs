//! Every profile parameter the model reads, gathered from each component's
//! declaration list (`params!`, `profile/decl.rs`): what `flashpath
//! profile show` prints beside a profile's values, and what
//! `docs/parameters.md` is made from. This module sits above the layers
//! (as `model.rs` does) because it names every one of them.

use crate::profile::{base_unit, Decl, Group, Kind, Profile};

/// Each component's declarations, in the I/O path's order (host, block,
/// DMA, driver, link, device).
pub const GROUPS: &[Group] = &[
    (
        "host (host/config.rs)",
        crate::host::config::HostParams::DECLS,
    ),
    (
        "host: CPU costs (host/cpu.rs)",
        crate::host::cpu::HostCosts::DECLS,
    ),
    (
        "host: background wake-ups, when `host.background_wakeups.rate` is given (host/config.rs)",
        crate::host::config::BackgroundParams::DECLS,
    ),
    (
        "host: cpuidle, when `host.idle.table` is given (host/config.rs)",
        crate::host::config::IdleParams::DECLS,
    ),
    (
        "host: PSCI idle states, when `host.idle.table` is \"psci\" (host/config.rs)",
        crate::host::config::PsciParams::DECLS,
    ),
    (
        "memory management (mm/thp.rs)",
        crate::mm::thp::ThpParams::DECLS,
    ),
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
         component; an optional one's description says what its absence means. A\n\
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
                    format!(
                        "{many}{} to {} {} ({})",
                        r.min,
                        r.max,
                        base_unit(f),
                        r.why.split_whitespace().collect::<Vec<_>>().join(" ")
                    )
                }
                (Kind::Flag, _) => "true, false".to_string(),
                _ => "text".to_string(),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                d.key,
                d.family(),
                if d.required { "yes" } else { "no" },
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
