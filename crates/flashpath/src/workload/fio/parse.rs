//! The fio job-file grammar as fio 3.33 reads it (init.c `__parse_jobs_ini`,
//! parse.c `str_to_decimal`/`get_mult_bytes`/`get_mult_time`, options.c
//! callbacks). The quirks are reproduced on purpose; each is checked by a
//! probe in `fixtures/fio/parse-probes/` (see FORMAT-NOTES.md there).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::job::*;
use super::options::{self, Cb, Handling, Kind, OptDef, Ty};
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
    build(path_for_messages, &items, ctx, base_dir)
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
    if matches!(
        def.kind.ty,
        Ty::Str | Ty::StrUll | Ty::StrMulti | Ty::Floats | Ty::Range
    ) || (def.kind.ty == Ty::Store)
    {
        return None;
    }
    let p = handle_option(&def.kind, value, u64::from(kb_base), None).ok()?;
    // A bare STR_SET is 1 without reading anything.
    p.read.or(p.first())
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

// ---------------------------------------------------------------------------
// fio's option parser (parse.c handle_option / __handle_option), type by
// type. It decides what fio 3.33 accepts, quirks included: a value made of
// several parts (`4k,8k`, `4k:8k`, `4k-8k`) is accepted when ANY part is
// (handle_option keeps the first success), and each part lands in the
// slot fio stores it in.

/// What fio stored for one option value.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Parsed {
    /// Numbers per slot (off1, off2, off3: read, write, trim for per-
    /// direction options), as fio stores them: an Int's low 32 bits, a
    /// percentage as u64::MAX - N, a zone count as ZONE_BASE + N.
    pub slots: [Option<u64>; 3],
    /// OPT_RANGE: (low, high) per slot.
    pub ranges: [Option<(u64, u64)>; 3],
    /// OPT_FLOAT_LIST entries.
    pub floats: Vec<f64>,
    /// The last part's number (an option with a callback ends with it).
    pub last: Option<u64>,
    /// The number the first part reads as, before any range check (what
    /// `fio --debug=parse` prints as `out=`).
    pub read: Option<u64>,
}

impl Parsed {
    /// The first slot (the option's one value).
    pub fn first(&self) -> Option<u64> {
        self.slots[0]
    }
}

/// parse.h ZONE_BASE_VAL: `Nz` values are stored above it.
pub(crate) const ZONE_BASE: u64 = (u64::MAX >> 1) + 1;

/// parse.h parse_is_percent: `N%` is stored as -1ULL - N, N <= 100.
pub(crate) fn as_percent(v: u64) -> Option<u64> {
    (v >= u64::MAX - 100).then(|| u64::MAX - v)
}

/// parse.h parse_is_zone.
pub(crate) fn as_zones(v: u64) -> Option<u64> {
    (v >= ZONE_BASE && v - ZONE_BASE <= u64::from(u32::MAX)).then(|| v - ZONE_BASE)
}

/// C isspace.
fn c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// What C's strtol family reads before the digits: leading blanks, then
/// an optional sign. The index of the first digit, and whether negative.
fn c_sign(b: &[u8]) -> (usize, bool) {
    let mut i = 0;
    while i < b.len() && c_space(b[i]) {
        i += 1;
    }
    match b.get(i) {
        Some(b'-') => (i + 1, true),
        Some(b'+') => (i + 1, false),
        _ => (i, false),
    }
}

/// The digits in `base` from `i` on, as an unsigned magnitude held at
/// 2^64 once it passes ULONG_MAX; None when there is no digit.
fn c_magnitude(b: &[u8], mut i: usize, base: u32) -> Option<u128> {
    let mut v: u128 = 0;
    let mut digits = 0;
    while let Some(d) = b.get(i).and_then(|c| (*c as char).to_digit(base)) {
        v = (v * u128::from(base) + u128::from(d)).min(u128::from(u64::MAX) + 1);
        digits += 1;
        i += 1;
    }
    (digits > 0).then_some(v)
}

/// C strtoll as str_to_decimal uses it: leading blanks, a sign, digits in
/// `base` (base 16 takes an optional 0x). None when no digit was read or
/// a positive value overflowed (LONG_MAX with ERANGE); a negative overflow
/// gives LLONG_MIN, as in C.
fn c_strtoll(s: &str, base: u32) -> Option<i64> {
    let b = s.as_bytes();
    let (mut i, neg) = c_sign(b);
    if base == 16
        && b.get(i) == Some(&b'0')
        && matches!(b.get(i + 1), Some(b'x' | b'X'))
        && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        i += 2;
    }
    let v = c_magnitude(b, i, base)?;
    if neg {
        Some(if v > i64::MAX as u128 + 1 {
            i64::MIN
        } else {
            (v as i128).wrapping_neg() as i64
        })
    } else {
        i64::try_from(v).ok()
    }
}

/// parse.c __get_mult_bytes: lower-case, cut at the first separator, then
/// the IEC forms (base flipped: with kb_base=1024, `4KiB` is 4000), the
/// one-letter prefixes, `%`; anything else multiplies by 1.
fn mult_of_suffix(suffix: &str, kb_base: u64) -> (u64, bool) {
    let c = suffix.to_ascii_lowercase();
    let c = &c[..c.find([':', '-', ',', '/']).unwrap_or(c.len())];
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
        m = m.wrapping_mul(base);
    }
    (m, false)
}

/// parse.c get_mult_bytes: the suffix counts only if a letter or '%'
/// comes right after the digits (and a sign before the first digit), so a
/// leading blank (`bs= 8k`) makes it vanish.
fn mult_bytes_of(s: &str, kb_base: u64) -> (u64, bool) {
    if s.len() < 2 {
        return mult_of_suffix(s, kb_base);
    }
    match suffix_start(s) {
        Some(suffix) => mult_of_suffix(suffix, kb_base),
        None => (1, false),
    }
}

/// str_to_decimal with kilo (sizes): the u64 fio stores, `N%` as
/// -1ULL - N; the multiplication wraps as in C. None: not a number.
pub(crate) fn fio_bytes(s: &str, kb_base: u64) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let base = if s.contains("0x") || s.contains("0X") {
        16
    } else {
        10
    };
    let v = c_strtoll(s, base)?;
    let (m, pct) = mult_bytes_of(s, kb_base);
    Some(if pct {
        u64::MAX.wrapping_sub(v as u64)
    } else {
        (v as u64).wrapping_mul(m)
    })
}

/// str_to_decimal with is_time: microseconds (wrapping as in C, so a
/// negative time is a huge one).
pub(crate) fn fio_time_us(s: &str, is_seconds: bool) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let base = if s.contains("0x") || s.contains("0X") {
        16
    } else {
        10
    };
    let v = c_strtoll(s, base)?;
    Some((v as u64).wrapping_mul(mult_time(s, is_seconds)))
}

/// parse.c check_int: sscanf("%u") (or "%x" when the text holds 0x) into
/// a C int: blanks and a sign allowed, trailing junk ignored, values
/// reduced modulo 2^32 (an overflow reads as UINT_MAX).
fn check_int(p: &str) -> Option<i32> {
    if p.is_empty() {
        return None;
    }
    let hex = p.contains("0x") || p.contains("0X");
    let b = p.as_bytes();
    let (mut i, neg) = c_sign(b);
    let base = if hex { 16 } else { 10 };
    if hex && b.get(i) == Some(&b'0') && matches!(b.get(i + 1), Some(b'x' | b'X')) {
        i += 2;
    }
    let v = c_magnitude(b, i, base)?;
    // strtoul: an overflow is ULONG_MAX; a sign negates modulo 2^64.
    let v = u64::try_from(v).unwrap_or(u64::MAX);
    let v = if neg { v.wrapping_neg() } else { v };
    Some(v as u32 as i32)
}

/// sscanf("%lf"): the longest float at the start (blanks skipped): decimal
/// with an exponent, hex, inf/infinity, nan.
fn c_float(s: &str) -> Option<f64> {
    let t = s.trim_start_matches(|c: char| c.is_ascii() && c_space(c as u8));
    let b = t.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let lower = t[i..].to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if lower.starts_with(word) {
            return t[..i + word.len()].parse::<f64>().ok();
        }
    }
    if lower.starts_with("0x") && lower[2..].starts_with(|c: char| c.is_ascii_hexdigit()) {
        let digits: String = lower[2..]
            .chars()
            .take_while(|c| c.is_ascii_hexdigit())
            .collect();
        let v = u128::from_str_radix(&digits[..digits.len().min(30)], 16).ok()? as f64;
        return Some(if b.first() == Some(&b'-') { -v } else { v });
    }
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut mantissa = i > start;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let frac = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        mantissa |= i > frac;
    }
    if !mantissa {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let digits = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > digits {
            i = j;
        }
    }
    let text = t[..i].trim_end_matches('.');
    let text = if text.is_empty() || text == "-" || text == "+" {
        "0"
    } else {
        text
    };
    text.parse::<f64>().ok().or_else(|| t[..i].parse().ok())
}

/// parse.c opt_len: where a word ends (first ',', else first ':').
fn opt_len(s: &str) -> usize {
    s.find(',').or_else(|| s.find(':')).unwrap_or(s.len())
}

/// parse.c: a posval matches when strncmp(ival, value, max(len(ival),
/// opt_len(value))) is 0: the word before ',' or ':' is exactly it.
pub(crate) fn posval_match(values: &'static [&'static str], v: &str) -> Option<&'static str> {
    values.iter().copied().find(|ival| {
        let n = ival.len().max(opt_len(v));
        ival.as_bytes()[..n.min(ival.len())] == v.as_bytes()[..n.min(v.len())]
    })
}

/// fio copies a number into a 128-byte buffer before reading it
/// (snprintf(tmp, sizeof(tmp), ...)) and reads up to the first ','.
fn number_text(piece: &str) -> &str {
    let mut end = piece.len().min(127);
    while !piece.is_char_boundary(end) {
        end -= 1;
    }
    let t = &piece[..end];
    &t[..t.find(',').unwrap_or(t.len())]
}

/// Where parse.c stores the part `curr` of a value (val_store with off1,
/// off2, off3): an INT or ULL fills the later slots from its last part;
/// other types fill off2 from their last part.
fn store(
    slots: &mut [Option<u64>; 3],
    per_direction: bool,
    v: u64,
    first: bool,
    more: bool,
    curr: usize,
) {
    if per_direction {
        if first {
            slots[0] = Some(v);
        }
        if curr == 1 {
            slots[1] = Some(v);
        }
        if curr == 2 {
            slots[2] = Some(v);
        }
        if !more {
            if curr < 1 {
                slots[1] = Some(v);
            }
            if curr < 2 {
                slots[2] = Some(v);
            }
        }
    } else {
        if first {
            slots[0] = Some(v);
        }
        if !more {
            slots[1] = Some(v);
        }
    }
}

fn store_range(
    ranges: &mut [Option<(u64, u64)>; 3],
    v: (u64, u64),
    first: bool,
    more: bool,
    curr: usize,
) {
    if first {
        ranges[0] = Some(v);
    }
    if curr == 1 {
        ranges[1] = Some(v);
    }
    if curr == 2 {
        ranges[2] = Some(v);
    }
    if !more {
        if curr < 1 {
            ranges[1] = Some(v);
        }
        if curr < 2 {
            ranges[2] = Some(v);
        }
    }
}

/// A numeric callback: sees each part's value and may refuse it.
type NumCheck<'a> = &'a dyn Fn(u64) -> std::result::Result<(), String>;

/// parse.c __handle_option for one part of a value.
#[allow(clippy::too_many_arguments)]
fn handle_part(
    kind: &Kind,
    ptr: &str,
    first: bool,
    more: bool,
    curr: usize,
    out: &mut Parsed,
    kb: u64,
    num_check: Option<NumCheck<'_>>,
) -> std::result::Result<(), String> {
    match kind.ty {
        Ty::Str | Ty::StrUll | Ty::StrMulti => {
            if kind.values.is_empty() || posval_match(kind.values, ptr).is_some() {
                Ok(())
            } else {
                Err(format!("valid values: {}", kind.values.join(", ")))
            }
        }
        Ty::Store => {
            if ptr.is_empty() {
                Err("an empty value".into())
            } else if kind.max_len > 0 && ptr.len() > kind.max_len as usize - 1 {
                Err(format!("value exceeds max length of {}", kind.max_len))
            } else {
                Ok(())
            }
        }
        Ty::Int | Ty::Ull | Ty::Val | Ty::Zone | Ty::Time => {
            let v = if ptr.ends_with('z') {
                if kind.ty != Ty::Zone {
                    return Err("'z' suffix isn't applicable".into());
                }
                let digits = ptr.trim_start_matches(|c: char| c.is_ascii() && c_space(c as u8));
                let digits = digits.strip_prefix('+').unwrap_or(digits);
                let end = digits
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(digits.len());
                match (
                    digits[..end].parse::<u128>(),
                    digits[end..].starts_with('z'),
                ) {
                    (Ok(n), true) if n <= u128::from(u64::MAX) => {
                        ZONE_BASE + u64::from(n as u64 as u32)
                    }
                    _ => return Err(format!("unexpected zone value '{ptr}'")),
                }
            } else {
                let text = number_text(ptr);
                let v = match kind.time {
                    Some(seconds) => fio_time_us(text, seconds),
                    None => fio_bytes(text, kb),
                };
                let v = v.ok_or("not a number")?;
                if curr == 0 {
                    out.read = Some(v);
                }
                if kind.pow2 && !v.is_power_of_two() {
                    return Err("must be a power-of-2".into());
                }
                let as_int = kind.ty == Ty::Int;
                // parse.c val_too_large / val_too_small: an INT compares
                // as a C int (a negative one is never too large).
                let too_large = kind.max != 0
                    && if as_int {
                        if (v as i32) < 0 {
                            (v as i32) > (kind.max as i32)
                        } else {
                            u64::from(v as u32) > kind.max
                        }
                    } else {
                        v > kind.max
                    };
                if too_large {
                    return Err(format!("max value out of range: {v} ({} max)", kind.max));
                }
                let too_small = kind.min != 0
                    && if as_int {
                        i64::from(v as i32) < kind.min
                    } else {
                        v < kind.min as u64
                    };
                if too_small {
                    return Err(format!(
                        "min value out of range: {} ({} min)",
                        v as i64, kind.min
                    ));
                }
                v
            };
            if let Some(check) = num_check {
                check(v)?;
            }
            out.last = Some(v);
            let stored = if kind.ty == Ty::Int {
                u64::from(v as u32)
            } else {
                v
            };
            store(
                &mut out.slots,
                matches!(kind.ty, Ty::Int | Ty::Ull),
                stored,
                first,
                more,
                curr,
            );
            Ok(())
        }
        Ty::Range => {
            let text = number_text(ptr);
            let i = text
                .find('-')
                .or_else(|| text.find(':'))
                .ok_or("expected low-high")?;
            let lo = fio_bytes(&text[..i], kb).ok_or("bad low bound")?;
            let hi = fio_bytes(&text[i + 1..], kb).ok_or("bad high bound")?;
            store_range(&mut out.ranges, (lo.min(hi), lo.max(hi)), first, more, curr);
            Ok(())
        }
        Ty::Bool | Ty::Set => {
            let il = check_int(ptr).ok_or("expected a number (fio 3.33 reads it with %u)")?;
            if curr == 0 {
                out.read = Some(u64::from(il as u32));
            }
            if kind.max != 0 && il > kind.max as i32 {
                return Err(format!("max value out of range: {il} ({} max)", kind.max));
            }
            if kind.min != 0 && i64::from(il) < kind.min {
                return Err(format!("min value out of range: {il} ({} min)", kind.min));
            }
            let il = if kind.neg { i32::from(il == 0) } else { il };
            store(
                &mut out.slots,
                false,
                u64::from(il as u32),
                first,
                more,
                curr,
            );
            Ok(())
        }
        Ty::Floats => {
            if curr >= kind.max_len as usize {
                return Err(format!("the list exceeding max length {}", kind.max_len));
            }
            let f = c_float(ptr).ok_or_else(|| format!("not a floating point value: {ptr}"))?;
            if kind.fp != (0.0, 0.0) {
                if f > kind.fp.1 {
                    return Err(format!(
                        "value out of range: {f} (range max: {})",
                        kind.fp.1
                    ));
                }
                if f < kind.fp.0 {
                    return Err(format!(
                        "value out of range: {f} (range min: {})",
                        kind.fp.0
                    ));
                }
            }
            if out.floats.len() <= curr {
                out.floats.resize(curr + 1, 0.0);
            }
            out.floats[curr] = f;
            Ok(())
        }
        Ty::Deprecated => Err("option is deprecated".into()),
        Ty::SoftDeprecated => Ok(()),
    }
}

/// parse.c handle_option: split the value into its parts (',' then ':'
/// then '-', as the type allows), read each, and succeed when any part
/// did; the message is the first part's.
pub(crate) fn handle_option(
    kind: &Kind,
    value: Option<&str>,
    kb: u64,
    num_check: Option<NumCheck<'_>>,
) -> std::result::Result<Parsed, String> {
    let mut out = Parsed::default();
    let Some(mut rest) = value else {
        // __handle_option with no value: only STR_SET (meaning 1) and
        // STR (to its callback, when it has no word list) take one.
        return match kind.ty {
            Ty::Set => {
                out.slots[0] = Some(1);
                out.slots[1] = Some(1);
                Ok(out)
            }
            Ty::Str if kind.values.is_empty() => Ok(out),
            Ty::Str => Err(format!("valid values: {}", kind.values.join(", "))),
            _ => Err("requires an argument".into()),
        };
    };
    let splits = !matches!(kind.ty, Ty::Store | Ty::Str | Ty::StrUll | Ty::Floats);
    let mut first_error: Option<String> = None;
    let mut any_ok = false;
    let mut curr = 0;
    loop {
        let mut part = rest;
        let mut next: Option<&str> = None;
        if splits {
            match rest.find(',') {
                // A trailing ',' is dropped, and the empty part after it
                // is read (and fails) on its own.
                Some(i) if i + 1 == rest.len() => {
                    part = &rest[..i];
                    next = Some("");
                }
                Some(i) => next = Some(&rest[i + 1..]),
                None if !matches!(kind.ty, Ty::StrMulti | Ty::Range) => {
                    next = rest
                        .find(':')
                        .or_else(|| rest.find('-'))
                        .map(|i| &rest[i + 1..]);
                }
                None => {}
            }
        } else if kind.ty == Ty::Floats {
            next = rest.find(':').map(|i| &rest[i + 1..]);
        }
        match handle_part(
            kind,
            part,
            curr == 0,
            next.is_some(),
            curr,
            &mut out,
            kb,
            num_check,
        ) {
            Ok(()) => any_ok = true,
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
        match next {
            Some(n) => {
                rest = n;
                curr += 1;
            }
            None => break,
        }
    }
    if any_ok {
        Ok(out)
    } else {
        Err(first_error.unwrap_or_default())
    }
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
    /// verify= was given (verify_pattern then does not set it).
    verify_set: bool,
}

impl Draft {
    fn new() -> Self {
        Draft {
            spec: JobSpec::default(),
            bs: [4096; 3],
            bsrange: [None, None, None],
            bssplit: [None, None, None],
            iodepth_low_set: false,
            verify_set: false,
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

fn build(path: &str, items: &[Item], ctx: &ParseContext, base_dir: &Path) -> Result<JobFile> {
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
                apply(
                    &mut draft,
                    &mut jf,
                    ctx,
                    base_dir,
                    file,
                    *line,
                    key,
                    value.as_deref(),
                )?;
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
            let mut spec = draft.finish();
            // init.c fixup_options: without a runtime, time_based is
            // dropped with a warning and the job does its size once.
            if spec.time_based && spec.runtime.is_none() {
                spec.time_based = false;
                jf.warnings.push(Diagnostic {
                    file: file.clone(),
                    line: Some(spec.line),
                    message: format!(
                        "job '{}': time_based requires a runtime/timeout setting \
                         (fio 3.33 drops it and runs the job's size once)",
                        spec.name
                    ),
                });
            }
            jf.jobs.push(spec);
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

/// "did you mean": only for names no longer than twice the longest option
/// name, since a longer one is farther than half its length from every
/// option (error::nearest's bound) and the distance costs its length times
/// each name's.
fn option_hint(key: &str) -> String {
    let longest = options::all_names().map(str::len).max().unwrap_or(0);
    if key.len() > 2 * longest {
        return String::new();
    }
    nearest(key, options::all_names())
        .map(|n| format!("; did you mean '{n}'?"))
        .unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
fn apply(
    d: &mut Draft,
    jf: &mut JobFile,
    ctx: &ParseContext,
    base_dir: &Path,
    file: &str,
    line: u32,
    key: &str,
    value: Option<&str>,
) -> Result<()> {
    let err = |m: String| InputError::new(file, Some(line), m);
    let shown = match value {
        Some(v) => clip(&format!("{key}={v}")),
        None => clip(key),
    };
    let Some(def) = options::find(key) else {
        return Err(err(format!(
            "bad option <{shown}>: not a fio option{}",
            option_hint(key)
        )));
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

    // What fio's parser makes of the value (parse.c), then the option's
    // own callback (options.c): fio refuses the job when either fails,
    // whatever flashpath does with the option afterwards.
    let ncpus = ctx.ncpus;
    let num_check = |v: u64| numeric_callback(def, v, ncpus);
    let parsed = handle_option(&def.kind, value, kb, Some(&num_check)).map_err(|w| bad(&w))?;
    callback(def, value, kb, ncpus, base_dir).map_err(|w| bad(&w))?;

    // The bs= quirk: a blank after '=' hides the unit suffix.
    if let Some(v) = value {
        if v.starts_with(char::is_whitespace)
            && matches!(
                def.kind.ty,
                Ty::Int | Ty::Ull | Ty::Val | Ty::Zone | Ty::Time
            )
            && v.trim_start().contains(|c: char| c.is_ascii_alphabetic())
        {
            jf.warnings.push(Diagnostic {
                file: file.to_string(),
                line: Some(line),
                message: format!(
                    "'{}': the blank after '=' makes fio 3.33 ignore the unit suffix \
                     (read as {}); write '{key}={}' if that is not meant",
                    shown,
                    parsed.first().map(|n| n.to_string()).unwrap_or_default(),
                    clip(v.trim())
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
        Handling::Model | Handling::Record => model(d, ctx, def.name, value, &parsed, kb, &err),
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
                    || (parsed.first().is_some()
                        && handle_option(&def.kind, Some(a), kb, None)
                            .is_ok_and(|p| p.first() == parsed.first()))
                    || (!def.kind.values.is_empty() && posval_match(def.kind.values, v) == Some(a))
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

fn us_to_ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

/// Turn an option fio accepted into JobSpec fields, storing what fio
/// stores (`parsed`, the parser's slots). A valid value flashpath does
/// not simulate is refused by name as not modelled.
#[allow(clippy::too_many_arguments)]
fn model(
    d: &mut Draft,
    ctx: &ParseContext,
    name: &str,
    value: Option<&str>,
    parsed: &Parsed,
    kb: u64,
    err: &dyn Fn(String) -> InputError,
) -> Result<()> {
    let s = &mut d.spec;
    let v = value.unwrap_or("");
    // The number fio stored (a boolean's C int, 0 meaning false; an INT's
    // low 32 bits).
    let n = parsed.first().unwrap_or(0);
    let on = n != 0;
    let not_modelled = |what: &str| err(format!("{what} is not modelled by flashpath"));
    // An option whose callback sees each part: the last part's value wins.
    let last = parsed.last.unwrap_or(0);
    match name {
        "description" => s.description = Some(v.to_string()),
        "name" => s.name = v.to_string(),
        "filename" => s.filename = Some(v.to_string()),
        "directory" => s.directory = Some(v.to_string()),
        "rw" => {
            // options.c str_rw_cb: the part after ':' is ddir_seq_nr for
            // random patterns (atoi) and ddir_seq_add (a size) for
            // sequential ones.
            let word = options::find("rw")
                .and_then(|o| posval_match(o.kind.values, v))
                .unwrap_or("read");
            let rw = RW_NAMES
                .iter()
                .find(|(n, _)| *n == word)
                .map_or(RwKind::Read, |(_, rw)| *rw);
            s.rw = rw;
            s.rw_nr = 0;
            s.rw_seq_add = 0;
            if let Some(p) = opt_postfix(v) {
                if rw.is_random() {
                    s.rw_nr = u64::try_from(atoi(p)).unwrap_or(0);
                } else {
                    // fio keeps a long long; the callback checked it reads.
                    let add = fio_bytes(p, kb).unwrap_or(0) as i64;
                    s.rw_seq_add = add;
                    s.rw_nr = u64::try_from(add).unwrap_or(0);
                }
            }
        }
        // str_rwmix_*_cb: the other direction gets the rest of 100.
        "rwmixread" => s.rwmixread = last as u32,
        "rwmixwrite" => s.rwmixread = 100u32.wrapping_sub(last as u32),
        "bs" => {
            for (dd, b) in parsed.slots.iter().enumerate() {
                if let Some(b) = b {
                    d.bs[dd] = *b;
                }
            }
        }
        "ba" => {
            for (dd, b) in parsed.slots.iter().enumerate() {
                if let Some(b) = b {
                    s.blockalign[dd] = *b;
                }
            }
        }
        "bsrange" => {
            for (dd, r) in parsed.ranges.iter().enumerate() {
                if let Some(r) = r {
                    d.bsrange[dd] = Some(*r);
                }
            }
        }
        "bssplit" => {
            let lists = parse_bssplit_dirs(v, kb).map_err(err)?;
            for (dd, list) in lists.into_iter().enumerate() {
                if list.is_some() {
                    d.bssplit[dd] = list;
                }
            }
        }
        "bs_unaligned" => s.bs_unaligned = on,
        "randrepeat" => s.randrepeat = on,
        "randseed" => s.randseed = Some(n),
        "norandommap" => s.norandommap = on,
        "ioengine" => {
            // A known engine's name ends at ':' (options.c keeps the word).
            let e = v.trim();
            let e = match e.split_once(':') {
                Some((w, _)) if options::KNOWN_ENGINES.contains(&w) => w,
                _ => e,
            };
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
                    let hint = if e.len() <= 64 {
                        nearest(e, options::KNOWN_ENGINES.iter().copied())
                            .map(|n| format!("; did you mean '{n}'?"))
                            .unwrap_or_default()
                    } else {
                        String::new()
                    };
                    return Err(err(format!("engine {} not loadable{hint}", clip(e))));
                }
            }
        }
        "iodepth" => s.iodepth = n as u32,
        "iodepth_batch" => s.iodepth_batch_submit = n as u32,
        "iodepth_batch_complete_min" => s.iodepth_batch_complete_min = n as u32,
        "iodepth_batch_complete_max" => s.iodepth_batch_complete_max = n as u32,
        "iodepth_low" => {
            s.iodepth_low = n as u32;
            d.iodepth_low_set = true;
        }
        // str_size_cb: N% of the file, Nz zones, or bytes.
        "size" => {
            if let Some(p) = as_percent(last) {
                s.size = None;
                s.size_percent = Some(p as u32);
            } else if as_zones(last).is_some() {
                return Err(not_modelled("option 'size' in zones (Nz)"));
            } else {
                s.size = Some(last);
                s.size_percent = None;
            }
        }
        "io_size" => {
            if as_zones(last).is_some() {
                return Err(not_modelled("option 'io_size' in zones (Nz)"));
            } else if last > ZONE_BASE + u64::from(u32::MAX) {
                return Err(not_modelled("option 'io_size' as a percentage"));
            }
            s.io_size = Some(last);
        }
        "filesize" => {
            // filesize=low-high: fio picks each file's size in the range.
            if parsed.slots[1].is_some_and(|hi| Some(hi) != parsed.slots[0]) {
                return Err(not_modelled(
                    "option 'filesize' as a range (random file sizes)",
                ));
            }
            s.filesize = Some(n);
        }
        "offset" => {
            if let Some(p) = as_percent(last) {
                s.offset = 0;
                s.offset_percent = Some(p as u32);
            } else if as_zones(last).is_some() {
                return Err(not_modelled("option 'offset' in zones (Nz)"));
            } else {
                s.offset = last;
                s.offset_percent = None;
            }
        }
        "offset_increment" => {
            if as_percent(last).is_some() {
                return Err(not_modelled("option 'offset_increment' as a percentage"));
            } else if as_zones(last).is_some() {
                return Err(not_modelled("option 'offset_increment' in zones (Nz)"));
            }
            s.offset_increment = last;
        }
        "number_ios" => s.number_ios = (n > 0).then_some(n),
        "nrfiles" => s.nrfiles = n as u32,
        "direct" => s.direct = on,
        // buffered is the inverse of direct (options.c: same field, .neg;
        // the parser already inverted it).
        "buffered" => s.direct = on,
        "invalidate" => s.invalidate = on,
        "end_fsync" | "fsync_on_close" => s.end_fsync |= on,
        // A block device has no metadata to skip: fdatasync syncs what
        // fsync does (blkdev_fsync).
        "fsync" | "fdatasync" => s.fsync_blocks = n as u32,
        "fadvise_hint" => {
            s.fadvise_hint = match posval_match(&["0", "1", "random", "sequential"], v) {
                Some("0") => FadviseHint::None,
                Some("random") => FadviseHint::Random,
                Some("sequential") => FadviseHint::Sequential,
                _ => FadviseHint::ByPattern,
            }
        }
        "mem" => {
            // mmap:FILE and friends back the buffers with a file; the
            // buffers' contiguity is what the model reads.
            let word = v.split_once(':').map_or(v, |(w, _)| w);
            s.io_mem = crate::mm::thp::IoMem::parse(word)
                .ok_or_else(|| not_modelled(&format!("mem={}", clip(v))))?;
        }
        "loops" => s.loops = n as u32,
        "numjobs" => s.numjobs = n as u32,
        "startdelay" => {
            // startdelay=low-high: fio draws the delay in the range.
            let lo = us_to_ns(n);
            let hi = parsed.slots[1].map_or(lo, us_to_ns);
            s.startdelay = lo;
            s.startdelay_high = (hi != lo).then_some(hi);
        }
        "runtime" => s.runtime = (n > 0).then(|| us_to_ns(n)),
        "ramp_time" => s.ramp_time = us_to_ns(n),
        "time_based" => s.time_based = on,
        "thinktime" => s.thinktime = us_to_ns(n),
        "thinktime_spin" => s.thinktime_spin = us_to_ns(n),
        "thinktime_blocks" => s.thinktime_blocks = n as u32,
        "rate" | "rate_min" | "rate_iops" => {
            let target = match name {
                "rate" => &mut s.rate,
                "rate_min" => &mut s.rate_min,
                _ => &mut s.rate_iops,
            };
            for (dd, r) in parsed.slots.iter().enumerate() {
                if let Some(r) = r {
                    target[dd] = *r;
                }
            }
        }
        "rate_process" => {
            s.rate_process = match posval_match(&["linear", "poisson"], v) {
                Some("poisson") => RateProcess::Poisson,
                _ => RateProcess::Linear,
            }
        }
        "random_distribution" => {
            let dist = parse_distribution(v, kb).map_err(err)?;
            if dist.center.is_some() {
                return Err(not_modelled(
                    "a random_distribution center (the value after the parameter)",
                ));
            }
            if dist.per_direction {
                return Err(not_modelled(
                    "per-direction zoned random_distribution lists",
                ));
            }
            match dist.dist {
                RandomDistribution::Zipf(t) if t <= 0.0 => {
                    return Err(not_modelled("zipf with theta <= 0"))
                }
                RandomDistribution::Zipf(t) if t > 0.0 => {}
                RandomDistribution::Zipf(_) => return Err(not_modelled("zipf with theta NaN")),
                _ => {}
            }
            s.random_distribution = dist.dist;
        }
        "cpumask" => {
            // str_cpumask_cb: the low 32 bits (bit 31 for any higher one).
            let cpus: Vec<u32> = (0..32)
                .filter(|i| {
                    if *i == 31 {
                        last >> 31 != 0
                    } else {
                        last & (1 << i) != 0
                    }
                })
                .collect();
            s.cpus_allowed = Some(cpus);
        }
        "cpus_allowed" => {
            s.cpus_allowed = Some(parse_cpu_list(v, ctx.ncpus).map_err(err)?);
        }
        "stonewall" => s.stonewall = on,
        "new_group" => s.new_group = on,
        "group_reporting" => s.group_reporting = on,
        "kb_base" => {
            s.kb_base = if posval_match(&["1000"], v).is_some() {
                1000
            } else {
                1024
            }
        }
        "percentile_list" => s.percentile_list = Some(parsed.floats.clone()),
        "clat_percentiles" => s.clat_percentiles = on,
        "lat_percentiles" => s.lat_percentiles = on,
        "slat_percentiles" => s.slat_percentiles = on,
        "unified_rw_reporting" => {
            s.unified_rw_reporting =
                match posval_match(&["none", "mixed", "both", "0", "1", "2"], v) {
                    Some("mixed" | "1") => "mixed",
                    Some("both" | "2") => "both",
                    _ => "none",
                }
                .to_string()
        }
        "unit_base" => {
            s.unit_base = match posval_match(&["0", "8", "1"], v) {
                Some("8") => 8,
                Some("1") => 1,
                _ => 0,
            }
        }
        "hipri" => s.hipri = on,
        "read_iolog" => s.read_iolog = Some(v.to_string()),
        "write_iolog" => s.write_iolog = Some(v.to_string()),
        // str_write_*_log_cb: a bare option logs under the job's name.
        "write_lat_log" => s.write_lat_log = Some(value.unwrap_or(&s.name).to_string()),
        "write_bw_log" => s.write_bw_log = Some(value.unwrap_or(&s.name).to_string()),
        "write_iops_log" => s.write_iops_log = Some(value.unwrap_or(&s.name).to_string()),
        "log_offset" => s.log_offset = on,
        "per_job_logs" => s.per_job_logs = on,
        "log_avg_msec" => s.log_avg_msec = n,
        "log_max_value" => s.log_max_value = on,
        "replay_no_stall" => s.replay.no_stall = on,
        "replay_redirect" => s.replay_redirect = Some(v.to_string()),
        "replay_time_scale" => s.replay.time_scale_pct = n as u32,
        "replay_scale" => s.replay.offset_scale = n.max(1),
        "replay_align" => s.replay.align = n,
        "replay_skip" => {
            // options.c str_replay_skip_cb (the callback checked the words).
            s.replay.skip = 0;
            for word in v.trim().split(',') {
                s.replay.skip |= match word {
                    "read" => 1 << 0,
                    "write" => 1 << 1,
                    "trim" => 1 << 2,
                    _ => crate::workload::iolog::SKIP_SYNC,
                };
            }
        }
        "exitall" => s.exitall = on,
        "exit_what" => {
            s.exit_what = posval_match(&["group", "stonewall", "all"], v)
                .unwrap_or("group")
                .to_string();
        }
        "wait_for" => s.wait_for = Some(v.to_string()),
        "cpus_allowed_policy" => {
            s.cpus_allowed_split = posval_match(&["split"], v).is_some();
        }
        "do_verify" => s.do_verify = on,
        "verify" => {
            // options.c: "0" turns it off.
            let word = options::find("verify")
                .and_then(|o| posval_match(o.kind.values, v))
                .unwrap_or("0");
            s.verify = (word != "0").then(|| word.to_string());
            d.verify_set = true;
        }
        // str_verify_pattern_cb: a pattern means verify=pattern unless
        // verify was set.
        "verify_pattern" => {
            if !d.verify_set {
                s.verify = Some("pattern".to_string());
            }
        }
        "percentage_random" => {
            for (dd, p) in parsed.slots.iter().enumerate() {
                if let Some(p) = p {
                    s.percentage_random[dd] = *p as u32;
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

/// options.c str_split_parse: "r" gives every direction the same list,
/// "r,w" gives trims the write list, "r,w,t..." each its own (the trim
/// part keeps any further commas).
fn split_dirs(v: &str) -> [&str; 3] {
    match v.split_once(',') {
        None => [v, v, v],
        Some((r, rest)) => match rest.split_once(',') {
            None => [r, rest, rest],
            Some((w, t)) => [r, w, t],
        },
    }
}

/// options.c split_parse_ddir: `value[/percent]` entries joined by ':',
/// up to the first empty one and at most `max` (fio stops there, no
/// error). Returns (value, percent): a relative percent is atoi'd, capped
/// at 100, None when missing or 0; an absolute one is a size.
fn split_entries(
    s: &str,
    kb: u64,
    absolute: bool,
    max: usize,
) -> std::result::Result<Vec<(u64, Option<u64>)>, String> {
    let mut out = Vec::new();
    for ent in s.split(':') {
        if ent.is_empty() {
            break;
        }
        let (val, perc) = match ent.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (ent, None),
        };
        let perc = match perc {
            Some(p) if absolute => Some(fio_bytes(p, kb).ok_or("split conversion failed")?),
            Some(p) => Some(atoi(p).clamp(0, 100) as u64).filter(|p| *p > 0),
            None if absolute => Some(0),
            None => None,
        };
        let val = fio_bytes(val, kb).ok_or("split conversion failed")?;
        out.push((val, perc));
        if out.len() == max {
            break;
        }
    }
    Ok(out)
}

/// options.c bssplit_ddir: block sizes with percentages; a missing
/// percent shares what is left evenly; more than 100% with two or more
/// missing is refused.
fn parse_bssplit(s: &str, kb: u64) -> std::result::Result<Option<Split>, String> {
    let entries = split_entries(s, kb, false, 64)?;
    if entries.is_empty() {
        return Ok(None);
    }
    let given: u64 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u64;
    if given > 100 && missing > 1 {
        return Err("bssplit percentages add to more than 100%".into());
    }
    let share = 100u64
        .saturating_sub(given)
        .checked_div(missing)
        .unwrap_or(0);
    Ok(Some(
        entries
            .into_iter()
            .map(|(b, p)| (b, p.unwrap_or(share) as u32))
            .collect(),
    ))
}

/// A bssplit list: (block size, percent) entries.
type Split = Vec<(u64, u32)>;

/// str_bssplit_cb: a list per direction (None: that direction keeps bs).
fn parse_bssplit_dirs(v: &str, kb: u64) -> std::result::Result<[Option<Split>; 3], String> {
    let parts = split_dirs(v.trim());
    let mut out = [None, None, None];
    for (d, p) in parts.iter().enumerate() {
        out[d] = parse_bssplit(p, kb)?;
    }
    Ok(out)
}

/// options.c split_parse_distr: `value[:center]`, each read by sscanf.
fn split_distr(s: &str) -> Option<(f64, Option<f64>)> {
    match s.split_once(':') {
        Some((v, c)) => Some((c_float(v)?, Some(c_float(c)?))),
        None => Some((c_float(s)?, None)),
    }
}

/// The bounds str_random_distribution_cb and str_fst_cb put on a
/// distribution's parameter and center.
fn check_distr(kind: &str, val: f64, center: Option<f64>) -> std::result::Result<(), String> {
    if let Some(c) = center {
        if !(0.0..=1.0).contains(&c) {
            return Err("distribution center out of range (0 <= center <= 1.0)".into());
        }
    }
    match kind {
        "zipf" if val == 1.0 => Err("zipf theta must be different than 1.0".into()),
        "pareto" if val <= 0.0 || val >= 1.0 => {
            Err("pareto input out of range (0 < input < 1.0)".into())
        }
        "normal" | "gauss" if !(0.0..100.0).contains(&val) => {
            Err("normal deviation out of range (0 <= input < 100.0)".into())
        }
        _ => Ok(()),
    }
}

/// A random_distribution as fio reads it; `center` is fio's optional
/// second parameter of zipf, pareto and normal.
#[derive(Clone, Debug, PartialEq)]
struct Distribution {
    dist: RandomDistribution,
    center: Option<f64>,
    /// zoned lists that differ per direction.
    per_direction: bool,
}

/// options.c str_random_distribution_cb and parse_zoned_distribution.
fn parse_distribution(v: &str, kb: u64) -> std::result::Result<Distribution, String> {
    let kind = posval_match(options::RANDOM_DISTRIBUTIONS, v).unwrap_or("");
    let plain = |dist| Distribution {
        dist,
        center: None,
        per_direction: false,
    };
    match kind {
        "zipf" | "pareto" | "normal" => {
            let default = match kind {
                "zipf" => 1.1,
                "pareto" => 0.2,
                _ => 0.0,
            };
            let (val, center) = match opt_postfix(v) {
                Some(p) => split_distr(p).ok_or("random postfix parsing failed")?,
                None => (default, None),
            };
            check_distr(kind, val, center)?;
            let dist = match kind {
                "zipf" => RandomDistribution::Zipf(val),
                "pareto" => RandomDistribution::Pareto(val),
                _ => RandomDistribution::Normal(val),
            };
            Ok(Distribution {
                dist,
                center,
                per_direction: false,
            })
        }
        "zoned" | "zoned_abs" => {
            let absolute = kind == "zoned_abs";
            let t = v.trim();
            let Some(rest) = t.strip_prefix(kind).and_then(|r| r.strip_prefix(':')) else {
                return Err(format!("mismatch in zoned input <{}>", clip(t)));
            };
            let parts = split_dirs(rest);
            let mut lists = Vec::new();
            for p in parts {
                lists.push(parse_zones(p, kb, absolute)?);
            }
            let per_direction = lists[1..].iter().any(|l| *l != lists[0]);
            let zones = lists.swap_remove(0);
            let dist = if zones.is_empty() {
                RandomDistribution::Random
            } else if absolute {
                RandomDistribution::ZonedAbs(zones.iter().map(|z| (z.0, z.1 as u64)).collect())
            } else {
                RandomDistribution::Zoned(zones)
            };
            Ok(Distribution {
                dist,
                center: None,
                per_direction,
            })
        }
        // random (and its ignored postfix)
        _ => Ok(plain(RandomDistribution::Random)),
    }
}

/// options.c zone_split_ddir: access percents (stored in a u8) must add
/// to exactly 100; relative size percents to at most 100, a missing one
/// sharing what is left. Returns (access %, size % or bytes).
fn parse_zones(s: &str, kb: u64, absolute: bool) -> std::result::Result<Vec<(f64, f64)>, String> {
    let entries = split_entries(s, kb, absolute, 256)?;
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    // uint8_t fields: 255 is fio's "missing" marker.
    let access: Vec<u8> = entries.iter().map(|e| e.0 as u8).collect();
    let sizes: Vec<Option<u64>> = entries
        .iter()
        .map(|e| {
            if absolute {
                e.1
            } else {
                e.1.map(|p| p as u8 as u64).filter(|p| *p != 255)
            }
        })
        .collect();
    let perc: u64 = access
        .iter()
        .filter(|a| **a != 255)
        .map(|a| u64::from(*a))
        .sum();
    let perc_missing = access.iter().filter(|a| **a == 255).count() as u64;
    let sperc: u64 = if absolute {
        0
    } else {
        sizes.iter().flatten().sum()
    };
    let sperc_missing = if absolute {
        0
    } else {
        sizes.iter().filter(|s| s.is_none()).count() as u64
    };
    if perc > 100 || sperc > 100 {
        return Err("zone_split percentages add to more than 100%".into());
    }
    if perc < 100 {
        return Err(format!(
            "access percentage don't add up to 100 for zoned random distribution (got={perc})"
        ));
    }
    let n = entries.len() as u64;
    let fill = |sum: u64, missing: u64| {
        let sum = if missing == 1 && n == 1 { 100 } else { sum };
        (100 - sum).checked_div(missing).unwrap_or(0)
    };
    let (fa, fs) = (fill(perc, perc_missing), fill(sperc, sperc_missing));
    Ok(access
        .iter()
        .zip(&sizes)
        .map(|(a, s)| {
            let a = if *a == 255 { fa } else { u64::from(*a) };
            (a as f64, s.unwrap_or(fs) as f64)
        })
        .collect())
}

/// options.c set_cpus_allowed: ','-separated CPUs or `a-b` ranges; an
/// empty part ends the list. strsep cuts each part at its '-'s first, so
/// the low CPU is atoi of what precedes the first '-' (`-1` is CPU 0) and
/// the high one atoi of the last piece before an empty one; a reversed
/// range adds nothing, a negative CPU is no CPU (CPU_SET ignores it). Each
/// CPU must be one of the machine's (fio checks cpus_configured(), here
/// the simulated host's) and below FIO_MAX_CPUS (CPU_SETSIZE, 1024).
fn parse_cpu_list(v: &str, ncpus: u32) -> std::result::Result<Vec<u32>, String> {
    const FIO_MAX_CPUS: i64 = 1024;
    let mut cpus = Vec::new();
    for part in v.trim().split(',') {
        if part.is_empty() {
            break;
        }
        let mut hi = -1;
        for p in part.split('-') {
            if p.is_empty() {
                break;
            }
            hi = atoi(p);
        }
        let lo = atoi(part.split('-').next().unwrap_or(""));
        if hi == -1 {
            hi = lo;
        }
        // Negative CPUs set nothing: start at 0 rather than walk them.
        let mut c = lo.max(0);
        while c <= hi {
            if c >= FIO_MAX_CPUS {
                return Err(format!("your OS only supports up to {FIO_MAX_CPUS} CPUs"));
            }
            if c >= i64::from(ncpus) {
                return Err(format!("CPU {c} too large (max={})", i64::from(ncpus) - 1));
            }
            if !cpus.contains(&(c as u32)) {
                cpus.push(c as u32);
            }
            c += 1;
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// The numeric callbacks of options.c that can refuse a value (each part
/// of it, before it is stored).
fn numeric_callback(def: &OptDef, v: u64, ncpus: u32) -> std::result::Result<(), String> {
    match def.cb {
        // str_cpumask_cb: bit i (of a C int shift: bit 31 stands for every
        // higher bit) names CPU i, which the machine must have.
        Some(Cb::CpuMask) => {
            for i in 0..32u32 {
                let bit = if i == 31 {
                    v >> 31 != 0
                } else {
                    v & (1 << i) != 0
                };
                if bit && i >= ncpus {
                    return Err(format!("CPU {i} too large (max={})", ncpus - 1));
                }
            }
            Ok(())
        }
        // str_io_size_cb: parse_is_percent_uncapped, at most 100%.
        Some(Cb::IoSize) => match u64::MAX.checked_sub(v) {
            Some(p) if v > ZONE_BASE + u64::from(u32::MAX) && p > 100 => {
                Err("io_size values greater than 100% aren't supported".into())
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// options.c get_opt_postfix: what follows the first ':', blanks trimmed.
fn opt_postfix(s: &str) -> Option<&str> {
    s.split_once(':').map(|(_, p)| p.trim())
}

/// C atoi: strtol (clamped to LONG_MAX on overflow) cut to an int.
fn atoi(s: &str) -> i64 {
    let v = c_strtoll(s, 10).unwrap_or_else(|| {
        // c_strtoll fails on a positive overflow, where strtol gives
        // LONG_MAX; on no digits at all atoi gives 0.
        let t = s.trim_start_matches(|c: char| c.is_ascii() && c_space(c as u8));
        if t.strip_prefix('+')
            .unwrap_or(t)
            .starts_with(|c: char| c.is_ascii_digit())
        {
            i64::MAX
        } else {
            0
        }
    });
    i64::from(v as i32)
}

/// The string callbacks of options.c that can refuse a value.
fn callback(
    def: &OptDef,
    value: Option<&str>,
    kb: u64,
    ncpus: u32,
    base_dir: &Path,
) -> std::result::Result<(), String> {
    let Some(cb) = def.cb else { return Ok(()) };
    // A bare STR option reaches its callback with NULL: fio 3.33 crashes
    // (strdup(NULL)) for these.
    let Some(v) = value else {
        return match cb {
            Cb::CpuList
            | Cb::IgnoreError
            | Cb::Pattern
            | Cb::ReplaySkip
            | Cb::NumaNodes
            | Cb::NumaMemPolicy => {
                Err("requires an argument (fio 3.33 crashes without one)".into())
            }
            _ => Ok(()),
        };
    };
    match cb {
        // Checked on each number by numeric_callback.
        Cb::CpuMask | Cb::IoSize => Ok(()),
        Cb::Rw => {
            // str_rw_cb: a sequential pattern's postfix is a size.
            let random = posval_match(def.kind.values, v).is_some_and(|w| w.starts_with("rand"));
            match opt_postfix(v) {
                Some(p) if !random && fio_bytes(p, kb).is_none() => {
                    Err("rw postfix parsing failed".into())
                }
                _ => Ok(()),
            }
        }
        Cb::Bssplit => parse_bssplit_dirs(v, kb).map(|_| ()),
        Cb::RandomDistribution => parse_distribution(v, kb).map(|_| ()),
        Cb::FileServiceType => {
            let kind = posval_match(def.kind.values, v).unwrap_or("");
            let param = opt_postfix(v);
            match (kind, param) {
                ("random" | "roundrobin" | "sequential", _) | (_, None) => Ok(()),
                (k, Some(p)) => {
                    let (val, center) =
                        split_distr(p).ok_or("file service type random postfix parsing failed")?;
                    check_distr(if k == "normal" { "gauss" } else { k }, val, center)
                }
            }
        }
        Cb::CpuList => parse_cpu_list(v, ncpus).map(|_| ()),
        Cb::Opendir => {
            if resolve(v, base_dir).is_dir() {
                Ok(())
            } else {
                Err(format!("cannot open directory {}", clip(v)))
            }
        }
        Cb::Ioengine => match v.split_once(':') {
            Some(("external", path)) => {
                if resolve(path.trim(), base_dir).is_file() {
                    Ok(())
                } else {
                    Err(format!(
                        "invalid external ioengine path \"{}\"",
                        clip(path.trim())
                    ))
                }
            }
            _ => Ok(()),
        },
        Cb::ReplaySkip => {
            for word in v.trim().split(',') {
                if !matches!(word, "read" | "write" | "trim" | "sync") {
                    return Err(format!("Unknown skip type: {}", clip(word)));
                }
            }
            Ok(())
        }
        Cb::IgnoreError => {
            // str_ignore_error_cb: per direction (read, write, verify),
            // ':'-separated errors, each a name from fio's list or a
            // non-zero number.
            const NAMES: &[&str] = &[
                "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF",
                "ECHILD", "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST",
                "EXDEV", "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY",
                "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM",
                "ERANGE",
            ];
            for (n, part) in v.trim().split(',').enumerate() {
                if n >= 3 {
                    return Err("Illegal error type".into());
                }
                for e in part.split(':') {
                    if e.is_empty() {
                        break;
                    }
                    let known = if e.starts_with('E') {
                        NAMES.contains(&e)
                    } else {
                        atoi(e) != 0
                    };
                    if !known {
                        return Err(format!(
                            "Unknown error {}, please use number value",
                            clip(e)
                        ));
                    }
                }
            }
            Ok(())
        }
        Cb::Pattern => parse_pattern(v, def.name == "verify_pattern", base_dir),
        Cb::Steadystate => {
            let kind = posval_match(def.kind.values, v).unwrap_or("");
            let Some(p) = opt_postfix(v) else {
                return Err(
                    "steadystate threshold must be specified in addition to criterion".into(),
                );
            };
            let ok = if let Some(i) = p.find('%') {
                c_float(p[..i].trim_end()).is_some()
            } else if kind.starts_with("iops") {
                c_float(p).is_some()
            } else {
                fio_bytes(p, kb).is_some()
            };
            if ok {
                Ok(())
            } else {
                Err("steadystate threshold parsing failed".into())
            }
        }
        Cb::NumaMemPolicy => {
            let (mode, nodes) = match v.split_once(':') {
                Some((m, n)) => (m, Some(n)),
                None => (v, None),
            };
            match (mode, nodes) {
                ("default" | "local", None) | ("interleave", _) => Ok(()),
                ("bind", Some(n)) if numa_nodes_ok(n) => Ok(()),
                ("prefer", Some(n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
                    Ok(())
                }
                ("default" | "local" | "bind" | "prefer", _) => {
                    Err(format!("bad node list for memory policy '{mode}'"))
                }
                _ => {
                    Err("memory policy should be: default, prefer, bind, interleave, local".into())
                }
            }
        }
        Cb::NumaNodes => {
            if numa_nodes_ok(v) {
                Ok(())
            } else {
                Err("numa_parse_nodestring failed".into())
            }
        }
    }
}

/// A path as fio opens it from its working directory; flashpath takes the
/// job file's directory when the name is not there (as for `include`).
fn resolve(name: &str, base_dir: &Path) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() || p.exists() {
        p.to_path_buf()
    } else {
        base_dir.join(p)
    }
}

/// libnuma numa_parse_nodestring on a one-node machine: "all", or node
/// numbers (strtoul, cut to an int) and ranges joined by ',', each node 0.
fn numa_nodes_ok(v: &str) -> bool {
    let node = |n: &str| {
        let digits = n.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits != n.len() {
            return false;
        }
        let value = n.parse::<u64>().unwrap_or(u64::MAX);
        value as i32 == 0
    };
    v == "all" || (!v.is_empty() && v.split(',').all(|part| part.split('-').all(node)))
}

/// lib/pattern.c parse_and_fill_pattern: numbers (decimal or 0x hex),
/// "strings", 'files' (read from fio's working directory) and, for
/// verify_pattern, the %o format; 512 bytes at most.
fn parse_pattern(v: &str, formats: bool, base_dir: &Path) -> std::result::Result<(), String> {
    const MAX: usize = 512;
    let bad = || Err(format!("bad pattern '{}'", clip(v)));
    if v.is_empty() {
        return bad();
    }
    let mut rest = v;
    let mut room = MAX;
    while !rest.is_empty() {
        let filled;
        match rest.as_bytes()[0] {
            b'\'' => {
                let Some(end) = rest[1..].find('\'') else {
                    return bad();
                };
                let Ok(data) = std::fs::read(resolve(&rest[1..1 + end], base_dir)) else {
                    return bad();
                };
                filled = data.len().min(room);
                rest = &rest[end + 2..];
            }
            b'"' => {
                let Some(end) = rest[1..].find('"') else {
                    return bad();
                };
                if end > room {
                    return bad();
                }
                filled = end;
                rest = &rest[end + 2..];
            }
            b'%' => {
                if !(formats && rest.starts_with("%o")) || room < 8 {
                    return bad();
                }
                filled = 8;
                rest = &rest[2..];
            }
            _ => {
                let lower = rest.to_ascii_lowercase();
                let hex_digits = lower
                    .strip_prefix("0x")
                    .map(|h| h.bytes().take_while(u8::is_ascii_hexdigit).count())
                    .unwrap_or(0);
                if hex_digits > 0 {
                    // "0xff0x14": a following 0x starts a new number.
                    let mut n = hex_digits;
                    if lower.len() > 2 + n && lower[1 + n..].starts_with("0x") {
                        n -= 1;
                    }
                    filled = n.div_ceil(2);
                    if filled > room {
                        return bad();
                    }
                    rest = &rest[2 + n..];
                } else {
                    let limit = lower.find("0x").filter(|i| *i > 0).unwrap_or(rest.len());
                    let text = &rest[..limit];
                    let t = text.trim_start_matches(|c: char| c.is_ascii() && c_space(c as u8));
                    let t2 = t.strip_prefix(['+', '-']).unwrap_or(t);
                    let digits = t2.bytes().take_while(u8::is_ascii_digit).count();
                    if digits == 0 {
                        return bad();
                    }
                    let used = text.len() - t2.len() + digits;
                    let val = c_strtoll(&text[..used], 10).unwrap_or(i64::MAX);
                    if val > i64::from(i32::MAX) || val < i64::from(i32::MIN) {
                        return bad();
                    }
                    let mut u = val as u32;
                    let mut bytes = 0;
                    while u != 0 {
                        bytes += 1;
                        u >>= 8;
                    }
                    filled = bytes.max(1);
                    if filled > room {
                        return bad();
                    }
                    rest = &rest[used..];
                }
            }
        }
        // fio asserts every piece fills something (an empty "" aborts it).
        if filled == 0 {
            return bad();
        }
        room -= filled;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_parse_c() {
        assert_eq!(fio_bytes("4k", 1024), Some(4096));
        assert_eq!(fio_bytes("4KiB", 1024), Some(4000));
        assert_eq!(fio_bytes("4KiB", 1000), Some(4096));
        assert_eq!(fio_bytes("4ki", 1000), Some(4000));
        assert_eq!(fio_bytes(" 8k", 1024), Some(8));
        assert_eq!(fio_bytes("0x10", 1024), Some(16));
        assert_eq!(fio_bytes("20%", 1024).and_then(as_percent), Some(20));
        assert_eq!(fio_bytes("k", 1024), None);
        assert_eq!(fio_bytes("(2*4096)", 1024), None);
        // C strtoll: a positive overflow fails, a negative one is LLONG_MIN;
        // a negative size wraps as the C multiplication does.
        assert_eq!(fio_bytes("9223372036854775808", 1024), None);
        assert_eq!(fio_bytes("-1", 1024), Some(u64::MAX));
        assert_eq!(fio_bytes("-1k", 1024), Some(u64::MAX - 1023));
        // "ms" starts with "m": mega, not milli.
        assert_eq!(fio_bytes("10ms", 1024), Some(10 << 20));
    }

    #[test]
    fn times_follow_parse_c() {
        assert_eq!(fio_time_us("2m", true), Some(120_000_000));
        assert_eq!(fio_time_us("1500ms", true), Some(1_500_000));
        assert_eq!(fio_time_us("250", false), Some(250));
        assert_eq!(fio_time_us("3", true), Some(3_000_000));
        // "sec" is not "s": fio multiplies by 1.
        assert_eq!(fio_time_us("3sec", true), Some(3));
        assert_eq!(fio_time_us("-1", true), Some(1_000_000u64.wrapping_neg()));
    }

    #[test]
    fn check_int_reads_like_sscanf_u() {
        assert_eq!(check_int("1"), Some(1));
        assert_eq!(check_int("1abc"), Some(1));
        assert_eq!(check_int(" 7"), Some(7));
        assert_eq!(check_int("-1"), Some(-1));
        assert_eq!(check_int("4294967296"), Some(0));
        assert_eq!(check_int("18446744073709551616"), Some(-1));
        assert_eq!(check_int("0x10"), Some(16));
        assert_eq!(check_int("abc"), None);
        assert_eq!(check_int(""), None);
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
    fn per_direction_parts_land_where_fio_stores_them() {
        let bs = options::find("bs").unwrap().kind;
        let slots = |v: &str| handle_option(&bs, Some(v), 1024, None).map(|p| p.slots);
        let k = |n: u64| Some(n << 10);
        assert_eq!(slots("8k"), Ok([k(8), k(8), k(8)]));
        assert_eq!(slots("8k,32k"), Ok([k(8), k(32), k(32)]));
        assert_eq!(slots("8k,32k,"), Ok([k(8), k(32), None]));
        assert_eq!(slots(",8k"), Ok([None, k(8), k(8)]));
        // ':' and '-' split too; a value is accepted when any part is.
        assert_eq!(slots("8k:4k"), Ok([k(8), k(4), k(4)]));
        assert_eq!(slots("0,4k"), Ok([None, k(4), k(4)]));
        assert!(slots("0").is_err());
        assert!(slots("").is_err());
        // iodepth=-1: "-1" is below the minimum, the part "1" after the
        // '-' is read and stored nowhere (iodepth has one slot).
        let iodepth = options::find("iodepth").unwrap().kind;
        let p = handle_option(&iodepth, Some("-1"), 1024, None).unwrap();
        assert_eq!(p.first(), None);
    }

    #[test]
    fn posvals_match_the_word_before_a_colon_or_comma() {
        let rw = options::find("rw").unwrap().kind.values;
        assert_eq!(posval_match(rw, "randread:8"), Some("randread"));
        assert_eq!(posval_match(rw, "read"), Some("read"));
        assert_eq!(posval_match(rw, "rea"), None);
        assert_eq!(posval_match(rw, "readx"), None);
        assert_eq!(posval_match(rw, "READ"), None);
    }

    #[test]
    fn bssplit_shares_the_remainder() {
        assert_eq!(
            parse_bssplit("4k/50:1k/:32k/", 1024),
            Ok(Some(vec![(4096, 50), (1024, 25), (32768, 25)]))
        );
        assert!(parse_bssplit("4k/80:1k/:32k/:8k/30", 1024).is_err());
        // fio stops at 64 entries without complaint, and at an empty one.
        let long = vec!["4k/1"; 65].join(":");
        assert_eq!(parse_bssplit(&long, 1024).unwrap().unwrap().len(), 64);
        assert_eq!(parse_bssplit("", 1024), Ok(None));
    }

    #[test]
    fn zoned_access_must_add_to_100() {
        assert!(parse_zones("60/10:30/20", 1024, false).is_err());
        assert_eq!(
            parse_zones("50/5:30/15:20/", 1024, false),
            Ok(vec![(50.0, 5.0), (30.0, 15.0), (20.0, 80.0)])
        );
        assert_eq!(
            parse_zones("60/10G:40/20G", 1024, true),
            Ok(vec![
                (60.0, (10u64 << 30) as f64),
                (40.0, (20u64 << 30) as f64)
            ])
        );
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
