//! blkparse text in its default output format (blkparse.1, "DEFAULT
//! OUTPUT"; blkparse 1.2.0):
//!
//! ```text
//! 259,0    1        2     0.000000184 21279  Q  RA 2348060440 + 8 [fio]
//! maj,min  cpu  sequence  secs.nsecs   pid  act rwbs  sector + sectors [comm]
//! ```
//!
//! Time is from the trace's first event; sectors are 512 bytes. The tail
//! depends on the action: `sector + len [comm]`, `sector + len <- (maj,min)
//! sector` (remap `A`), `N [comm]` (plug, unplug with a count), `[comm]`
//! (a flush `Q` has no sector), `sector [err]` or `N [err]` (a completion
//! without length). Lines starting with `#` (headers added by hand) and
//! the summary blkparse appends (per-CPU and Total blocks, Throughput,
//! Events, Skips, `Input file ... added`) are not events. The I/Os are the
//! `Q` events with their `C`, as [`super::events`] says.

use super::events::{next_assembled, Assembler, Event, EventSteps, Kind};
use super::{parse_decimal_ns, parse_u64, quote_bytes, Lines, Op, TraceReader, TraceRecord};
use crate::error::Result;

/// The actions blkparse prints (blkparse.1 "TRACE ACTIONS" and
/// blkparse_fmt.c): A remap, B bounce, C complete, D issue, F front merge,
/// G get request, I insert, M back merge, P plug, Q queue, S sleep, T
/// unplug by timer, U unplug, X split, m message; UT is the timer unplug
/// in the default output, R requeue; Z zone is newer.
const ACTIONS: &[&[u8]] = &[
    b"A", b"B", b"C", b"D", b"F", b"G", b"I", b"M", b"P", b"Q", b"R", b"S", b"T", b"U", b"UT",
    b"X", b"m", b"Z",
];

/// How blkparse's closing summary begins (blkparse.c
/// show_device_and_cpu_stats and friends): nothing after it is an event.
const SUMMARY: &[&[u8]] = &[
    b"CPU",
    b"Total",
    b"Throughput",
    b"Events",
    b"Skips",
    b"Input file",
];

/// Whether these first data lines are blkparse's default output.
pub fn looks_like(lines: &[&str]) -> bool {
    let events = lines
        .iter()
        .filter(|l| split_event(l.as_bytes()).is_some())
        .count();
    events > 0 && events * 2 >= lines.len()
}

/// The fields of an event line, when it has the shape of one: `maj,min`
/// then cpu, sequence, time, pid as numbers, then the action.
fn split_event(line: &[u8]) -> Option<([&[u8]; 10], usize)> {
    // One pass over the bytes, up to the fields an I/O event needs
    // (`sector + len` ends at the tenth); the rest of the line (comm,
    // remap source) is not read.
    let mut f: [&[u8]; 10] = [&[]; 10];
    let mut n = 0;
    let mut i = 0;
    let len = line.len();
    while n < f.len() {
        while i < len && (line[i] == b' ' || line[i] == b'\t') {
            i += 1;
        }
        if i == len {
            break;
        }
        let start = i;
        while i < len && line[i] != b' ' && line[i] != b'\t' {
            i += 1;
        }
        f[n] = &line[start..i];
        n += 1;
    }
    if n < 6 {
        return None;
    }
    let comma = f[0].iter().position(|c| *c == b',')?;
    parse_u64(&f[0][..comma])?;
    parse_u64(&f[0][comma + 1..])?;
    parse_u64(f[1])?;
    parse_u64(f[2])?;
    if !f[3].contains(&b'.') {
        return None;
    }
    Some((f, n))
}

/// A field of blkparse's `-f` format (blkparse.1 "OUTPUT DESCRIPTION AND
/// FORMATTING", blkparse_fmt.c `print_field`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// `%a`: the action (`Q`, `D`, `C`, ...).
    Action,
    /// `%d`: the RWBS field.
    Rwbs,
    /// `%D`: `maj,min`; `%M`, `%m`: the major and minor alone.
    Device,
    Major,
    Minor,
    /// `%S`: the sector; `%n`: sectors; `%N`: bytes.
    Sector,
    Sectors,
    Bytes,
    /// `%T`: seconds; `%t`: the nanoseconds within the second.
    Secs,
    Nsecs,
    /// `%C` command, `%c` CPU, `%e` error, `%p` pid, `%P` payload, `%s`
    /// sequence, `%u` elapsed us, `%U` payload integer, `%z` wall clock:
    /// read past, not needed for a replay.
    Command,
    Other,
}

/// One piece of a `-f` format: text printed as is, or a field.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Field(Field),
}

/// A blkparse `-f`/`--format` string (one format for every event; `-F`'s
/// per-action formats are given as the one their replayed events use): how
/// its lines are read back. Made by [`LineFormat::parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineFormat {
    /// As given, for messages.
    pub text: String,
    pieces: Vec<Piece>,
}

impl LineFormat {
    /// A `-f` string as blkparse takes it (`%` fields with an optional
    /// width, `\n` `\t` `\r` `\b` `\\` escapes, one event a line); a field
    /// a replay needs and the format lacks is named.
    pub fn parse(text: &str) -> std::result::Result<LineFormat, String> {
        let mut pieces: Vec<Piece> = Vec::new();
        let mut lit = String::new();
        let mut chars = text.chars().peekable();
        let mut ended = false;
        let bad = |m: String| format!("blkparse format {}: {m}", crate::error::quote(text));
        while let Some(c) = chars.next() {
            if ended {
                if c == '\n' || (c == '\\' && chars.peek() == Some(&'n')) {
                    return Err(bad("one event must be one line: a second line \
                                    break was found"
                        .into()));
                }
                if !c.is_whitespace() {
                    return Err(bad("one event must be one line: text after its \
                                    line break"
                        .into()));
                }
                continue;
            }
            match c {
                '\\' => match chars.next() {
                    Some('n') => ended = true,
                    Some('t') => lit.push('\t'),
                    Some('r') | Some('b') => {}
                    Some('\\') => lit.push('\\'),
                    Some(o) => {
                        lit.push('\\');
                        lit.push(o);
                    }
                    None => lit.push('\\'),
                },
                '\n' => ended = true,
                '%' => {
                    // blkparse_fmt.c: digits (and a '-') give the width.
                    while chars
                        .peek()
                        .is_some_and(|c| c.is_ascii_digit() || *c == '-')
                    {
                        chars.next();
                    }
                    let Some(f) = chars.next() else {
                        return Err(bad("it ends inside a field ('%' without a letter)".into()));
                    };
                    let field = match f {
                        'a' => Field::Action,
                        'd' => Field::Rwbs,
                        'D' => Field::Device,
                        'M' => Field::Major,
                        'm' => Field::Minor,
                        'S' => Field::Sector,
                        'n' => Field::Sectors,
                        'N' => Field::Bytes,
                        'T' => Field::Secs,
                        't' => Field::Nsecs,
                        'C' => Field::Command,
                        'c' | 'e' | 'p' | 'P' | 's' | 'u' | 'U' | 'z' => Field::Other,
                        '%' => {
                            lit.push('%');
                            continue;
                        }
                        other => {
                            return Err(bad(format!(
                                "unknown field %{other} (blkparse's fields: %a %c %C %d %D %e \
                                 %m %M %n %N %p %P %s %S %t %T %u %U %z)"
                            )))
                        }
                    };
                    if !lit.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut lit)));
                    }
                    if pieces.last().is_some_and(|p| matches!(p, Piece::Field(_))) {
                        return Err(bad(format!(
                            "two fields with nothing between them (%{f} right after another): \
                             their values cannot be told apart"
                        )));
                    }
                    pieces.push(Piece::Field(field));
                }
                c => lit.push(c),
            }
        }
        if !ended {
            return Err(bad(
                "it has no line break (\\n): blkparse would print every \
                            event on one line"
                    .into(),
            ));
        }
        if !lit.is_empty() {
            pieces.push(Piece::Text(lit));
        }
        let has = |f: Field| pieces.contains(&Piece::Field(f));
        for (need, what) in [
            (Field::Action, "%a, the action (which events are the I/Os)"),
            (Field::Rwbs, "%d, the RWBS field (the direction)"),
            (Field::Sector, "%S, the sector"),
            (Field::Secs, "%T, the time in seconds"),
        ] {
            if !has(need) {
                return Err(bad(format!(
                    "a replay needs {what}, and the format has none"
                )));
            }
        }
        if !has(Field::Sectors) && !has(Field::Bytes) {
            return Err(bad(
                "a replay needs the length, %n (sectors) or %N (bytes), and the format has \
                 neither"
                    .into(),
            ));
        }
        Ok(LineFormat {
            text: text.to_string(),
            pieces,
        })
    }

    /// The fields of `line` (None: it does not have the format's shape;
    /// Err: a field's value is wrong, named).
    fn read<'a>(&self, line: &'a [u8]) -> std::result::Result<Option<Parsed<'a>>, String> {
        let mut p = Parsed::default();
        let mut i = 0;
        let skip_blanks = |i: &mut usize| {
            while *i < line.len() && (line[*i] == b' ' || line[*i] == b'\t') {
                *i += 1;
            }
        };
        for (k, piece) in self.pieces.iter().enumerate() {
            match piece {
                Piece::Text(t) => {
                    for c in t.bytes() {
                        // Padding makes the blanks around a field vary.
                        skip_blanks(&mut i);
                        if c == b' ' || c == b'\t' {
                            continue;
                        }
                        if line.get(i) != Some(&c) {
                            return Ok(None);
                        }
                        i += 1;
                    }
                }
                Piece::Field(f) => {
                    skip_blanks(&mut i);
                    // Where the field ends: at a blank, or at the next
                    // text's first character that is not one.
                    let stop = match self.pieces.get(k + 1) {
                        Some(Piece::Text(t)) => t.bytes().find(|c| *c != b' ' && *c != b'\t'),
                        _ => None,
                    };
                    let start = i;
                    let last = k + 1 == self.pieces.len();
                    // A field read past (the command, the payload's hex
                    // bytes, %z's clock) may hold blanks: it runs to the
                    // next text's mark when there is one, or to the line's
                    // end when it is last.
                    let free = matches!(f, Field::Command | Field::Other)
                        && (stop.is_some() || (*f == Field::Command && last));
                    while i < line.len() {
                        let c = line[i];
                        if Some(c) == stop && !(*f == Field::Nsecs && c == b'.') {
                            break;
                        }
                        if (c == b' ' || c == b'\t') && !free {
                            break;
                        }
                        if *f == Field::Secs && c == b'.' && stop == Some(b'.') {
                            break;
                        }
                        i += 1;
                    }
                    let v = &line[start..i];
                    // blkparse prints nothing for %P without a payload.
                    if v.is_empty() && !matches!(f, Field::Command | Field::Other) {
                        return Ok(None);
                    }
                    let num = |what: &str| {
                        parse_u64(v).ok_or_else(|| format!("{} is not {what}", quote_bytes(v)))
                    };
                    match f {
                        Field::Action => p.action = v,
                        Field::Rwbs => p.rwbs = v,
                        Field::Device => {
                            let bad = || format!("{} is not a device (maj,min)", quote_bytes(v));
                            let comma = v.iter().position(|c| *c == b',').ok_or_else(bad)?;
                            p.major = parse_u64(&v[..comma]).ok_or_else(bad)?;
                            p.minor = parse_u64(&v[comma + 1..]).ok_or_else(bad)?;
                        }
                        Field::Major => p.major = num("a major device number")?,
                        Field::Minor => p.minor = num("a minor device number")?,
                        Field::Sector => p.sector = num("a sector")?,
                        Field::Sectors => p.bytes = Some(num("a length in sectors")?),
                        Field::Bytes => p.len_bytes = Some(num("a length in bytes")?),
                        Field::Secs => p.secs = num("a time in seconds")?,
                        Field::Nsecs => p.nsecs = num("a time's nanoseconds")?,
                        Field::Command | Field::Other => {}
                    }
                }
            }
        }
        skip_blanks(&mut i);
        if i != line.len() {
            return Ok(None);
        }
        Ok(Some(p))
    }
}

/// A `-f` line's values.
#[derive(Default)]
struct Parsed<'a> {
    action: &'a [u8],
    rwbs: &'a [u8],
    major: u64,
    minor: u64,
    sector: u64,
    /// `%n`: sectors.
    bytes: Option<u64>,
    /// `%N`: bytes.
    len_bytes: Option<u64>,
    secs: u64,
    nsecs: u64,
}

pub struct BlkparseReader {
    lines: Lines,
    asm: Assembler,
    /// The summary has begun: nothing after it is an event.
    summary: bool,
    /// The previous event's time and line.
    last: Option<(u64, u64)>,
    /// The `-f` format the text was printed with (None: the default).
    format: Option<LineFormat>,
}

impl BlkparseReader {
    pub fn new(lines: Lines) -> BlkparseReader {
        BlkparseReader {
            lines,
            asm: Assembler::default(),
            summary: false,
            last: None,
            format: None,
        }
    }

    /// A reader of text blkparse printed with `-f format`.
    pub fn with_format(lines: Lines, format: LineFormat) -> BlkparseReader {
        BlkparseReader {
            format: Some(format),
            ..BlkparseReader::new(lines)
        }
    }

    /// Read one line; false at the end.
    fn read_one(&mut self) -> Result<bool> {
        let at = self.lines.line + 1;
        if !self.lines.advance()? {
            return Ok(false);
        }
        let line = self.lines.current();
        let trimmed = line.trim_ascii_start();
        if trimmed.is_empty() || trimmed[0] == b'#' || self.summary {
            return Ok(true);
        }
        let ev = match &self.format {
            None => self.default_line(line)?,
            Some(format) => match format.read(line) {
                Ok(Some(p)) => {
                    let bytes = match (p.len_bytes, p.bytes) {
                        (Some(b), _) => b,
                        (None, n) => n
                            .unwrap_or(0)
                            .checked_mul(512)
                            .ok_or_else(|| self.lines.error("the length overflows"))?,
                    };
                    let time_ns = p
                        .secs
                        .checked_mul(1_000_000_000)
                        .and_then(|t| t.checked_add(p.nsecs))
                        .ok_or_else(|| self.lines.error("the time overflows"))?;
                    self.event(
                        p.major,
                        p.minor,
                        time_ns,
                        p.action,
                        Some(p.rwbs),
                        Some((p.sector, bytes)),
                    )?
                }
                Ok(None) | Err(_) if SUMMARY.iter().any(|s| line.starts_with(s)) => {
                    self.summary = true;
                    return Ok(true);
                }
                Ok(None) => {
                    return Err(self.lines.error(format!(
                        "not a line of the blkparse format {} (--blkparse-format): {}",
                        crate::error::quote(&format.text),
                        quote_bytes(line)
                    )));
                }
                Err(m) => return Err(self.lines.error(m)),
            },
        };
        let Some((time_ns, ev)) = ev else {
            // The default output's closing summary began.
            self.summary = true;
            return Ok(true);
        };
        // blkparse prints its merged events in time order (blkparse.c
        // do_file merges the per-CPU streams by time): one that goes back
        // was edited or concatenated, and pairing its Q and C would be
        // wrong, so it is refused, not replayed out of order.
        if let Some((prev, prev_line)) = self.last.filter(|(t, _)| time_ns < *t) {
            return Err(self.lines.error(format!(
                "time {} s is before line {prev_line}'s {} s: blkparse prints events in time \
                 order, so this text was edited or joined from several runs (replay the \
                 blktrace binary files, or sort the events by time)",
                seconds(time_ns),
                seconds(prev)
            )));
        }
        self.last = Some((time_ns, at));
        if let Some(mut e) = ev {
            e.at = at;
            self.asm.push(e);
        }
        Ok(true)
    }

    /// A default-format line's event (see [`BlkparseReader::event`]).
    fn default_line(&self, line: &[u8]) -> Result<Option<(u64, Option<Event>)>> {
        let Some((f, n)) = split_event(line) else {
            if SUMMARY.iter().any(|s| line.starts_with(s)) {
                return Ok(None);
            }
            return Err(self.lines.error(format!(
                "not a blkparse event line (expected 'maj,min cpu seq secs.nsecs pid action \
                 rwbs ...'): {}",
                quote_bytes(line)
            )));
        };
        let err = |what: String| self.lines.error(what);
        let comma = f[0].iter().position(|c| *c == b',').unwrap_or(0);
        let major = parse_u64(&f[0][..comma]).unwrap_or(0);
        let minor = parse_u64(&f[0][comma + 1..]).unwrap_or(0);
        let time_ns = parse_decimal_ns(f[3], 1_000_000_000)
            .ok_or_else(|| err(format!("{} is not a time in seconds", quote_bytes(f[3]))))?;
        // `sector + len ...`, or no sector (a flush, `[comm]`), or a
        // completion's `sector [err]`.
        let span = if n >= 10 && f[8] == b"+" {
            let s = parse_u64(f[7])
                .ok_or_else(|| err(format!("{} is not a sector", quote_bytes(f[7]))))?;
            let l = parse_u64(f[9])
                .ok_or_else(|| err(format!("{} is not a length in sectors", quote_bytes(f[9]))))?;
            let bytes = l
                .checked_mul(512)
                .ok_or_else(|| err("the length overflows".into()))?;
            Some((s, bytes))
        } else {
            None
        };
        self.event(major, minor, time_ns, f[5], (n >= 7).then_some(f[6]), span)
    }

    /// An event line's values, checked: its time and the event (None: not
    /// an I/O's queue, issue or completion). `span`: sector and bytes, when
    /// the line has them.
    fn event(
        &self,
        major: u64,
        minor: u64,
        time_ns: u64,
        action: &[u8],
        rwbs: Option<&[u8]>,
        span: Option<(u64, u64)>,
    ) -> Result<Option<(u64, Option<Event>)>> {
        let err = |what: String| self.lines.error(what);
        if major >= 1 << 12 || minor >= 1 << 20 {
            return Err(err(format!(
                "device {major},{minor} is not a Linux device number (major below 4096, minor \
                 below 2^20)"
            )));
        }
        let device = ((major as u32) << 20) | minor as u32;
        if !ACTIONS.contains(&action) {
            return Err(err(format!(
                "unknown blkparse action {} (blkparse prints A B C D F G I M P Q R S T U UT X m)",
                quote_bytes(action)
            )));
        }
        let kind = match action {
            b"Q" => Kind::Queue,
            b"D" => Kind::Issue,
            b"C" => Kind::Complete,
            _ => return Ok(Some((time_ns, None))),
        };
        let Some(rwbs) = rwbs else {
            return Err(err(format!(
                "a '{}' event without its RWBS field",
                String::from_utf8_lossy(action)
            )));
        };
        let op = op_of(rwbs).ok_or_else(|| {
            err(format!(
                "{} is not an RWBS field (R, W, D, F, N with A, S, M, F flags)",
                quote_bytes(rwbs)
            ))
        })?;
        let Some(op) = op else {
            // `N`: no data direction (passthrough); fio skips these.
            return Ok(Some((time_ns, None)));
        };
        if let Some((s, bytes)) = span {
            if s.checked_mul(512)
                .and_then(|o| o.checked_add(bytes))
                .is_none()
            {
                return Err(err(format!(
                    "sector {s} + {} passes the end of any device (2^64 bytes)",
                    bytes / 512
                )));
            }
        }
        // A flush carries no data: `-f` prints its sector and length as 0
        // where the default output leaves them out.
        let span = span.filter(|(_, b)| *b > 0 || op != Op::Flush);
        Ok(Some((
            time_ns,
            Some(Event {
                time_ns,
                device,
                kind,
                sector: span.map(|(s, _)| s),
                bytes: span.map_or(0, |(_, b)| b),
                op,
                at: 0,
            }),
        )))
    }
}

/// ns as blkparse prints seconds (`secs.nsecs`).
fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The direction in an RWBS field (blk_fill_rwbs): an optional leading `F`
/// (preflush), then `W`, `R`, `D` (discard), `E`/`DE` (secure erase), `F`
/// (flush op), `N` (none); then the flags F (FUA), A, S, M. `Some(None)`
/// for `N`; None when it is not an RWBS field.
fn op_of(rwbs: &[u8]) -> Option<Option<Op>> {
    if rwbs.is_empty() || rwbs.len() > 8 {
        return None;
    }
    if !rwbs.iter().all(|c| b"FWRDENASMP".contains(c)) {
        return None;
    }
    let body = if rwbs[0] == b'F' && rwbs.len() > 1 {
        &rwbs[1..]
    } else {
        rwbs
    };
    Some(match body[0] {
        b'W' => Some(Op::Write),
        b'R' => Some(Op::Read),
        b'D' | b'E' => Some(Op::Trim),
        b'N' if rwbs[0] == b'F' => Some(Op::Flush),
        b'N' => None,
        b'F' => Some(Op::Flush),
        _ => Some(Op::Flush),
    })
}

impl EventSteps for BlkparseReader {
    fn assembler(&mut self) -> &mut Assembler {
        &mut self.asm
    }
    fn step(&mut self) -> Result<bool> {
        self.read_one()
    }
}

impl TraceReader for BlkparseReader {
    fn consumed(&self) -> u64 {
        self.lines.line
    }

    fn events_used(&self) -> Option<&'static str> {
        Some(self.asm.source().name())
    }

    fn next_record(&mut self) -> Result<Option<TraceRecord>> {
        next_assembled(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<TraceRecord>> {
        let lines = Lines::new(
            "t.txt",
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        );
        let mut r = BlkparseReader::new(lines);
        let mut v = Vec::new();
        while let Some(x) = r.next_record()? {
            v.push(x);
        }
        Ok(v)
    }

    #[test]
    fn queue_events_with_their_completions() {
        let t = "259,0    1        1     0.000000000 21279  A  RA 2348060440 + 8 <- (259,3) 2345510680\n\
                 259,0    1        2     0.000000184 21279  Q  RA 2348060440 + 8 [(null)]\n\
                 259,0    1        6     0.000001676 21279  D  RA 2348060440 + 8 [(null)]\n\
                 259,0    1        7     0.000056992     0  C  RA 2348060440 + 8 [0]\n\
                 CPU1 (259,0):\n Reads Queued:         963,     3852KiB\n";
        let v = read(t).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].op, Op::Read);
        assert_eq!(v[0].offset, 2348060440 * 512);
        assert_eq!(v[0].len, 4096);
        assert_eq!(v[0].time_ns, 184);
        assert_eq!(v[0].latency_ns(), Some(56_992 - 184));
        assert_eq!(v[0].device, 259 << 20);
        assert_eq!(v[0].at, 2);
    }

    fn read_with(fmt: &str, text: &str) -> Result<Vec<TraceRecord>> {
        let lines = Lines::new(
            "t.txt",
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        );
        let f = LineFormat::parse(fmt).unwrap();
        let mut r = BlkparseReader::with_format(lines, f);
        let mut v = Vec::new();
        while let Some(x) = r.next_record()? {
            v.push(x);
        }
        Ok(v)
    }

    /// blkparse -f '%D %2a %3d %S %n %T.%t\n' and blkreplay's format, as
    /// the real blkparse prints the sample (padded fields included).
    #[test]
    fn formatted_lines_read_as_the_default_ones() {
        let v = read_with(
            "%D %2a %3d %S %n %T.%t\\n",
            "259,0    Q  RA 2348060440 8 0.000000184\n\
             259,0    D  RA 2348060440 8 0.000001676\n\
             259,0    C  RA 2348060440 8 0.000056992\n",
        )
        .unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].offset, v[0].len), (2348060440 * 512, 4096));
        assert_eq!(v[0].time_ns, 184);
        assert_eq!(v[0].latency_ns(), Some(56_992 - 184));
        assert_eq!((v[0].device, v[0].at), (259 << 20, 1));
        let v = read_with(
            "%2a ; %6T.%9t ; %12S ; %4n ; %3d ; 0.0 ; 0.0\n",
            " Q ;      0.000000184 ;   2348060440 ;    8 ;  WS ; 0.0 ; 0.0\n",
        )
        .unwrap();
        assert_eq!((v[0].op, v[0].device), (Op::Write, 0));
    }

    /// Fields read past may be empty (%P without a payload) or hold blanks
    /// (a padded %-12C, a command with a space, %P's hex bytes) when a
    /// mark follows them, as blkparse 1.3 prints every field.
    #[test]
    fn empty_and_blank_holding_fields_read_past() {
        let fmt = "%a|%d|%S|%n|%N|%T|%t|%e|%P|%U|%z|%-12C|%M|%m|%c|%s|%p|%D\\n";
        let v = read_with(
            fmt,
            "Q|RA|2348060440|8|4096|0|000000184|0||1634624544|00:00:00.000000|(null)      \
             |259|0|1|2|21279|259,0  \n\
             C|RA|2348060440|8|4096|0|000056992|0|00 01 ff|1953788019|00:00:00.000056|Web \
             Content |259|0|1|7|0|259,0  \n",
        )
        .unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].offset, v[0].len), (2348060440 * 512, 4096));
        assert_eq!(v[0].latency_ns(), Some(56_992 - 184));
        assert_eq!(v[0].device, 259 << 20);
        // A required field may not be empty.
        let e = read_with(fmt, "Q|RA||8|4096|0|000000184|0||1|z|c|259|0|1|2|3|259,0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.txt:1: not a line of the blkparse format"),
            "{e}"
        );
    }

    #[test]
    fn a_format_names_what_it_lacks_or_cannot_tell_apart() {
        let cases = [
            ("%a %d %T.%t\\n", "a replay needs %S, the sector"),
            ("%a %d %S %T\\n", "the length, %n (sectors) or %N (bytes)"),
            ("%a %d %S %n %T", "no line break"),
            ("%a %d %S %n %T\\n%p\\n", "one event must be one line"),
            ("%a%d %S %n %T\\n", "two fields with nothing between them"),
            ("%a %d %S %n %T %q\\n", "unknown field %q"),
        ];
        for (fmt, want) in cases {
            let e = LineFormat::parse(fmt).unwrap_err();
            assert!(e.contains(want), "{fmt}: {e}");
        }
        let e = read_with("%a %d %S %n %T.%t\\n", "Q R 8 8 0.1\nQ R x 8 0.2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.txt:2: 'x' is not a sector"), "{e}");
        let e = read_with("%a %d %S %n %T.%t\\n", "Q R 8 8 0.1 extra\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.txt:1: not a line of the blkparse format"),
            "{e}"
        );
    }

    #[test]
    fn bad_lines_name_their_line() {
        let cases = [
            (
                "259,0 1 1 0.1 5 Q W 8 + 8 [a]\nhello world\n",
                ":2:",
                "not a blkparse event",
            ),
            (
                "259,0 1 1 0.1 5 K W 8 + 8 [a]\n",
                ":1:",
                "unknown blkparse action 'K'",
            ),
            ("259,0 1 1 0.1 5 Q W x + 8 [a]\n", ":1:", "not a sector"),
            ("259,0 1 1 0.1 5 Q QQ 8 + 8 [a]\n", ":1:", "RWBS"),
            ("99999,0 1 1 0.1 5 Q W 8 + 8 [a]\n", ":1:", "device"),
        ];
        for (t, line, what) in cases {
            let e = read(t).unwrap_err().to_string();
            assert!(e.contains(&format!("t.txt{line}")), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }
}
