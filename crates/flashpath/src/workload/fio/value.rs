//! fio's option value parser (parse.c handle_option / __handle_option),
//! type by type. It decides what fio 3.33 accepts, quirks included: a
//! value made of several parts (`4k,8k`, `4k:8k`, `4k-8k`) is accepted
//! when ANY part is (handle_option keeps the first success), and each part
//! lands in the slot fio stores it in.

use super::number::{c_float, c_space, check_int, fio_bytes, fio_time_us, ZONE_BASE};
use super::options::{Kind, Ty};

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
    /// Why the parts that failed failed, when another part made the value
    /// acceptable: fio has printed each (log_err) and goes on with what
    /// the good parts stored (`iodepth=-1` fails on "-1", reads "1" after
    /// the '-', and keeps iodepth's default).
    pub part_errors: Vec<String>,
}

impl Parsed {
    /// The first slot (the option's one value).
    pub fn first(&self) -> Option<u64> {
        self.slots[0]
    }
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
pub(super) fn handle_option(
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
                out.part_errors.push(e.clone());
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
        out.part_errors.clear();
        Err(first_error.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio::options;

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
}
