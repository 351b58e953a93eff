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

use crate::error::{nearest, InputError, Result};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// A loaded profile: a flat map of parameters plus what the model read.
#[derive(Debug)]
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

impl Profile {
    /// Load a profile by built-in name or by path to a `.toml` file.
    pub fn load(name_or_path: &str) -> Result<Profile> {
        let mut profile = Profile {
            name: String::new(),
            description: String::new(),
            files: Vec::new(),
            params: BTreeMap::new(),
            read: RefCell::new(BTreeSet::new()),
        };
        let (label, text, base) = Self::locate(name_or_path, None)?;
        profile.merge_file(&label, &text, base.as_deref(), 0)?;
        if profile.name.is_empty() {
            profile.name = name_or_path.to_string();
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
            if let Ok(text) = std::fs::read_to_string(&path) {
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
                        "no profile named '{name_or_path}'{hint}; built-in profiles: {}",
                        names.join(", ")
                    ),
                ))
            }
        }
    }

    fn merge_file(
        &mut self,
        label: &str,
        text: &str,
        base: Option<&Path>,
        depth: u32,
    ) -> Result<()> {
        if depth > 8 {
            return Err(InputError::new(
                label,
                None,
                "profile includes nest too deeply (a cycle?)",
            ));
        }
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() as u32 + 1);
            InputError::new(label, line, format!("not valid TOML: {}", e.message()))
        })?;
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
                    ("include", toml::Value::Array(items)) => {
                        for item in items {
                            let inc = item.as_str().ok_or_else(|| {
                                InputError::new(
                                    label,
                                    toml_line(text, "include"),
                                    "include entries must be strings",
                                )
                            })?;
                            let (l, t, b) = Self::locate(inc, base)?;
                            self.merge_file(&l, &t, b.as_deref(), depth + 1)?;
                        }
                    }
                    ("name", toml::Value::String(s)) => self.name = s.clone(),
                    ("description", toml::Value::String(s)) => self.description = s.clone(),
                    _ => {
                        return Err(InputError::new(
                            label,
                            toml_line(text, k),
                            format!(
                                "unknown [profile] key '{k}' (valid: name, description, include)"
                            ),
                        ))
                    }
                }
            }
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
                format!("'{key}' must be a parameter table {{ value = ..., unit = \"...\", source = \"...\" }} or a group of them"),
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
                format!("parameter '{key}': {msg}"),
            )
        };
        for k in table.keys() {
            if !matches!(k.as_str(), "value" | "unit" | "source") {
                return Err(err(format!(
                    "unknown field '{k}' (a parameter has value, unit, source)"
                )));
            }
        }
        let unit = table
            .get("unit")
            .and_then(|u| u.as_str())
            .ok_or_else(|| err("missing unit".into()))?
            .to_string();
        if unit_factor(&unit).is_none() {
            return Err(err(format!("unknown unit '{unit}'")));
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

    /// Apply `key=value` overrides (`--set`). The key must exist; the value
    /// is read in the parameter's own unit, or with an explicit unit suffix
    /// of the same family (`5us`).
    pub fn apply_override(&mut self, assignment: &str) -> Result<()> {
        let bad = |msg: String| InputError::new("--set", None, msg);
        let (key, raw) = assignment
            .split_once('=')
            .ok_or_else(|| bad(format!("'{assignment}' is not key=value")))?;
        let key = key.trim();
        let raw = raw.trim();
        let Some(param) = self.params.get_mut(key) else {
            let hint = match nearest(key, self.params.keys().map(String::as_str)) {
                Some(n) => format!("; did you mean '{n}'?"),
                None => String::new(),
            };
            return Err(bad(format!(
                "unknown parameter '{key}' for profile '{}'{hint}",
                self.name
            )));
        };
        let value = parse_override_value(raw, &param.value, &param.unit)
            .map_err(|m| bad(format!("{key}={raw}: {m}")))?;
        param.value = value;
        param.overridden = true;
        param.source = format!("--set {key}={raw}");
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

    fn wrong(&self, key: &str, p: &Param, want: &str) -> InputError {
        InputError::new(
            p.file.clone(),
            None,
            format!(
                "parameter '{key}' is {} {} but the model needs {want}",
                p.value, p.unit
            ),
        )
    }

    fn number(&self, key: &str, family: &str) -> Result<f64> {
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
        if !(x.is_finite() && x >= 0.0) {
            return Err(self.wrong(key, p, "a finite, non-negative number"));
        }
        Ok(x * factor)
    }

    /// A duration in ns.
    pub fn ns(&self, key: &str) -> Result<u64> {
        Ok(self.number(key, "time")?.round() as u64)
    }
    /// A duration in ns, fractional (for per-byte costs and the like).
    pub fn ns_f(&self, key: &str) -> Result<f64> {
        self.number(key, "time")
    }
    pub fn bytes(&self, key: &str) -> Result<u64> {
        Ok(self.number(key, "bytes")?.round() as u64)
    }
    /// Bytes per second.
    pub fn rate(&self, key: &str) -> Result<f64> {
        self.number(key, "rate")
    }
    pub fn hz(&self, key: &str) -> Result<f64> {
        self.number(key, "frequency")
    }
    pub fn ratio(&self, key: &str) -> Result<f64> {
        self.number(key, "ratio")
    }
    pub fn count(&self, key: &str) -> Result<u64> {
        let x = self.number(key, "count")?;
        if x.fract() != 0.0 {
            let p = self.get(key)?;
            return Err(self.wrong(key, p, "a whole number"));
        }
        Ok(x as u64)
    }
    /// A signed count (e.g. io_poll_delay = -1).
    pub fn signed(&self, key: &str) -> Result<i64> {
        let p = self.get(key)?;
        match (&p.value, unit_factor(&p.unit).map(|u| u.0)) {
            (Value::Int(i), Some("count")) => Ok(*i),
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
    /// One of a fixed set of names.
    pub fn choice(&self, key: &str, valid: &[&str]) -> Result<String> {
        let p = self.get(key)?;
        match &p.value {
            Value::Str(s) if valid.contains(&s.as_str()) => Ok(s.clone()),
            _ => Err(self.wrong(key, p, &format!("one of {}", valid.join(", ")))),
        }
    }
    /// Free text (unit `name`), e.g. a kernel boot parameter's value.
    pub fn text(&self, key: &str) -> Result<String> {
        let p = self.get(key)?;
        match &p.value {
            Value::Str(s) => Ok(s.clone()),
            _ => Err(self.wrong(key, p, "a string")),
        }
    }
    /// A list of numbers in the parameter's unit family, converted.
    pub fn list(&self, key: &str, family: &str) -> Result<Vec<f64>> {
        let p = self.get(key)?;
        let (fam, factor) = unit_factor(&p.unit).expect("units checked at load");
        if fam != family {
            return Err(self.wrong(key, p, &format!("a list of {family}")));
        }
        match &p.value {
            Value::List(items) => items
                .iter()
                .map(|v| match v {
                    Value::Int(i) if *i >= 0 => Ok(*i as f64 * factor),
                    Value::Float(f) if *f >= 0.0 && f.is_finite() => Ok(f * factor),
                    _ => Err(self.wrong(key, p, "a list of non-negative numbers")),
                })
                .collect(),
            _ => Err(self.wrong(key, p, "a list")),
        }
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

    /// Parameters with units and sources, for `flashpath profile show`.
    pub fn describe(&self) -> String {
        let mut out = format!("profile {}\n", self.name);
        if !self.description.is_empty() {
            out.push_str(&format!("  {}\n", self.description));
        }
        out.push_str(&format!("  files: {}\n\n", self.files.join(", ")));
        let width = self.params.keys().map(String::len).max().unwrap_or(0);
        for (k, p) in &self.params {
            out.push_str(&format!(
                "{k:width$}  {} {}\n{:width$}    source: {}\n",
                p.value, p.unit, "", p.source
            ));
        }
        out
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
        Value::List(_) => Err("list parameters cannot be set from the command line yet".into()),
        Value::Int(_) | Value::Float(_) => {
            let split = raw
                .find(|c: char| {
                    !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e')
                })
                .unwrap_or(raw.len());
            let (num, suffix) = raw.split_at(split);
            let x: f64 = num
                .parse()
                .map_err(|_| format!("'{num}' is not a number"))?;
            let x = if suffix.is_empty() {
                x
            } else {
                let (fam, f) =
                    unit_factor(suffix).ok_or_else(|| format!("unknown unit '{suffix}'"))?;
                let (want_fam, want_f) = unit_factor(unit).expect("checked");
                if fam != want_fam {
                    return Err(format!("unit '{suffix}' is not a {want_fam} like '{unit}'"));
                }
                x * f / want_f
            };
            if !x.is_finite() {
                return Err("not a finite number".into());
            }
            if matches!(current, Value::Int(_)) && x.fract() == 0.0 {
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
        let mut p = Profile {
            name: "t".into(),
            description: String::new(),
            files: vec![],
            params: BTreeMap::new(),
            read: RefCell::new(BTreeSet::new()),
        };
        p.merge_file("t.toml", text, None, 0)?;
        Ok(p)
    }

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
        assert_eq!(p.ns("device.completion_nsec").unwrap(), 10_000);
        assert_eq!(p.count("device.hw_queue_depth").unwrap(), 64);
    }

    #[test]
    fn wrong_family_is_refused() {
        let p = from_text(SAMPLE).unwrap();
        let e = p.bytes("device.completion_nsec").unwrap_err();
        assert!(e.message.contains("needs a bytes"), "{e}");
    }

    #[test]
    fn override_with_unit_suffix_and_typo_hint() {
        let mut p = from_text(SAMPLE).unwrap();
        p.apply_override("device.completion_nsec=2500ns").unwrap();
        assert_eq!(p.ns("device.completion_nsec").unwrap(), 2_500);
        let e = p.apply_override("device.completion_nsce=1").unwrap_err();
        assert!(
            e.message.contains("did you mean 'device.completion_nsec'"),
            "{e}"
        );
        let e = p.apply_override("device.hw_queue_depth=4KiB").unwrap_err();
        assert!(e.message.contains("not a count"), "{e}");
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
        p.ns("device.completion_nsec").unwrap();
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
