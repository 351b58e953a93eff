//! Writing a profile: the TOML text of a `[profile]` header and a list of
//! parameters, each `key = { value = ..., unit = "...", source = "..." }`
//! under its section, in the order given. `flashpath calibrate fit` writes
//! the profile it fits here (through the Python binding), so a written
//! profile follows the same rules as a loaded one: every key a dotted
//! path, every unit one the loader knows, every value with a source.
//!
//! The text is checked before it is returned: parsed as TOML and read back
//! parameter by parameter (the loader's own conversion), each must give the
//! value, unit and source it was written from. A profile this writes loads
//! back to the same values, or the writer says why not.

use super::{convert, unit_factor, Value};
use crate::error::{quote, InputError, Result};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The `[profile]` table and the comment lines above it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    /// Lines of the leading comment, without the `# ` (an empty string is
    /// a bare `#`).
    pub comments: Vec<String>,
    pub name: String,
    pub description: String,
    /// Profiles this one includes (a host profile), in order.
    pub include: Vec<String>,
}

/// One parameter: its dotted key (`device.read_fixed`), value, unit and
/// source, as [`super::Param`] holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key: String,
    pub value: Value,
    pub unit: String,
    pub source: String,
}

/// Messages name the writer's caller as the file.
const WHO: &str = "profile writer";

fn bad(message: String) -> InputError {
    InputError::new(WHO, None, message)
}

/// A TOML bare key: ASCII letters, digits, `_` and `-` (TOML 1.0,
/// "Keys"). Every key of the shipped profiles is one; a key that is not
/// would need quoting, which `collect` would read as a different path.
fn bare_key(part: &str) -> bool {
    !part.is_empty()
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A TOML basic string: `"` and `\` escaped, control characters as
/// `\b \t \n \f \r` or `\uXXXX` (TOML 1.0, "String"), and so are the
/// bidirectional-format characters (a source quoting one must not reorder
/// the line in an editor). Other characters, non-ASCII included, are
/// written as they are (the file is UTF-8).
fn toml_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f || bidi(c) => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Unicode's bidirectional formatting characters (UAX #9: the embeddings,
/// overrides and isolates, and the implicit marks).
fn bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A value as TOML. A float keeps a decimal point or an exponent (Rust's
/// `{:?}` is the shortest text that reads back to the same f64, and
/// `82.0` stays a float where `82` would read as an integer).
fn toml_value(key: &str, v: &Value, out: &mut String) -> Result<()> {
    match v {
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(x) => {
            if !x.is_finite() {
                return Err(bad(format!(
                    "parameter {}: {x} is not a finite number",
                    quote(key)
                )));
            }
            let _ = write!(out, "{x:?}");
        }
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Str(s) => toml_string(s, out),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                toml_value(key, item, out)?;
            }
            out.push(']');
        }
    }
    Ok(())
}

/// A comment line must stay one line.
fn one_line(what: &str, text: &str) -> Result<()> {
    if text.chars().any(|c| c == '\n' || c == '\r') {
        return Err(bad(format!("{what} {} spans lines", quote(text))));
    }
    Ok(())
}

/// The profile text of `header` and `entries`: the comments, `[profile]`,
/// then one table per section (the key without its last part) in the
/// order the sections first appear, one blank line between tables.
///
/// Refused, with one message naming the key: a key that is not a dotted
/// path of bare keys under a section, a key given twice or that is the
/// section of another, a unit the loader does not know, an empty source,
/// a value that is not finite.
pub fn write(header: &Header, entries: &[Entry]) -> Result<String> {
    let mut out = String::new();
    for line in &header.comments {
        one_line("comment", line)?;
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            let _ = writeln!(out, "# {line}");
        }
    }
    if !header.comments.is_empty() {
        out.push('\n');
    }
    out.push_str("[profile]\nname = ");
    toml_string(&header.name, &mut out);
    out.push_str("\ndescription = ");
    toml_string(&header.description, &mut out);
    if !header.include.is_empty() {
        out.push_str("\ninclude = [");
        for (i, inc) in header.include.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            toml_string(inc, &mut out);
        }
        out.push(']');
    }
    out.push('\n');

    let mut keys = BTreeSet::new();
    let mut sections: Vec<&str> = Vec::new();
    for e in entries {
        let Some((section, _)) = e.key.rsplit_once('.') else {
            return Err(bad(format!(
                "parameter {}: not under a section (a key is section.name, e.g. device.servers)",
                quote(&e.key)
            )));
        };
        if !e.key.split('.').all(bare_key) || e.key.starts_with("profile.") {
            return Err(bad(format!(
                "parameter {}: not a dotted path of names (letters, digits, _ and -) \
                 outside [profile]",
                quote(&e.key)
            )));
        }
        if !keys.insert(e.key.as_str()) {
            return Err(bad(format!("parameter {} given twice", quote(&e.key))));
        }
        if unit_factor(&e.unit).is_none() {
            return Err(bad(format!(
                "parameter {}: unknown unit {}",
                quote(&e.key),
                quote(&e.unit)
            )));
        }
        if e.source.trim().is_empty() {
            return Err(bad(format!(
                "parameter {}: empty source (every number needs one)",
                quote(&e.key)
            )));
        }
        if !sections.contains(&section) {
            sections.push(section);
        }
    }
    for e in entries {
        // A section that is also a parameter (`device.flash` and
        // `device.flash.dies`) cannot be both a table and a value.
        if sections.contains(&e.key.as_str()) {
            return Err(bad(format!(
                "parameter {} is also the section of other parameters",
                quote(&e.key)
            )));
        }
    }
    for section in &sections {
        let _ = write!(out, "\n[{section}]\n");
        for e in entries
            .iter()
            .filter(|e| e.key.rsplit_once('.').map(|s| s.0) == Some(section))
        {
            let name = &e.key[section.len() + 1..];
            let _ = write!(out, "{name} = {{ value = ");
            toml_value(&e.key, &e.value, &mut out)?;
            out.push_str(", unit = ");
            toml_string(&e.unit, &mut out);
            out.push_str(", source = ");
            toml_string(&e.source, &mut out);
            out.push_str(" }\n");
        }
    }
    read_back(&out, header, entries)?;
    Ok(out)
}

/// The written text parsed as the loader parses it: the header and every
/// entry as given, nothing else.
fn read_back(text: &str, header: &Header, entries: &[Entry]) -> Result<()> {
    let wrong = |what: String| bad(format!("the written profile does not read back: {what}"));
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| wrong(e.message().to_string()))?;
    let meta = doc.get("profile").and_then(|m| m.as_table());
    let text_of = |k: &str| meta.and_then(|m| m.get(k)).and_then(|v| v.as_str());
    if text_of("name") != Some(header.name.as_str())
        || text_of("description") != Some(header.description.as_str())
    {
        return Err(wrong("[profile] name or description".into()));
    }
    for e in entries {
        let mut node = &doc;
        let parts: Vec<&str> = e.key.split('.').collect();
        for part in &parts[..parts.len() - 1] {
            node = node
                .get(*part)
                .and_then(|v| v.as_table())
                .ok_or_else(|| wrong(format!("no section for {}", quote(&e.key))))?;
        }
        let param = node
            .get(parts[parts.len() - 1])
            .and_then(|v| v.as_table())
            .ok_or_else(|| wrong(format!("no parameter {}", quote(&e.key))))?;
        let value = param.get("value").map(convert);
        let same = matches!(value, Some(Ok(ref v)) if *v == e.value)
            && param.get("unit").and_then(|u| u.as_str()) == Some(e.unit.as_str())
            && param.get("source").and_then(|s| s.as_str()) == Some(e.source.as_str());
        if !same {
            return Err(wrong(format!("parameter {}", quote(&e.key))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn entry(key: &str, value: Value, unit: &str, source: &str) -> Entry {
        Entry {
            key: key.into(),
            value,
            unit: unit.into(),
            source: source.into(),
        }
    }

    /// Every parameter of every shipped profile, written out and loaded
    /// again, is the same parameter: value (of the same kind), unit and
    /// source.
    #[test]
    fn every_shipped_profile_round_trips() {
        for name in Profile::builtin_names() {
            let p = Profile::load(name).unwrap();
            let entries: Vec<Entry> = p
                .params()
                .map(|(k, prm)| entry(k, prm.value.clone(), &prm.unit, &prm.source))
                .collect();
            let header = Header {
                comments: vec![format!("{name}, written back"), String::new()],
                name: p.name.clone(),
                description: p.description.clone(),
                include: Vec::new(),
            };
            let text = write(&header, &entries).unwrap();
            let back = Profile::from_text("written", &text, None).unwrap();
            assert_eq!(back.name, p.name);
            assert_eq!(back.description, p.description);
            let a: Vec<_> = p
                .params()
                .map(|(k, v)| (k, &v.value, &v.unit, &v.source))
                .collect();
            let b: Vec<_> = back
                .params()
                .map(|(k, v)| (k, &v.value, &v.unit, &v.source))
                .collect();
            assert_eq!(a, b, "{name}");
        }
    }

    /// The layout: comments, [profile], sections in first-appearance
    /// order, entries in the order given, floats that stay floats.
    #[test]
    fn layout_and_value_text() {
        let header = Header {
            comments: vec!["one".into(), String::new(), "two".into()],
            name: "n \"q\"".into(),
            description: "d\tx".into(),
            include: vec!["hosts/x86-generic.toml".into()],
        };
        let entries = [
            entry("device.b", Value::Float(82.5), "us", "s1"),
            entry("block.io_poll", Value::Int(0), "bool", "s2"),
            entry("device.a", Value::Float(82.0), "us", "s3"),
            entry("device.flash.dies", Value::Int(2), "count", "s4"),
            entry("device.list", Value::List(vec![]), "count", "s5"),
            entry("device.big", Value::Float(1e20), "B", "s6"),
            entry("device.kind", Value::Str("generic".into()), "name", "s7"),
        ];
        let text = write(&header, &entries).unwrap();
        assert_eq!(
            text,
            "# one\n#\n# two\n\n[profile]\nname = \"n \\\"q\\\"\"\ndescription = \"d\\tx\"\n\
             include = [\"hosts/x86-generic.toml\"]\n\n[device]\n\
             b = { value = 82.5, unit = \"us\", source = \"s1\" }\n\
             a = { value = 82.0, unit = \"us\", source = \"s3\" }\n\
             list = { value = [], unit = \"count\", source = \"s5\" }\n\
             big = { value = 1e20, unit = \"B\", source = \"s6\" }\n\
             kind = { value = \"generic\", unit = \"name\", source = \"s7\" }\n\n[block]\n\
             io_poll = { value = 0, unit = \"bool\", source = \"s2\" }\n\n[device.flash]\n\
             dies = { value = 2, unit = \"count\", source = \"s4\" }\n"
        );
        let back = Profile::from_text(
            "w",
            &text.replace("include = [\"hosts/x86-generic.toml\"]\n", ""),
            None,
        )
        .unwrap();
        let got: Vec<_> = back
            .params()
            .map(|(k, p)| (k.clone(), p.value.clone()))
            .collect();
        assert!(got.contains(&("device.a".into(), Value::Float(82.0))));
        assert!(got.contains(&("device.big".into(), Value::Float(1e20))));
    }

    #[test]
    fn bad_entries_are_one_message_naming_the_key() {
        let h = Header::default();
        let cases = [
            (
                entry("servers", Value::Int(1), "count", "s"),
                "not under a section",
            ),
            (
                entry("device.a b", Value::Int(1), "count", "s"),
                "not a dotted path",
            ),
            (
                entry("profile.x", Value::Int(1), "count", "s"),
                "outside [profile]",
            ),
            (
                entry("device.x", Value::Int(1), "furlong", "s"),
                "unknown unit 'furlong'",
            ),
            (
                entry("device.x", Value::Int(1), "count", " "),
                "empty source",
            ),
            (
                entry("device.x", Value::Float(f64::NAN), "us", "s"),
                "not a finite number",
            ),
        ];
        for (e, want) in cases {
            let err = write(&h, std::slice::from_ref(&e)).unwrap_err();
            assert!(err.message.contains(want), "{e:?}: {}", err.message);
            assert!(err.message.contains(&quote(&e.key)), "{}", err.message);
        }
        let twice = [
            entry("device.x", Value::Int(1), "count", "s"),
            entry("device.x", Value::Int(2), "count", "s"),
        ];
        assert!(write(&h, &twice)
            .unwrap_err()
            .message
            .contains("given twice"));
        let nested = [
            entry("device.flash", Value::Int(1), "count", "s"),
            entry("device.flash.dies", Value::Int(2), "count", "s"),
        ];
        assert!(write(&h, &nested)
            .unwrap_err()
            .message
            .contains("also the section"));
        let h2 = Header {
            comments: vec!["a\nb".into()],
            ..Header::default()
        };
        assert!(write(&h2, &[]).unwrap_err().message.contains("spans lines"));
    }

    /// Text with every escape TOML has reads back to the same text.
    #[test]
    fn strings_with_escapes_round_trip() {
        let odd = "q\" b\\ \u{1} \u{7f} \r\n é \u{202e}";
        let h = Header {
            name: odd.into(),
            description: odd.into(),
            ..Header::default()
        };
        let e = [entry("device.kind", Value::Str(odd.into()), "name", odd)];
        let text = write(&h, &e).unwrap();
        assert!(
            !text.contains('\u{202e}') && text.contains("\\u202E"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 6, "{text}");
        let back = Profile::from_text("w", &text, None).unwrap();
        assert_eq!(back.name, odd);
        let (_, p) = back.params().next().unwrap();
        assert_eq!(p.value, Value::Str(odd.into()));
        assert_eq!(p.source, odd);
    }
}
