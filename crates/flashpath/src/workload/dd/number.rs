//! dd's numbers (dd.c parse_integer over gnulib's xstrtoumax): suffixes
//! `c w b`, `K M G T P E Z Y` with `iB` for powers of 1024 and `B` or `D`
//! for powers of 1000, a lone `kB`, a trailing `B` meaning bytes, one `x`
//! multiplication; overflow is an error.

/// gnulib strtol_error bits (xstrtol.h).
pub(super) const OVERFLOW: u8 = 1;
const INVALID_SUFFIX_CHAR: u8 = 2;
pub(super) const INVALID: u8 = 4;

/// dd.c parse_integer's suffixes in coreutils 9.1 (no Q, R; the `0` lets a
/// second suffix `B`, `D` or `iB` follow a power letter).
const SUFFIXES: &[u8] = b"bcEGkKMPTwYZ0";

/// C isspace in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// gnulib bkm_scale: multiply, saturating at the maximum on overflow.
fn scale(x: &mut u64, factor: u64) -> u8 {
    match x.checked_mul(factor) {
        Some(v) => {
            *x = v;
            0
        }
        None => {
            *x = u64::MAX;
            OVERFLOW
        }
    }
}

fn scale_by_power(x: &mut u64, base: u64, power: u32) -> u8 {
    (0..power).fold(0, |e, _| e | scale(x, base))
}

/// gnulib xstrtoumax (xstrtol.c) with dd's suffixes: the error bits, the
/// value (saturated on overflow) and where parsing stopped.
fn xstrtoumax(s: &[u8]) -> (u8, u64, usize) {
    let first = s.iter().position(|b| !is_space(*b)).unwrap_or(s.len());
    if s.get(first) == Some(&b'-') {
        return (INVALID, 0, 0);
    }
    // strtoumax: blanks, an optional '+', decimal digits.
    let mut i = first;
    if s.get(i) == Some(&b'+') {
        i += 1;
    }
    let digits = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    let mut err = 0;
    let mut value: u64 = 0;
    let mut p = i + digits;
    if digits == 0 {
        // No number: strtoumax leaves the end at the start, and a valid
        // suffix alone stands for one of its unit ("K" is 1024).
        p = 0;
        match s.first() {
            Some(c) if SUFFIXES.contains(c) => value = 1,
            _ => return (INVALID, 0, 0),
        }
    } else {
        for &d in &s[i..p] {
            match value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
            {
                Some(v) if err == 0 => value = v,
                _ => {
                    // ERANGE: the maximum, the digits still consumed.
                    err = OVERFLOW;
                    value = u64::MAX;
                }
            }
        }
    }
    let Some(&c) = s.get(p) else {
        return (err, value, p);
    };
    if !SUFFIXES.contains(&c) {
        return (err | INVALID_SUFFIX_CHAR, value, p);
    }
    let (mut base, mut len) = (1024u64, 1usize);
    if b"EGgkKMmPQRTtYZ".contains(&c) && SUFFIXES.contains(&b'0') {
        match (s.get(p + 1), s.get(p + 2)) {
            (Some(b'i'), Some(b'B')) => len += 2,
            (Some(b'B' | b'D'), _) => {
                base = 1000;
                len += 1;
            }
            _ => {}
        }
    }
    let overflow = match c {
        b'b' => scale(&mut value, 512),
        b'c' => 0,
        b'E' => scale_by_power(&mut value, base, 6),
        b'G' => scale_by_power(&mut value, base, 3),
        b'k' | b'K' => scale_by_power(&mut value, base, 1),
        b'M' => scale_by_power(&mut value, base, 2),
        b'P' => scale_by_power(&mut value, base, 5),
        b'T' => scale_by_power(&mut value, base, 4),
        b'w' => scale(&mut value, 2),
        b'Y' => scale_by_power(&mut value, base, 8),
        b'Z' => scale_by_power(&mut value, base, 7),
        _ => return (err | INVALID_SUFFIX_CHAR, value, p),
    };
    err |= overflow;
    p += len;
    if p < s.len() {
        err |= INVALID_SUFFIX_CHAR;
    }
    (err, value, p)
}

/// dd.c parse_integer (9.1): the value as intmax_t and the error bits.
/// `warnings` gets dd's "zero multiplier" warning.
pub(super) fn parse_integer(s: &[u8], warnings: &mut Vec<String>) -> (u8, u64) {
    let (mut e, n, mut suffix) = xstrtoumax(s);
    // Before `s` dd sees the operand's '=': treat it as "not B".
    let before = |i: usize| if i == 0 { b'=' } else { s[i - 1] };
    if e & !OVERFLOW == INVALID_SUFFIX_CHAR
        && before(suffix) != b'B'
        && s.get(suffix) == Some(&b'B')
    {
        suffix += 1;
        if suffix == s.len() {
            e &= !INVALID_SUFFIX_CHAR;
        }
    }
    if e & !OVERFLOW == INVALID_SUFFIX_CHAR
        && s.get(suffix) == Some(&b'x')
        && !(before(suffix) == b'B' && s[suffix + 1..].contains(&b'B'))
    {
        let (f, o, _) = xstrtoumax(&s[suffix + 1..]);
        if f & !OVERFLOW != 0 {
            return (f, 0);
        }
        let product = u128::from(n) * u128::from(o);
        if product > i64::MAX as u128 || (product != 0 && (e | f) & OVERFLOW != 0) {
            return (OVERFLOW, i64::MAX as u64);
        }
        if product == 0 && s.starts_with(b"0x") {
            warnings
                .push("warning: '0x' is a zero multiplier; use '00x' if that is intended".into());
        }
        return (0, product as u64);
    }
    if n <= i64::MAX as u64 {
        (e, n)
    } else {
        (OVERFLOW, i64::MAX as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(s: &str) -> std::result::Result<u64, String> {
        let mut w = Vec::new();
        match parse_integer(s.as_bytes(), &mut w) {
            (0, n) => Ok(n),
            (e, _) if e == OVERFLOW => Err("overflow".into()),
            _ => Err("invalid".into()),
        }
    }

    /// Each value as the real dd 9.1 reads it (`dd if=/dev/null
    /// of=FILE seek=V bs=1 count=0` makes FILE V bytes long).
    #[test]
    fn numbers_read_as_dd_reads_them() {
        let cases: &[(&str, u64)] = &[
            ("1x0", 0),
            ("0x5", 0),
            ("5B", 5),
            ("2KB", 2000),
            ("2kB", 2000),
            ("2KiB", 2048),
            ("2k", 2048),
            ("2K", 2048),
            ("1M", 1 << 20),
            ("1MB", 1_000_000),
            ("1MiB", 1 << 20),
            ("1G", 1 << 30),
            ("1T", 1 << 40),
            ("1w", 2),
            ("1c", 1),
            ("1b", 512),
            ("K", 1024),
            ("kB", 1000),
            ("KiB", 1024),
            (" 5", 5),
            ("\t5", 5),
            ("+5", 5),
            ("00x5", 0),
            ("1bB", 512),
            ("12B", 12),
            ("1cB", 1),
            ("1cx2", 2),
            ("0", 0),
            ("0007", 7),
            ("5xK", 5120),
            ("2xKiB", 2048),
            ("1kiB", 1024),
            ("1KD", 1000),
            ("1MD", 1_000_000),
            ("1wB", 2),
            ("1bx2", 1024),
            ("2Kx3", 6144),
            ("3x2K", 6144),
            ("1Bx2", 2),
            ("1KBx2", 2000),
            ("1Kx2KB", 2_048_000),
            ("1KBx2K", 2_048_000),
            ("1x 2K", 2048),
            ("2x+3", 6),
            ("5x 2", 10),
            ("1kx1kB", 1_024_000),
            ("1KiBx2", 2048),
            ("1MiBx2", 2 << 20),
            ("2Bx3", 6),
            ("7E", 7 << 60),
            ("8Ex0", 0),
            ("1Zx0", 0),
            ("0x99999999999999999999", 0),
            ("99999999999999999999x0", 0),
            ("9223372036854775807", i64::MAX as u64),
        ];
        for (s, want) in cases {
            assert_eq!(value(s), Ok(*want), "{s:?}");
        }
        let invalid = [
            "1x", "1m", "1g", "1t", "B", "x5", "-5", "5e", "1xx2", "2x3x4", "1BB", "", "1KIB",
            "1D", "2x1B", "5 ", "1x2B", "1e", "1bD", "1ciB", "1kiBB", "1Mi", "1Bx2B", "+ 7", "++7",
            "1ixB", "1KBx2KB", "5\n", "5 x2", "1Q", "1R", "2x-3", "0x-1", "1x0x",
        ];
        for s in invalid {
            assert_eq!(value(s), Err("invalid".into()), "{s:?}");
        }
        let overflow = [
            "9223372036854775808",
            "99999999999999999999",
            "9223372036854775807x2",
            "8Ex2",
            "8E",
            "1Z",
            "99999999999999999999K",
            "1x99999999999999999999",
        ];
        for s in overflow {
            assert_eq!(value(s), Err("overflow".into()), "{s:?}");
        }
    }

    #[test]
    fn zero_multiplier_warning_only_for_a_leading_0x() {
        for (s, warned) in [
            ("0x5", true),
            ("0x0", true),
            ("00x5", false),
            ("1x0", false),
        ] {
            let mut w = Vec::new();
            parse_integer(s.as_bytes(), &mut w);
            assert_eq!(w.len(), usize::from(warned), "{s}");
        }
    }
}
