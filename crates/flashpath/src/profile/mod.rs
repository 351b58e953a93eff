//! Profiles: the physical parameters of a simulated machine (host CPU,
//! block-layer settings, driver, link, device), in TOML, every number with
//! its unit and its source.
//!
//! A parameter is a table `{ value = ..., unit = "...", source = "..." }`;
//! its key is its dotted path (`device.completion_nsec`). A profile may
//! `include` others (later files override earlier ones) so a host and a
//! device can be written once and combined. The model reads parameters by
//! key and unit family; a profile key that no part of the model reads is an
//! error (a typo must not become a silent default), and so is a key the
//! model needs that the profile lacks.

use crate::error::{clip, nearest, quote, InputError, Result};
pub use decl::{base_unit, one_line, show_bound, show_range, Choice, Decl, Group, Kind};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod decl;
pub mod write;

/// Profiles shipped with flashpath, embedded at build time (build.rs) so
/// the installed package carries them: (name, file text).
pub const BUILTIN: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/builtin_profiles.rs"));

/// Scenario definitions shipped with flashpath (`scenarios/**/*.toml`):
/// the experiments `flashpath reproduce` runs, with their published values.
pub const BUILTIN_SCENARIOS: &[(&str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/builtin_scenarios.rs"));

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    /// A list of numbers (e.g. an OPP table, C-state rows are tables).
    List(Vec<Value>),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::List(items) => {
                write!(f, "[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{v}")?;
                }
                write!(f, "]")
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub value: Value,
    pub unit: String,
    pub source: String,
    /// The file that set it last, for messages.
    pub file: String,
    /// True once a `--set` override replaced the profile's value.
    pub overridden: bool,
}

/// The values a parameter may take, in its unit family's base unit (ns,
/// bytes, Hz, bytes/s, a count, a ratio), and why. Every read of a number
/// states one where the model reads it; a value outside is refused with
/// one message naming the file (or `--set`), the key, the value and the
/// range, so no value truncates, wraps, divides by zero or sizes an
/// allocation the machine cannot make.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub why: &'static str,
}

/// A [`Range`] from `min` to `max` inclusive, in the base unit.
pub const fn range(min: f64, max: f64, why: &'static str) -> Range {
    Range { min, max, why }
}

/// Ranges shared by many parameters of one kind.
pub mod limits {
    use super::{range, Range};

    /// A CPU, driver, link or device cost of one operation.
    pub const COST: Range = range(
        0.0,
        1e9,
        "a cost of one operation: a second or more is a unit mistake, and the model adds \
         such costs on its nanosecond clock",
    );
    /// A kernel or firmware timer, delay or period.
    pub const DELAY: Range = range(
        0.0,
        60e9,
        "a kernel or firmware timer or delay: the modelled ones are milliseconds, and \
         simulated runs last seconds",
    );
    /// A transfer or copy rate the model divides by.
    pub const RATE: Range = range(
        1e3,
        1e12,
        "a transfer rate the model divides by: 1 kB/s to 1 TB/s",
    );
    /// A device's capacity.
    pub const CAPACITY: Range = range(
        (1u64 << 20) as f64,
        (1u64 << 50) as f64,
        "a device's capacity: from 1 MiB (job files are laid out in 1 MiB steps) to 1 PiB, \
         which keeps every byte offset far from the end of u64",
    );
    /// A hardware queue's depth (tags, slots, ring entries).
    pub const QUEUE_DEPTH: Range = range(
        1.0,
        10240.0,
        "a hardware queue's depth: blk-mq caps a tag set at BLK_MQ_MAX_DEPTH = 10240 \
         (include/linux/blk-mq.h)",
    );
    /// A number of hardware queues.
    pub const QUEUES: Range = range(
        1.0,
        8192.0,
        "a number of hardware queues: blk-mq maps them to CPUs, at most NR_CPUS = 8192 \
         (arch/x86/Kconfig, MAXSMP)",
    );
}

/// Unit families and the factor to the base unit (ns, bytes, Hz...).
fn unit_factor(unit: &str) -> Option<(&'static str, f64)> {
    Some(match unit {
        "ns" => ("time", 1.0),
        "us" => ("time", 1e3),
        "ms" => ("time", 1e6),
        "s" => ("time", 1e9),
        "B" => ("bytes", 1.0),
        "KiB" => ("bytes", 1024.0),
        "MiB" => ("bytes", 1024.0 * 1024.0),
        "GiB" => ("bytes", 1024.0 * 1024.0 * 1024.0),
        "GB" => ("bytes", 1e9),
        "MB" => ("bytes", 1e6),
        "Hz" => ("frequency", 1.0),
        "kHz" => ("frequency", 1e3),
        "MHz" => ("frequency", 1e6),
        "GHz" => ("frequency", 1e9),
        "B/s" => ("rate", 1.0),
        "MiB/s" => ("rate", 1024.0 * 1024.0),
        "MB/s" => ("rate", 1e6),
        "GB/s" => ("rate", 1e9),
        "count" => ("count", 1.0),
        "bool" => ("bool", 1.0),
        "percent" => ("ratio", 0.01),
        "ratio" => ("ratio", 1.0),
        "enum" => ("enum", 1.0),
        "name" => ("enum", 1.0),
        _ => return None,
    })
}

/// The family of a profile unit (`us` is a `time`), `None` for a unit the
/// profiles may not use.
pub fn unit_family(unit: &str) -> Option<&'static str> {
    unit_factor(unit).map(|u| u.0)
}

/// A unit suffix a user writes on a `--set` value: the profile's own unit
/// names ([`unit_factor`]) and the other SI and IEC spellings of each
/// family. Bytes: `KiB`..`PiB` are powers of 1024 and `kB`/`KB`..`PB`
/// powers of 1000 (IEC 80000-13; the profiles' `MB`/`GB` are already
/// decimal, as datasheets give capacities); a bare `K`, `M`, `G`, `T`,
/// `P` (either case) is a power of 1024, as fio reads a bare suffix
/// (parse.c get_mult_bytes with its default kb_base=1024). Times also take
/// fio's spellings (`nsec`, `usec`, `msec`, `sec`) and `min`, `h`; rates
/// take the byte prefixes over `/s`; ratios take `%`.
fn suffix_factor(suffix: &str) -> Option<(&'static str, f64)> {
    if let Some(u) = unit_factor(suffix) {
        return Some(u);
    }
    fn bytes(prefix: &str) -> Option<f64> {
        const K: f64 = 1024.0;
        Some(match prefix {
            "B" => 1.0,
            "K" | "k" | "KiB" => K,
            "M" | "m" | "MiB" => K * K,
            "G" | "g" | "GiB" => K * K * K,
            "T" | "t" | "TiB" => K * K * K * K,
            "P" | "p" | "PiB" => K * K * K * K * K,
            "kB" | "KB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "TB" => 1e12,
            "PB" => 1e15,
            _ => return None,
        })
    }
    if let Some(prefix) = suffix.strip_suffix("/s") {
        return bytes(prefix).map(|f| ("rate", f));
    }
    if let Some(f) = bytes(suffix) {
        return Some(("bytes", f));
    }
    Some(match suffix {
        "nsec" => ("time", 1.0),
        "usec" => ("time", 1e3),
        "msec" => ("time", 1e6),
        "sec" => ("time", 1e9),
        "min" => ("time", 60e9),
        "h" => ("time", 3600e9),
        "%" => ("ratio", 0.01),
        _ => return None,
    })
}

/// A loaded profile: a flat map of parameters plus what the model read.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// The files read, main file last.
    pub files: Vec<String>,
    params: BTreeMap<String, Param>,
    read: RefCell<BTreeSet<String>>,
}

fn toml_line(text: &str, key_tail: &str) -> Option<u32> {
    // Best effort: the first line that starts a table or key with this name.
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with(&format!("{key_tail} ")) || l.starts_with(&format!("{key_tail}="))
        })
        .map(|i| i as u32 + 1)
}

/// What makes two profile labels the same file: the real path of a file,
/// the label of a built-in (`<builtin>/NAME.toml`) or of text.
fn identity(label: &str) -> PathBuf {
    std::fs::canonicalize(label).unwrap_or_else(|_| PathBuf::from(label))
}

/// Files one profile may read, includes counted each time: the depth
/// bound alone lets a file that includes itself several times expand
/// exponentially. The shipped profiles read two.
const MAX_PROFILE_FILES: u32 = 64;
/// Bytes of one profile file: the shipped ones are under 16 KiB; a bound
/// keeps a profile path that names `/dev/zero` from reading forever.
const MAX_PROFILE_BYTES: u64 = 1 << 20;

impl Profile {
    fn empty() -> Profile {
        Profile {
            name: String::new(),
            description: String::new(),
            files: Vec::new(),
            params: BTreeMap::new(),
            read: RefCell::new(BTreeSet::new()),
        }
    }

    /// Load a profile by built-in name or by path to a `.toml` file.
    pub fn load(name_or_path: &str) -> Result<Profile> {
        let mut profile = Profile::empty();
        let (label, text, base) = Self::locate(name_or_path, None)?;
        let mut files_left = MAX_PROFILE_FILES;
        let mut chain = Vec::new();
        profile.merge_file(&label, &text, base.as_deref(), &mut chain, &mut files_left)?;
        if profile.name.is_empty() {
            profile.name = name_or_path.to_string();
        }
        Ok(profile)
    }

    /// A profile from its text, named `label` in messages; includes are
    /// looked for in `base` (then among the built-in profiles).
    pub fn from_text(label: &str, text: &str, base: Option<&Path>) -> Result<Profile> {
        let mut profile = Profile::empty();
        let mut files_left = MAX_PROFILE_FILES;
        let mut chain = Vec::new();
        profile.merge_file(label, text, base, &mut chain, &mut files_left)?;
        if profile.name.is_empty() {
            profile.name = label.to_string();
        }
        Ok(profile)
    }

    /// Names of the built-in profiles.
    pub fn builtin_names() -> impl Iterator<Item = &'static str> {
        BUILTIN.iter().map(|(n, _)| *n)
    }

    fn locate(
        name_or_path: &str,
        base: Option<&Path>,
    ) -> Result<(String, String, Option<PathBuf>)> {
        let looks_like_path = name_or_path.ends_with(".toml") || name_or_path.contains('/');
        if looks_like_path {
            let path = match base {
                Some(b) if Path::new(name_or_path).is_relative() => b.join(name_or_path),
                _ => PathBuf::from(name_or_path),
            };
            if path.exists() {
                let what = "a profile is read up to 1 MiB";
                let text = crate::input::read_bounded(&path, MAX_PROFILE_BYTES, what)
                    .and_then(|b| String::from_utf8(b).map_err(|_| "not UTF-8 text".to_string()))
                    .map_err(|e| {
                        InputError::new(
                            path.display().to_string(),
                            None,
                            format!("cannot read profile file: {e}"),
                        )
                    })?;
                let parent = path.parent().map(Path::to_path_buf);
                return Ok((path.display().to_string(), text, parent));
            }
            // An include inside a built-in profile names another built-in.
            let stem = name_or_path.trim_end_matches(".toml");
            if let Some((n, t)) = BUILTIN.iter().find(|(n, _)| *n == stem) {
                return Ok((format!("<builtin>/{n}.toml"), t.to_string(), None));
            }
            return Err(InputError::new(
                path.display().to_string(),
                None,
                "cannot read profile file",
            ));
        }
        match BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            Some((n, t)) => Ok((format!("<builtin>/{n}.toml"), t.to_string(), None)),
            None => {
                let names: Vec<&str> = Self::builtin_names().filter(|n| !n.contains('/')).collect();
                let hint = match nearest(name_or_path, names.iter().copied()) {
                    Some(n) => format!(" (did you mean '{n}'?)"),
                    None => String::new(),
                };
                Err(InputError::new(
                    "--device",
                    None,
                    format!(
                        "no profile named {}{hint}; built-in profiles: {}",
                        quote(name_or_path),
                        names.join(", ")
                    ),
                ))
            }
        }
    }

    /// Merge one file: its includes first (in order), then its own
    /// parameters, name and description over theirs. `chain` holds the
    /// files being merged, outermost first, to name a cycle.
    fn merge_file(
        &mut self,
        label: &str,
        text: &str,
        base: Option<&Path>,
        chain: &mut Vec<(PathBuf, String)>,
        files_left: &mut u32,
    ) -> Result<()> {
        let key = identity(label);
        if let Some(i) = chain.iter().position(|(k, _)| *k == key) {
            let cycle: Vec<&str> = chain[i..]
                .iter()
                .map(|(_, l)| l.as_str())
                .chain(std::iter::once(label))
                .collect();
            return Err(InputError::new(
                chain[chain.len() - 1].1.clone(),
                None,
                format!("profile include cycle: {}", cycle.join(" includes ")),
            ));
        }
        if chain.len() > 8 {
            return Err(InputError::new(
                label,
                None,
                "profile includes nest more than 8 deep",
            ));
        }
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e.span().map(|s| {
                let upto = &text.as_bytes()[..s.start.min(text.len())];
                upto.iter().filter(|b| **b == b'\n').count() as u32 + 1
            });
            InputError::new(label, line, format!("not valid TOML: {}", e.message()))
        })?;
        let mut own_name = None;
        let mut own_description = None;
        if let Some(meta) = doc.get("profile") {
            let meta = meta.as_table().ok_or_else(|| {
                InputError::new(
                    label,
                    toml_line(text, "profile"),
                    "[profile] must be a table",
                )
            })?;
            for (k, v) in meta {
                match (k.as_str(), v) {
                    ("include", _) => {}
                    ("name", toml::Value::String(s)) => own_name = Some(s.clone()),
                    ("description", toml::Value::String(s)) => own_description = Some(s.clone()),
                    ("name" | "description", _) => {
                        return Err(InputError::new(
                            label,
                            toml_line(text, k),
                            format!("[profile] {k} must be a string"),
                        ))
                    }
                    _ => {
                        return Err(InputError::new(
                            label,
                            toml_line(text, k),
                            format!(
                                "unknown [profile] key {} (valid: name, description, include)",
                                quote(k)
                            ),
                        ))
                    }
                }
            }
            // The includes first, whatever the keys' order in the file
            // (the table iterates them sorted, and `description` sorts
            // before `include`): the file's own words win.
            let includes: Vec<&toml::Value> = match meta.get("include") {
                None => Vec::new(),
                // One file may be given as a string: a list of one.
                Some(v @ toml::Value::String(_)) => vec![v],
                Some(toml::Value::Array(items)) => items.iter().collect(),
                Some(_) => {
                    return Err(InputError::new(
                        label,
                        toml_line(text, "include"),
                        "include takes a list of profile files or names (include = \
                         [\"host.toml\"]) or one as a string",
                    ))
                }
            };
            chain.push((key, label.to_string()));
            for item in includes {
                let inc = item.as_str().ok_or_else(|| {
                    InputError::new(
                        label,
                        toml_line(text, "include"),
                        "include entries must be strings",
                    )
                })?;
                // Too many files, or a file that cannot be read, is the
                // including file's error, at its include line.
                if *files_left == 0 {
                    return Err(InputError::new(
                        label,
                        toml_line(text, "include"),
                        format!(
                            "a profile reads at most {MAX_PROFILE_FILES} files, includes \
                             counted each time (files that include each other several times?)"
                        ),
                    ));
                }
                *files_left -= 1;
                let (l, t, b) = Self::locate(inc, base).map_err(|e| {
                    InputError::new(
                        label,
                        toml_line(text, "include"),
                        format!("include {}: {}", quote(inc), e.message),
                    )
                })?;
                self.merge_file(&l, &t, b.as_deref(), chain, files_left)?;
            }
            chain.pop();
        }
        if let Some(n) = own_name {
            self.name = n;
        }
        if let Some(d) = own_description {
            self.description = d;
        }
        for (k, v) in &doc {
            if k == "profile" {
                continue;
            }
            self.collect(label, text, k, v)?;
        }
        self.files.push(label.to_string());
        Ok(())
    }

    fn collect(&mut self, label: &str, text: &str, key: &str, v: &toml::Value) -> Result<()> {
        let tail = key.rsplit('.').next().unwrap_or(key);
        let table = v.as_table().ok_or_else(|| {
            InputError::new(
                label,
                toml_line(text, tail),
                format!("{} must be a parameter table {{ value = ..., unit = \"...\", source = \"...\" }} or a group of them", quote(key)),
            )
        })?;
        if !table.contains_key("value") {
            for (k, sub) in table {
                self.collect(label, text, &format!("{key}.{k}"), sub)?;
            }
            return Ok(());
        }
        let err = |msg: String| {
            InputError::new(
                label,
                toml_line(text, tail),
                format!("parameter {}: {msg}", quote(key)),
            )
        };
        for k in table.keys() {
            if !matches!(k.as_str(), "value" | "unit" | "source") {
                return Err(err(format!(
                    "unknown field {} (a parameter has value, unit, source)",
                    quote(k)
                )));
            }
        }
        let unit = table
            .get("unit")
            .and_then(|u| u.as_str())
            .ok_or_else(|| err("missing unit".into()))?
            .to_string();
        if unit_factor(&unit).is_none() {
            return Err(err(format!("unknown unit {}", quote(&unit))));
        }
        let source = table
            .get("source")
            .and_then(|u| u.as_str())
            .ok_or_else(|| err("missing source (every number needs one)".into()))?
            .to_string();
        if source.trim().is_empty() {
            return Err(err("empty source".into()));
        }
        let value = convert(&table["value"]).map_err(err)?;
        self.params.insert(
            key.to_string(),
            Param {
                value,
                unit,
                source,
                file: label.to_string(),
                overridden: false,
            },
        );
        Ok(())
    }

    /// Make room for a `--set` of `key`, a parameter a component declares
    /// but this profile does not give (an optional one, whose absence has a
    /// declared meaning): the override then replaces `template`, a value of
    /// the parameter's kind in `unit`, as it would the profile's own. The
    /// caller ([`crate::parameters::apply_override`]) knows the
    /// declarations; a key nothing declares stays unknown.
    pub fn admit_declared(&mut self, key: &str, template: Value, unit: &str) {
        if self.params.contains_key(key) {
            return;
        }
        self.params.insert(
            key.to_string(),
            Param {
                value: template,
                unit: unit.to_string(),
                source: "declared; absent from the profile".to_string(),
                file: "--set".to_string(),
                overridden: false,
            },
        );
    }

    /// Apply `key=value` overrides (`--set`). The key must exist; the value
    /// is read in the parameter's own unit, or with an explicit unit suffix
    /// of the same family (`5us`).
    pub fn apply_override(&mut self, assignment: &str) -> Result<()> {
        let bad = |msg: String| InputError::new("--set", None, msg);
        let (key, raw) = assignment
            .split_once('=')
            .ok_or_else(|| bad(format!("{} is not key=value", quote(assignment))))?;
        let key = key.trim();
        let raw = raw.trim();
        let Some(param) = self.params.get_mut(key) else {
            let hint = match nearest(key, self.params.keys().map(String::as_str)) {
                Some(n) => format!("; did you mean '{n}'?"),
                None => String::new(),
            };
            return Err(bad(format!(
                "unknown parameter {} for profile {}{hint}",
                quote(key),
                quote(&self.name)
            )));
        };
        let value = parse_override_value(raw, &param.value, &param.unit)
            .map_err(|m| bad(format!("{key}={}: {m}", clip(raw))))?;
        param.value = value;
        param.overridden = true;
        param.source = format!("--set {key}={raw}");
        // Messages about the value now name the command line.
        param.file = "--set".to_string();
        Ok(())
    }

    pub fn params(&self) -> impl Iterator<Item = (&String, &Param)> {
        self.params.iter()
    }

    pub fn has(&self, key: &str) -> bool {
        self.params.contains_key(key)
    }

    fn get(&self, key: &str) -> Result<&Param> {
        self.read.borrow_mut().insert(key.to_string());
        self.params.get(key).ok_or_else(|| {
            InputError::new(
                self.files.last().cloned().unwrap_or_default(),
                None,
                format!("profile '{}' lacks the parameter '{key}'", self.name),
            )
        })
    }

    /// The file that set `key` (`--set` once overridden), for messages of
    /// checks that involve it; the main file when the key is absent.
    pub fn file_of(&self, key: &str) -> String {
        match self.params.get(key) {
            Some(p) => p.file.clone(),
            None => self.files.last().cloned().unwrap_or_default(),
        }
    }

    fn wrong(&self, key: &str, p: &Param, want: &str) -> InputError {
        InputError::new(
            p.file.clone(),
            None,
            format!(
                "parameter '{key}' is {} {} but the model needs {want}",
                clip(&p.value.to_string()),
                clip(&p.unit)
            ),
        )
    }

    /// `x` (base unit) must lie in `r`; the message gives the range in the
    /// parameter's own unit.
    fn check_range(&self, key: &str, p: &Param, x: f64, r: Range) -> Result<()> {
        if x >= r.min && x <= r.max {
            return Ok(());
        }
        let factor = unit_factor(&p.unit).map_or(1.0, |u| u.1);
        Err(InputError::new(
            p.file.clone(),
            None,
            format!(
                "parameter '{key}' is {} {}, outside {} to {} {}: {}",
                clip(&p.value.to_string()),
                p.unit,
                r.min / factor,
                r.max / factor,
                p.unit,
                r.why
            ),
        ))
    }

    fn number(&self, key: &str, family: &str, r: Range) -> Result<f64> {
        let p = self.get(key)?;
        let (fam, factor) = unit_factor(&p.unit).expect("units checked at load");
        if fam != family {
            return Err(self.wrong(key, p, &format!("a {family}")));
        }
        let x = match p.value {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            _ => return Err(self.wrong(key, p, "a number")),
        };
        if !x.is_finite() {
            return Err(self.wrong(key, p, "a finite number"));
        }
        let x = x * factor;
        self.check_range(key, p, x, r)?;
        Ok(x)
    }

    /// A duration in ns, within `r` (ns).
    pub fn ns(&self, key: &str, r: Range) -> Result<u64> {
        Ok(self.number(key, "time", r)?.round() as u64)
    }
    /// A duration in ns, fractional (for per-byte costs and the like).
    pub fn ns_f(&self, key: &str, r: Range) -> Result<f64> {
        self.number(key, "time", r)
    }
    /// A size in bytes, within `r` (bytes).
    pub fn bytes(&self, key: &str, r: Range) -> Result<u64> {
        Ok(self.number(key, "bytes", r)?.round() as u64)
    }
    /// Bytes per second, within `r`.
    pub fn rate(&self, key: &str, r: Range) -> Result<f64> {
        self.number(key, "rate", r)
    }
    /// A frequency in Hz, within `r`.
    pub fn hz(&self, key: &str, r: Range) -> Result<f64> {
        self.number(key, "frequency", r)
    }
    /// A ratio (percent read as hundredths), within `r`.
    pub fn ratio(&self, key: &str, r: Range) -> Result<f64> {
        self.number(key, "ratio", r)
    }
    /// A whole count within `r`.
    pub fn count(&self, key: &str, r: Range) -> Result<u64> {
        let x = self.number(key, "count", r)?;
        if x.fract() != 0.0 {
            let p = self.get(key)?;
            return Err(self.wrong(key, p, "a whole number"));
        }
        Ok(x as u64)
    }
    /// A whole count within `r` that fits a u32 (`r.max` must).
    pub fn count_u32(&self, key: &str, r: Range) -> Result<u32> {
        debug_assert!(r.max <= f64::from(u32::MAX), "{key}: a u32 range");
        Ok(self.count(key, r)? as u32)
    }
    /// A signed count (e.g. io_poll_delay = -1) within `r`.
    pub fn signed(&self, key: &str, r: Range) -> Result<i64> {
        let p = self.get(key)?;
        match (&p.value, unit_factor(&p.unit).map(|u| u.0)) {
            (Value::Int(i), Some("count")) => {
                self.check_range(key, p, *i as f64, r)?;
                Ok(*i)
            }
            // An override past 64 bits (1e30) is read as a float: its
            // range is what is wrong with it, not its being whole.
            (Value::Float(f), Some("count")) if f.is_finite() && f.fract() == 0.0 => {
                self.check_range(key, p, *f, r)?;
                Ok(*f as i64)
            }
            _ => Err(self.wrong(key, p, "a whole number (unit count)")),
        }
    }
    pub fn flag(&self, key: &str) -> Result<bool> {
        let p = self.get(key)?;
        match p.value {
            Value::Bool(b) => Ok(b),
            Value::Int(0) => Ok(false),
            Value::Int(1) => Ok(true),
            _ => Err(self.wrong(key, p, "true/false or 0/1")),
        }
    }
    /// One of a fixed set of names, as the enum `T` names them.
    pub fn choice<T: Choice>(&self, key: &str) -> Result<T> {
        let p = self.get(key)?;
        match &p.value {
            Value::Str(s) => T::from_name(s),
            _ => None,
        }
        .ok_or_else(|| self.wrong(key, p, &format!("one of {}", clip(&T::NAMES.join(", ")))))
    }
    /// Free text (unit `name`), e.g. a kernel boot parameter's value.
    pub fn text(&self, key: &str) -> Result<String> {
        let p = self.get(key)?;
        match &p.value {
            Value::Str(s) => Ok(s.clone()),
            _ => Err(self.wrong(key, p, "a string")),
        }
    }
    /// A list of numbers in the parameter's unit family, converted, each
    /// within `r` (base unit), at most `max_len` of them.
    pub fn list(&self, key: &str, family: &str, r: Range, max_len: usize) -> Result<Vec<f64>> {
        let p = self.get(key)?;
        let (fam, factor) = unit_factor(&p.unit).expect("units checked at load");
        if fam != family {
            return Err(self.wrong(key, p, &format!("a list of {family}")));
        }
        let Value::List(items) = &p.value else {
            return Err(self.wrong(key, p, "a list"));
        };
        if items.len() > max_len {
            return Err(self.wrong(key, p, &format!("at most {max_len} values")));
        }
        items
            .iter()
            .map(|v| {
                let x = match v {
                    Value::Int(i) => *i as f64,
                    Value::Float(f) if f.is_finite() => *f,
                    _ => return Err(self.wrong(key, p, "a list of numbers")),
                } * factor;
                self.check_range(key, p, x, r).map(|()| x)
            })
            .collect()
    }

    /// After the machine is built: every parameter must have been read.
    pub fn check_all_read(&self) -> Result<()> {
        let read = self.read.borrow();
        if let Some((key, p)) = self.params.iter().find(|(k, _)| !read.contains(*k)) {
            let hint = match nearest(key, read.iter().map(String::as_str)) {
                Some(n) => format!(" (did you mean '{n}'?)"),
                None => String::new(),
            };
            return Err(InputError::new(
                p.file.clone(),
                None,
                format!("parameter '{key}' is not used by this machine{hint}"),
            ));
        }
        Ok(())
    }
}

fn convert(v: &toml::Value) -> std::result::Result<Value, String> {
    Ok(match v {
        toml::Value::Integer(i) => Value::Int(*i),
        toml::Value::Float(f) => Value::Float(*f),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::String(s) => Value::Str(s.clone()),
        toml::Value::Array(items) => Value::List(
            items
                .iter()
                .map(convert)
                .collect::<std::result::Result<_, _>>()?,
        ),
        _ => return Err("value must be a number, boolean, string or list".into()),
    })
}

fn parse_override_value(
    raw: &str,
    current: &Value,
    unit: &str,
) -> std::result::Result<Value, String> {
    match current {
        Value::Bool(_) => match raw {
            "1" | "true" | "on" | "yes" => Ok(Value::Bool(true)),
            "0" | "false" | "off" | "no" => Ok(Value::Bool(false)),
            _ => Err("expected true/false or 1/0".into()),
        },
        Value::Str(_) => Ok(Value::Str(raw.to_string())),
        Value::List(items) => {
            // `[a, b, c]` or `a,b,c`: each element as a number of the
            // list's unit (suffixes allowed), of the kind the list holds.
            let inner = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']'));
            let inner = inner.unwrap_or(raw).trim();
            if inner.is_empty() {
                return Ok(Value::List(Vec::new()));
            }
            let like = match items.first() {
                Some(Value::Int(_)) => Value::Int(0),
                _ => Value::Float(0.0),
            };
            inner
                .split(',')
                .enumerate()
                .map(|(i, e)| {
                    parse_override_value(e.trim(), &like, unit)
                        .map_err(|m| format!("list element {}: {m}", i + 1))
                })
                .collect::<std::result::Result<Vec<_>, _>>()
                .map(Value::List)
        }
        Value::Int(_) | Value::Float(_) => {
            let split = raw
                .find(|c: char| {
                    !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e')
                })
                .unwrap_or(raw.len());
            let (num, suffix) = raw.split_at(split);
            if num.is_empty() {
                return Err(format!("{} is not a number", quote(raw)));
            }
            // A plain integer stays exact (f64 would round past 2^53).
            if suffix.is_empty() && matches!(current, Value::Int(_)) {
                if let Ok(i) = num.parse::<i64>() {
                    return Ok(Value::Int(i));
                }
            }
            let x: f64 = num
                .parse()
                .map_err(|_| format!("{} is not a number", quote(num)))?;
            let x = if suffix.is_empty() {
                x
            } else {
                let (fam, f) = suffix_factor(suffix)
                    .ok_or_else(|| format!("unknown unit {}", quote(suffix)))?;
                let (want_fam, want_f) = unit_factor(unit).expect("checked");
                if fam != want_fam {
                    return Err(format!("unit '{suffix}' is not a {want_fam} like '{unit}'"));
                }
                x * f / want_f
            };
            if !x.is_finite() {
                return Err("not a finite number".into());
            }
            // Whole values stay integers only where i64 holds them; a
            // larger one is kept as it is for the range check to refuse
            // (`as i64` would saturate it silently).
            if matches!(current, Value::Int(_)) && x.fract() == 0.0 && x.abs() < 9.2e18 {
                Ok(Value::Int(x as i64))
            } else {
                Ok(Value::Float(x))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_text(text: &str) -> Result<Profile> {
        Profile::from_text("t.toml", text, None)
    }

    const ANY: Range = range(0.0, 1e18, "test");

    const SAMPLE: &str = r#"
[profile]
name = "t"
[device]
completion_nsec = { value = 10, unit = "us", source = "null_blk default" }
hw_queue_depth = { value = 64, unit = "count", source = "null_blk default" }
"#;

    #[test]
    fn units_convert_to_base() {
        let p = from_text(SAMPLE).unwrap();
        assert_eq!(p.ns("device.completion_nsec", ANY).unwrap(), 10_000);
        assert_eq!(p.count("device.hw_queue_depth", ANY).unwrap(), 64);
    }

    #[test]
    fn wrong_family_is_refused() {
        let p = from_text(SAMPLE).unwrap();
        let e = p.bytes("device.completion_nsec", ANY).unwrap_err();
        assert!(e.message.contains("needs a bytes"), "{e}");
    }

    #[test]
    fn override_with_unit_suffix_and_typo_hint() {
        let mut p = from_text(SAMPLE).unwrap();
        p.apply_override("device.completion_nsec=2500ns").unwrap();
        assert_eq!(p.ns("device.completion_nsec", ANY).unwrap(), 2_500);
        let e = p.apply_override("device.completion_nsce=1").unwrap_err();
        assert!(
            e.message.contains("did you mean 'device.completion_nsec'"),
            "{e}"
        );
        let e = p.apply_override("device.hw_queue_depth=4KiB").unwrap_err();
        assert!(e.message.contains("not a count"), "{e}");
    }

    #[test]
    fn overrides_take_si_iec_and_fio_suffixes() {
        const SIZES: &str = r#"
[profile]
name = "t"
[device]
capacity = { value = 250, unit = "GB", source = "test" }
completion_nsec = { value = 10, unit = "us", source = "test" }
bw = { value = 1, unit = "MB/s", source = "test" }
share = { value = 50, unit = "percent", source = "test" }
"#;
        const T: u64 = 1 << 40;
        for (v, want) in [
            ("16TB", 16_000_000_000_000u64),
            ("16000GB", 16_000_000_000_000),
            ("16TiB", 16 * T),
            // A bare suffix is fio's: powers of 1024 (kb_base=1024).
            ("16T", 16 * T),
            ("16t", 16 * T),
            ("1P", 1024 * T),
            ("1PB", 1_000_000_000_000_000),
            ("512K", 512 * 1024),
            ("512kB", 512_000),
            ("512KB", 512_000),
        ] {
            let mut p = from_text(SIZES).unwrap();
            p.apply_override(&format!("device.capacity={v}")).unwrap();
            assert_eq!(p.bytes("device.capacity", ANY).unwrap(), want, "{v}");
        }
        for (v, want) in [
            ("3usec", 3_000u64),
            ("2msec", 2_000_000),
            ("1min", 60_000_000_000),
        ] {
            let mut p = from_text(SIZES).unwrap();
            p.apply_override(&format!("device.completion_nsec={v}"))
                .unwrap();
            assert_eq!(p.ns("device.completion_nsec", ANY).unwrap(), want, "{v}");
        }
        let mut p = from_text(SIZES).unwrap();
        p.apply_override("device.bw=2GiB/s").unwrap();
        p.apply_override("device.share=25%").unwrap();
        // A size suffix on a time, or an unknown one, is refused by name.
        let e = p.apply_override("device.completion_nsec=4T").unwrap_err();
        assert!(e.message.contains("not a time"), "{e}");
        let e = p.apply_override("device.capacity=4XB").unwrap_err();
        assert!(e.message.contains("unknown unit 'XB'"), "{e}");
    }

    const DEPTH: Range = range(1.0, 1024.0, "a test depth");

    #[test]
    fn out_of_range_names_the_file_key_value_and_range() {
        let p = from_text(&SAMPLE.replace("value = 64", "value = 4294967297")).unwrap();
        let e = p.count("device.hw_queue_depth", DEPTH).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.toml: parameter 'device.hw_queue_depth' is 4294967297 count, outside 1 to 1024 \
             count: a test depth"
        );
        // The range is shown in the parameter's own unit.
        let us = range(0.0, 1e6, "a test cost");
        let p = from_text(&SAMPLE.replace("value = 10,", "value = 2000,")).unwrap();
        let e = p.ns("device.completion_nsec", us).unwrap_err();
        assert!(
            e.message.contains("is 2000 us, outside 0 to 1000 us"),
            "{e}"
        );
    }

    #[test]
    fn an_override_out_of_range_names_set_not_the_file() {
        let mut p = from_text(SAMPLE).unwrap();
        p.apply_override("device.hw_queue_depth=0").unwrap();
        let e = p.count("device.hw_queue_depth", DEPTH).unwrap_err();
        assert_eq!(e.file, "--set");
        assert!(
            e.message.contains("'device.hw_queue_depth' is 0 count"),
            "{e}"
        );
        // A type mismatch names --set too.
        let e = p.bytes("device.hw_queue_depth", DEPTH).unwrap_err();
        assert_eq!(e.file, "--set");
    }

    #[test]
    fn a_signed_override_past_64_bits_is_out_of_range_not_fractional() {
        let mut p = from_text(SAMPLE).unwrap();
        let r = range(-1.0, 1e6, "test");
        p.apply_override("device.hw_queue_depth=1e30").unwrap();
        let e = p.signed("device.hw_queue_depth", r).unwrap_err();
        assert_eq!(e.file, "--set");
        assert!(e.message.contains("outside -1 to 1000000 count"), "{e}");
        p.apply_override("device.hw_queue_depth=-1").unwrap();
        assert_eq!(p.signed("device.hw_queue_depth", r).unwrap(), -1);
    }

    #[test]
    fn override_integers_neither_truncate_nor_saturate() {
        let mut p = from_text(SAMPLE).unwrap();
        p.apply_override("device.hw_queue_depth=9007199254740993")
            .unwrap();
        // 2^53 + 1 survives exactly (an f64 would round it).
        assert_eq!(
            p.params["device.hw_queue_depth"].value,
            Value::Int(9_007_199_254_740_993)
        );
        p.apply_override("device.hw_queue_depth=1e30").unwrap();
        assert_eq!(p.params["device.hw_queue_depth"].value, Value::Float(1e30));
        assert!(p.count("device.hw_queue_depth", DEPTH).is_err());
    }

    #[test]
    fn a_list_override_reads_each_element_in_the_lists_unit() {
        let text = "[profile]\nname = \"t\"\n[host.idle.psci]\n\
                    exit = { value = [750, 1300], unit = \"us\", source = \"dt\" }\n";
        let mut p = from_text(text).unwrap();
        p.apply_override("host.idle.psci.exit=[700, 1.2ms]")
            .unwrap();
        let v = p.list("host.idle.psci.exit", "time", ANY, 8).unwrap();
        assert_eq!(v, vec![700_000.0, 1_200_000.0]);
        p.apply_override("host.idle.psci.exit=1,2,3").unwrap();
        assert_eq!(
            p.list("host.idle.psci.exit", "time", ANY, 8).unwrap().len(),
            3
        );
        // The consumer's own limits still apply (here: at most 2).
        assert!(p.list("host.idle.psci.exit", "time", ANY, 2).is_err());
        let e = p.apply_override("host.idle.psci.exit=[1, x]").unwrap_err();
        assert!(
            e.message.contains("list element 2") && e.message.contains("not a number"),
            "{e}"
        );
        let e = p
            .apply_override("host.idle.psci.exit=[1, 4KiB]")
            .unwrap_err();
        assert!(e.message.contains("not a time"), "{e}");
    }

    #[test]
    fn an_include_that_cannot_be_read_is_the_including_files_error() {
        let e = from_text("[profile]\nname = \"x\"\ninclude = [\"no-such.toml\"]\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("t.toml", Some(3)));
        assert!(e.message.contains("include 'no-such.toml'"), "{e}");
    }

    #[test]
    fn a_profile_reads_a_bounded_number_of_files() {
        let many = vec!["\"nullblk\""; 200].join(", ");
        let e = from_text(&format!("[profile]\ninclude = [{many}]\n")).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("t.toml", Some(2)));
        assert!(e.message.contains("at most 64 files"), "{e}");
    }

    #[test]
    fn missing_source_names_the_line() {
        let e = from_text("[device]\nx = { value = 1, unit = \"ns\" }\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("missing source"), "{e}");
    }

    #[test]
    fn unread_parameter_is_an_error() {
        let p = from_text(SAMPLE).unwrap();
        p.ns("device.completion_nsec", ANY).unwrap();
        let e = p.check_all_read().unwrap_err();
        assert!(e.message.contains("hw_queue_depth"), "{e}");
    }

    #[test]
    fn bad_toml_names_the_line() {
        let e =
            from_text("[device]\nx = { value = 1, unit = \"ns\", source = \"a\"\n").unwrap_err();
        assert!(e.line.is_some(), "{e}");
    }
}
