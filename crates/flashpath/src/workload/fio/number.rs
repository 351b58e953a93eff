//! fio's number grammar as parse.c reads it: C's strtoll, sscanf and
//! atoi, the size and time suffixes (get_mult_bytes, get_mult_time),
//! percentages and zone counts.

use super::options::{self, Ty};
use super::value::handle_option;

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
pub(super) fn c_space(c: u8) -> bool {
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
pub(super) fn c_strtoll(s: &str, base: u32) -> Option<i64> {
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
pub(super) fn fio_time_us(s: &str, is_seconds: bool) -> Option<u64> {
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
pub(super) fn check_int(p: &str) -> Option<i32> {
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
pub(super) fn c_float(s: &str) -> Option<f64> {
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

/// C atoi: strtol (clamped to LONG_MAX on overflow) cut to an int.
pub(super) fn atoi(s: &str) -> i64 {
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
}
