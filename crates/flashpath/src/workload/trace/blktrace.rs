//! blktrace's binary files: the per-CPU `NAME.blktrace.N` files blktrace
//! writes, or one stream (`blktrace -o -`, `blkparse -d` dumps). Each
//! record is a `struct blk_io_trace` (include/uapi/linux/blktrace_api.h,
//! 48 bytes) followed by `pdu_len` bytes of payload:
//!
//! ```text
//! u32 magic (0x654174 << 8 | version)  u32 sequence  u64 time (ns)
//! u64 sector  u32 bytes  u32 action  u32 pid  u32 device (dev_t)
//! u32 cpu  u16 error  u16 pdu_len
//! ```
//!
//! in the byte order of the machine that traced (either is read: the magic
//! tells, as blkparse's `check_data_endianness` does). `action` is the
//! action number in its low 16 bits (bit 8 the cgroup flag) and the
//! categories (BLK_TC_*) above. Notes (category NOTIFY: process names,
//! timestamps, messages) and payloads are skipped. Several per-CPU files
//! are merged in time order, as blkparse does, each read through a
//! bounded reorder window ([`REORDER_WINDOW`]) so a stream a little out of
//! order comes out sorted; a record further back is refused, named. The
//! I/Os are then the queue events with their completions
//! ([`super::events`]).

use super::events::{next_assembled, Assembler, Event, EventSteps, Kind};
use super::{Op, TraceReader, TraceRecord, READ_BUFFER};
use crate::error::{InputError, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// BLK_IO_TRACE_MAGIC.
pub const MAGIC: u32 = 0x6561_7400;
/// The record header's size.
pub const RECORD: usize = 48;
/// Versions whose record is the struct above (blkparse reads 0x07;
/// 0x06 differs only in what some payloads hold).
const VERSIONS: [u8; 2] = [0x06, 0x07];

// Categories, shifted into the action word (BLK_TC_ACT).
const TC_READ: u32 = 1 << 16;
const TC_WRITE: u32 = 1 << (1 + 16);
const TC_FLUSH: u32 = 1 << (2 + 16);
const TC_PC: u32 = 1 << (9 + 16);
const TC_NOTIFY: u32 = 1 << (10 + 16);
const TC_DISCARD: u32 = 1 << (13 + 16);
/// __BLK_TA_CGROUP: flags the action, is not one.
const TA_CGROUP: u32 = 1 << 8;
const TA_QUEUE: u32 = 1;
/// __BLK_TA_BACKMERGE and __BLK_TA_FRONTMERGE: a bio merged into a request.
const TA_BACKMERGE: u32 = 3;
const TA_FRONTMERGE: u32 = 4;
/// blktrace_api.h __BLK_TA_ISSUE: the dispatch to the driver.
const TA_ISSUE: u32 = 7;
const TA_COMPLETE: u32 = 8;
/// The last action number (__BLK_TA_DRV_DATA).
const TA_LAST: u32 = 17;

/// Whether four bytes are a blktrace magic, and in which byte order
/// (true: big-endian).
pub fn magic_endian(b: &[u8]) -> Option<bool> {
    let b: [u8; 4] = b.get(..4)?.try_into().ok()?;
    let ok = |m: u32| m & 0xffff_ff00 == MAGIC && VERSIONS.contains(&(m as u8));
    if ok(u32::from_le_bytes(b)) {
        Some(false)
    } else if ok(u32::from_be_bytes(b)) {
        Some(true)
    } else {
        None
    }
}

/// One record's fields that matter here.
#[derive(Clone, Copy, Debug)]
struct Raw {
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    device: u32,
    /// 1-based record number in its file.
    record: u64,
}

/// Records of all files held for reordering, at most: split between the
/// files, at least [`MIN_WINDOW`] each. blkparse reads a stream (`-i -`) in
/// batches of 512 records, sorts them by time in a tree and prints a batch
/// only after the next is read (blkparse.c do_pipe, show_entries_rb), so
/// events a little out of order come out sorted; `blktrace -o -` writes
/// each CPU's buffer in chunks (512 KiB, about 11,000 records, by
/// default), so one stream needs a wider window than blkparse's. A
/// per-CPU file is in time order (the kernel's per-CPU relay buffer); its
/// window only forgives a little.
pub const REORDER_WINDOW: usize = 1 << 16;
/// The least window per file.
const MIN_WINDOW: usize = 1024;

/// A record ordered by time, then by its place in the file.
#[derive(Clone, Copy, Debug)]
struct ByTime(Raw);

impl PartialEq for ByTime {
    fn eq(&self, o: &ByTime) -> bool {
        (self.0.time, self.0.record) == (o.0.time, o.0.record)
    }
}
impl Eq for ByTime {}
impl PartialOrd for ByTime {
    fn partial_cmp(&self, o: &ByTime) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ByTime {
    fn cmp(&self, o: &ByTime) -> std::cmp::Ordering {
        (self.0.time, self.0.record).cmp(&(o.0.time, o.0.record))
    }
}

/// One input file.
struct CpuFile {
    name: String,
    input: Box<dyn Read>,
    big_endian: Option<bool>,
    records: u64,
    offset: u64,
    scratch: Vec<u8>,
    /// Records read ahead, earliest first out.
    window: BinaryHeap<Reverse<ByTime>>,
    /// How many it may hold.
    cap: usize,
    ended: bool,
    /// The last record taken out: (time, record).
    out: Option<(u64, u64)>,
}

impl CpuFile {
    /// An error at a record (with its byte offset when known).
    fn error(&self, record: u64, offset: Option<u64>, msg: String) -> InputError {
        let at = match offset {
            Some(o) => format!("record {record} (byte {o})"),
            None => format!("record {record}"),
        };
        InputError::new(&self.name, None, format!("{at}: {msg}"))
    }

    /// The next record, notes included; None at the end.
    fn next(&mut self) -> Result<Option<Raw>> {
        let mut h = [0u8; RECORD];
        let got = read_full(&mut self.input, &mut h).map_err(|e| {
            self.error(
                self.records + 1,
                Some(self.offset),
                format!("cannot read: {e}"),
            )
        })?;
        if got == 0 {
            return Ok(None);
        }
        let record = self.records + 1;
        let start = self.offset;
        if got < RECORD {
            return Err(self.error(
                record,
                Some(start),
                format!("truncated: {got} of the record's {RECORD} bytes"),
            ));
        }
        let be = match self.big_endian {
            Some(be) => be,
            None => {
                let be = magic_endian(&h[..4]).ok_or_else(|| self.bad_magic(record, start, &h))?;
                self.big_endian = Some(be);
                be
            }
        };
        let u32_at = |i: usize| {
            let b: [u8; 4] = h[i..i + 4].try_into().unwrap_or_default();
            if be {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let u64_at = |i: usize| {
            let b: [u8; 8] = h[i..i + 8].try_into().unwrap_or_default();
            if be {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        };
        let magic = u32_at(0);
        if magic & 0xffff_ff00 != MAGIC || !VERSIONS.contains(&(magic as u8)) {
            return Err(self.bad_magic(record, start, &h));
        }
        let pdu_len = {
            let b = [h[46], h[47]];
            if be {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        } as usize;
        if pdu_len > 0 {
            self.scratch.resize(pdu_len, 0);
            let got = read_full(&mut self.input, &mut self.scratch[..pdu_len])
                .map_err(|e| self.error(record, Some(start), format!("cannot read: {e}")))?;
            if got < pdu_len {
                return Err(self.error(
                    record,
                    Some(start),
                    format!("truncated: {got} of its {pdu_len}-byte payload (pdu_len)"),
                ));
            }
        }
        self.records = record;
        self.offset += (RECORD + pdu_len) as u64;
        Ok(Some(Raw {
            time: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            device: u32_at(36),
            record,
        }))
    }

    /// The file's next record in time order (within its window); a
    /// record earlier than one already taken out is refused, named.
    fn next_sorted(&mut self) -> Result<Option<Raw>> {
        while !self.ended && self.window.len() < self.cap {
            match self.next()? {
                Some(r) => self.window.push(Reverse(ByTime(r))),
                None => self.ended = true,
            }
        }
        let Some(Reverse(ByTime(r))) = self.window.pop() else {
            return Ok(None);
        };
        if let Some((t, rec)) = self.out.filter(|(t, _)| r.time < *t) {
            return Err(self.error(
                r.record,
                None,
                format!(
                    "time {} ns is {} ns before record {rec}'s, further back than the {} \
                     records flashpath reorders (as blkparse sorts a stream in batches): the \
                     file was joined or edited; give the per-CPU files as blktrace wrote them",
                    r.time,
                    t - r.time,
                    self.cap
                ),
            ));
        }
        self.out = Some((r.time, r.record));
        Ok(Some(r))
    }

    fn bad_magic(&self, record: u64, offset: u64, h: &[u8; RECORD]) -> InputError {
        self.error(
            record,
            Some(offset),
            format!(
                "wrong magic {:02x}{:02x}{:02x}{:02x} (a blktrace record starts with 0x654174 \
                 and version 0x06 or 0x07, in either byte order): not a blktrace file, or the \
                 previous record's pdu_len is wrong",
                h[0], h[1], h[2], h[3]
            ),
        )
    }
}

/// Read until `buf` is full or the input ends; the bytes read.
pub(super) fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The files one trace name covers: `path` itself, and when it is a
/// per-CPU file `NAME.blktrace.N` every `NAME.blktrace.M` beside it; or,
/// when `path` does not exist, `path.blktrace.0`, `.1`, ... (what
/// `blkparse -i NAME` reads).
pub fn trace_files(path: &Path) -> Vec<PathBuf> {
    let per_cpu = |dir: &Path, stem: &str| -> Vec<PathBuf> {
        let prefix = format!("{stem}.blktrace.");
        let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let cpu = n.strip_prefix(&prefix)?.parse::<u64>().ok()?;
                Some((cpu, e.path()))
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, p)| p).collect()
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if path.exists() {
        if let Some((stem, cpu)) = name.rsplit_once(".blktrace.") {
            if cpu.parse::<u64>().is_ok() {
                let all = per_cpu(dir, stem);
                if !all.is_empty() {
                    return all;
                }
            }
        }
        return vec![path.to_path_buf()];
    }
    let all = per_cpu(dir, &name);
    if all.is_empty() {
        vec![path.to_path_buf()]
    } else {
        all
    }
}

/// The merged reader.
pub struct BlktraceReader {
    files: Vec<CpuFile>,
    heads: Vec<Option<Raw>>,
    asm: Assembler,
    /// fio's rule for a queue event of the flush category: a flush (fio
    /// replays it as a sync) whatever its bytes, its data dropped
    /// (blktrace.c queue_trace tests BLK_TC_FLUSH before handle_trace_fs).
    /// Else only one of no bytes is a flush, and a write with a preflush
    /// stays a write, as blkparse counts it in "Writes Queued".
    fio_flushes: bool,
}

impl BlktraceReader {
    /// The trace at `path` (see [`trace_files`]).
    pub fn open(path: &Path) -> Result<BlktraceReader> {
        let mut inputs: Vec<(String, Box<dyn Read>)> = Vec::new();
        for p in trace_files(path) {
            let name = p.display().to_string();
            let f = super::open_file(&p)?;
            inputs.push((name, Box::new(BufReader::with_capacity(READ_BUFFER, f))));
        }
        BlktraceReader::from_inputs(inputs)
    }

    /// The file at `path` alone, its siblings left out (fio's read_iolog).
    pub fn open_one(path: &Path) -> Result<BlktraceReader> {
        let f = super::open_file(path)?;
        BlktraceReader::from_inputs(vec![(
            path.display().to_string(),
            Box::new(BufReader::with_capacity(READ_BUFFER, f)),
        )])
    }

    /// Read a queue event of the flush category as fio's blktrace.c does:
    /// a flush (fio's sync) even when it carries data, its data dropped.
    pub fn with_fio_flushes(mut self) -> BlktraceReader {
        self.fio_flushes = true;
        self
    }

    /// Merge the given inputs (name for messages, bytes).
    pub fn from_inputs(inputs: Vec<(String, Box<dyn Read>)>) -> Result<BlktraceReader> {
        let cap = (REORDER_WINDOW / inputs.len().max(1)).max(MIN_WINDOW);
        let mut files: Vec<CpuFile> = inputs
            .into_iter()
            .map(|(name, input)| CpuFile {
                name,
                input,
                big_endian: None,
                records: 0,
                offset: 0,
                scratch: Vec::new(),
                window: BinaryHeap::new(),
                cap,
                ended: false,
                out: None,
            })
            .collect();
        let mut heads = Vec::with_capacity(files.len());
        for f in &mut files {
            heads.push(f.next_sorted()?);
        }
        Ok(BlktraceReader {
            files,
            heads,
            asm: Assembler::default(),
            fio_flushes: false,
        })
    }

    /// Take the earliest record of all files into the assembler; false
    /// when every file has ended.
    fn read_one(&mut self) -> Result<bool> {
        let mut best: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(r) = h {
                if best.is_none_or(|b| self.heads[b].is_some_and(|x| r.time < x.time)) {
                    best = Some(i);
                }
            }
        }
        let Some(i) = best else {
            return Ok(false);
        };
        let Some(r) = self.heads[i] else {
            return Ok(false);
        };
        self.heads[i] = self.files[i].next_sorted()?;
        self.take(i, r)
    }

    fn take(&mut self, file: usize, r: Raw) -> Result<bool> {
        if r.action & TC_NOTIFY != 0 {
            return Ok(true);
        }
        let act = r.action & 0xffff & !TA_CGROUP;
        if act == 0 || act > TA_LAST {
            let f = &self.files[file];
            return Err(f.error(
                r.record,
                None,
                format!(
                    "unknown action {act} in action word {:#010x} (blktrace's actions are 1 to \
                     {TA_LAST})",
                    r.action
                ),
            ));
        }
        if r.action & TC_PC != 0 {
            return Ok(true);
        }
        let kind = match act {
            TA_QUEUE => Kind::Queue,
            TA_ISSUE => Kind::Issue,
            TA_COMPLETE => Kind::Complete,
            _ => return Ok(true),
        };
        let op = if r.action & TC_DISCARD != 0 {
            Op::Trim
        } else if r.action & TC_FLUSH != 0 && (r.bytes == 0 || self.fio_flushes) {
            Op::Flush
        } else if r.action & TC_WRITE != 0 {
            Op::Write
        } else {
            Op::Read
        };
        if r.sector
            .checked_mul(512)
            .and_then(|o| o.checked_add(u64::from(r.bytes)))
            .is_none()
        {
            let f = &self.files[file];
            return Err(f.error(
                r.record,
                None,
                format!(
                    "sector {} passes the end of any device (2^64 bytes)",
                    r.sector
                ),
            ));
        }
        self.asm.push(Event {
            time_ns: r.time,
            device: r.device,
            kind,
            sector: (r.bytes > 0 || op != Op::Flush).then_some(r.sector),
            bytes: if op == Op::Flush {
                0
            } else {
                u64::from(r.bytes)
            },
            op,
            at: r.record,
        });
        Ok(true)
    }
}

/// The queue depth fio 3.33 gives a job that replays the blktrace file
/// `path` without setting `iodepth` (blktrace.c read_blktrace): per
/// direction (the record's READ, else WRITE, else DISCARD category, so a
/// discard counts as the write it also is), each queue event `Q` adds one,
/// each merge `M`/`F` (back or front) takes one away, and each completion
/// `C` ends a run: the direction's depth is the most its count reached
/// before a completion, the count starting again from 0 after it. Notes
/// are left out. A direction with I/Os (`ios`, as replayed) but no such run
/// gets 1, none more than 1024 ("For stacked devices, we don't always get
/// a COMPLETE event so the depth grows to insane values"); the job's depth
/// is the largest. The file is read in its own order, as fio reads it.
///
/// This is what makes fio's replay of a trace lose an I/O on the null
/// engine where flashpath's did not: a probed depth above 1 keeps one I/O
/// in flight when the log ends, never reaped (docs/traces.md).
pub fn fio_probed_depth(path: &Path, ios: [u64; 3]) -> Result<u32> {
    let f = super::open_file(path)?;
    let mut file = CpuFile {
        name: path.display().to_string(),
        input: Box::new(BufReader::with_capacity(READ_BUFFER, f)),
        big_endian: None,
        records: 0,
        offset: 0,
        scratch: Vec::new(),
        window: BinaryHeap::new(),
        cap: 0,
        ended: false,
        out: None,
    };
    // Signed as fio's ints: merges may outnumber the queue events seen.
    let mut this = [0i64; 3];
    let mut depth = [0i64; 3];
    while let Some(r) = file.next()? {
        if r.action & TC_NOTIFY != 0 {
            continue;
        }
        let d = if r.action & TC_READ != 0 {
            0
        } else if r.action & TC_WRITE != 0 {
            1
        } else if r.action & TC_DISCARD != 0 {
            2
        } else {
            continue;
        };
        // fio compares the whole low half, the cgroup flag included.
        match r.action & 0xffff {
            TA_QUEUE => this[d] += 1,
            TA_BACKMERGE | TA_FRONTMERGE => this[d] -= 1,
            TA_COMPLETE => {
                depth[d] = depth[d].max(this[d]);
                this[d] = 0;
            }
            _ => {}
        }
    }
    let mut max = 0;
    for d in 0..3 {
        let v = if depth[d] > 1024 {
            1024
        } else if depth[d] == 0 && ios[d] > 0 {
            1
        } else {
            depth[d]
        };
        max = max.max(v);
    }
    Ok(max.max(1) as u32)
}

impl EventSteps for BlktraceReader {
    fn assembler(&mut self) -> &mut Assembler {
        &mut self.asm
    }
    fn step(&mut self) -> Result<bool> {
        self.read_one()
    }
}

impl TraceReader for BlktraceReader {
    fn consumed(&self) -> u64 {
        self.files.iter().map(|f| f.records).sum()
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

    /// A record in the given byte order.
    fn rec(be: bool, time: u64, sector: u64, bytes: u32, action: u32, pdu: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        let p32 = |v: &mut Vec<u8>, x: u32| {
            v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() })
        };
        let p64 = |v: &mut Vec<u8>, x: u64| {
            v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() })
        };
        p32(&mut v, MAGIC | 7);
        p32(&mut v, 1);
        p64(&mut v, time);
        p64(&mut v, sector);
        p32(&mut v, bytes);
        p32(&mut v, action);
        p32(&mut v, 42);
        p32(&mut v, (8 << 20) | 16);
        p32(&mut v, 0);
        v.extend_from_slice(&[0, 0]);
        let l = pdu.len() as u16;
        v.extend_from_slice(&if be { l.to_be_bytes() } else { l.to_le_bytes() });
        v.extend_from_slice(pdu);
        v
    }

    fn read(bytes: Vec<u8>) -> Result<Vec<TraceRecord>> {
        let mut r = BlktraceReader::from_inputs(vec![(
            "t.bin".into(),
            Box::new(std::io::Cursor::new(bytes)),
        )])?;
        let mut v = Vec::new();
        while let Some(x) = r.next_record()? {
            v.push(x);
        }
        Ok(v)
    }

    #[test]
    fn either_byte_order_reads_the_same() {
        let q = TA_QUEUE | TC_WRITE | (1 << (4 + 16));
        let c = TA_COMPLETE | TC_WRITE | (1 << (7 + 16));
        for be in [false, true] {
            let mut b = rec(be, 5, 0, 0, TC_NOTIFY, b"fio\0\0\0\0\0\0\0\0\0\0\0\0\0");
            b.extend(rec(be, 10, 64, 4096, q, &[]));
            b.extend(rec(be, 30, 64, 4096, c, &[]));
            let v = read(b).unwrap();
            assert_eq!(v.len(), 1);
            assert_eq!(v[0].offset, 64 * 512);
            assert_eq!(v[0].op, Op::Write);
            assert_eq!(v[0].latency_ns(), Some(20));
            assert_eq!(v[0].device, (8 << 20) | 16);
            assert_eq!(v[0].at, 2);
        }
    }

    #[test]
    fn bad_records_are_named() {
        let q = TA_QUEUE | TC_WRITE;
        let mut b = rec(false, 10, 64, 4096, q, &[]);
        b.extend(&rec(false, 10, 64, 4096, q, &[])[..20]);
        let e = read(b).unwrap_err().to_string();
        assert!(
            e.contains("t.bin: record 2 (byte 48): truncated: 20 of"),
            "{e}"
        );
        let e = read(b"hello, this is not a blktrace file at all, really".to_vec())
            .unwrap_err()
            .to_string();
        assert!(e.contains("record 1 (byte 0): wrong magic 68656c6c"), "{e}");
        let e = read(rec(false, 1, 0, 0, 99, &[])).unwrap_err().to_string();
        assert!(e.contains("record 1: unknown action 99"), "{e}");
        let mut b = rec(false, 10, 64, 4096, q, &[1, 2, 3]);
        b.truncate(50);
        let e = read(b).unwrap_err().to_string();
        assert!(e.contains("truncated: 2 of its 3-byte payload"), "{e}");
    }

    /// A stream a little out of order (a reversed Q and C) comes out
    /// sorted, as blkparse sorts a stream; one that goes back further than
    /// the window is refused, naming the record.
    #[test]
    fn time_going_back_is_sorted_within_the_window_else_refused() {
        let q = TA_QUEUE | TC_WRITE;
        let c = TA_COMPLETE | TC_WRITE;
        let mut b = rec(false, 30, 64, 4096, c, &[]);
        b.extend(rec(false, 10, 64, 4096, q, &[]));
        let v = read(b).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].time_ns, v[0].latency_ns()), (10, Some(20)));
        // A record older than everything a full window let out.
        let n = REORDER_WINDOW as u64 + 10;
        let mut b = Vec::new();
        for i in 0..n {
            b.extend(rec(false, 1_000 + i, 8 * i, 4096, q, &[]));
        }
        b.extend(rec(false, 5, 0, 4096, q, &[]));
        let e = read(b).unwrap_err().to_string();
        assert!(
            e.contains(&format!("t.bin: record {}: time 5 ns is", n + 1)),
            "{e}"
        );
        assert!(e.contains("before record"), "{e}");
    }

    /// fio's probe (blktrace.c read_blktrace) on hand-made streams: +1 per
    /// queue, -1 per merge, the most before a completion, per direction;
    /// a direction with I/Os and no completion 1; 1024 at most.
    #[test]
    fn the_depth_fio_probes() {
        let dir = std::env::temp_dir().join(format!("fp-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.blktrace.0");
        let probe = |b: Vec<u8>, ios: [u64; 3]| {
            std::fs::write(&path, b).unwrap();
            fio_probed_depth(&path, ios).unwrap()
        };
        let (w, r) = (TC_WRITE, TC_READ);
        let mut b = Vec::new();
        // Writes: Q Q Q M C (2), then Q C (1): 2.
        for a in [
            TA_QUEUE,
            TA_QUEUE,
            TA_QUEUE,
            TA_BACKMERGE,
            TA_COMPLETE,
            TA_QUEUE,
        ] {
            b.extend(rec(false, 1, 0, 4096, a | w, &[]));
        }
        b.extend(rec(false, 1, 0, 4096, TA_COMPLETE | w, &[]));
        assert_eq!(probe(b.clone(), [0, 4, 0]), 2);
        // Reads: 3 queued, a note between them, then a completion: 3; the
        // job takes the largest direction.
        for _ in 0..3 {
            b.extend(rec(false, 1, 0, 4096, TA_QUEUE | r, &[]));
            b.extend(rec(false, 1, 0, 0, TC_NOTIFY, b"x"));
        }
        b.extend(rec(false, 1, 0, 4096, TA_COMPLETE | r, &[]));
        assert_eq!(probe(b, [3, 4, 0]), 3);
        // No completion at all: 1 for a direction with I/Os.
        let b = rec(false, 1, 0, 4096, TA_QUEUE | w, &[]).repeat(5);
        assert_eq!(probe(b, [0, 5, 0]), 1);
        // A discard counts with the writes (its WRITE category first).
        let mut b = rec(false, 1, 0, 4096, TA_QUEUE | w | TC_DISCARD, &[]).repeat(2);
        b.extend(rec(false, 1, 0, 4096, TA_COMPLETE | w | TC_DISCARD, &[]));
        assert_eq!(probe(b, [0, 0, 2]), 2);
        // At most 1024.
        let mut b = rec(false, 1, 0, 4096, TA_QUEUE | w, &[]).repeat(2000);
        b.extend(rec(false, 1, 0, 4096, TA_COMPLETE | w, &[]));
        assert_eq!(probe(b, [0, 2000, 0]), 1024);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A write with a preflush: a write as blkparse counts it, a flush of
    /// no bytes under fio's rule.
    #[test]
    fn a_preflush_write_is_a_write_or_fios_flush() {
        let q = TA_QUEUE | TC_WRITE | TC_FLUSH;
        let c = TA_COMPLETE | TC_WRITE | TC_FLUSH;
        let mut b = rec(false, 10, 64, 4096, q, &[]);
        b.extend(rec(false, 30, 64, 4096, c, &[]));
        let v = read(b.clone()).unwrap();
        assert_eq!((v[0].op, v[0].len), (Op::Write, 4096));
        let mut r =
            BlktraceReader::from_inputs(vec![("t.bin".into(), Box::new(std::io::Cursor::new(b)))])
                .unwrap()
                .with_fio_flushes();
        let f = r.next_record().unwrap().unwrap();
        assert_eq!((f.op, f.len), (Op::Flush, 0));
        assert!(r.next_record().unwrap().is_none());
    }
}
