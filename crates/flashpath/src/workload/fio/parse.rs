//! The fio job-file grammar as fio 3.33 reads it (init.c `__parse_jobs_ini`,
//! parse.c `str_to_decimal`/`get_mult_bytes`/`get_mult_time`, options.c
//! callbacks). The quirks are reproduced on purpose; each is checked by a
//! probe in `fixtures/fio/parse-probes/` (see FORMAT-NOTES.md there).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::job::*;
use super::options::{self, Handling, Kind, OptDef};
use crate::error::{clip, nearest, quote, Diagnostic, InputError};
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
const MAX_JOB_TEXT_BYTES: u64 = 16 << 20;

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

const TEXT_BOUND: &str = "a job file and its includes are read up to 16 MiB in all";

/// One meaningful line after comment stripping and substitutions.
#[derive(Clone, Debug)]
enum Item {
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

/// Parse a job file from disk. Includes are looked up as fio does: relative
/// to the current directory first, then next to the including file.
pub fn parse_job_file(path: &Path, ctx: &ParseContext) -> Result<JobFile> {
    let name = path.display().to_string();
    let text = crate::input::read_bounded(path, MAX_JOB_TEXT_BYTES, TEXT_BOUND)
        .map_err(|e| InputError::new(name.clone(), None, format!("cannot read job file: {e}")))?;
    let text = String::from_utf8_lossy(&text);
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    parse_job_str(&name, &text, base, ctx)
}

/// Parse job-file text. `path_for_messages` names it in errors;
/// `base_dir` is where `include` files are looked for.
pub fn parse_job_str(
    path_for_messages: &str,
    text: &str,
    base_dir: &Path,
    ctx: &ParseContext,
) -> Result<JobFile> {
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
    build(path_for_messages, &items, ctx)
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

/// A small `bc` with scale=0: integers, + - * / % ^ and parentheses.
fn bc_eval(s: &str) -> Option<i64> {
    let toks: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    let mut pos = 0;
    let v = bc_sum(&toks, &mut pos, 0)?;
    (pos == toks.len()).then_some(v)
}

fn bc_sum(t: &[char], p: &mut usize, depth: u32) -> Option<i64> {
    let mut v = bc_prod(t, p, depth)?;
    while *p < t.len() && (t[*p] == '+' || t[*p] == '-') {
        let op = t[*p];
        *p += 1;
        let r = bc_prod(t, p, depth)?;
        v = if op == '+' {
            v.checked_add(r)?
        } else {
            v.checked_sub(r)?
        };
    }
    Some(v)
}

fn bc_prod(t: &[char], p: &mut usize, depth: u32) -> Option<i64> {
    let mut v = bc_pow(t, p, depth)?;
    while *p < t.len() && matches!(t[*p], '*' | '/' | '%') {
        let op = t[*p];
        *p += 1;
        let r = bc_pow(t, p, depth)?;
        v = match op {
            '*' => v.checked_mul(r)?,
            '/' => v.checked_div(r)?,
            _ => v.checked_rem(r)?,
        };
    }
    Some(v)
}

fn bc_pow(t: &[char], p: &mut usize, depth: u32) -> Option<i64> {
    let b = bc_atom(t, p, depth)?;
    if *p < t.len() && t[*p] == '^' {
        *p += 1;
        // Right-associative: each `^` nests one level (`2^2^...^2` of a
        // long line must not overflow the stack).
        let e = bc_pow(t, p, depth + 1)?;
        return b.checked_pow(u32::try_from(e).ok()?);
    }
    Some(b)
}

fn bc_atom(t: &[char], p: &mut usize, depth: u32) -> Option<i64> {
    if depth > 64 || *p >= t.len() {
        return None;
    }
    match t[*p] {
        '(' => {
            *p += 1;
            let v = bc_sum(t, p, depth + 1)?;
            (*p < t.len() && t[*p] == ')').then(|| *p += 1)?;
            Some(v)
        }
        '-' => {
            *p += 1;
            bc_atom(t, p, depth + 1)?.checked_neg()
        }
        c if c.is_ascii_digit() => {
            let mut v: i64 = 0;
            while *p < t.len() && t[*p].is_ascii_digit() {
                v = v
                    .checked_mul(10)?
                    .checked_add(i64::from(t[*p] as u8 - b'0'))?;
                *p += 1;
            }
            Some(v)
        }
        _ => None,
    }
}

/// The ini layer's bounds: include fan-out, special files, deep `bc`
/// expressions, quoted input.
#[cfg(test)]
mod ini_layer_tests {
    use super::*;

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

// ---------------------------------------------------------------------------
// Numbers, as parse.c reads them.

/// How fio 3.33 resolves one numeric option value: the number it prints as
/// `out=N` under `fio --debug=parse` (sizes in bytes, times in
/// microseconds, `N%` as fio's marker u64::MAX - N). None when fio would
/// fail to parse it, or when the option is not numeric. For tests against
/// the real fio.
pub fn fio_resolved_number(option: &str, value: Option<&str>, kb_base: u32) -> Option<u64> {
    let def = options::find(option)?;
    let kb = u64::from(kb_base);
    match (def.kind, value) {
        (Kind::Set, None) => Some(1),
        (_, None) => None,
        (Kind::Time, Some(v)) => parse_time_us(v, true),
        (Kind::Int, Some(v)) if is_time_int(def.name) => {
            parse_time_us(v, def.name == "thinktime_iotime")
        }
        (Kind::Str | Kind::FloatList | Kind::Range, Some(v))
            if !matches!(def.name, "filesize" | "number_ios" | "randseed") =>
        {
            let _ = v;
            None
        }
        (_, Some(v)) => parse_bytes(v, kb).map(num_u64),
    }
}

/// A size/int value: a number, or `N%` (fio stores -1ULL - N as a marker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Num {
    Val(u64),
    Percent(u64),
}

/// C strtoll: leading blanks, sign, digits in `base` (base 16 takes "0x").
/// Returns the value and whether any digit was read.
fn strtoll(s: &str, base: u32) -> Option<i64> {
    let s = s.trim_start();
    let (neg, mut s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if base == 16 {
        if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            if r.starts_with(|c: char| c.is_ascii_hexdigit()) {
                s = r;
            }
        }
    }
    let digits: &str = &s[..s.find(|c: char| !c.is_digit(base)).unwrap_or(s.len())];
    if digits.is_empty() {
        return None;
    }
    let v = i64::from_str_radix(digits, base).ok()?;
    Some(if neg { -v } else { v })
}

/// parse.c get_mult_bytes: walk over leading digits (and +/- before the
/// first digit); the suffix counts only if an alphabetic character or '%'
/// comes right there. So a leading blank (`bs= 8k`) makes the suffix vanish.
fn suffix_start(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut digit_seen = false;
    while i < b.len() {
        let c = b[i];
        if !c.is_ascii_digit() && ((c != b'+' && c != b'-') || digit_seen) {
            break;
        }
        digit_seen |= c.is_ascii_digit();
        i += 1;
    }
    let c = *b.get(i)?;
    (c.is_ascii_alphabetic() || c == b'%').then(|| &s[i..])
}

/// parse.c __get_mult_bytes. Three-letter IEC forms flip the base (with the
/// default kb_base=1024, `4KiB` is 4000); anything else starting with
/// k/m/g/t/p is a power of kb_base; other suffixes multiply by 1.
fn mult_bytes(suffix: Option<&str>, kb_base: u64) -> (u64, bool) {
    let Some(c) = suffix else { return (1, false) };
    let c = c.to_ascii_lowercase();
    let flip = if kb_base == 1000 { 1024 } else { 1000 };
    let (pow, base) = if let Some(p) = ["kib", "mib", "gib", "tib", "pib"]
        .iter()
        .position(|x| c.starts_with(x))
    {
        (p + 1, flip)
    } else if let Some(p) = ["k", "m", "g", "t", "p"]
        .iter()
        .position(|x| c.starts_with(x))
    {
        (p + 1, kb_base)
    } else if c.starts_with('%') {
        return (1, true);
    } else {
        (0, kb_base)
    };
    let mut m: u64 = 1;
    for _ in 0..pow {
        m = m.saturating_mul(base);
    }
    (m, false)
}

/// parse.c get_mult_time: microseconds per unit. No suffix: seconds when
/// the option counts in seconds, else microseconds. `s` must be exact.
fn mult_time(s: &str, is_seconds: bool) -> u64 {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_alphabetic() {
        return if is_seconds { 1_000_000 } else { 1 };
    }
    let c = s[i..].to_ascii_lowercase();
    if c.starts_with("us") {
        1
    } else if c.starts_with("ms") {
        1000
    } else if c == "s" {
        1_000_000
    } else if c == "m" {
        60_000_000
    } else if c == "h" {
        3_600_000_000
    } else if c == "d" {
        86_400_000_000
    } else {
        1
    }
}

/// str_to_decimal with kilo set (sizes and integers).
pub(crate) fn parse_bytes(s: &str, kb_base: u64) -> Option<Num> {
    if s.is_empty() {
        return None;
    }
    let base = if s.contains("0x") || s.contains("0X") {
        16
    } else {
        10
    };
    // Negative values wrap as in fio (a long long stored in a u64 field).
    let v = strtoll(s, base)? as u64;
    let (m, pct) = mult_bytes(suffix_start(s), kb_base);
    Some(if pct {
        Num::Percent(v)
    } else {
        Num::Val(if m == 1 { v } else { v.checked_mul(m)? })
    })
}

/// str_to_decimal with is_time: microseconds.
pub(crate) fn parse_time_us(s: &str, is_seconds: bool) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let base = if s.contains("0x") || s.contains("0X") {
        16
    } else {
        10
    };
    let v = strtoll(s, base)?;
    if v < 0 {
        return None;
    }
    (v as u64).checked_mul(mult_time(s, is_seconds))
}

/// parse.c check_range: `low-high` or `low:high`, swapped when reversed.
fn split_range(s: &str) -> Option<(&str, &str)> {
    // Skip a leading sign so "-5" is not read as an empty low bound.
    let i = s
        .char_indices()
        .skip(1)
        .find(|(_, c)| *c == '-')
        .or_else(|| s.char_indices().find(|(_, c)| *c == ':'))?
        .0;
    Some((&s[..i], &s[i + 1..]))
}

/// Per-direction lists (parse.c, options with off2/off3): up to three
/// comma-separated parts for read, write, trim; an empty part keeps the
/// default; the last part carries over to later directions unless it was
/// followed by a comma.
fn per_dir(value: &str) -> [Option<&str>; 3] {
    let parts: Vec<&str> = value.split(',').collect();
    let mut out = [None, None, None];
    for (d, slot) in out.iter_mut().enumerate() {
        let p = if d < parts.len() {
            parts[d]
        } else {
            parts[parts.len() - 1]
        };
        if !p.is_empty() {
            *slot = Some(p);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Building jobs.

/// Parser state beyond JobSpec: block-size sources are kept apart because
/// fio resolves them at the end (bssplit beats bsrange beats bs).
#[derive(Clone, Debug)]
struct Draft {
    spec: JobSpec,
    bs: [u64; 3],
    bsrange: [Option<(u64, u64)>; 3],
    bssplit: [Option<Vec<(u64, u32)>>; 3],
    iodepth_low_set: bool,
}

impl Draft {
    fn new() -> Self {
        Draft {
            spec: JobSpec::default(),
            bs: [4096; 3],
            bsrange: [None, None, None],
            bssplit: [None, None, None],
            iodepth_low_set: false,
        }
    }

    /// init.c fixup_options and the block-size resolution.
    fn finish(mut self) -> JobSpec {
        for d in 0..3 {
            self.spec.bs[d] = if let Some(s) = self.bssplit[d].take() {
                BlockSize::Split(s)
            } else if let Some((min, max)) = self.bsrange[d] {
                if min == max {
                    BlockSize::Fixed(min)
                } else {
                    BlockSize::Range { min, max }
                }
            } else {
                BlockSize::Fixed(self.bs[d])
            };
        }
        let s = &mut self.spec;
        // fixup_options: iodepth_low defaults to (and is capped at) iodepth;
        // iodepth_batch is capped at iodepth; complete_max >= complete_min.
        if !self.iodepth_low_set || s.iodepth_low > s.iodepth || s.iodepth_low == 0 {
            s.iodepth_low = s.iodepth;
        }
        if s.iodepth_batch_submit == 0 || s.iodepth_batch_submit > s.iodepth {
            s.iodepth_batch_submit = s.iodepth;
        }
        if s.iodepth_batch_complete_max < s.iodepth_batch_complete_min {
            s.iodepth_batch_complete_max = s.iodepth_batch_complete_min;
        }
        self.spec
    }
}

fn build(path: &str, items: &[Item], ctx: &ParseContext) -> Result<JobFile> {
    let mut jf = JobFile {
        path: path.to_string(),
        ..JobFile::default()
    };
    let mut defaults = Draft::new();
    let mut i = 0;
    while i < items.len() {
        let Item::Section { name, file, line } = &items[i] else {
            // read_lines never yields an option before the first section.
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < items.len() && matches!(items[j], Item::Opt { .. }) {
            j += 1;
        }
        let opts = &items[i + 1..j];
        // init.c: a section is global when its first 6 characters are "global".
        let is_global = name.starts_with("global");
        let mut draft = if is_global {
            defaults.clone()
        } else {
            let mut d = defaults.clone();
            d.spec.name = name.clone();
            d.spec.line = *line;
            d.spec.own_options.clear();
            d
        };
        // options.c sort_options: ioengine and kb_base are parsed first, as
        // the engine decides which engine options exist and kb_base how
        // sizes read.
        // options.c sort_options: a stable sort by option priority.
        // ioengine, kb_base and unit_base go first (the engine decides which
        // engine options exist, kb_base how sizes read); filename (prio -1)
        // goes last. fio's JSON "job options" come out in this order too.
        let prio = |o: &Item| match o {
            Item::Opt { key, .. } => match key.as_str() {
                "ioengine" | "kb_base" | "unit_base" => 0,
                "filename" => 2,
                _ => 1,
            },
            Item::Section { .. } => 1,
        };
        let mut ordered: Vec<&Item> = opts.iter().collect();
        ordered.sort_by_key(|o| prio(o));
        for it in &ordered {
            if let Item::Opt {
                file,
                line,
                key,
                value,
            } = it
            {
                apply(&mut draft, &mut jf, ctx, file, *line, key, value.as_deref())?;
            }
        }
        // "job options" / "global options" as written, bare flags left out.
        let written: Vec<(String, String)> = ordered
            .iter()
            .filter_map(|o| match o {
                Item::Opt {
                    key,
                    value: Some(v),
                    ..
                } => Some((key.clone(), v.clone())),
                _ => None,
            })
            .collect();
        if is_global {
            jf.global_options
                .get_or_insert_with(Vec::new)
                .extend(written);
            defaults = draft;
        } else {
            draft.spec.own_options = written;
            let _ = file;
            jf.jobs.push(draft.finish());
        }
        i = j;
    }
    Ok(jf)
}

const RW_NAMES: &[(&str, RwKind)] = &[
    ("read", RwKind::Read),
    ("write", RwKind::Write),
    ("trim", RwKind::Trim),
    ("randread", RwKind::RandRead),
    ("randwrite", RwKind::RandWrite),
    ("randtrim", RwKind::RandTrim),
    ("rw", RwKind::ReadWrite),
    ("readwrite", RwKind::ReadWrite),
    ("randrw", RwKind::RandReadWrite),
    ("trimwrite", RwKind::TrimWrite),
    ("randtrimwrite", RwKind::RandTrimWrite),
];

fn engine_of(name: &str) -> Option<IoEngine> {
    Some(match name {
        "sync" => IoEngine::Sync,
        "psync" => IoEngine::Psync,
        "vsync" => IoEngine::Vsync,
        "pvsync" => IoEngine::Pvsync,
        "pvsync2" => IoEngine::Pvsync2,
        "libaio" => IoEngine::Libaio,
        "io_uring" => IoEngine::IoUring,
        "posixaio" => IoEngine::PosixAio,
        "null" => IoEngine::Null,
        _ => return None,
    })
}

#[allow(clippy::too_many_arguments)]
fn apply(
    d: &mut Draft,
    jf: &mut JobFile,
    ctx: &ParseContext,
    file: &str,
    line: u32,
    key: &str,
    value: Option<&str>,
) -> Result<()> {
    let err = |m: String| InputError::new(file, Some(line), m);
    let shown = match value {
        Some(v) => format!("{key}={v}"),
        None => key.to_string(),
    };
    let Some(def) = options::find(key) else {
        let hint = nearest(key, options::all_names())
            .map(|n| format!("; did you mean '{n}'?"))
            .unwrap_or_default();
        return Err(err(format!("bad option <{shown}>: not a fio option{hint}")));
    };
    if let Some(engines) = def.engines {
        let cur = d.spec.ioengine.fio_name();
        if !engines.contains(&cur) {
            return Err(err(format!(
                "bad option <{shown}>: '{key}' is an option of ioengine {}, not of {cur}",
                engines.join("/")
            )));
        }
    }
    let kb = u64::from(d.spec.kb_base);
    let bad = |why: &str| err(format!("failed parsing {shown}: {why}"));

    // Type check first, as fio's parser does before any callback.
    let num = check_kind(def, value, kb).map_err(|why| bad(&why))?;

    // The bs= quirk: a blank after '=' hides the unit suffix.
    if let Some(v) = value {
        if v.starts_with(char::is_whitespace)
            && matches!(def.kind, Kind::Int | Kind::Size | Kind::Time)
            && v.trim_start().contains(|c: char| c.is_ascii_alphabetic())
        {
            jf.warnings.push(Diagnostic {
                file: file.to_string(),
                line: Some(line),
                message: format!(
                    "'{key}={v}': the blank after '=' makes fio 3.33 ignore the unit suffix \
                     (read as {}); write '{key}={}' if that is not meant",
                    num.map(|n| n.to_string()).unwrap_or_default(),
                    v.trim()
                ),
            });
        }
    }

    let ignore = |jf: &mut JobFile, why: &str| {
        jf.ignored.push(Diagnostic {
            file: file.to_string(),
            line: Some(line),
            message: format!("option '{}' ignored: {why}", def.name),
        });
    };
    match def.handling {
        Handling::Model | Handling::Record => model(d, ctx, def.name, value, num, kb, &bad, &err),
        Handling::Ignore => {
            ignore(jf, "it cannot change the simulated I/O");
            Ok(())
        }
        Handling::Inert(master) => {
            ignore(
                jf,
                &format!("it only acts together with '{master}', which flashpath refuses"),
            );
            Ok(())
        }
        Handling::RefuseUnless(ok) => {
            let v = value.unwrap_or("1").trim();
            let same = ok.iter().any(|a| {
                a.eq_ignore_ascii_case(v)
                    || (num.is_some() && parse_bytes(a, kb).map(num_u64) == num)
            });
            if same {
                ignore(jf, "its value is fio's default (no effect)");
                Ok(())
            } else {
                Err(err(format!(
                    "option '{}' is not modelled by flashpath (accepted only as {key}={})",
                    def.name,
                    ok.join(" or ")
                )))
            }
        }
        Handling::Refuse => Err(err(format!(
            "option '{}' is not modelled by flashpath",
            def.name
        ))),
    }
}

fn num_u64(n: Num) -> u64 {
    match n {
        Num::Val(v) => v,
        Num::Percent(p) => u64::MAX - p,
    }
}

/// Validate a value against its option's type; returns the number for
/// single-valued numeric kinds.
fn check_kind(
    def: &OptDef,
    value: Option<&str>,
    kb: u64,
) -> std::result::Result<Option<u64>, String> {
    let need = || format!("option '{}' requires an argument", def.name);
    let int01 = |v: &str| match parse_bytes(v, kb) {
        Some(Num::Val(x @ 0..=1)) => Ok(Some(x)),
        _ => Err("expected 0 or 1 (fio 3.33 takes no words here)".to_string()),
    };
    match def.kind {
        Kind::Bool => int01(value.ok_or_else(need)?),
        Kind::Set => match value {
            None => Ok(Some(1)),
            Some(v) => int01(v),
        },
        Kind::Int => {
            let v = value.ok_or_else(need)?;
            let mut single = None;
            for p in v.split(',').filter(|p| !p.is_empty()) {
                let n = if is_time_int(def.name) {
                    parse_time_us(p, def.name == "thinktime_iotime").map(Num::Val)
                } else {
                    parse_bytes(p, kb)
                };
                match n {
                    Some(n) => single = Some(num_u64(n)),
                    None => return Err("not a number".into()),
                }
            }
            Ok(if v.contains(',') { None } else { single })
        }
        Kind::Size => {
            let v = value.ok_or_else(need)?;
            parse_bytes(v, kb)
                .map(|n| Some(num_u64(n)))
                .ok_or_else(|| "not a size".to_string())
        }
        Kind::Time => {
            let v = value.ok_or_else(need)?;
            let (lo, hi) = split_range(v).unwrap_or((v, v));
            let a = parse_time_us(lo, true).ok_or("not a time")?;
            parse_time_us(hi, true).ok_or("not a time")?;
            Ok(Some(a))
        }
        Kind::FloatList => {
            let v = value.ok_or_else(need)?;
            for p in v.split(':') {
                p.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("'{p}' is not a number"))?;
            }
            Ok(None)
        }
        Kind::Range => {
            let v = value.ok_or_else(need)?;
            for p in v.split(',').filter(|p| !p.is_empty()) {
                let (a, b) = split_range(p).ok_or("expected low-high or low:high")?;
                parse_bytes(a, kb).ok_or("bad low bound")?;
                parse_bytes(b, kb).ok_or("bad high bound")?;
            }
            Ok(None)
        }
        Kind::Str => Ok(None),
    }
}

/// OPT_INT options with is_time set (options.c): thinktime and friends are
/// microseconds unless suffixed.
fn is_time_int(name: &str) -> bool {
    matches!(
        name,
        "thinktime" | "thinktime_spin" | "thinktime_iotime" | "max_latency"
    )
}

fn us_to_ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

#[allow(clippy::too_many_arguments)]
fn model(
    d: &mut Draft,
    ctx: &ParseContext,
    name: &str,
    value: Option<&str>,
    num: Option<u64>,
    kb: u64,
    bad: &dyn Fn(&str) -> InputError,
    err: &dyn Fn(String) -> InputError,
) -> Result<()> {
    let s = &mut d.spec;
    let v = value.unwrap_or("");
    let n = num.unwrap_or(0);
    let u32v = |min: u64| -> Result<u32> {
        if n < min {
            return Err(bad(&format!("must be at least {min}")));
        }
        u32::try_from(n).map_err(|_| bad("too large"))
    };
    let size_or_pct = |v: &str| -> Result<Num> {
        let n = parse_bytes(v, kb).ok_or_else(|| bad("not a size"))?;
        if let Num::Percent(p) = n {
            if p == 0 || p > 100 {
                return Err(bad("a percentage must be 1..100"));
            }
        }
        Ok(n)
    };
    match name {
        "description" => s.description = Some(v.to_string()),
        "name" => s.name = v.to_string(),
        "filename" => s.filename = Some(v.to_string()),
        "directory" => s.directory = Some(v.to_string()),
        "rw" => {
            // options.c str_rw_cb: the part after ':' is ddir_seq_nr for
            // random patterns (atoi) and ddir_seq_add (a size) for
            // sequential ones.
            let (kind, post) = match v.split_once(':') {
                Some((k, p)) => (k, Some(p)),
                None => (v, None),
            };
            let Some((_, rw)) = RW_NAMES.iter().find(|(n, _)| *n == kind) else {
                let valid: Vec<&str> = RW_NAMES.iter().map(|(n, _)| *n).collect();
                return Err(bad(&format!("valid values: {}", valid.join(", "))));
            };
            s.rw = *rw;
            s.rw_nr = 0;
            s.rw_seq_add = 0;
            if let Some(p) = post {
                if rw.is_random() {
                    let nr = strtoll(p, 10).unwrap_or(0);
                    s.rw_nr = u64::try_from(nr).unwrap_or(0);
                } else {
                    let neg = p.trim_start().starts_with('-');
                    let mag = parse_bytes(p.trim_start().trim_start_matches('-'), kb);
                    let Some(Num::Val(m)) = mag else {
                        return Err(bad("rw postfix parsing failed"));
                    };
                    let m = i64::try_from(m).map_err(|_| bad("rw postfix too large"))?;
                    s.rw_seq_add = if neg { -m } else { m };
                    s.rw_nr = if neg { 0 } else { m as u64 };
                }
            }
        }
        "rwmixread" | "rwmixwrite" => {
            if n > 100 {
                return Err(bad("must be 0..100"));
            }
            s.rwmixread = if name == "rwmixread" { n } else { 100 - n } as u32;
        }
        "bs" => {
            for (dd, p) in per_dir(v).iter().enumerate() {
                if let Some(p) = p {
                    match parse_bytes(p, kb) {
                        Some(Num::Val(x)) if x >= 1 => d.bs[dd] = x,
                        _ => return Err(bad("block size must be a size of at least 1 byte")),
                    }
                }
            }
        }
        "bsrange" => {
            for (dd, p) in per_dir(v).iter().enumerate() {
                if let Some(p) = p {
                    let (a, b) = split_range(p).ok_or_else(|| bad("expected low-high"))?;
                    let (Some(Num::Val(a)), Some(Num::Val(b))) =
                        (parse_bytes(a, kb), parse_bytes(b, kb))
                    else {
                        return Err(bad("expected sizes"));
                    };
                    let (lo, hi) = (a.min(b), a.max(b));
                    if lo == 0 {
                        return Err(bad("block sizes must be at least 1 byte"));
                    }
                    d.bsrange[dd] = Some((lo, hi));
                }
            }
        }
        "bssplit" => {
            // options.c str_bssplit_cb: "r" applies to all; "r,w" gives
            // trims the write list; "r,w,t" each its own.
            let parts: Vec<&str> = v.split(',').collect();
            if parts.len() > 3 {
                return Err(bad("at most three per-direction lists"));
            }
            for dd in 0..3 {
                let p = parts[dd.min(parts.len() - 1)];
                if p.is_empty() {
                    continue;
                }
                d.bssplit[dd] = Some(parse_bssplit(p, kb).map_err(|w| bad(&w))?);
            }
        }
        "bs_unaligned" => s.bs_unaligned = n == 1,
        "randrepeat" => s.randrepeat = n == 1,
        "randseed" => {
            let Some(Num::Val(x)) = parse_bytes(v, kb) else {
                return Err(bad("not a number"));
            };
            s.randseed = Some(x);
        }
        "norandommap" => s.norandommap = n == 1,
        "ioengine" => {
            let e = v.trim();
            match engine_of(e) {
                Some(io) => {
                    // Engine options belong to the engine (td->eo is
                    // rebuilt when ioengine changes).
                    if s.ioengine != io {
                        s.hipri = false;
                    }
                    s.ioengine = io;
                }
                None if options::KNOWN_ENGINES.contains(&e) => {
                    return Err(err(format!(
                        "ioengine '{e}' is not modelled by flashpath (modelled: sync, psync, \
                         vsync, pvsync, pvsync2, libaio, io_uring, posixaio, null)"
                    )))
                }
                None => {
                    let hint = nearest(e, options::KNOWN_ENGINES.iter().copied())
                        .map(|n| format!("; did you mean '{n}'?"))
                        .unwrap_or_default();
                    return Err(err(format!("engine {e} not loadable{hint}")));
                }
            }
        }
        "iodepth" => s.iodepth = u32v(1)?,
        "iodepth_batch" => s.iodepth_batch_submit = u32v(0)?,
        "iodepth_batch_complete_min" => s.iodepth_batch_complete_min = u32v(0)?,
        "iodepth_batch_complete_max" => {
            s.iodepth_batch_complete_max = u32v(0)?;
        }
        "iodepth_low" => {
            s.iodepth_low = u32v(0)?;
            d.iodepth_low_set = true;
        }
        "size" => match size_or_pct(v)? {
            Num::Val(x) => {
                s.size = Some(x);
                s.size_percent = None;
            }
            Num::Percent(p) => {
                s.size = None;
                s.size_percent = Some(p as u32);
            }
        },
        "io_size" => match size_or_pct(v)? {
            Num::Val(x) => s.io_size = Some(x),
            Num::Percent(_) => {
                return Err(err(
                    "option 'io_size' as a percentage is not modelled by flashpath".into(),
                ))
            }
        },
        "filesize" => {
            if split_range(v).is_some() {
                return Err(err(
                    "option 'filesize' as a range (random file sizes) is not modelled by flashpath"
                        .into(),
                ));
            }
            match parse_bytes(v, kb) {
                Some(Num::Val(x)) => s.filesize = Some(x),
                _ => return Err(bad("not a size")),
            }
        }
        "offset" => match size_or_pct(v)? {
            Num::Val(x) => {
                s.offset = x;
                s.offset_percent = None;
            }
            Num::Percent(p) => {
                s.offset = 0;
                s.offset_percent = Some(p as u32);
            }
        },
        "offset_increment" => match size_or_pct(v)? {
            Num::Val(x) => s.offset_increment = x,
            Num::Percent(_) => {
                return Err(err(
                    "option 'offset_increment' as a percentage is not modelled by flashpath".into(),
                ))
            }
        },
        "number_ios" => match parse_bytes(v, kb) {
            Some(Num::Val(x)) => s.number_ios = (x > 0).then_some(x),
            _ => return Err(bad("not a number")),
        },
        "nrfiles" => s.nrfiles = u32v(1)?,
        "direct" => s.direct = n == 1,
        "invalidate" => s.invalidate = n == 1,
        "end_fsync" | "fsync_on_close" => s.end_fsync |= n == 1,
        // A block device has no metadata to skip: fdatasync syncs what
        // fsync does (blkdev_fsync).
        "fsync" | "fdatasync" => s.fsync_blocks = u32v(0)?,
        "fadvise_hint" => {
            s.fadvise_hint = match v {
                "0" => FadviseHint::None,
                "1" => FadviseHint::ByPattern,
                "random" => FadviseHint::Random,
                "sequential" => FadviseHint::Sequential,
                _ => return Err(bad("not one of 0, 1, random, sequential")),
            }
        }
        "mem" => {
            s.io_mem = crate::mm::thp::IoMem::parse(v).ok_or_else(|| {
                bad("not one of malloc, shm, shmhuge, mmap, mmaphuge, mmapshared (cudamalloc: no GPU is modelled)")
            })?
        }
        // buffered is the inverse of direct (options.c: same field, .neg).
        "buffered" => s.direct = n == 0,
        "loops" => s.loops = u32v(1)?,
        "numjobs" => s.numjobs = u32v(1)?,
        "startdelay" => {
            let (lo, hi) = split_range(v).unwrap_or((v, v));
            let a = parse_time_us(lo, true).ok_or_else(|| bad("not a time"))?;
            let b = parse_time_us(hi, true).ok_or_else(|| bad("not a time"))?;
            s.startdelay = us_to_ns(a.min(b));
            s.startdelay_high = (a != b).then(|| us_to_ns(a.max(b)));
        }
        "runtime" => s.runtime = (n > 0).then(|| us_to_ns(n)),
        "ramp_time" => s.ramp_time = us_to_ns(n),
        "time_based" => s.time_based = n == 1,
        "thinktime" => s.thinktime = us_to_ns(n),
        "thinktime_spin" => s.thinktime_spin = us_to_ns(n),
        "thinktime_blocks" => s.thinktime_blocks = u32v(1)?,
        "rate" | "rate_min" | "rate_iops" => {
            let target = match name {
                "rate" => &mut s.rate,
                "rate_min" => &mut s.rate_min,
                _ => &mut s.rate_iops,
            };
            for (dd, p) in per_dir(v).iter().enumerate() {
                if let Some(p) = p {
                    match parse_bytes(p, kb) {
                        Some(Num::Val(x)) => target[dd] = x,
                        _ => return Err(bad("not a number")),
                    }
                }
            }
        }
        "rate_process" => {
            s.rate_process = match v {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                _ => return Err(bad("valid values: linear, poisson")),
            }
        }
        "random_distribution" => {
            s.random_distribution = parse_distribution(v).map_err(|w| bad(&w))?;
        }
        "cpumask" => {
            let Some(Num::Val(mask)) = parse_bytes(v, kb) else {
                return Err(bad("not a number"));
            };
            let cpus: Vec<u32> = (0..64).filter(|i| mask & (1u64 << i) != 0).collect();
            if cpus.is_empty() {
                return Err(bad("no CPUs in the mask"));
            }
            s.cpus_allowed = Some(cpus);
        }
        "cpus_allowed" => {
            s.cpus_allowed = Some(parse_cpu_list(v, ctx.ncpus).map_err(|w| bad(&w))?);
        }
        "stonewall" => s.stonewall = n == 1,
        "new_group" => s.new_group = n == 1,
        "group_reporting" => s.group_reporting = n == 1,
        "kb_base" => {
            s.kb_base = match v {
                "1024" => 1024,
                "1000" => 1000,
                _ => return Err(bad("valid values: 1024, 1000")),
            }
        }
        "percentile_list" => {
            let list: Vec<f64> = v.split(':').filter_map(|p| p.trim().parse().ok()).collect();
            if list.len() > 20 || list.iter().any(|p| !(0.0..=100.0).contains(p)) {
                return Err(bad("up to 20 percentiles, each 0..100"));
            }
            s.percentile_list = Some(list);
        }
        "clat_percentiles" => s.clat_percentiles = n == 1,
        "lat_percentiles" => s.lat_percentiles = n == 1,
        "slat_percentiles" => s.slat_percentiles = n == 1,
        "unified_rw_reporting" => {
            s.unified_rw_reporting = match v {
                "none" | "0" => "none",
                "mixed" | "1" => "mixed",
                "both" | "2" => "both",
                _ => return Err(bad("valid values: none, mixed, both")),
            }
            .to_string()
        }
        "unit_base" => {
            s.unit_base = match v {
                "0" => 0,
                "8" => 8,
                "1" => 1,
                _ => return Err(bad("valid values: 0, 8, 1")),
            }
        }
        "hipri" => s.hipri = n == 1,
        "read_iolog" => s.read_iolog = Some(v.to_string()),
        "write_lat_log" => s.write_lat_log = Some(v.to_string()),
        "write_iolog" => s.write_iolog = Some(v.to_string()),
        "write_bw_log" => s.write_bw_log = Some(v.to_string()),
        "write_iops_log" => s.write_iops_log = Some(v.to_string()),
        "log_offset" => s.log_offset = n == 1,
        "per_job_logs" => s.per_job_logs = n == 1,
        "log_avg_msec" => s.log_avg_msec = n,
        "log_max_value" => s.log_max_value = n == 1,
        "replay_no_stall" => s.replay.no_stall = n == 1,
        "replay_redirect" => s.replay_redirect = Some(v.to_string()),
        "replay_time_scale" => {
            if n == 0 {
                return Err(bad("must be at least 1 (a percentage)"));
            }
            s.replay.time_scale_pct = u32v(1)?;
        }
        "replay_scale" => s.replay.offset_scale = n.max(1),
        "replay_align" => {
            if n != 0 && !n.is_power_of_two() {
                return Err(bad(
                    "must be a power of two (fio: \"must be a power of 2\")",
                ));
            }
            s.replay.align = n;
        }
        "replay_skip" => {
            // options.c str_replay_skip_cb: a list of read, write, trim, sync.
            s.replay.skip = 0;
            for word in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                s.replay.skip |= match word {
                    "read" => 1 << 0,
                    "write" => 1 << 1,
                    "trim" => 1 << 2,
                    "sync" => crate::workload::iolog::SKIP_SYNC,
                    _ => return Err(bad("valid values: read, write, trim, sync")),
                };
            }
        }
        "exitall" => s.exitall = n == 1,
        "exit_what" => {
            if !matches!(v, "group" | "stonewall" | "all") {
                return Err(bad("valid values: group, stonewall, all"));
            }
            s.exit_what = v.to_string();
        }
        "wait_for" => s.wait_for = Some(v.to_string()),
        "cpus_allowed_policy" => {
            s.cpus_allowed_split = match v {
                "shared" => false,
                "split" => true,
                _ => return Err(bad("valid values: shared, split")),
            }
        }
        "do_verify" => s.do_verify = n == 1,
        "verify" => {
            // options.c verify values (3.33); "0"/"none" turn it off.
            const VALID: &[&str] = &[
                "0",
                "none",
                "md5",
                "crc64",
                "crc32",
                "crc32c",
                "crc32c-intel",
                "crc16",
                "crc7",
                "sha256",
                "sha512",
                "sha1",
                "sha3-224",
                "sha3-256",
                "sha3-384",
                "sha3-512",
                "xxhash",
                "meta",
                "pattern",
                "null",
            ];
            if !VALID.contains(&v) {
                return Err(bad(&format!("valid values: {}", VALID.join(", "))));
            }
            s.verify = (!matches!(v, "0" | "none")).then(|| v.to_string());
        }
        "percentage_random" => {
            for (dd, p) in per_dir(v).iter().enumerate() {
                if let Some(p) = p {
                    match parse_bytes(p, kb) {
                        Some(Num::Val(x)) if x <= 100 => s.percentage_random[dd] = x as u32,
                        _ => return Err(bad("must be 0..100")),
                    }
                }
            }
        }
        "ba" => {
            for (dd, p) in per_dir(v).iter().enumerate() {
                if let Some(p) = p {
                    match parse_bytes(p, kb) {
                        Some(Num::Val(x)) if x >= 1 => s.blockalign[dd] = x,
                        _ => return Err(bad("alignment must be a size of at least 1 byte")),
                    }
                }
            }
        }
        other => {
            return Err(err(format!(
                "option '{other}' is not modelled by flashpath"
            )))
        }
    }
    Ok(())
}

/// options.c bssplit_ddir: `size/percent` entries joined by ':'; a missing
/// percent shares what is left evenly; the total may not pass 100.
fn parse_bssplit(s: &str, kb: u64) -> std::result::Result<Vec<(u64, u32)>, String> {
    let mut out: Vec<(u64, Option<u32>)> = Vec::new();
    for ent in s.split(':') {
        if out.len() >= 64 {
            return Err("at most 64 entries".into());
        }
        let (sz, pc) = match ent.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (ent, None),
        };
        let Some(Num::Val(bs)) = parse_bytes(sz, kb) else {
            return Err(format!("'{sz}' is not a size"));
        };
        if bs == 0 {
            return Err("block size 0".into());
        }
        // atoi: junk reads as 0, and 0 means "not given".
        let p = pc.map(|p| strtoll(p, 10).unwrap_or(0).clamp(0, 100) as u32);
        out.push((bs, p.filter(|p| *p > 0)));
    }
    let given: u32 = out.iter().filter_map(|e| e.1).sum();
    let missing = out.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 && missing > 1 {
        return Err("bssplit percentages add to more than 100%".into());
    }
    let share = 100u32
        .saturating_sub(given)
        .checked_div(missing)
        .unwrap_or(0);
    Ok(out
        .into_iter()
        .map(|(b, p)| (b, p.unwrap_or(share)))
        .collect())
}

/// options.c str_random_distribution_cb.
fn parse_distribution(v: &str) -> std::result::Result<RandomDistribution, String> {
    let (kind, rest) = match v.split_once(':') {
        Some((k, r)) => (k, Some(r)),
        None => (v, None),
    };
    let valid =
        "valid values: random, zipf[:theta], pareto[:h], normal[:dev], gauss[:dev], zoned:...";
    let num = |def: f64| -> std::result::Result<f64, String> {
        match rest {
            None => Ok(def),
            Some(r) if r.contains(':') => {
                Err("a center/offset value after the parameter is not modelled by flashpath".into())
            }
            Some(r) => r
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("'{r}' is not a number")),
        }
    };
    Ok(match kind {
        "random" if rest.is_none() => RandomDistribution::Random,
        "zipf" => {
            let t = num(1.1)?;
            if t == 1.0 || t <= 0.0 {
                return Err("zipf theta must be > 0 and different than 1.0".into());
            }
            RandomDistribution::Zipf(t)
        }
        "pareto" => {
            let h = num(0.2)?;
            if h <= 0.0 || h >= 1.0 {
                return Err("pareto input out of range (0 < input < 1.0)".into());
            }
            RandomDistribution::Pareto(h)
        }
        "normal" | "gauss" => {
            let dv = num(0.0)?;
            if !(0.0..=100.0).contains(&dv) {
                return Err("normal deviation out of range (0 <= input <= 100.0)".into());
            }
            RandomDistribution::Normal(dv)
        }
        "zoned" => {
            let r = rest.ok_or("zoned needs access/size pairs")?;
            if r.contains(',') || r.contains("r:") || r.contains("w:") {
                return Err("per-direction zoned lists are not modelled by flashpath".into());
            }
            // An empty access or size percent shares what is left evenly
            // (fio 3.33 accepts `zoned:50/5:30/15:20/`).
            let mut raw: Vec<(Option<f64>, Option<f64>)> = Vec::new();
            for z in r.split(':').filter(|z| !z.is_empty()) {
                let (a, b) = z.split_once('/').ok_or("zones are access%/size%")?;
                let f = |x: &str| -> std::result::Result<Option<f64>, String> {
                    if x.trim().is_empty() {
                        Ok(None)
                    } else {
                        x.trim()
                            .parse()
                            .map(Some)
                            .map_err(|_| format!("bad zone '{z}'"))
                    }
                };
                raw.push((f(a)?, f(b)?));
            }
            type Zone = (Option<f64>, Option<f64>);
            let fill = |get: &dyn Fn(&Zone) -> Option<f64>| {
                let given: f64 = raw.iter().filter_map(get).sum();
                let missing = raw.iter().filter(|z| get(z).is_none()).count();
                ((100.0 - given).max(0.0)) / missing.max(1) as f64
            };
            let (fa, fb) = (fill(&|z| z.0), fill(&|z| z.1));
            let zones: Vec<(f64, f64)> = raw
                .iter()
                .map(|z| (z.0.unwrap_or(fa), z.1.unwrap_or(fb)))
                .collect();
            let (ta, tb) = zones
                .iter()
                .fold((0.0, 0.0), |(x, y), (a, b)| (x + a, y + b));
            if ta > 100.0 + 1e-9 || tb > 100.0 + 1e-9 {
                return Err("zone percentages add to more than 100".into());
            }
            RandomDistribution::Zoned(zones)
        }
        _ => return Err(valid.into()),
    })
}

/// options.c set_cpus_allowed: "0-3,5", each CPU below the machine's count.
fn parse_cpu_list(v: &str, ncpus: u32) -> std::result::Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let a: u32 = a.trim().parse().map_err(|_| format!("bad CPU '{part}'"))?;
        let b: u32 = b.trim().parse().map_err(|_| format!("bad CPU '{part}'"))?;
        if a > b {
            return Err(format!("bad CPU range '{part}'"));
        }
        // fio 3.33 checks only against its compile-time FIO_MAX_CPUS here;
        // CPUs the machine lacks are the simulator's to refuse at run time.
        if b >= ncpus.max(4096) {
            return Err(format!("CPU {b} too large (max={})", ncpus.max(4096) - 1));
        }
        for c in a..=b {
            if !cpus.contains(&c) {
                cpus.push(c);
            }
        }
    }
    if cpus.is_empty() {
        return Err("no CPUs given".into());
    }
    cpus.sort_unstable();
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_parse_c() {
        assert_eq!(parse_bytes("4k", 1024), Some(Num::Val(4096)));
        assert_eq!(parse_bytes("4KiB", 1024), Some(Num::Val(4000)));
        assert_eq!(parse_bytes("4KiB", 1000), Some(Num::Val(4096)));
        assert_eq!(parse_bytes("4ki", 1000), Some(Num::Val(4000)));
        assert_eq!(parse_bytes(" 8k", 1024), Some(Num::Val(8)));
        assert_eq!(parse_bytes("0x10", 1024), Some(Num::Val(16)));
        assert_eq!(parse_bytes("20%", 1024), Some(Num::Percent(20)));
        assert_eq!(parse_bytes("k", 1024), None);
        assert_eq!(parse_bytes("(2*4096)", 1024), None);
    }

    #[test]
    fn times_follow_parse_c() {
        assert_eq!(parse_time_us("2m", true), Some(120_000_000));
        assert_eq!(parse_time_us("1500ms", true), Some(1_500_000));
        assert_eq!(parse_time_us("250", false), Some(250));
        assert_eq!(parse_time_us("3", true), Some(3_000_000));
        // "sec" is not "s": fio multiplies by 1.
        assert_eq!(parse_time_us("3sec", true), Some(3));
    }

    #[test]
    fn bc_math() {
        assert_eq!(bc_eval("2*24105"), Some(48210));
        assert_eq!(bc_eval("1+2*3"), Some(7));
        assert_eq!(bc_eval("(1+2)*3"), Some(9));
        assert_eq!(bc_eval("7/2"), Some(3));
        assert_eq!(bc_eval("1/0"), None);
        assert_eq!(bc_eval("2*"), None);
    }

    #[test]
    fn per_direction_carry_over() {
        assert_eq!(per_dir("8k"), [Some("8k"), Some("8k"), Some("8k")]);
        assert_eq!(per_dir("8k,32k"), [Some("8k"), Some("32k"), Some("32k")]);
        assert_eq!(per_dir("8k,32k,"), [Some("8k"), Some("32k"), None]);
        assert_eq!(per_dir(",8k"), [None, Some("8k"), Some("8k")]);
    }

    #[test]
    fn bssplit_shares_the_remainder() {
        assert_eq!(
            parse_bssplit("4k/50:1k/:32k/", 1024),
            Ok(vec![(4096, 50), (1024, 25), (32768, 25)])
        );
        assert!(parse_bssplit("4k/80:1k/:32k/:8k/30", 1024).is_err());
    }

    #[test]
    fn every_table_name_is_unique() {
        let mut names: Vec<&str> = options::all_names().collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
