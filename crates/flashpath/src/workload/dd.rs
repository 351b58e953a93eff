//! GNU coreutils dd command lines, read as dd 9.1 reads them, turned into
//! the fio job that does dd's reads, and dd's own summary of the run.
//!
//! Operands follow dd.c `scanargs`: numbers through `parse_integer` over
//! gnulib's `xstrtoumax` (suffixes `c w b`, `K M G T P E Z Y` with `iB` for
//! powers of 1024 and `B` or `D` for powers of 1000, a lone `kB`, a trailing
//! `B` meaning bytes for count/skip/seek, one `x` multiplication; overflow
//! is an error), flags and conversions through `parse_symbols`, and dd's
//! own messages for what dd itself refuses. The real `dd` of the fixtures'
//! machine (coreutils 9.1) is the reference: the tests below are its
//! answers.
//!
//! flashpath simulates dd reading a block device to /dev/null
//! (`dd if=/dev/X of=/dev/null bs=N count=N [skip=N] [iflag=direct]`): one
//! read(2) of ibs bytes at a time, through the page cache, or O_DIRECT with
//! `iflag=direct`. dd never sets RWF_HIPRI, so its reads complete by
//! interrupt on every kernel flashpath models from v4.6 on; v4.4 and v4.5
//! polled every synchronous O_DIRECT read on a queue with io_poll=1
//! (fs/direct-io.c dio_await_one) without being asked, which the fio job
//! of the io-poll scenario writes as `pvsync2` + `hipri`.

use crate::error::{InputError, Result};
use crate::report::group::thread_stats;
use crate::report::RunResult;
use std::fmt::Write as _;

/// gnulib strtol_error bits (xstrtol.h).
const OVERFLOW: u8 = 1;
const INVALID_SUFFIX_CHAR: u8 = 2;
const INVALID: u8 = 4;

/// dd.c parse_integer's suffixes in coreutils 9.1 (no Q, R; the `0` lets a
/// second suffix `B`, `D` or `iB` follow a power letter).
const SUFFIXES: &[u8] = b"bcEGkKMPTwYZ0";

/// dd's maximum block size on a 64-bit system: MIN (IDX_MAX - 1,
/// MIN (SSIZE_MAX, OFF_T_MAX)).
const MAX_BLOCKSIZE: u64 = i64::MAX as u64 - 1;

/// The most one read(2) returns on Linux (MAX_RW_COUNT, INT_MAX rounded
/// down to a page): a larger ibs makes short reads.
const MAX_RW_COUNT: u64 = 0x7fff_f000;

/// The smallest logical block an O_DIRECT read must be a multiple of
/// (SECTOR_SIZE; blkdev_dio_invalid checks the device's own, at least this).
const SECTOR: u64 = 512;

// Flags (dd.c `flags`): the O_* values dd accepts on Linux. binary, text,
// cio and nolinks are 0 there, so dd refuses them as invalid flags.
const APPEND: u32 = 1 << 0;
const DIRECT: u32 = 1 << 1;
const DIRECTORY: u32 = 1 << 2;
const DSYNC: u32 = 1 << 3;
const NOATIME: u32 = 1 << 4;
const NOCACHE: u32 = 1 << 5;
const NOCTTY: u32 = 1 << 6;
const NOFOLLOW: u32 = 1 << 7;
const NONBLOCK: u32 = 1 << 8;
const SYNC: u32 = 1 << 9;
const FULLBLOCK: u32 = 1 << 10;
const COUNT_BYTES: u32 = 1 << 11;
const SKIP_BYTES: u32 = 1 << 12;
const SEEK_BYTES: u32 = 1 << 13;

const FLAGS: &[(&str, u32)] = &[
    ("append", APPEND),
    ("direct", DIRECT),
    ("directory", DIRECTORY),
    ("dsync", DSYNC),
    ("noatime", NOATIME),
    ("nocache", NOCACHE),
    ("noctty", NOCTTY),
    ("nofollow", NOFOLLOW),
    ("nonblock", NONBLOCK),
    ("sync", SYNC),
    ("fullblock", FULLBLOCK),
    ("count_bytes", COUNT_BYTES),
    ("skip_bytes", SKIP_BYTES),
    ("seek_bytes", SEEK_BYTES),
];

// Conversions (dd.c `conversions`).
const C_ASCII: u32 = 1 << 0;
const C_EBCDIC: u32 = 1 << 1;
const C_IBM: u32 = 1 << 2;
const C_BLOCK: u32 = 1 << 3;
const C_UNBLOCK: u32 = 1 << 4;
const C_LCASE: u32 = 1 << 5;
const C_UCASE: u32 = 1 << 6;
const C_SPARSE: u32 = 1 << 7;
const C_SWAB: u32 = 1 << 8;
const C_NOERROR: u32 = 1 << 9;
const C_NOCREAT: u32 = 1 << 10;
const C_EXCL: u32 = 1 << 11;
const C_NOTRUNC: u32 = 1 << 12;
const C_SYNC: u32 = 1 << 13;
const C_FDATASYNC: u32 = 1 << 14;
const C_FSYNC: u32 = 1 << 15;
/// Separate input and output buffers: output is gathered into obs blocks.
const C_TWOBUFS: u32 = 1 << 16;

const CONVERSIONS: &[(&str, u32)] = &[
    ("ascii", C_ASCII | C_UNBLOCK | C_TWOBUFS),
    ("ebcdic", C_EBCDIC | C_BLOCK | C_TWOBUFS),
    ("ibm", C_IBM | C_BLOCK | C_TWOBUFS),
    ("block", C_BLOCK | C_TWOBUFS),
    ("unblock", C_UNBLOCK | C_TWOBUFS),
    ("lcase", C_LCASE | C_TWOBUFS),
    ("ucase", C_UCASE | C_TWOBUFS),
    ("sparse", C_SPARSE),
    ("swab", C_SWAB | C_TWOBUFS),
    ("noerror", C_NOERROR),
    ("nocreat", C_NOCREAT),
    ("excl", C_EXCL),
    ("notrunc", C_NOTRUNC),
    ("sync", C_SYNC),
    ("fdatasync", C_FDATASYNC),
    ("fsync", C_FSYNC),
];

/// status= (dd.c `statuses`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Default,
    None,
    Noxfer,
    Progress,
}

const STATUSES: &[(&str, Status)] = &[
    ("none", Status::None),
    ("noxfer", Status::Noxfer),
    ("progress", Status::Progress),
];

/// Longest operand text a message quotes before cutting it short.
const QUOTE_MAX: usize = 64;

/// A dd command line, checked as dd checks it and as flashpath can run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DdCommand {
    /// The device read (`if=`), as a fio file name.
    pub input: String,
    /// `of=` as given (None: standard output).
    output: Option<Vec<u8>>,
    /// Bytes per read (`ibs=`, or `bs=`).
    pub ibs: u64,
    /// Bytes per write (`obs=`, or `bs=`).
    pub obs: u64,
    /// Whole blocks to read (`count=`, in ibs blocks or bytes).
    pub count: u64,
    /// Byte offset of the first read (`skip=`).
    pub skip_offset: u64,
    direct: bool,
    conversions: u32,
    status: Status,
    /// dd's warnings and flashpath's notes on operands without effect.
    pub notes: Vec<String>,
    /// The command line as the user wrote it, escaped, for messages.
    pub display: String,
}

fn err(message: impl Into<String>) -> InputError {
    InputError::new("dd", None, message)
}

/// A value quoted as dd quotes it in the C locale (gnulib quote with
/// locale_quoting_style): in single quotes, `'` and `\` escaped, control
/// and non-ASCII bytes as C escapes; cut short past QUOTE_MAX bytes.
pub fn quote(bytes: &[u8]) -> String {
    let mut out = String::from("'");
    out.push_str(&escape(&bytes[..bytes.len().min(QUOTE_MAX)], true));
    out.push('\'');
    if bytes.len() > QUOTE_MAX {
        let _ = write!(out, "... ({} bytes)", bytes.len());
    }
    out
}

fn escape(bytes: &[u8], quotes: bool) -> String {
    let mut out = String::new();
    for &b in bytes {
        match b {
            b'\'' if quotes => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x0b => out.push_str("\\v"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out
}

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
fn parse_integer(s: &[u8], warnings: &mut Vec<String>) -> (u8, u64) {
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

/// dd.c operand_matches: `s` is `name` followed by the end or `delim`.
fn matches(s: &[u8], name: &str, delim: u8) -> bool {
    s.strip_prefix(name.as_bytes())
        .is_some_and(|rest| rest.first().is_none_or(|c| *c == delim))
}

/// dd.c parse_symbols: a comma list of names from `table`.
fn parse_symbols<T: Copy>(value: &[u8], table: &[(&str, T)], what: &str) -> Result<Vec<T>> {
    value
        .split(|b| *b == b',')
        .map(|sym| {
            table
                .iter()
                .find(|(name, _)| matches(sym, name, b','))
                .map(|(_, v)| *v)
                .ok_or_else(|| err(format!("{what}: {}", quote(sym))))
        })
        .collect()
}

/// The names in `table` whose own flag (an entry's lowest bit: `ascii`
/// also sets unblock) is set in `mask`, in table order.
fn names(mask: u32, table: &[(&'static str, u32)]) -> Vec<&'static str> {
    table
        .iter()
        .filter(|(_, v)| mask & (v & v.wrapping_neg()) != 0)
        .map(|(n, _)| *n)
        .collect()
}

/// An operand value for a message: escaped, cut short like `quote`.
fn shown(bytes: &[u8]) -> String {
    let mut out = escape(&bytes[..bytes.len().min(QUOTE_MAX)], false);
    if bytes.len() > QUOTE_MAX {
        let _ = write!(out, "... ({} bytes)", bytes.len());
    }
    out
}

/// dd's operands as dd.c scanargs leaves them: what dd itself would run.
struct Operands {
    input: Option<Vec<u8>>,
    output: Option<Vec<u8>>,
    ibs: u64,
    obs: u64,
    conv: u32,
    iflags: u32,
    oflags: u32,
    status: Status,
    /// i64::MAX when count= is not given (dd's "no count").
    count: u64,
    count_bytes: bool,
    skip: u64,
    skip_bytes: bool,
    seek: u64,
    seek_bytes: bool,
    /// dd's warnings.
    notes: Vec<String>,
}

/// dd.c scanargs: each operand in turn (the last of a kind wins, flags
/// add up), then the block sizes, the byte-count flags and the
/// combinations dd refuses.
fn scan(operands: &[&[u8]]) -> Result<Operands> {
    let mut notes = Vec::new();
    let (mut input, mut output) = (None, None);
    let (mut iflags, mut oflags, mut conv) = (0u32, 0u32, 0u32);
    let mut status = Status::Default;
    let (mut ibs, mut obs, mut bs, mut cbs) = (0u64, 0u64, 0u64, 0u64);
    let mut count = i64::MAX as u64;
    let (mut skip, mut seek) = (0u64, 0u64);
    let (mut count_b, mut skip_b, mut seek_b) = (false, false, false);
    for op in operands {
        let Some(eq) = op.iter().position(|b| *b == b'=') else {
            return Err(err(format!("unrecognized operand {}", quote(op))));
        };
        let (name, value) = (*op, &op[eq + 1..]);
        let is = |n: &str| matches(name, n, b'=');
        if is("if") {
            input = Some(value.to_vec());
        } else if is("of") {
            output = Some(value.to_vec());
        } else if is("conv") {
            let syms = parse_symbols(value, CONVERSIONS, "invalid conversion")?;
            conv |= syms.iter().fold(0, |m, v| m | v);
        } else if is("iflag") {
            let syms = parse_symbols(value, FLAGS, "invalid input flag")?;
            iflags |= syms.iter().fold(0, |m, v| m | v);
        } else if is("oflag") {
            let syms = parse_symbols(value, FLAGS, "invalid output flag")?;
            oflags |= syms.iter().fold(0, |m, v| m | v);
        } else if is("status") {
            let syms = parse_symbols(value, STATUSES, "invalid status level")?;
            status = *syms.last().expect("split yields at least one symbol");
        } else {
            let (mut invalid, n) = parse_integer(value, &mut notes);
            let has_b = value.contains(&b'B');
            let (min, max, slot): (u64, u64, Option<&mut u64>) = if is("ibs") {
                (1, MAX_BLOCKSIZE, Some(&mut ibs))
            } else if is("obs") {
                (1, MAX_BLOCKSIZE, Some(&mut obs))
            } else if is("bs") {
                (1, MAX_BLOCKSIZE, Some(&mut bs))
            } else if is("cbs") {
                (1, i64::MAX as u64, Some(&mut cbs))
            } else if is("skip") || is("iseek") {
                skip = n;
                skip_b = has_b;
                (0, i64::MAX as u64, None)
            } else if is("seek") || is("oseek") {
                seek = n;
                seek_b = has_b;
                (0, i64::MAX as u64, None)
            } else if is("count") {
                count = n;
                count_b = has_b;
                (0, i64::MAX as u64, None)
            } else {
                return Err(err(format!("unrecognized operand {}", quote(op))));
            };
            if n < min {
                invalid = INVALID;
            } else if n > max {
                invalid = OVERFLOW;
            }
            if invalid != 0 {
                let why = if invalid == OVERFLOW {
                    ": Value too large for defined data type"
                } else {
                    ""
                };
                return Err(err(format!(
                    "invalid number: {}{why} (operand {})",
                    quote(value),
                    quote(op)
                )));
            }
            if let Some(slot) = slot {
                *slot = n;
            }
        }
    }
    // scanargs after the loop, in dd's order.
    if bs > 0 {
        (ibs, obs) = (bs, bs);
    } else {
        conv |= C_TWOBUFS;
    }
    if ibs == 0 {
        ibs = 512;
    }
    if obs == 0 {
        obs = 512;
    }
    if cbs == 0 {
        conv &= !(C_BLOCK | C_UNBLOCK);
    }
    if oflags & FULLBLOCK != 0 {
        return Err(err("invalid output flag: 'fullblock'"));
    }
    let skip_bytes = skip_b || iflags & SKIP_BYTES != 0;
    let count_bytes = count_b || iflags & COUNT_BYTES != 0;
    let seek_bytes = seek_b || oflags & SEEK_BYTES != 0;
    let several = |mask: u32| (conv & mask).count_ones() > 1;
    if several(C_ASCII | C_EBCDIC | C_IBM) {
        return Err(err("cannot combine any two of {ascii,ebcdic,ibm}"));
    }
    if several(C_BLOCK | C_UNBLOCK) {
        return Err(err("cannot combine block and unblock"));
    }
    if several(C_LCASE | C_UCASE) {
        return Err(err("cannot combine lcase and ucase"));
    }
    if several(C_EXCL | C_NOCREAT) {
        return Err(err("cannot combine excl and nocreat"));
    }
    if (iflags & (DIRECT | NOCACHE)).count_ones() > 1
        || (oflags & (DIRECT | NOCACHE)).count_ones() > 1
    {
        return Err(err("cannot combine direct and nocache"));
    }
    if oflags & APPEND != 0 && conv & C_NOTRUNC == 0 {
        notes.push("you probably want conv=notrunc with oflag=append".into());
    }
    Ok(Operands {
        input,
        output,
        ibs,
        obs,
        conv,
        iflags,
        oflags,
        status,
        count,
        count_bytes,
        skip,
        skip_bytes,
        seek,
        seek_bytes,
        notes,
    })
}

impl DdCommand {
    /// Read dd's operands as dd 9.1 does, then check what flashpath can
    /// simulate. Every refusal is one message naming the operand.
    pub fn parse<S: AsRef<[u8]>>(operands: &[S]) -> Result<DdCommand> {
        let operands: Vec<&[u8]> = operands.iter().map(AsRef::as_ref).collect();
        let display = std::iter::once("dd".to_string())
            .chain(operands.iter().map(|o| escape(o, false)))
            .collect::<Vec<_>>()
            .join(" ");
        let display = if display.len() > 4 * QUOTE_MAX {
            format!("{}...", &display[..4 * QUOTE_MAX])
        } else {
            display
        };
        let Operands {
            input,
            output,
            ibs,
            obs,
            conv,
            iflags,
            oflags,
            status,
            count,
            count_bytes,
            skip,
            skip_bytes,
            seek,
            seek_bytes,
            mut notes,
        } = scan(&operands)?;

        // What flashpath simulates: reads of a block device to /dev/null.
        let device = match &input {
            Some(v) if is_device_name(v) => String::from_utf8_lossy(v).into_owned(),
            Some(v) => {
                return Err(err(format!(
                    "if={}: flashpath reads a simulated block device: if= must name it \
                     (e.g. if=/dev/nvme0n1)",
                    shown(v)
                )))
            }
            None => {
                return Err(err(
                    "if= must name the simulated block device (e.g. if=/dev/nvme0n1); \
                     without it dd reads its standard input",
                ))
            }
        };
        if iflags & DIRECTORY != 0 {
            return Err(err(format!(
                "failed to open {}: Not a directory",
                quote(device.as_bytes())
            )));
        }
        let out_name = match &output {
            None => "standard output".to_string(),
            Some(v) if v.as_slice() == b"/dev/null" => "/dev/null".to_string(),
            Some(v) => {
                return Err(err(format!(
                    "of={}: only of=/dev/null is simulated (reads)",
                    shown(v)
                )))
            }
        };
        let out_quoted = quote(out_name.as_bytes());
        // /dev/null has no O_DIRECT (EINVAL) and exists (conv=excl).
        if oflags & DIRECT != 0 {
            return Err(err(match output {
                Some(_) => format!("failed to open {out_quoted}: Invalid argument"),
                None => format!("setting flags for {out_quoted}: Invalid argument"),
            }));
        }
        if oflags & DIRECTORY != 0 {
            return Err(err(format!("failed to open {out_quoted}: Not a directory")));
        }
        if conv & C_EXCL != 0 && output.is_some() {
            return Err(err(format!("failed to open {out_quoted}: File exists")));
        }
        if conv & (C_FSYNC | C_FDATASYNC) != 0 {
            // dd copies, then fsync(2) of /dev/null fails and dd exits 1.
            return Err(err(format!(
                "fsync failed for {out_quoted}: Invalid argument"
            )));
        }
        let converting =
            conv & (C_ASCII | C_EBCDIC | C_IBM | C_BLOCK | C_UNBLOCK | C_LCASE | C_UCASE | C_SWAB);
        if converting != 0 {
            return Err(err(format!(
                "conv={}: converting the data in memory is not simulated by flashpath \
                 (its CPU cost is not modelled)",
                names(converting, CONVERSIONS).join(",")
            )));
        }
        let direct = iflags & DIRECT != 0;
        if iflags & NOCACHE != 0 {
            return Err(err(
                "iflag=nocache (posix_fadvise DONTNEED after the reads) is not simulated by flashpath",
            ));
        }
        if count == i64::MAX as u64 {
            return Err(err(
                "count= is required: dd without it reads to the end of the device, \
                 which flashpath does not simulate",
            ));
        }
        let (count_records, count_rest) = if count_bytes {
            (count / ibs, count % ibs)
        } else {
            (count, 0)
        };
        if count_rest != 0 {
            return Err(err(format!(
                "count={count} bytes is not a whole number of {ibs}-byte blocks: \
                 dd's short last read is not simulated"
            )));
        }
        if count_records == 0 {
            return Err(err("count=0: dd reads nothing; nothing to simulate"));
        }
        if ibs > MAX_RW_COUNT {
            return Err(err(format!(
                "ibs={ibs}: one read(2) returns at most {MAX_RW_COUNT} bytes on Linux \
                 (MAX_RW_COUNT), so dd's reads would be short; not simulated"
            )));
        }
        let (skip_records, skip_rest) = if skip_bytes {
            (skip / ibs, skip % ibs)
        } else {
            (skip, 0)
        };
        let skip_offset = u128::from(skip_records) * u128::from(ibs) + u128::from(skip_rest);
        if skip_offset > i64::MAX as u128 {
            // The offset is no off_t: dd does not try lseek (EOVERFLOW).
            return Err(err(format!(
                "{device}: cannot skip: Value too large for defined data type"
            )));
        }
        let seek_offset = if seek_bytes {
            u128::from(seek)
        } else {
            u128::from(seek) * u128::from(obs)
        };
        if seek_offset > i64::MAX as u128 {
            return Err(err(format!(
                "{out_name}: cannot seek: Value too large for defined data type"
            )));
        }
        if direct && (ibs % SECTOR != 0 || skip_offset % u128::from(SECTOR) != 0) {
            return Err(err(format!(
                "error reading {}: Invalid argument (O_DIRECT reads need a size and an \
                 offset in whole {SECTOR}-byte sectors; ibs={ibs}, offset {skip_offset})",
                quote(device.as_bytes())
            )));
        }
        let mut unused: Vec<String> = names(iflags & !(DIRECT | COUNT_BYTES | SKIP_BYTES), FLAGS)
            .into_iter()
            .map(|n| format!("iflag={n}"))
            .collect();
        unused.extend(
            names(oflags, FLAGS)
                .into_iter()
                .map(|n| format!("oflag={n}")),
        );
        unused.extend(
            names(conv & !C_TWOBUFS, CONVERSIONS)
                .into_iter()
                .map(|n| format!("conv={n}")),
        );
        if status == Status::Progress {
            unused.push("status=progress (no progress lines: the run's time is simulated)".into());
        }
        if !unused.is_empty() {
            notes.push(format!(
                "flashpath: no effect on the simulated reads, accepted: {}",
                unused.join(", ")
            ));
        }
        Ok(DdCommand {
            input: device,
            output,
            ibs,
            obs,
            count: count_records,
            skip_offset: skip_offset as u64,
            direct,
            conversions: conv,
            status,
            notes,
            display,
        })
    }

    /// Whether dd reads through the page cache (no `iflag=direct`).
    pub fn buffered(&self) -> bool {
        !self.direct
    }

    /// The fio job doing dd's reads: synchronous read(2) calls of ibs
    /// bytes, one at a time, from the skip offset, on CPU 0.
    pub fn job_text(&self) -> String {
        // fio's numbers are signed 64-bit; the device's end stops the
        // reads long before.
        let size = (u128::from(self.count) * u128::from(self.ibs)).min(i64::MAX as u128);
        format!(
            "[dd]\nfilename={}\nioengine=sync\ndirect={}\nrw=read\nbs={}\nnumber_ios={}\n\
             size={size}\noffset={}\ncpus_allowed=0\n",
            self.input,
            u8::from(self.direct),
            self.ibs,
            self.count,
            self.skip_offset
        )
    }

    /// What dd prints on stderr after the run: its warnings, the records
    /// in and out and the transfer line (as status= asks), and flashpath's
    /// note when the device ended before count= reads.
    pub fn report(&self, result: &RunResult) -> String {
        let stats = thread_stats(result);
        let read = &stats.first().expect("the dd job ran").dirs[0];
        let mut out = String::new();
        for note in &self.notes {
            let _ = writeln!(out, "{note}");
        }
        let records_in = read.total_ios;
        // With bs= each block read is written as one record; otherwise dd
        // gathers the input into obs-byte output blocks (C_TWOBUFS).
        let (full_out, partial_out) = if self.conversions & C_TWOBUFS != 0 {
            let total = read.io_bytes;
            (total / self.obs, u64::from(!total.is_multiple_of(self.obs)))
        } else {
            (records_in, 0)
        };
        if self.status != Status::None {
            let _ = writeln!(out, "{records_in}+0 records in");
            let _ = writeln!(out, "{full_out}+{partial_out} records out");
        }
        if matches!(self.status, Status::Default | Status::Progress) {
            let _ = writeln!(out, "{}", copied_line(read.io_bytes, read.runtime));
        }
        if records_in < self.count {
            let _ = writeln!(
                out,
                "flashpath: the device ended after {records_in} of {} reads of {} bytes",
                self.count, self.ibs
            );
        }
        out
    }
}

/// A device name fio can take as its filename: a /dev path of plain
/// characters (fio splits file names at ':').
fn is_device_name(v: &[u8]) -> bool {
    v.len() > 5
        && v.starts_with(b"/dev/")
        && v.iter()
            .all(|b| b.is_ascii_alphanumeric() || b"/_.+-".contains(b))
}

/// Python's `format(x, ".{precision}g")` (C's %g): `precision`
/// significant digits, exponent form below 1e-4 or from 10^precision,
/// trailing zeros removed.
fn format_g(x: f64, precision: usize) -> String {
    let p = precision.max(1);
    if x == 0.0 {
        return "0".into();
    }
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{:.*}", (p as i32 - 1 - exp) as usize, x))
    }
}

/// Bytes with a decimal unit, 3 significant digits.
fn si(n: f64) -> String {
    for (unit, f) in [("GB", 1e9), ("MB", 1e6), ("kB", 1e3)] {
        if n >= f {
            return format!("{} {unit}", format_g(n / f, 3));
        }
    }
    format!("{} bytes", format_g(n, 6))
}

/// Bytes with a binary unit, 3 significant digits.
fn iec(n: f64) -> String {
    for (unit, f) in [("GiB", 1073741824.0), ("MiB", 1048576.0), ("KiB", 1024.0)] {
        if n >= f {
            return format!("{} {unit}", format_g(n / f, 3));
        }
    }
    format!("{} bytes", format_g(n, 6))
}

/// dd's transfer line, as flashpath has always printed it: the bytes read,
/// their size in decimal and binary units, the job's runtime (fio's, in
/// whole ms) and the rate.
fn copied_line(bytes: u64, runtime_ms: u64) -> String {
    let secs = runtime_ms as f64 / 1000.0;
    let rate = if secs > 0.0 { bytes as f64 / secs } else { 0.0 };
    format!(
        "{bytes} bytes ({}, {}) copied, {} s, {}/s",
        si(bytes as f64),
        iec(bytes as f64),
        format_g(secs, 6),
        si(rate)
    )
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

    fn parse(ops: &[&str]) -> Result<DdCommand> {
        DdCommand::parse(ops)
    }

    fn message(ops: &[&str]) -> String {
        match parse(ops) {
            Err(e) => e.to_string(),
            Ok(c) => panic!("{ops:?} accepted: {c:?}"),
        }
    }

    const READ: [&str; 3] = ["if=/dev/nvme0n1", "of=/dev/null", "count=10"];

    /// dd's own messages (LC_ALL=C dd ... 2>&1 of coreutils 9.1), with
    /// the operand named where dd names only the value.
    #[test]
    fn bad_operands_get_dds_messages() {
        let with = |extra: &str| -> String {
            let mut ops = READ.to_vec();
            ops.push(extra);
            message(&ops)
        };
        assert_eq!(
            with("bs=1x0"),
            "dd: invalid number: '1x0' (operand 'bs=1x0')"
        );
        assert_eq!(
            with("count=8E"),
            "dd: invalid number: '8E': Value too large for defined data type (operand 'count=8E')"
        );
        assert_eq!(
            with("bs=9223372036854775807"),
            "dd: invalid number: '9223372036854775807': Value too large for defined data type \
             (operand 'bs=9223372036854775807')"
        );
        assert_eq!(with("cbs=0"), "dd: invalid number: '0' (operand 'cbs=0')");
        assert_eq!(with("iflag=binary"), "dd: invalid input flag: 'binary'");
        assert_eq!(with("iflag=direct,,"), "dd: invalid input flag: ''");
        assert_eq!(with("iflag=direct "), "dd: invalid input flag: 'direct '");
        assert_eq!(
            with("oflag=fullblock"),
            "dd: invalid output flag: 'fullblock'"
        );
        assert_eq!(with("conv=bogus"), "dd: invalid conversion: 'bogus'");
        assert_eq!(with("status="), "dd: invalid status level: ''");
        assert_eq!(with("foo=bar"), "dd: unrecognized operand 'foo=bar'");
        assert_eq!(with("IF=x"), "dd: unrecognized operand 'IF=x'");
        assert_eq!(with("count"), "dd: unrecognized operand 'count'");
        assert_eq!(
            with("iflag=direct,nocache"),
            "dd: cannot combine direct and nocache"
        );
        assert_eq!(
            with("conv=lcase,ucase"),
            "dd: cannot combine lcase and ucase"
        );
        assert_eq!(
            with("conv=ascii,ebcdic"),
            "dd: cannot combine any two of {ascii,ebcdic,ibm}"
        );
        assert_eq!(
            with("conv=excl,nocreat"),
            "dd: cannot combine excl and nocreat"
        );
        assert_eq!(
            with("oflag=direct"),
            "dd: failed to open '/dev/null': Invalid argument"
        );
        assert_eq!(
            with("conv=excl"),
            "dd: failed to open '/dev/null': File exists"
        );
        assert_eq!(
            with("conv=fsync"),
            "dd: fsync failed for '/dev/null': Invalid argument"
        );
        assert_eq!(
            with("iflag=directory"),
            "dd: failed to open '/dev/nvme0n1': Not a directory"
        );
        assert_eq!(
            with("count=\u{1}\n"),
            "dd: invalid number: '\\001\\n' (operand 'count=\\001\\n')"
        );
    }

    #[test]
    fn messages_quote_at_most_a_line_of_input() {
        let long = format!("count={}", "9".repeat(100_000));
        let m = message(&["if=/dev/sda", &long]);
        assert!(m.len() < 400, "{}", m.len());
        assert!(m.contains("(100006 bytes)"), "{m}");
    }

    #[test]
    fn what_flashpath_does_not_simulate_is_refused_by_name() {
        for (ops, needle) in [
            (vec!["of=/dev/null", "count=1"], "if= must name"),
            (vec!["if=/tmp/x", "count=1"], "if=/tmp/x"),
            (vec!["if=/dev/a:b", "count=1"], "if=/dev/a:b"),
            (vec!["if=/dev/sda", "of=/tmp/out", "count=1"], "of=/tmp/out"),
            (vec!["if=/dev/sda"], "count= is required"),
            (vec!["if=/dev/sda", "count=0"], "count=0"),
            (
                vec!["if=/dev/sda", "count=1000B", "bs=512"],
                "count=1000 bytes",
            ),
            (vec!["if=/dev/sda", "count=1", "conv=swab"], "conv=swab"),
            (vec!["if=/dev/sda", "count=1", "conv=ucase"], "conv=ucase"),
            (
                vec!["if=/dev/sda", "count=1", "iflag=nocache"],
                "iflag=nocache",
            ),
            (vec!["if=/dev/sda", "count=1", "bs=3G"], "MAX_RW_COUNT"),
            (
                vec!["if=/dev/sda", "count=1", "bs=1000", "iflag=direct"],
                "error reading '/dev/sda': Invalid argument",
            ),
            (
                vec!["if=/dev/sda", "count=1", "skip=100B", "iflag=direct"],
                "offset 100",
            ),
            (
                vec!["if=/dev/sda", "count=1", "skip=7E", "bs=4k"],
                "/dev/sda: cannot skip: Value too large",
            ),
        ] {
            let m = message(&ops);
            assert!(m.contains(needle), "{ops:?}: {m}");
        }
    }

    #[test]
    fn the_job_reads_what_dd_reads() {
        let c = parse(&[
            "if=/dev/nvme0n1",
            "of=/dev/null",
            "bs=4096",
            "iflag=direct",
            "count=200k",
        ])
        .unwrap();
        assert_eq!((c.count, c.ibs, c.skip_offset), (204_800, 4096, 0));
        assert_eq!(
            c.job_text(),
            "[dd]\nfilename=/dev/nvme0n1\nioengine=sync\ndirect=1\nrw=read\nbs=4096\n\
             number_ios=204800\nsize=838860800\noffset=0\ncpus_allowed=0\n"
        );
        // dd never asks for polled I/O.
        assert!(!c.job_text().contains("hipri"));
        // Without iflag=direct: the page cache. skip counts ibs blocks,
        // or bytes with a B (skip_bytes); count likewise.
        let c = parse(&["if=/dev/sda", "ibs=8k", "skip=3", "count=2"]).unwrap();
        assert!(c.buffered() && c.job_text().contains("direct=0\n"));
        assert_eq!(
            (c.skip_offset, c.count, c.ibs, c.obs),
            (3 * 8192, 2, 8192, 512)
        );
        let c = parse(&[
            "if=/dev/sda",
            "bs=4k",
            "skip=100B",
            "count=16KiB",
            "iflag=count_bytes",
        ])
        .unwrap();
        assert_eq!((c.skip_offset, c.count), (100, 4));
        let c = parse(&[
            "if=/dev/sda",
            "bs=4k",
            "iflag=skip_bytes",
            "skip=4k",
            "count=1",
        ])
        .unwrap();
        assert_eq!(c.skip_offset, 4096);
        // The last operand wins; flags add up.
        let c = parse(&[
            "if=/dev/a",
            "if=/dev/b",
            "count=1",
            "count=3",
            "iflag=direct",
            "iflag=fullblock",
        ])
        .unwrap();
        assert_eq!((c.input.as_str(), c.count, c.direct), ("/dev/b", 3, true));
        assert_eq!(
            c.notes,
            ["flashpath: no effect on the simulated reads, accepted: iflag=fullblock"]
        );
    }

    #[test]
    fn format_g_is_pythons() {
        // format(x, ".3g") and format(x, "g") from CPython 3.11.
        for (x, three, six) in [
            (0.125, "0.125", "0.125"),
            (10.25, "10.2", "10.25"),
            (1.125, "1.12", "1.125"),
            (999.5, "1e+03", "999.5"),
            (999.4999, "999", "999.5"),
            (1e-05, "1e-05", "1e-05"),
            (0.0001, "0.0001", "0.0001"),
            (123456.0, "1.23e+05", "123456"),
            (1234567.0, "1.23e+06", "1.23457e+06"),
            (0.381, "0.381", "0.381"),
            (40.213, "40.2", "40.213"),
            (1e+16, "1e+16", "1e+16"),
            (5e-324, "4.94e-324", "4.94066e-324"),
            (3.0, "3", "3"),
            (2.5, "2.5", "2.5"),
            (0.000123456, "0.000123", "0.000123456"),
        ] {
            assert_eq!(format_g(x, 3), three, "{x}");
            assert_eq!(format_g(x, 6), six, "{x}");
        }
    }

    /// The transfer line as flashpath's Python front end printed it
    /// before dd moved into the core (its _si/_iec helpers run on these
    /// numbers): byte for byte.
    #[test]
    fn copied_line_is_unchanged() {
        for (bytes, ms, line) in [
            (
                83886080,
                381,
                "83886080 bytes (83.9 MB, 80 MiB) copied, 0.381 s, 220 MB/s",
            ),
            (
                83886080,
                217,
                "83886080 bytes (83.9 MB, 80 MiB) copied, 0.217 s, 387 MB/s",
            ),
            (
                8192000,
                13,
                "8192000 bytes (8.19 MB, 7.81 MiB) copied, 0.013 s, 630 MB/s",
            ),
            (3, 1, "3 bytes (3 bytes, 3 bytes) copied, 0.001 s, 3 kB/s"),
            (
                100,
                1,
                "100 bytes (100 bytes, 100 bytes) copied, 0.001 s, 100 kB/s",
            ),
            (
                104857600000,
                40213,
                "104857600000 bytes (105 GB, 97.7 GiB) copied, 40.213 s, 2.61 GB/s",
            ),
            (0, 0, "0 bytes (0 bytes, 0 bytes) copied, 0 s, 0 bytes/s"),
            (
                999,
                0,
                "999 bytes (999 bytes, 999 bytes) copied, 0 s, 0 bytes/s",
            ),
            (
                1000,
                1,
                "1000 bytes (1 kB, 1000 bytes) copied, 0.001 s, 1 MB/s",
            ),
            (
                1023,
                7,
                "1023 bytes (1.02 kB, 1023 bytes) copied, 0.007 s, 146 kB/s",
            ),
            (
                1024,
                1000,
                "1024 bytes (1.02 kB, 1 KiB) copied, 1 s, 1.02 kB/s",
            ),
            (
                10747904,
                3,
                "10747904 bytes (10.7 MB, 10.2 MiB) copied, 0.003 s, 3.58 GB/s",
            ),
            (
                1125000,
                8,
                "1125000 bytes (1.12 MB, 1.07 MiB) copied, 0.008 s, 141 MB/s",
            ),
            (
                999500,
                1,
                "999500 bytes (1e+03 kB, 976 KiB) copied, 0.001 s, 1e+03 MB/s",
            ),
            (
                999499999,
                999,
                "999499999 bytes (999 MB, 953 MiB) copied, 0.999 s, 1 GB/s",
            ),
            (
                4096,
                1234567,
                "4096 bytes (4.1 kB, 4 KiB) copied, 1234.57 s, 3.31776 bytes/s",
            ),
            (
                1099511627776,
                86400000,
                "1099511627776 bytes (1.1e+03 GB, 1.02e+03 GiB) copied, 86400 s, 12.7 MB/s",
            ),
            (
                512,
                100000000,
                "512 bytes (512 bytes, 512 bytes) copied, 100000 s, 0.00512 bytes/s",
            ),
            (
                1536,
                3,
                "1536 bytes (1.54 kB, 1.5 KiB) copied, 0.003 s, 512 kB/s",
            ),
        ] {
            assert_eq!(copied_line(bytes, ms), line);
        }
    }
}
