//! Block I/O traces captured by other tools, read as one stream of
//! [`TraceRecord`]s: blktrace binary files and blkparse text (the I/O is
//! the queue event `Q`, as fio's blktrace.c `queue_trace` takes it, with the
//! completion `C` kept when the trace has it), SNIA/MSR Cambridge CSV,
//! MQSim and DiskSim ASCII, blkreplay `.load`, UMass/SPC, Alibaba 2020 and
//! Tencent CBS CSV, and any other delimited text through a column mapping
//! ([`delimited::Mapping`]). fio's own iologs keep their reader
//! (`workload::iolog`); [`detect`] names them so a caller can hand them on.
//!
//! Every reader streams: it holds one line (or one binary record per CPU
//! file) and, for blktrace, the queued I/Os still waiting for their
//! completion (bounded by [`MAX_PENDING`]), never the whole trace. Bad input
//! is one [`InputError`] naming the file, the line or record, and what is
//! wrong.

pub mod alibaba;
pub mod blkparse;
pub mod blkreplay;
pub mod blktrace;
pub mod delimited;
pub mod disksim;
pub mod events;
pub mod merge;
pub mod mqsim;
pub mod msr;
pub mod replay;
pub mod spc;
pub mod tencent;

use crate::error::{quote, InputError, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// What a trace record asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Read,
    Write,
    /// A cache flush (blktrace's FLUSH category with no data).
    Flush,
    /// Discard / trim.
    Trim,
    /// fsync from an application-level trace (fio iolog `sync`).
    Sync,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Trim => "trim",
            Op::Sync => "sync",
        }
    }
}

/// One I/O of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// When it arrived, in ns, on the trace's own clock (absolute for
    /// blktrace binaries and FILETIME traces, from the trace's start for
    /// blkparse text). Replay uses differences only.
    pub time_ns: u64,
    /// The device or volume: `major << 20 | minor` for blktrace (the
    /// kernel's dev_t), the device/volume/ASU column for the others.
    pub device: u32,
    /// Byte offset on the device.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    pub op: Op,
    /// When the trace saw it complete (ns, same clock), if it did.
    pub completion_ns: Option<u64>,
    /// Where it is in the file: line (text) or record (binary), 1-based.
    pub at: u64,
}

impl TraceRecord {
    /// Recorded latency: completion less arrival.
    pub fn latency_ns(&self) -> Option<u64> {
        self.completion_ns.map(|c| c.saturating_sub(self.time_ns))
    }
}

/// Records one after another; `Ok(None)` at the end.
pub trait TraceReader {
    fn next_record(&mut self) -> Result<Option<TraceRecord>>;
    /// Lines (text) or binary records read so far, events and notes
    /// included: what a reader's speed is measured in.
    fn consumed(&self) -> u64;
    /// Which of a block trace's events were replayed as its I/Os
    /// (`events::Source`); None for formats with one record per I/O.
    fn events_used(&self) -> Option<&'static str> {
        None
    }
}

/// The trace formats flashpath reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Blktrace,
    Blkparse,
    /// blkparse text printed with `-f FORMAT` (given as the format's
    /// `--blkparse-format`, or `--columns` with `--format blkparse`).
    BlkparseFormat(blkparse::LineFormat),
    Msr,
    Mqsim,
    Disksim,
    Blkreplay,
    Spc,
    Alibaba,
    Tencent,
    /// Any delimited text, given its column mapping.
    Csv(delimited::Mapping),
    /// fio's own iolog (read by `workload::iolog`).
    Iolog,
}

/// The names `--format` takes, with what each is.
pub const FORMAT_NAMES: &[(&str, &str)] = &[
    (
        "blktrace",
        "blktrace binary per-CPU files (.blktrace.N) or blkparse -d dumps",
    ),
    ("blkparse", "blkparse text in its default output format"),
    ("msr", "SNIA IOTTA / MSR Cambridge CSV"),
    (
        "mqsim",
        "MQSim ASCII: time_ns device lba_sectors sectors type(0=W,1=R)",
    ),
    (
        "disksim",
        "DiskSim ASCII: time_ms device block blocks flags(bit0=read)",
    ),
    (
        "blkreplay",
        "blkreplay .load: start ; sector ; sectors ; op ; delay ; duration",
    ),
    ("spc", "UMass / SPC: ASU,LBA,Size,Opcode,Timestamp"),
    (
        "alibaba",
        "Alibaba 2020 block traces: device,opcode,offset,length,timestamp_us",
    ),
    (
        "tencent",
        "Tencent CBS: timestamp_s,offset_sectors,sectors,type(0=R,1=W),volume",
    ),
    ("csv", "any delimited text, with --columns"),
    ("iolog", "fio's iolog, versions 2 and 3"),
];

impl Format {
    pub fn name(&self) -> &'static str {
        match self {
            Format::Blktrace => "blktrace",
            Format::Blkparse | Format::BlkparseFormat(_) => "blkparse",
            Format::Msr => "msr",
            Format::Mqsim => "mqsim",
            Format::Disksim => "disksim",
            Format::Blkreplay => "blkreplay",
            Format::Spc => "spc",
            Format::Alibaba => "alibaba",
            Format::Tencent => "tencent",
            Format::Csv(_) => "csv",
            Format::Iolog => "iolog",
        }
    }

    /// `--format NAME` (with `columns` for `csv`).
    pub fn from_name(name: &str, columns: Option<&str>) -> std::result::Result<Format, String> {
        let f = match name {
            "blktrace" => Format::Blktrace,
            "blkparse" if columns.is_some() => {
                return blkparse::LineFormat::parse(columns.unwrap_or_default())
                    .map(Format::BlkparseFormat)
            }
            "blkparse" => Format::Blkparse,
            "msr" => Format::Msr,
            "mqsim" => Format::Mqsim,
            "disksim" => Format::Disksim,
            "blkreplay" => Format::Blkreplay,
            "spc" | "umass" => Format::Spc,
            "alibaba" => Format::Alibaba,
            "tencent" => Format::Tencent,
            "iolog" => Format::Iolog,
            "csv" => {
                let c = columns.ok_or_else(|| {
                    "format 'csv' needs a column mapping (--columns, e.g. \
                     'time=0:us,op=1:R/W,offset=2:bytes,len=3:bytes')"
                        .to_string()
                })?;
                return delimited::Mapping::parse(c).map(Format::Csv);
            }
            other => {
                return Err(format!(
                    "unknown trace format {}; formats: {}",
                    quote(other),
                    FORMAT_NAMES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        };
        if columns.is_some() {
            return Err(format!(
                "a column mapping is for format 'csv' (and a -f format string for \
                 'blkparse'), not '{}'",
                f.name()
            ));
        }
        Ok(f)
    }
}

/// The first bytes detection looks at.
const SNIFF_BYTES: usize = 64 * 1024;

/// The format of the trace at `path`, when its first bytes leave no
/// doubt; otherwise a message asking for `--format` that says what it
/// could be.
pub fn detect(path: &Path) -> Result<Format> {
    let name = path.display().to_string();
    // A blktrace stem (`sdb` for sdb.blktrace.N), as blkparse -i takes it.
    if !path.exists()
        && blktrace::trace_files(path)
            .first()
            .is_some_and(|p| p != path)
    {
        return Ok(Format::Blktrace);
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    let file = open_file(path)?;
    file.take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| InputError::new(&name, None, format!("cannot read the trace: {e}")))?;
    detect_bytes(&name, &head)
}

/// [`detect`] on the first bytes of a file named `name`.
pub fn detect_bytes(name: &str, head: &[u8]) -> Result<Format> {
    if head.len() >= 4 && blktrace::magic_endian(&head[..4]).is_some() {
        return Ok(Format::Blktrace);
    }
    if head.starts_with(b"fio version ") {
        return Ok(Format::Iolog);
    }
    // A compressed file (gzip's 1f 8b, zstd's 28 b5 2f fd, xz's fd 37 7a
    // 58 5a 00):
    // fio 3.33 reads none (iolog.c init_iolog_read opens it as text and
    // fails the job: "iolog version 1 is no longer supported"; its
    // log_compression is for the logs it writes), and neither does
    // flashpath.
    const COMPRESSED: [(&[u8], &str); 3] = [
        (b"\x1f\x8b", "gzip"),
        (b"\x28\xb5\x2f\xfd", "zstd"),
        (b"\xfd7zXZ\0", "xz"),
    ];
    if let Some((_, kind)) = COMPRESSED.iter().find(|(m, _)| head.starts_with(m)) {
        return Err(InputError::new(
            name,
            None,
            format!(
                "a {kind}-compressed file: decompress it first (fio 3.33 reads no compressed \
                 iolog or trace either: \"iolog version 1 is no longer supported\")"
            ),
        ));
    }
    // Only whole lines: the last one may be cut by the sniff window.
    let text = String::from_utf8_lossy(head);
    let mut lines: Vec<&str> = text.lines().collect();
    if head.len() >= SNIFF_BYTES {
        lines.pop();
    }
    let data: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .take(50)
        .collect();
    if data.is_empty() {
        return Err(InputError::new(
            name,
            None,
            "the trace is empty (no record in its first bytes)",
        ));
    }
    if blkparse::looks_like(&data) {
        return Ok(Format::Blkparse);
    }
    if blkreplay::looks_like(&lines) {
        return Ok(Format::Blkreplay);
    }
    let candidates: Vec<Format> = [
        (msr::looks_like(&data), Format::Msr),
        (spc::looks_like(&data), Format::Spc),
        (alibaba::looks_like(&data), Format::Alibaba),
        (tencent::looks_like(&data), Format::Tencent),
        (mqsim::looks_like(&data), Format::Mqsim),
        (disksim::looks_like(&data), Format::Disksim),
    ]
    .into_iter()
    .filter_map(|(ok, f)| ok.then_some(f))
    .collect();
    match candidates.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(InputError::new(
            name,
            None,
            format!(
                "cannot tell the trace's format from its first lines (the first is {}): not \
                 a fio iolog (whose first line is 'fio version 3 iolog') nor a block trace \
                 flashpath detects; give its format with flashpath replay --format ({})",
                quote(data[0]),
                FORMAT_NAMES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
        many => Err(InputError::new(
            name,
            None,
            format!(
                "the trace's first lines fit several formats ({}); give one with flashpath \
                 replay --format",
                many.iter().map(Format::name).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// What a path that exists but is no regular file is, for messages.
fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// A trace must be a regular file: it is read twice (once to check it,
/// once as it replays), which a FIFO cannot give and a device such as
/// `/dev/zero` would not end. Checked with `stat` before any open, so a
/// FIFO without a writer never blocks. A path that does not exist passes
/// (its open says so, or it is a blktrace stem).
pub fn check_regular(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) => match not_a_file(&m) {
            None => Ok(()),
            Some(what) => Err(InputError::new(
                path.display().to_string(),
                None,
                format!(
                    "is {what}, not a trace file: a trace is read twice (once to check it, \
                     once as it replays), so it must be a regular file; copy it to one first"
                ),
            )),
        },
        Err(_) => Ok(()),
    }
}

fn open_file(path: &Path) -> Result<std::fs::File> {
    let name = path.display().to_string();
    check_regular(path)?;
    std::fs::File::open(path)
        .map_err(|e| InputError::new(&name, None, format!("cannot open the trace: {e}")))
}

/// Buffer per open file: large reads keep the readers near memory speed.
const READ_BUFFER: usize = 256 * 1024;

/// A reader of the trace at `path` in `format` (not `Iolog`, which has
/// its own reader); a blktrace per-CPU file brings its siblings
/// ([`blktrace::trace_files`]).
pub fn open(path: &Path, format: &Format) -> Result<Box<dyn TraceReader>> {
    open_with(path, format, true, true)
}

/// [`open`], with a blktrace per-CPU file `NAME.blktrace.N` read with
/// every `NAME.blktrace.M` beside it (`per_cpu_files`, as blkparse -i NAME)
/// or alone (as fio's read_iolog reads it), and a blktrace write with a
/// preflush kept a write (`preflush_writes`, as blkparse counts it) or
/// made the flush fio's blktrace.c makes it (its data dropped).
pub fn open_with(
    path: &Path,
    format: &Format,
    per_cpu_files: bool,
    preflush_writes: bool,
) -> Result<Box<dyn TraceReader>> {
    let name = path.display().to_string();
    if *format == Format::Blktrace {
        let r = if per_cpu_files {
            blktrace::BlktraceReader::open(path)?
        } else {
            blktrace::BlktraceReader::open_one(path)?
        };
        return Ok(Box::new(if preflush_writes {
            r
        } else {
            r.with_fio_flushes()
        }));
    }
    let input = BufReader::with_capacity(READ_BUFFER, open_file(path)?);
    open_text(&name, Box::new(input), format)
}

/// A text trace reader over `input`, named `name` in messages.
pub fn open_text(
    name: &str,
    input: Box<dyn BufRead>,
    format: &Format,
) -> Result<Box<dyn TraceReader>> {
    let lines = Lines::new(name, input);
    Ok(match format {
        Format::Blkparse => Box::new(blkparse::BlkparseReader::new(lines)),
        Format::BlkparseFormat(f) => {
            Box::new(blkparse::BlkparseReader::with_format(lines, f.clone()))
        }
        Format::Msr => Box::new(delimited::DelimitedReader::new(lines, msr::mapping())),
        Format::Mqsim => Box::new(delimited::DelimitedReader::new(lines, mqsim::mapping())),
        Format::Disksim => Box::new(delimited::DelimitedReader::new(lines, disksim::mapping())),
        Format::Blkreplay => Box::new(delimited::DelimitedReader::new(lines, blkreplay::mapping())),
        Format::Spc => Box::new(delimited::DelimitedReader::new(lines, spc::mapping())),
        Format::Alibaba => Box::new(delimited::DelimitedReader::new(lines, alibaba::mapping())),
        Format::Tencent => Box::new(delimited::DelimitedReader::new(lines, tencent::mapping())),
        Format::Csv(m) => Box::new(delimited::DelimitedReader::new(lines, m.clone())),
        Format::Blktrace | Format::Iolog => {
            return Err(InputError::new(
                name,
                None,
                format!("format '{}' is not a text trace", format.name()),
            ))
        }
    })
}

/// The longest line a text trace may have: real ones are under 200 bytes;
/// a binary file read as text must not grow one line until memory ends.
pub const MAX_LINE: usize = 64 * 1024;

/// Lines of a text trace, one buffer reused, numbered from 1.
pub struct Lines {
    pub name: String,
    input: Box<dyn BufRead>,
    buf: Vec<u8>,
    end: usize,
    pub line: u64,
}

impl Lines {
    pub fn new(name: &str, input: Box<dyn BufRead>) -> Lines {
        Lines {
            name: name.to_string(),
            input,
            buf: Vec::with_capacity(256),
            end: 0,
            line: 0,
        }
    }

    /// Move to the next line; false at the end.
    pub fn advance(&mut self) -> Result<bool> {
        self.buf.clear();
        self.line += 1;
        let n = (&mut self.input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| self.error(format!("cannot read the trace: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        if self.buf.len() > MAX_LINE {
            return Err(self.error(format!(
                "a line longer than {MAX_LINE} bytes: not a text trace of this format"
            )));
        }
        let mut end = self.buf.len();
        if end > 0 && self.buf[end - 1] == b'\n' {
            end -= 1;
        }
        if end > 0 && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        self.end = end;
        Ok(true)
    }

    /// The current line without its end (`\n`, `\r\n`).
    pub fn current(&self) -> &[u8] {
        &self.buf[..self.end]
    }

    /// An error at the current line.
    pub fn error(&self, message: impl Into<String>) -> InputError {
        InputError::new(&self.name, Some(line_u32(self.line)), message)
    }
}

/// A line number as the error type keeps it (past 2^32 lines: the last).
pub fn line_u32(line: u64) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// Bytes quoted in a message (lossy UTF-8).
pub fn quote_bytes(b: &[u8]) -> String {
    quote(&String::from_utf8_lossy(b))
}

/// A decimal unsigned integer, all of `s`.
#[inline]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// A non-negative decimal (`12`, `12.5`, `.5`) times `ns_per_unit`, in
/// whole ns (digits past ns are cut), exactly: no floating point, so a
/// FILETIME or a 9-digit blkparse fraction keeps every digit.
#[inline]
pub fn parse_decimal_ns(s: &[u8], ns_per_unit: u64) -> Option<u64> {
    let (int, frac) = match s.iter().position(|&c| c == b'.') {
        Some(p) => (&s[..p], &s[p + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let whole = if int.is_empty() { 0 } else { parse_u64(int)? };
    let mut ns = whole.checked_mul(ns_per_unit)?;
    if !frac.is_empty() {
        // The fraction's value in units of 10^-digits, kept to 18 digits.
        let digits = &frac[..frac.len().min(18)];
        if frac.iter().any(|c| !c.is_ascii_digit()) {
            return None;
        }
        let f = parse_u64(digits)?;
        let scale = 10u128.pow(digits.len() as u32);
        let part = u128::from(f) * u128::from(ns_per_unit) / scale;
        ns = ns.checked_add(u64::try_from(part).ok()?)?;
    }
    Some(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_keep_every_digit() {
        assert_eq!(parse_decimal_ns(b"0.000000184", 1_000_000_000), Some(184));
        assert_eq!(
            parse_decimal_ns(b"3589.919050367", 1_000_000_000),
            Some(3_589_919_050_367)
        );
        assert_eq!(parse_decimal_ns(b"13.191135", 1_000_000), Some(13_191_135));
        assert_eq!(parse_decimal_ns(b"5", 1000), Some(5000));
        assert_eq!(parse_decimal_ns(b".5", 1000), Some(500));
        assert_eq!(parse_decimal_ns(b"", 1000), None);
        assert_eq!(parse_decimal_ns(b".", 1000), None);
        assert_eq!(parse_decimal_ns(b"1.2.3", 1000), None);
        assert_eq!(parse_decimal_ns(b"-1", 1000), None);
        assert_eq!(parse_decimal_ns(b"99999999999999999999", 1000), None);
    }

    #[test]
    fn every_named_format_parses_back() {
        for (n, _) in FORMAT_NAMES {
            let cols = (*n == "csv").then_some("time=0:us,op=1:R/W,offset=2:bytes,len=3:bytes");
            assert_eq!(Format::from_name(n, cols).unwrap().name(), *n);
        }
        assert!(Format::from_name("csv", None)
            .unwrap_err()
            .contains("--columns"));
        assert!(Format::from_name("nope", None)
            .unwrap_err()
            .contains("blkparse"));
    }
}
