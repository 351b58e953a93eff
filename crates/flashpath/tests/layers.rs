//! The layers import only downward (docs/design.md section 1): this test
//! reads every source file of the crate, finds the layers each one names
//! (`use crate::x`, `crate::x::` paths, `super::` chains that climb to the
//! crate root) and fails on an edge the table below does not allow.
//!
//! The order follows a request down the kernel's path: the vocabulary and
//! the engine at the bottom; the host (cores, tasks), the devices and the
//! links beside each other above them; the page cache on the host; the
//! driver over its device and link; DMA mapping; the block layer over all
//! of those; results; the workload (fio's user space) over the kernel; and
//! the machine that wires them, with `model`, `run` and `check` on top.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The foundation every layer may use: the engine, errors, input reading,
/// the shared vocabulary and the profile.
const FOUNDATION: &[&str] = &["sim", "error", "input", "types", "profile"];

/// Each layer and the layers it may import besides the foundation and
/// itself.
const ALLOWED: &[(&str, &[&str])] = &[
    ("sim", &[]),
    ("error", &[]),
    ("input", &[]),
    ("types", &[]),
    ("profile", &[]),
    ("host", &[]),
    ("device", &[]),
    ("link", &[]),
    ("mm", &["host"]),
    ("driver", &["host", "device", "link"]),
    ("dma", &["host", "mm"]),
    ("block", &["host", "mm", "dma", "driver"]),
    ("report", &["block"]),
    ("workload", &["mm", "block", "report"]),
    (
        "machine",
        &[
            "host", "mm", "device", "link", "driver", "dma", "block", "report", "workload",
        ],
    ),
    // The parameter registry lists every component's declarations (for
    // `profile show` and docs/parameters.md): it reads every layer, as the
    // model that builds them does, and no layer reads it.
    (
        "parameters",
        &["host", "mm", "device", "link", "driver", "dma", "block"],
    ),
    (
        "model",
        &[
            "host", "mm", "device", "link", "driver", "dma", "block", "report", "workload",
            "machine",
        ],
    ),
    (
        "run",
        &[
            "host",
            "mm",
            "device",
            "link",
            "driver",
            "dma",
            "block",
            "report",
            "workload",
            "machine",
            "model",
            "parameters",
        ],
    ),
    (
        "check",
        &[
            "host",
            "mm",
            "device",
            "link",
            "driver",
            "dma",
            "block",
            "report",
            "workload",
            "machine",
            "model",
            "run",
            "parameters",
        ],
    ),
];

/// Within the foundation, the order is stricter: what each may use.
const FOUNDATION_ALLOWED: &[(&str, &[&str])] = &[
    ("sim", &[]),
    ("error", &[]),
    ("input", &["error"]),
    ("types", &[]),
    ("profile", &["error", "input", "sim", "types"]),
];

/// Upward edges that remain, each with the file and why it is not fixed
/// yet. The test fails when one is gone too, so the list only shrinks.
const KNOWN: &[(&str, &str, &str)] = &[(
    // fio's log files are named and shaped by the job's options
    // (log_avg_msec, per_job_logs, ...): the writer reads the job spec.
    "report/logs.rs",
    "workload",
    "the log writer takes fio's JobSpec and JobFile",
)];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file: `driver/ufs/mod.rs` is `[driver, ufs]`,
/// `run.rs` is `[run]`, `lib.rs` is `[]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The text without `//` comments (doc links name modules without
/// importing them).
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of each item of a `{...}` group at its start.
fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => {
                depth += 1;
                at_item = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => at_item = true,
            c if c.is_whitespace() => {}
            _ => {
                if at_item && depth == 1 {
                    heads.push(ident_at(&s[i..]).to_string());
                }
                at_item = false;
            }
        }
    }
    heads
}

/// The crate's top-level modules one file names.
fn named_layers(text: &str, module: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        let after = rest[i + "crate::".len()..].trim_start();
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            if after.starts_with('{') {
                out.extend(group_heads(after));
            } else {
                out.insert(ident_at(after).to_string());
            }
        }
        rest = &rest[i + "crate::".len()..];
    }
    // `super::super::x` climbing to the crate root names layer `x`.
    let mut rest = text;
    while let Some(i) = rest.find("super::") {
        let before = rest[..i].chars().last();
        let mut tail = &rest[i..];
        let mut ups = 0;
        while let Some(t) = tail.strip_prefix("super::") {
            ups += 1;
            tail = t;
        }
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && ups == module.len()
        {
            if tail.trim_start().starts_with('{') {
                out.extend(group_heads(tail.trim_start()));
            } else {
                out.insert(ident_at(tail).to_string());
            }
        }
        rest = &rest[i + "super::".len() * ups..];
    }
    out
}

fn allowed(from: &str, to: &str) -> bool {
    if from == to {
        return true;
    }
    if let Some((_, ok)) = FOUNDATION_ALLOWED.iter().find(|(l, _)| *l == from) {
        return ok.contains(&to);
    }
    let (_, ok) = ALLOWED
        .iter()
        .find(|(l, _)| *l == from)
        .unwrap_or_else(|| panic!("layer {from} is not in the table of tests/layers.rs"));
    FOUNDATION.contains(&to) || ok.contains(&to)
}

/// Every (file, layer it names) pair that breaks the table.
fn upward_edges() -> BTreeMap<(String, String), ()> {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let layers: BTreeSet<&str> = ALLOWED.iter().map(|(l, _)| *l).collect();
    let mut bad = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&root).expect("under src").to_path_buf();
        let module = module_path(&rel);
        let Some(from) = module.first() else {
            continue; // lib.rs declares the layers.
        };
        let text = strip_comments(&std::fs::read_to_string(&f).expect("read source"));
        for to in named_layers(&text, &module) {
            if layers.contains(to.as_str()) && !allowed(from, &to) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                bad.insert((rel, to), ());
            }
        }
    }
    bad
}

#[test]
fn every_layer_of_lib_rs_is_in_the_table() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("read lib.rs");
    let declared: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let table: BTreeSet<&str> = ALLOWED.iter().map(|(l, _)| *l).collect();
    assert_eq!(
        declared, table,
        "lib.rs's modules and the layer table differ"
    );
}

#[test]
fn no_layer_imports_from_a_layer_above_it() {
    let bad = upward_edges();
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(f, to, _)| (f.to_string(), to.to_string()))
        .collect();
    let new: Vec<_> = bad.keys().filter(|e| !known.contains(*e)).collect();
    assert!(
        new.is_empty(),
        "imports from a layer above (file, layer): {new:?}; \
         use the layer's own types or move the shared one down (crate::types)"
    );
    let gone: Vec<_> = known.iter().filter(|e| !bad.contains_key(*e)).collect();
    assert!(
        gone.is_empty(),
        "known upward edges that no longer exist, drop them from KNOWN: {gone:?}"
    );
}

#[test]
fn the_machine_re_exports_nothing() {
    // A type every layer needs lives in `types` (or the layer that owns
    // it), never reached through the hub.
    let mut files = Vec::new();
    rust_files(&src_dir().join("machine"), &mut files);
    assert!(!files.is_empty(), "no files under src/machine");
    for f in files {
        let text = strip_comments(&std::fs::read_to_string(&f).expect("read source"));
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("pub use")),
            "{} re-exports through the machine",
            f.display()
        );
    }
}

#[test]
fn the_scanner_finds_every_form_of_an_upward_import() {
    let m = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let got = named_layers(
        "use crate::machine::Ev;\nlet x = crate::workload::Ddir::Read;\n\
         use crate::{report::JobResult, block::{Request, RqKind}};\n\
         use super::super::driver::Driver;\nuse super::Thing;",
        &m(&["device", "ufs"]),
    );
    let want: BTreeSet<String> = ["machine", "workload", "report", "block", "driver"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
    assert!(!allowed("device", "workload"));
    assert!(!allowed("host", "driver"));
    assert!(!allowed("link", "device"));
    assert!(allowed("driver", "device"));
    assert!(allowed("machine", "block"));
    assert!(named_layers(
        &strip_comments("//! see [`crate::driver::ufs`]\n"),
        &m(&["device"])
    )
    .is_empty());
}
