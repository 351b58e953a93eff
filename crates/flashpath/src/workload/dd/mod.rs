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

mod number;
mod summary;

use number::{parse_integer, INVALID, OVERFLOW};
use summary::copied_line;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
