//! Delimited text traces (CSV, whitespace or `;` separated), one I/O a
//! line, read through a column [`Mapping`]: the named formats (MSR,
//! MQSim, DiskSim, blkreplay, SPC, Alibaba, Tencent) are fixed mappings,
//! and any other layout is given as one (`--columns`).
//!
//! Mapping text: comma-separated `KEY=VALUE`, columns counted from 0:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `time` | `COL:UNIT` | arrival; UNIT `ns`, `us`, `ms`, `s` or `filetime` (100 ns ticks since 1601) |
//! | `offset` | `COL:UNIT` | address; UNIT `bytes`, `sectors` (512 B), or a number of bytes |
//! | `len` | `COL:UNIT` | size, units as `offset` |
//! | `op` | `COL:READ/WRITE[/TRIM]` | the tokens of each direction, alternatives joined by `\|` (`op=1:R\|r/W\|w`), or `COL:bit0` (odd: read) |
//! | `device` | `COL` | device or volume number (optional) |
//! | `latency` | `COL:UNIT` | recorded response time, time units plus `100ns` (optional) |
//! | `sep` | `comma`, `space` (any run of blanks), `tab`, `semicolon` | default `comma` |
//! | `header` | `N` | lines to skip before the data (default 0) |

use super::{parse_decimal_ns, parse_u64, quote_bytes, Lines, Op, TraceReader, TraceRecord};
use crate::error::{quote, Result};

/// Fields a line may have that a mapping can name.
pub const MAX_FIELDS: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sep {
    Comma,
    Blank,
    Tab,
    Semicolon,
}

/// How the direction column reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpMap {
    /// The tokens of read, write and trim (exact, after trimming blanks).
    Tokens {
        read: Vec<Vec<u8>>,
        write: Vec<Vec<u8>>,
        trim: Vec<Vec<u8>>,
    },
    /// A number whose bit 0 says read (DiskSim's flags).
    Bit0Read,
}

/// Lines before the data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Header {
    Lines(u64),
    /// Every line up to and including the first that starts with this
    /// (blkreplay's free-text header ends with its column line).
    UntilPrefix(Vec<u8>),
}

/// A column layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub sep: Sep,
    pub header: Header,
    /// Column and ns per unit.
    pub time: (usize, u64),
    /// Column and bytes per unit.
    pub offset: (usize, u64),
    pub len: (usize, u64),
    pub op: (usize, OpMap),
    pub device: Option<usize>,
    /// Column and ns per unit.
    pub latency: Option<(usize, u64)>,
}

fn time_unit(u: &str) -> Option<u64> {
    Some(match u {
        "ns" => 1,
        "100ns" | "filetime" => 100,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return None,
    })
}

/// 1601-01-01 to 1970-01-01 in 100 ns ticks: FILETIME's epoch offset.
pub const FILETIME_UNIX_OFFSET: u64 = 116_444_736_000_000_000;

impl Mapping {
    /// The mapping text described in the module's documentation.
    pub fn parse(text: &str) -> std::result::Result<Mapping, String> {
        let mut sep = Sep::Comma;
        let mut header = Header::Lines(0);
        let (mut time, mut offset, mut len, mut op, mut device, mut latency) =
            (None, None, None, None, None, None);
        let col = |v: &str, key: &str| -> std::result::Result<usize, String> {
            match v.parse::<usize>() {
                Ok(c) if c < MAX_FIELDS => Ok(c),
                _ => Err(format!(
                    "{key}: {} is not a column number (0 to {})",
                    quote(v),
                    MAX_FIELDS - 1
                )),
            }
        };
        let split = |v: &str, key: &str| -> std::result::Result<(usize, String), String> {
            let (c, u) = v
                .split_once(':')
                .ok_or_else(|| format!("{key} needs COLUMN:UNIT, got {}", quote(v)))?;
            Ok((col(c, key)?, u.to_string()))
        };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("{} is not KEY=VALUE", quote(part)))?;
            match k {
                "time" | "latency" => {
                    let (c, u) = split(v, k)?;
                    let ns = time_unit(&u).ok_or_else(|| {
                        format!(
                            "{k}: unknown time unit {} (ns, us, ms, s, filetime)",
                            quote(&u)
                        )
                    })?;
                    if k == "time" {
                        time = Some((c, ns));
                    } else {
                        latency = Some((c, ns));
                    }
                }
                "offset" | "len" => {
                    let (c, u) = split(v, k)?;
                    let b = match u.as_str() {
                        "bytes" | "b" => 1,
                        "sectors" => 512,
                        n => match n.parse::<u64>() {
                            Ok(b) if b > 0 => b,
                            _ => {
                                return Err(format!(
                                    "{k}: unknown unit {} (bytes, sectors, or bytes per unit)",
                                    quote(n)
                                ))
                            }
                        },
                    };
                    if k == "offset" {
                        offset = Some((c, b));
                    } else {
                        len = Some((c, b));
                    }
                }
                "op" => {
                    let (c, u) = split(v, k)?;
                    let map = if u == "bit0" {
                        OpMap::Bit0Read
                    } else {
                        let parts: Vec<&str> = u.split('/').collect();
                        if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
                            return Err(format!(
                                "op needs COLUMN:READ/WRITE[/TRIM] tokens or COLUMN:bit0, got {}",
                                quote(v)
                            ));
                        }
                        let toks = |p: &str| p.split('|').map(|t| t.as_bytes().to_vec()).collect();
                        OpMap::Tokens {
                            read: toks(parts[0]),
                            write: toks(parts[1]),
                            trim: parts.get(2).map_or_else(Vec::new, |p| toks(p)),
                        }
                    };
                    op = Some((c, map));
                }
                "device" => device = Some(col(v, k)?),
                "sep" => {
                    sep = match v {
                        "comma" | "," => Sep::Comma,
                        "space" | "blank" | "whitespace" => Sep::Blank,
                        "tab" => Sep::Tab,
                        "semicolon" | ";" => Sep::Semicolon,
                        _ => {
                            return Err(format!(
                                "sep: {} is not comma, space, tab or semicolon",
                                quote(v)
                            ))
                        }
                    }
                }
                "header" => {
                    header =
                        Header::Lines(v.parse().map_err(|_| {
                            format!("header: {} is not a number of lines", quote(v))
                        })?)
                }
                _ => {
                    return Err(format!(
                        "unknown column mapping key {} (time, offset, len, op, device, latency, \
                         sep, header)",
                        quote(k)
                    ))
                }
            }
        }
        let lacks = |k: &str| format!("the mapping lacks {k}=...");
        Ok(Mapping {
            sep,
            header,
            time: time.ok_or_else(|| lacks("time"))?,
            offset: offset.ok_or_else(|| lacks("offset"))?,
            len: len.ok_or_else(|| lacks("len"))?,
            op: op.ok_or_else(|| lacks("op"))?,
            device,
            latency,
        })
    }
}

/// Split `line` into `f`; the number of fields (at most MAX_FIELDS; more
/// are not kept).
#[inline]
pub fn split_fields<'a>(line: &'a [u8], sep: Sep, f: &mut [&'a [u8]; MAX_FIELDS]) -> usize {
    let mut n = 0;
    match sep {
        Sep::Blank => {
            for w in line
                .split(|c| *c == b' ' || *c == b'\t')
                .filter(|w| !w.is_empty())
            {
                if n == MAX_FIELDS {
                    break;
                }
                f[n] = w;
                n += 1;
            }
        }
        _ => {
            let c = match sep {
                Sep::Comma => b',',
                Sep::Tab => b'\t',
                _ => b';',
            };
            for w in line.split(|x| *x == c) {
                if n == MAX_FIELDS {
                    break;
                }
                f[n] = w.trim_ascii();
                n += 1;
            }
        }
    }
    n
}

pub struct DelimitedReader {
    lines: Lines,
    map: Mapping,
    /// The columns a line must have.
    need: usize,
    in_header: bool,
    /// The previous record's time and line.
    last: Option<(u64, u64)>,
}

impl DelimitedReader {
    pub fn new(lines: Lines, map: Mapping) -> DelimitedReader {
        let mut need = [map.time.0, map.offset.0, map.len.0, map.op.0]
            .into_iter()
            .chain(map.device)
            .chain(map.latency.map(|l| l.0))
            .max()
            .unwrap_or(0)
            + 1;
        need = need.min(MAX_FIELDS);
        let in_header = !matches!(map.header, Header::Lines(0));
        DelimitedReader {
            lines,
            map,
            need,
            in_header,
            last: None,
        }
    }

    fn parse_line(&self) -> Result<Option<TraceRecord>> {
        let line = self.lines.current();
        let err = |m: String| self.lines.error(m);
        let t = line.trim_ascii();
        if t.is_empty() || t[0] == b'#' {
            return Ok(None);
        }
        let mut f: [&[u8]; MAX_FIELDS] = [&[]; MAX_FIELDS];
        let n = split_fields(line, self.map.sep, &mut f);
        if n < self.need {
            return Err(err(format!(
                "{n} field{} where the format has at least {}: {}",
                if n == 1 { "" } else { "s" },
                self.need,
                quote_bytes(line)
            )));
        }
        let m = &self.map;
        let time_ns = parse_decimal_ns(f[m.time.0], m.time.1).ok_or_else(|| {
            err(format!(
                "column {}: {} is not a time",
                m.time.0,
                quote_bytes(f[m.time.0])
            ))
        })?;
        let num = |(c, unit): (usize, u64), what: &str| -> Result<u64> {
            parse_u64(f[c])
                .and_then(|v| v.checked_mul(unit))
                .ok_or_else(|| err(format!("column {c}: {} is not {what}", quote_bytes(f[c]))))
        };
        let offset = num(m.offset, "an address")?;
        let len = num(m.len, "a size")?;
        if offset.checked_add(len).is_none() {
            return Err(err(format!(
                "offset {offset} plus length {len} passes the end of any device (2^64 bytes)"
            )));
        }
        let tok = f[m.op.0];
        let op = match &m.op.1 {
            OpMap::Tokens { read, write, trim } => {
                if read.iter().any(|t| t == tok) {
                    Op::Read
                } else if write.iter().any(|t| t == tok) {
                    Op::Write
                } else if trim.iter().any(|t| t == tok) {
                    Op::Trim
                } else {
                    let names = |v: &Vec<Vec<u8>>| {
                        v.iter()
                            .map(|t| String::from_utf8_lossy(t).into_owned())
                            .collect::<Vec<_>>()
                            .join("|")
                    };
                    return Err(err(format!(
                        "column {}: unknown operation {} (read is {}, write is {}{})",
                        m.op.0,
                        quote_bytes(tok),
                        names(read),
                        names(write),
                        if trim.is_empty() {
                            String::new()
                        } else {
                            format!(", trim is {}", names(trim))
                        }
                    )));
                }
            }
            OpMap::Bit0Read => match parse_u64(tok) {
                Some(v) if v & 1 == 1 => Op::Read,
                Some(_) => Op::Write,
                None => {
                    return Err(err(format!(
                        "column {}: flags {} are not a number",
                        m.op.0,
                        quote_bytes(tok)
                    )))
                }
            },
        };
        let device = match m.device {
            Some(c) => u32::try_from(num((c, 1), "a device number")?).map_err(|_| {
                err(format!(
                    "column {c}: device {} is above 2^32",
                    quote_bytes(f[c])
                ))
            })?,
            None => 0,
        };
        let completion_ns =
            match m.latency {
                Some((c, unit)) => {
                    let l = parse_decimal_ns(f[c], unit).ok_or_else(|| {
                        err(format!(
                            "column {c}: {} is not a response time",
                            quote_bytes(f[c])
                        ))
                    })?;
                    Some(time_ns.checked_add(l).ok_or_else(|| {
                        err("arrival plus response time passes 2^64 ns".to_string())
                    })?)
                }
                None => None,
            };
        Ok(Some(TraceRecord {
            time_ns,
            device,
            offset,
            len,
            op,
            completion_ns,
            at: self.lines.line,
        }))
    }
}

impl TraceReader for DelimitedReader {
    fn consumed(&self) -> u64 {
        self.lines.line
    }

    fn next_record(&mut self) -> Result<Option<TraceRecord>> {
        loop {
            if !self.lines.advance()? {
                if self.in_header {
                    if let Header::UntilPrefix(p) = &self.map.header {
                        return Err(crate::error::InputError::new(
                            &self.lines.name,
                            None,
                            format!(
                                "the trace ended inside its header (no line starts with {})",
                                quote_bytes(p)
                            ),
                        ));
                    }
                }
                return Ok(None);
            }
            if self.in_header {
                match &self.map.header {
                    Header::Lines(n) => self.in_header = self.lines.line < *n,
                    Header::UntilPrefix(p) => {
                        self.in_header = !self.lines.current().trim_ascii_start().starts_with(p)
                    }
                }
                continue;
            }
            if let Some(r) = self.parse_line()? {
                // One stream in time order (these formats have no per-CPU
                // streams to merge): a record that goes back in time would
                // be replayed at once and its gap lost, so it is refused.
                if let Some((t, line)) = self.last.filter(|(t, _)| r.time_ns < *t) {
                    return Err(self.lines.error(format!(
                        "column {}: time goes backwards, {} ns before line {line}'s: a trace \
                         replays in time order; sort it by its time column",
                        self.map.time.0,
                        t - r.time_ns
                    )));
                }
                self.last = Some((r.time_ns, self.lines.line));
                return Ok(Some(r));
            }
        }
    }
}

/// For detection: the fields of a line (`sep` as in a mapping).
pub fn fields(line: &str, sep: Sep) -> Vec<&str> {
    let mut f: [&[u8]; MAX_FIELDS] = [&[]; MAX_FIELDS];
    let n = split_fields(line.as_bytes(), sep, &mut f);
    f[..n]
        .iter()
        .map(|b| std::str::from_utf8(b).unwrap_or(""))
        .collect()
}

/// For detection: a decimal integer.
pub fn is_int(s: &str) -> bool {
    parse_u64(s.as_bytes()).is_some()
}

/// For detection: a decimal with a fraction.
pub fn is_decimal(s: &str) -> bool {
    s.contains('.') && parse_decimal_ns(s.as_bytes(), 1).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(map: &str, text: &str) -> Result<Vec<TraceRecord>> {
        let m = Mapping::parse(map).unwrap();
        let lines = Lines::new(
            "t.csv",
            Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        );
        let mut r = DelimitedReader::new(lines, m);
        let mut v = Vec::new();
        while let Some(x) = r.next_record()? {
            v.push(x);
        }
        Ok(v)
    }

    #[test]
    fn a_mapping_reads_its_columns() {
        let v = read(
            "time=4:us,op=1:R|r/W|w,offset=2:bytes,len=3:sectors,device=0,header=1",
            "dev,op,off,len,ts\n7,R,4096,8,1000\n7,w,0,1,1500\n",
        )
        .unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (
                v[0].time_ns,
                v[0].op,
                v[0].offset,
                v[0].len,
                v[0].device,
                v[0].at
            ),
            (1_000_000, Op::Read, 4096, 4096, 7, 2)
        );
        assert_eq!((v[1].op, v[1].len), (Op::Write, 512));
    }

    #[test]
    fn bad_mappings_and_lines_say_what() {
        assert!(Mapping::parse("time=0:us")
            .unwrap_err()
            .contains("lacks offset"));
        assert!(
            Mapping::parse("time=0:weeks,op=1:R/W,offset=2:bytes,len=3:bytes")
                .unwrap_err()
                .contains("time unit")
        );
        assert!(
            Mapping::parse("time=99:us,op=1:R/W,offset=2:bytes,len=3:bytes")
                .unwrap_err()
                .contains("column number")
        );
        let m = "time=0:us,op=1:R/W,offset=2:bytes,len=3:bytes";
        let e = read(m, "1,R,0,4096\n2,X,0,4096\n").unwrap_err().to_string();
        assert!(
            e.starts_with("t.csv:2: column 1: unknown operation 'X'"),
            "{e}"
        );
        let e = read(m, "1,R,0\n").unwrap_err().to_string();
        assert!(e.contains("t.csv:1: 3 fields"), "{e}");
        let e = read(m, "1,R,zz,4096\n").unwrap_err().to_string();
        assert!(
            e.contains("t.csv:1: column 2: 'zz' is not an address"),
            "{e}"
        );
    }
}
