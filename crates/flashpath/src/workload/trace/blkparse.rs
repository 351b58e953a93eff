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

pub struct BlkparseReader {
    lines: Lines,
    asm: Assembler,
    /// The summary has begun: nothing after it is an event.
    summary: bool,
    /// The previous event's time and line.
    last: Option<(u64, u64)>,
}

impl BlkparseReader {
    pub fn new(lines: Lines) -> BlkparseReader {
        BlkparseReader {
            lines,
            asm: Assembler::default(),
            summary: false,
            last: None,
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
        let Some((f, n)) = split_event(line) else {
            // blkparse's closing summary (blkparse.c show_device_and_cpu_stats
            // and friends).
            const SUMMARY: &[&[u8]] = &[
                b"CPU",
                b"Total",
                b"Throughput",
                b"Events",
                b"Skips",
                b"Input file",
            ];
            if SUMMARY.iter().any(|s| line.starts_with(s)) {
                self.summary = true;
                return Ok(true);
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
        if major >= 1 << 12 || minor >= 1 << 20 {
            return Err(err(format!(
                "device {} is not a Linux device number (major below 4096, minor below 2^20)",
                quote_bytes(f[0])
            )));
        }
        let device = ((major as u32) << 20) | minor as u32;
        let time_ns = parse_decimal_ns(f[3], 1_000_000_000)
            .ok_or_else(|| err(format!("{} is not a time in seconds", quote_bytes(f[3]))))?;
        // blkparse prints its merged events in time order (blkparse.c
        // do_file merges the per-CPU streams by time): one that goes back
        // was edited or concatenated, and pairing its Q and C would be
        // wrong, so it is refused, not replayed out of order.
        if let Some((prev, prev_line)) = self.last.filter(|(t, _)| time_ns < *t) {
            return Err(err(format!(
                "time {} s is before line {prev_line}'s {} s: blkparse prints events in time \
                 order, so this text was edited or joined from several runs (replay the \
                 blktrace binary files, or sort the events by time)",
                String::from_utf8_lossy(f[3]),
                seconds(prev)
            )));
        }
        self.last = Some((time_ns, at));
        let action = f[5];
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
            _ => return Ok(true),
        };
        if n < 7 {
            return Err(err(format!(
                "a '{}' event without its RWBS field",
                String::from_utf8_lossy(action)
            )));
        }
        let rwbs = f[6];
        let op = op_of(rwbs).ok_or_else(|| {
            err(format!(
                "{} is not an RWBS field (R, W, D, F, N with A, S, M, F flags)",
                quote_bytes(rwbs)
            ))
        })?;
        let Some(op) = op else {
            // `N`: no data direction (passthrough); fio skips these.
            return Ok(true);
        };
        // `sector + len ...`, or no sector (a flush, `[comm]`), or a
        // completion's `sector [err]`.
        let (sector, bytes) = if n >= 10 && f[8] == b"+" {
            let s = parse_u64(f[7])
                .ok_or_else(|| err(format!("{} is not a sector", quote_bytes(f[7]))))?;
            let l = parse_u64(f[9])
                .ok_or_else(|| err(format!("{} is not a length in sectors", quote_bytes(f[9]))))?;
            let bytes = l
                .checked_mul(512)
                .ok_or_else(|| err("the length overflows".into()))?;
            if s.checked_mul(512)
                .and_then(|o| o.checked_add(bytes))
                .is_none()
            {
                return Err(err(format!(
                    "sector {s} + {l} passes the end of any device (2^64 bytes)"
                )));
            }
            (Some(s), bytes)
        } else {
            (None, 0)
        };
        self.asm.push(Event {
            time_ns,
            device,
            kind,
            sector,
            bytes,
            op,
            at,
        });
        Ok(true)
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
