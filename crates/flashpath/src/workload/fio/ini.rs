//! The ini layer of a fio job file (init.c `__parse_jobs_ini`): sections,
//! comments, `include` files, `${NAME}` from the environment and the
//! `$ncpus`/`$mb_memory`/`$pagesize` keywords of the simulated machine
//! (with `bc` arithmetic when a keyword was replaced), into one list of
//! `[section]` and `key[=value]` items. What the options mean is not its
//! business.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::bc::bc_eval;
use crate::error::{clip, quote, InputError};
use crate::Result;

/// What the `$keywords` describe: the *simulated* machine, not the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseContext {
    pub ncpus: u32,
    pub mb_memory: u64,
    pub pagesize: u64,
    /// Environment for `${NAME}` expansion.
    pub env: BTreeMap<String, String>,
}

impl ParseContext {
    /// A context whose `${NAME}` values come from this process's environment.
    pub fn from_process_env(ncpus: u32, mb_memory: u64, pagesize: u64) -> Self {
        ParseContext {
            ncpus,
            mb_memory,
            pagesize,
            env: std::env::vars().collect(),
        }
    }
}

/// include nesting limit (fio has none; a cycle would recurse forever).
const MAX_INCLUDE_DEPTH: u32 = 16;
/// Includes followed in one job file, all levels together. The depth limit
/// alone lets a file that includes itself twice expand 2^16 times; fio has
/// no bound (init.c `__parse_jobs_ini` recurses per `include`).
const MAX_INCLUDES: u32 = 1024;
/// Bytes of job-file text read for one job file, its includes counted
/// every time they are read: real job files are kilobytes, and a bound
/// keeps `include /dev/zero` or a fan-out of includes from reading until
/// memory runs out.
pub(super) const MAX_JOB_TEXT_BYTES: u64 = 16 << 20;

/// What is left of the bounds above while one job file is read.
struct Budget {
    includes: u32,
    bytes: u64,
}

impl Budget {
    fn new() -> Self {
        Budget {
            includes: MAX_INCLUDES,
            bytes: MAX_JOB_TEXT_BYTES,
        }
    }

    /// Charge `len` bytes of text; false once the total is over.
    fn take_bytes(&mut self, len: usize) -> bool {
        match self.bytes.checked_sub(len as u64) {
            Some(left) => {
                self.bytes = left;
                true
            }
            None => false,
        }
    }
}

pub(super) const TEXT_BOUND: &str = "a job file and its includes are read up to 16 MiB in all";

/// One meaningful line after comment stripping and substitutions.
#[derive(Clone, Debug)]
pub(super) enum Item {
    Section {
        name: String,
        file: String,
        line: u32,
    },
    Opt {
        file: String,
        line: u32,
        key: String,
        value: Option<String>,
    },
}

/// The items of job-file text (and of the files it includes), within the
/// bounds above. `path_for_messages` names it in errors; `base_dir` is
/// where `include` files are looked for.
pub(super) fn read_items(
    path_for_messages: &str,
    text: &str,
    base_dir: &Path,
    ctx: &ParseContext,
) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut budget = Budget::new();
    if !budget.take_bytes(text.len()) {
        return Err(InputError::new(
            path_for_messages,
            None,
            format!("the job file is longer than 16 MiB ({TEXT_BOUND})"),
        ));
    }
    read_lines(
        path_for_messages,
        text,
        base_dir,
        ctx,
        0,
        &mut budget,
        &mut items,
    )?;
    Ok(items)
}

/// init.c: strip leading blanks, cut at the first `;` and at the first `#`
/// anywhere in the line, strip trailing blanks.
fn clean_line(raw: &str) -> &str {
    let mut s = raw.trim_start();
    if let Some(i) = s.find(';') {
        s = &s[..i];
    }
    if let Some(i) = s.find('#') {
        s = &s[..i];
    }
    s.trim_end()
}

fn read_lines(
    file: &str,
    text: &str,
    base_dir: &Path,
    ctx: &ParseContext,
    depth: u32,
    budget: &mut Budget,
    items: &mut Vec<Item>,
) -> Result<()> {
    let mut in_section = depth > 0;
    for (i, raw) in text.lines().enumerate() {
        let lineno = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let err = |m: String| InputError::new(file, Some(lineno), m);
        let s = clean_line(raw);
        if s.is_empty() {
            continue;
        }
        if let Some(rest) = s.strip_prefix('[') {
            if depth > 0 {
                return Err(err("no new sections in included files".into()));
            }
            let Some(name) = rest.strip_suffix(']') else {
                return Err(err(format!(
                    "malformed section header <{}>: no closing ']'",
                    clip(s)
                )));
            };
            // fio reads at most 255 characters of a name (sscanf %255[^\n]).
            let name: String = name.chars().take(255).collect();
            items.push(Item::Section {
                name,
                file: file.to_string(),
                line: lineno,
            });
            in_section = true;
            continue;
        }
        // init.c: "include" followed by one separator, the rest is the name.
        if s.len() > 8 && s.starts_with("include") && s.as_bytes()[7].is_ascii_whitespace() {
            if !in_section {
                return Err(err(format!(
                    "option <{}> outside of [] job section",
                    clip(s)
                )));
            }
            let inc = s[8..].trim();
            let p = Path::new(inc);
            let found: PathBuf = if p.is_absolute() || p.exists() {
                p.to_path_buf()
            } else {
                base_dir.join(p)
            };
            if depth + 1 > MAX_INCLUDE_DEPTH {
                return Err(err(format!(
                    "include nesting deeper than {MAX_INCLUDE_DEPTH} (an include cycle?)"
                )));
            }
            if budget.includes == 0 {
                return Err(err(format!(
                    "more than {MAX_INCLUDES} includes in one job file (includes that \
                     include each other several times?)"
                )));
            }
            budget.includes -= 1;
            let bytes = crate::input::read_bounded(&found, budget.bytes, TEXT_BOUND)
                .map_err(|e| err(format!("cannot include {}: {e}", quote(inc))))?;
            budget.take_bytes(bytes.len());
            let t = String::from_utf8_lossy(&bytes);
            let fname = found.display().to_string();
            let sub_base = found.parent().unwrap_or(base_dir).to_path_buf();
            read_lines(&fname, &t, &sub_base, ctx, depth + 1, budget, items)?;
            continue;
        }
        if !in_section {
            return Err(err(format!(
                "option <{}> outside of [] job section",
                clip(s)
            )));
        }
        let line = substitute(s, ctx).map_err(err)?;
        let (key, value) = match line.find('=') {
            // Whitespace around the key is trimmed, whitespace after '=' is
            // kept (parse.c only strips the key): `bs= 8k` keeps " 8k".
            Some(eq) => (
                line[..eq].trim().to_string(),
                Some(line[eq + 1..].to_string()),
            ),
            None => (line.trim().to_string(), None),
        };
        items.push(Item::Opt {
            file: file.to_string(),
            line: lineno,
            key,
            value,
        });
    }
    Ok(())
}

/// init.c: `${NAME}` from the environment (unset -> empty), then the
/// reserved keywords, then, if a keyword was replaced and the line holds an
/// operator, fio pipes the value to `bc` (integer math, scale 0).
fn substitute(line: &str, ctx: &ParseContext) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        match rest[i + 2..].find('}') {
            Some(j) => {
                let name = &rest[i + 2..i + 2 + j];
                if let Some(v) = ctx.env.get(name) {
                    out.push_str(v);
                }
                rest = &rest[i + 2 + j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    let mut replaced = false;
    for (kw, val) in [
        ("$pagesize", ctx.pagesize.to_string()),
        ("$mb_memory", ctx.mb_memory.to_string()),
        ("$ncpus", ctx.ncpus.to_string()),
    ] {
        if out.contains(kw) {
            out = out.replace(kw, &val);
            replaced = true;
        }
    }
    if replaced && out.contains(['+', '-', '*', '/', '^']) {
        if let Some(eq) = out.find('=') {
            let expr = out[eq + 1..].to_string();
            let v = bc_eval(&expr).ok_or_else(|| {
                format!(
                    "cannot evaluate {} (fio hands it to bc)",
                    quote(expr.trim())
                )
            })?;
            out = format!("{}={}", &out[..eq], v);
        }
    }
    Ok(out)
}

/// The ini layer's bounds: include fan-out, special files, deep `bc`
/// expressions, quoted input.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio::{parse_job_file, parse_job_str};

    fn ctx() -> ParseContext {
        ParseContext {
            ncpus: 4,
            mb_memory: 1024,
            pagesize: 4096,
            env: BTreeMap::new(),
        }
    }

    fn sandbox(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fp-ini-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn include_fan_out_is_bounded() {
        // Ten levels of files that each include the next one four times:
        // 4^10 reads without a bound on the total.
        let dir = sandbox("fanout");
        for level in 0..10 {
            let next = format!("include l{}.fio\n", level + 1);
            std::fs::write(dir.join(format!("l{level}.fio")), next.repeat(4)).unwrap();
        }
        std::fs::write(dir.join("l10.fio"), "bs=4k\n").unwrap();
        let job = "[j]\ninclude l0.fio\n";
        let e = parse_job_str("fan.fio", job, &dir, &ctx()).unwrap_err();
        assert!(e.message.contains("more than 1024 includes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn include_of_an_endless_device_stops_at_the_bound() {
        let e =
            parse_job_str("z.fio", "[j]\ninclude /dev/zero\n", Path::new("."), &ctx()).unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.message
                .contains("cannot include '/dev/zero': longer than"),
            "{e}"
        );
    }

    #[test]
    fn a_job_file_that_is_a_device_node_stops_at_the_bound() {
        let e = parse_job_file(Path::new("/dev/zero"), &ctx()).unwrap_err();
        assert!(e.message.contains("longer than 16 MiB"), "{e}");
    }

    #[test]
    fn a_long_power_tower_is_refused_not_a_stack_overflow() {
        let tower = vec!["1"; 200_000].join("^");
        assert_eq!(bc_eval(&tower), None);
        assert_eq!(bc_eval("2^3^2"), Some(512));
        let line = format!("size=$ncpus^{tower}");
        assert!(substitute(&line, &ctx()).is_err());
    }

    #[test]
    fn quoted_lines_are_cut_and_escaped() {
        let job = format!("bs=\u{1b}[31m{}\n", "x".repeat(100_000));
        let e = parse_job_str("q.fio", &job, Path::new("."), &ctx()).unwrap_err();
        let shown = e.to_string();
        assert!(shown.len() < 300, "{shown}");
        assert!(shown.contains("\\u{1b}[31m"), "{shown}");
        assert!(!shown.contains('\u{1b}'), "{shown}");
    }
}
