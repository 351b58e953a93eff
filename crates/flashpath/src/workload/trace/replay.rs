//! A trace as a job's I/O source (beside fio's own streams and iologs).
//!
//! A job replays a trace through `read_iolog=FILE` (fio reads blktrace
//! files there too; flashpath reads every format of [`super`]) or through
//! `flashpath replay`. Before the run one streaming pass checks every
//! record and gathers what fio's iolog.c gathers from a log (directions,
//! largest I/O, highest byte, total bytes) plus the recorded latencies;
//! the run then reads the file again as it issues, so memory does not grow
//! with the trace.
//!
//! Timing: by default each I/O waits the recorded gap since the previous
//! one after the previous issue (fio's `iolog_delay`, what fio does with a
//! blktrace file), scaled by `replay_time_scale`; `absolute` (the CLI's
//! `--mode as-recorded`) issues each at its recorded time since the first
//! one instead, so a slow device does not stretch the schedule (open
//! loop). `replay_no_stall` drops the timing (closed loop at the job's
//! iodepth). While it waits, the thread reaps completions as they come
//! (fio 3.36) or sleeps without reaping (fio 3.33): [`ReplayDelay`].

use super::{Format, Op, TraceReader};
use crate::error::{InputError, Result};
use crate::sim::hist::LatencyHist;
use crate::workload::iolog::{ReplayOptions, MAX_PAUSE_US, SKIP_SYNC};
use crate::workload::{Ddir, IoSource, IoUnit, Pace, SyncOp};
use std::path::PathBuf;
use std::sync::Arc;

/// The longest open-loop replay, in simulated ns: a year and a day (the
/// published traces span a week at most), far from the clock's end.
pub const MAX_SPAN_NS: u64 = 366 * 86_400 * 1_000_000_000;

/// What to do with an address past the simulated device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Remap {
    /// Refuse the trace, naming the first such record.
    #[default]
    Error,
    /// Offset modulo the device's size.
    Wrap,
    /// Offsets scaled by device size / the trace's highest byte.
    Scale,
    /// Every offset shifted by this many bytes (then checked as `Error`).
    Shift(i64),
}

impl Remap {
    pub fn parse(s: &str) -> std::result::Result<Remap, String> {
        Ok(match s {
            "error" | "none" => Remap::Error,
            "wrap" => Remap::Wrap,
            "scale" => Remap::Scale,
            _ => match s.strip_prefix("offset:").map(str::parse::<i64>) {
                Some(Ok(n)) => Remap::Shift(n),
                _ => {
                    return Err(format!(
                        "remap {}: error, wrap, scale or offset:BYTES (BYTES may be negative)",
                        crate::error::quote(s)
                    ))
                }
            },
        })
    }
}

/// A device as `--trace-device` gives it: `MAJOR,MINOR` (blktrace's
/// dev_t) or the number of the trace's device/volume column.
pub fn parse_device(s: &str) -> std::result::Result<u32, String> {
    let bad = || {
        format!(
            "{} is not a device: MAJOR,MINOR (blktrace, blkparse) or a device/volume number",
            crate::error::quote(s)
        )
    };
    match s.split_once(',') {
        Some((a, b)) => {
            let major: u32 = a.trim().parse().map_err(|_| bad())?;
            let minor: u32 = b.trim().parse().map_err(|_| bad())?;
            if major >= 1 << 12 || minor >= 1 << 20 {
                return Err(bad());
            }
            Ok(major << 20 | minor)
        }
        None => s.trim().parse().map_err(|_| bad()),
    }
}

/// The trace options of `flashpath replay`, from its command-line words;
/// a bad one is an error naming the option.
#[allow(clippy::too_many_arguments)] // one per command-line option
pub fn options_from_args(
    format: Option<&str>,
    columns: Option<&str>,
    device: Option<&str>,
    remap: &str,
    absolute: bool,
    lat_csv: Option<&str>,
    recorded_depth: bool,
    delay: &str,
    per_cpu: &str,
) -> Result<TraceOptions> {
    let format = match format {
        None | Some("auto") => {
            if columns.is_some() {
                return Err(InputError::new(
                    "--columns",
                    None,
                    "a column mapping needs --format csv",
                ));
            }
            None
        }
        Some(f) => {
            Some(Format::from_name(f, columns).map_err(|m| InputError::new("--format", None, m))?)
        }
    };
    Ok(TraceOptions {
        format,
        device: device
            .map(parse_device)
            .transpose()
            .map_err(|m| InputError::new("--trace-device", None, m))?,
        remap: Remap::parse(remap).map_err(|m| InputError::new("--remap", None, m))?,
        absolute,
        lat_csv: lat_csv.map(str::to_string),
        recorded_depth,
        delay: ReplayDelay::parse(delay).map_err(|m| InputError::new("--replay-delay", None, m))?,
        per_cpu_files: match per_cpu {
            "merge" => true,
            "named" => false,
            other => {
                return Err(InputError::new(
                    "--per-cpu",
                    None,
                    format!(
                        "{}: merge (every NAME.blktrace.N beside the named file, as blkparse -i \
                         NAME reads them) or named (that file alone, as fio's read_iolog)",
                        crate::error::quote(other)
                    ),
                ))
            }
        },
        // The per-I/O comparison needs every replayed I/O's simulated
        // latency, so flashpath replay reaps the I/Os in flight when the
        // trace ends; a job file's replay leaves them unreaped, as fio.
        count_tail: true,
        preflush_writes: true,
    })
}

/// What a replay does while it waits for its next I/O's time (fio's
/// iolog_delay, for fio iologs and every trace format alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReplayDelay {
    /// Reap each completion as it comes (fio 3.36 and later, commit
    /// b85c01f7 "iolog.c: fix inaccurate clat when replay trace": the wait
    /// spins on `io_u_queued_complete(td, 0)`), so clat is the I/O's own
    /// completion time. `flashpath replay`'s default.
    Reap,
    /// Sleep without reaping (fio up to 3.35: `usec_sleep`): an I/O that
    /// completes during the wait is reaped after it, and its clat holds
    /// the rest of the wait. A job file's `read_iolog=` runs so, as the
    /// fio flashpath follows (3.33) runs it.
    #[default]
    Sleep,
}

impl ReplayDelay {
    pub fn parse(s: &str) -> std::result::Result<ReplayDelay, String> {
        match s {
            "reap" => Ok(ReplayDelay::Reap),
            "sleep" => Ok(ReplayDelay::Sleep),
            _ => Err(format!(
                "replay delay {}: reap (fio 3.36 and later) or sleep (fio 3.33)",
                crate::error::quote(s)
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ReplayDelay::Reap => "reap",
            ReplayDelay::Sleep => "sleep",
        }
    }
}

/// How a job reads its trace (flashpath's own choices; fio has none).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TraceOptions {
    /// None: detect.
    pub format: Option<Format>,
    /// Only this device or volume (blktrace: `major << 20 | minor`).
    pub device: Option<u32>,
    pub remap: Remap,
    /// Issue at recorded times since the first I/O (open loop) instead of
    /// fio's gaps after the previous issue.
    pub absolute: bool,
    /// Write the per-I/O recorded vs simulated latency CSV to this file.
    pub lat_csv: Option<String>,
    /// Set the job's iodepth to the trace's recorded queue depth (its
    /// most I/Os in flight): a closed loop at the recorded depth.
    pub recorded_depth: bool,
    /// Reap or sleep while waiting for the next I/O's time.
    pub delay: ReplayDelay,
    /// A blktrace per-CPU file `NAME.blktrace.N` brings every
    /// `NAME.blktrace.M` beside it (blkparse -i NAME's merge;
    /// `flashpath replay`'s default); false: the named file alone, as
    /// fio's `read_iolog=NAME.blktrace.N` reads it (blktrace.c
    /// init_blktrace_read opens that one file; fio merges files only with
    /// `merge_blktrace_file`).
    pub per_cpu_files: bool,
    /// Count the I/Os still in flight when the trace runs out (their bytes
    /// and latencies). fio does not (read_iolog_get sets td->done, after
    /// which td_io_getevents reaps nothing): a job file's replay follows
    /// fio; `flashpath replay` counts them.
    pub count_tail: bool,
    /// A blktrace queue event of the flush category that carries data (a
    /// write with a preflush, blkparse's `Q FWS 8 + 8`) is a write, as
    /// blkparse counts it in "Writes Queued" (`flashpath replay`). false:
    /// fio's rule (blktrace.c queue_trace tests BLK_TC_FLUSH before
    /// handle_trace_fs), a flush whose data is dropped, so a job file's
    /// replay moves the reads and writes fio's does.
    pub preflush_writes: bool,
}

/// A trace checked and summed before the run.
#[derive(Debug)]
pub struct TraceJob {
    pub path: PathBuf,
    pub format: Format,
    pub opts: TraceOptions,
    pub replay: ReplayOptions,
    /// I/Os replayed per direction (read, write, trim), and their largest.
    pub ios: [u64; 3],
    pub largest: [u64; 3],
    /// One past the highest byte (after shift, replay_scale and align).
    pub end: u64,
    pub bytes: u64,
    /// Flushes and syncs in the trace: each is replayed as fio replays a
    /// blktrace flush, a sync of the job's file (blktrace.c
    /// handle_trace_flush: DDIR_SYNC), unless `replay_skip=sync`.
    pub flushes: u64,
    /// Records of other devices left out by the device filter.
    pub other_devices: u64,
    /// Records of no bytes (not flushes), left out.
    pub empty: u64,
    /// Recorded latency of the replayed I/Os that have one.
    pub recorded: LatencyHist,
    /// Arrival of the first replayed I/O.
    pub t0: u64,
    /// The most replayed I/Os the trace had in flight at once (from the
    /// recorded completions; 0 when it has none).
    pub max_depth: u64,
    /// The first replayed I/O that is not whole 512-byte sectors (after
    /// replay_scale and replay_align): where it is, its direction, offset
    /// and length. O_DIRECT refuses it ([`TraceJob::unaligned_error`]).
    pub first_unaligned: Option<(u64, Ddir, u64, u64)>,
    /// A block trace's events replayed as I/Os (queue, issue or complete).
    pub events: Option<&'static str>,
    /// What the checking pass replays, summed ([`Digest`]): the run's
    /// reading of the file must give the same, or the file changed.
    pub digest: Digest,
    /// The first failure of a run's reading of the trace (the file changed
    /// since it was checked): the run reports it instead of ending short.
    pub failure: std::sync::OnceLock<InputError>,
}

/// The replayed I/Os of a pass over a trace, in order: how many, and an
/// FNV-1a hash of each one's direction, offset, length and time. Cheap
/// enough for the hot path (no allocation, a few multiplies an I/O).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    pub ios: u64,
    pub hash: u64,
}

impl Default for Digest {
    fn default() -> Digest {
        Digest {
            ios: 0,
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }
}

impl Digest {
    fn add(&mut self, d: Ddir, offset: u64, len: u64, time_ns: u64) {
        self.ios += 1;
        for v in [d.index() as u64, offset, len, time_ns] {
            self.hash = (self.hash ^ v).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Two loads of the same file with the same options are the same job.
impl PartialEq for TraceJob {
    fn eq(&self, o: &TraceJob) -> bool {
        self.path == o.path
            && self.format == o.format
            && self.opts == o.opts
            && self.replay == o.replay
    }
}

/// Where a record is, for messages: a line, or a binary record.
fn where_is(format: &Format, at: u64) -> (Option<u32>, String) {
    if *format == Format::Blktrace {
        (None, format!("record {at}: "))
    } else {
        (Some(super::line_u32(at)), String::new())
    }
}

fn ddir_of(op: Op) -> Option<Ddir> {
    match op {
        Op::Read => Some(Ddir::Read),
        Op::Write => Some(Ddir::Write),
        Op::Trim => Some(Ddir::Trim),
        Op::Flush | Op::Sync => None,
    }
}

fn describe(d: Ddir) -> &'static str {
    match d {
        Ddir::Read => "a read of",
        Ddir::Write => "a write of",
        Ddir::Trim => "a trim of",
    }
}

impl TraceJob {
    /// The one streaming pass before the run.
    pub fn load(
        path: PathBuf,
        format: Format,
        opts: TraceOptions,
        replay: ReplayOptions,
    ) -> Result<TraceJob> {
        let name = path.display().to_string();
        let mut r = super::open_with(&path, &format, opts.per_cpu_files, opts.preflush_writes)?;
        let mut job = TraceJob {
            path,
            format,
            opts,
            replay,
            ios: [0; 3],
            largest: [0; 3],
            end: 0,
            bytes: 0,
            flushes: 0,
            other_devices: 0,
            empty: 0,
            recorded: LatencyHist::default(),
            t0: 0,
            max_depth: 0,
            first_unaligned: None,
            events: None,
            digest: Digest::default(),
            failure: std::sync::OnceLock::new(),
        };
        let mut prev: Option<u64> = None;
        // Completion times of the I/Os in flight at the latest arrival.
        let mut inflight: std::collections::BinaryHeap<std::cmp::Reverse<u64>> =
            std::collections::BinaryHeap::new();
        while let Some(rec) = r.next_record()? {
            if job.opts.device.is_some_and(|d| d != rec.device) {
                job.other_devices += 1;
                continue;
            }
            let Some(d) = ddir_of(rec.op) else {
                job.flushes += 1;
                continue;
            };
            if rec.len == 0 {
                job.empty += 1;
                continue;
            }
            if job.replay.skip & (1 << d.index()) != 0 {
                continue;
            }
            let (line, pre) = where_is(&job.format, rec.at);
            let err = |m: String| InputError::new(&name, line, format!("{pre}{m}"));
            let len = round_len(job.format == Format::Blktrace, job.replay.align, rec.len);
            if len > u64::from(u32::MAX) {
                return Err(err(format!(
                    "an I/O of {len} bytes: flashpath replays I/Os below 4 GiB"
                )));
            }
            let offset = job.place(rec.offset).map_err(err)?;
            if job.first_unaligned.is_none()
                && (!offset.is_multiple_of(SECTOR) || !len.is_multiple_of(SECTOR))
            {
                job.first_unaligned = Some((rec.at, d, offset, len));
            }
            if let Some(p) = prev {
                let gap_us = rec.time_ns.saturating_sub(p) / 1_000;
                if gap_us > MAX_PAUSE_US && !job.replay.no_stall && !job.opts.absolute {
                    return Err(err(format!(
                        "{gap_us} us after the previous I/O: flashpath replays pauses up to {} \
                         hours",
                        MAX_PAUSE_US / 3_600_000_000
                    )));
                }
            } else {
                job.t0 = rec.time_ns;
            }
            if job.opts.absolute && !job.replay.no_stall {
                let at = scale(
                    rec.time_ns.saturating_sub(job.t0),
                    job.replay.time_scale_pct,
                );
                if at > MAX_SPAN_NS {
                    return Err(err(format!(
                        "{} s after the first I/O (after --time-scale): flashpath replays \
                         traces up to {} days long",
                        at / 1_000_000_000,
                        MAX_SPAN_NS / 86_400_000_000_000
                    )));
                }
            }
            prev = Some(rec.time_ns);
            job.digest.add(d, offset, len, rec.time_ns);
            job.ios[d.index()] += 1;
            job.largest[d.index()] = job.largest[d.index()].max(len);
            job.end = job.end.max(offset.saturating_add(len));
            job.bytes = job.bytes.saturating_add(len);
            if let Some(l) = rec.latency_ns() {
                job.recorded.record(l);
                while inflight.peek().is_some_and(|c| c.0 <= rec.time_ns) {
                    inflight.pop();
                }
                inflight.push(std::cmp::Reverse(rec.time_ns + l));
                job.max_depth = job.max_depth.max(inflight.len() as u64);
            }
        }
        job.events = r.events_used();
        if job.ios.iter().sum::<u64>() == 0 {
            return Err(InputError::new(
                &name,
                None,
                format!(
                    "the trace has no read, write or trim to replay ({} flushes, {} records of \
                     other devices, {} of no bytes)",
                    job.flushes, job.other_devices, job.empty
                ),
            ));
        }
        Ok(job)
    }

    /// The first I/O O_DIRECT cannot do (not whole 512-byte sectors), as
    /// the error that names it: Linux fails such a read or write with
    /// EINVAL (fio's "first direct IO errored", err=22), as flashpath
    /// refuses a job's unaligned `bs`.
    pub fn unaligned_error(&self) -> Option<InputError> {
        let (at, d, offset, len) = self.first_unaligned?;
        let (line, pre) = where_is(&self.format, at);
        let fix = if !offset.is_multiple_of(SECTOR) {
            "; replay_align=512 (flashpath replay --replay-align 512) rounds offsets down to \
             a sector, as fio's does"
        } else {
            ""
        };
        Some(InputError::new(
            self.path.display().to_string(),
            line,
            format!(
                "{pre}{} {len} bytes at offset {offset}{}: O_DIRECT I/O must be whole \
                 {SECTOR}-byte sectors; fio's I/O fails with EINVAL (err=22){fix}",
                describe(d),
                if self.replay.offset_scale > 1 || self.replay.align > 0 {
                    " (after replay_scale and replay_align)"
                } else {
                    ""
                },
            ),
        ))
    }

    /// A record's offset after the shift, replay_scale and replay_align.
    fn place(&self, offset: u64) -> std::result::Result<u64, String> {
        let shifted = match self.opts.remap {
            Remap::Shift(s) => {
                let o = i128::from(offset) + i128::from(s);
                u64::try_from(o)
                    .map_err(|_| format!("offset {offset} shifted by {s} is outside the device"))?
            }
            _ => offset,
        };
        let mut o = shifted / self.replay.offset_scale.max(1);
        if self.replay.align > 0 {
            o &= !(self.replay.align - 1);
        }
        Ok(o)
    }

    /// Every replayed I/O lies on a device of `capacity` bytes, or the
    /// remap says where it goes; else the first that does not, named.
    pub fn check_within(&self, capacity: u64) -> Result<()> {
        let name = self.path.display().to_string();
        if let Some(d) = (0..3).find(|d| self.largest[*d] > capacity) {
            return Err(InputError::new(
                &name,
                None,
                format!(
                    "its largest {} ({} bytes) is larger than the device ({capacity} bytes)",
                    ["read", "write", "trim"][d],
                    self.largest[d]
                ),
            ));
        }
        if self.end <= capacity || matches!(self.opts.remap, Remap::Wrap | Remap::Scale) {
            return Ok(());
        }
        let mut src = self.source(0, capacity)?;
        while let Some(rec) = src.reader.next_record()? {
            let Some(u) = src.take(&rec) else { continue };
            if u.offset + u64::from(u.len) > capacity {
                let (line, pre) = where_is(&self.format, rec.at);
                return Err(InputError::new(
                    &name,
                    line,
                    format!(
                        "{pre}{} {} bytes at offset {} reaches past the end of the device \
                         ({capacity} bytes); --remap wrap, scale or offset:BYTES places such \
                         I/O on it",
                        describe(u.ddir),
                        u.len,
                        u.offset
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A reader of the trace from its start, placing I/O in the region
    /// `[start, start + len)`.
    pub fn source(self: &TraceJob, start: u64, len: u64) -> Result<TraceSource> {
        Ok(TraceSource {
            reader: super::open_with(
                &self.path,
                &self.format,
                self.opts.per_cpu_files,
                self.opts.preflush_writes,
            )?,
            job: TraceJobView {
                device: self.opts.device,
                remap: self.opts.remap,
                absolute: self.opts.absolute,
                replay: self.replay.clone(),
                end: self.end,
                t0: self.t0,
                blktrace: self.format == Format::Blktrace,
            },
            start,
            len,
            prev: None,
            pace: Pace::None,
            sync: None,
            digest: Digest::default(),
            shared: None,
        })
    }

    /// The run's reading of the trace gave `got` where the checking pass
    /// gave [`TraceJob::digest`]: the message naming the file and, when
    /// known, the record or line where they part.
    fn changed(&self, at: Option<u64>, what: &str) -> InputError {
        let (line, pre) = match at {
            Some(a) => where_is(&self.format, a),
            None => (None, String::new()),
        };
        InputError::new(
            self.path.display().to_string(),
            line,
            format!(
                "{pre}the trace changed since flashpath checked it before the run ({what}); \
                 the replay stopped there: replay a file nothing writes to while it runs"
            ),
        )
    }
}

/// The sector O_DIRECT I/O must be made of (the check a job's `bs` gets).
const SECTOR: u64 = 512;

/// A record's length as fio replays it: blktrace.c `t_bytes_align` rounds
/// a blktrace I/O's bytes up to replay_align (its other logs keep theirs).
fn round_len(blktrace: bool, align: u64, len: u64) -> u64 {
    if blktrace && align > 0 {
        len.div_ceil(align).saturating_mul(align)
    } else {
        len
    }
}

/// What the source needs of the job.
struct TraceJobView {
    device: Option<u32>,
    remap: Remap,
    absolute: bool,
    replay: ReplayOptions,
    end: u64,
    t0: u64,
    blktrace: bool,
}

/// The replay of a trace, read as it goes.
pub struct TraceSource {
    reader: Box<dyn TraceReader>,
    job: TraceJobView,
    start: u64,
    len: u64,
    prev: Option<u64>,
    pace: Pace,
    /// The item `take` gave last is a flush replayed as a sync.
    sync: Option<SyncOp>,
    /// What this pass replayed so far, to compare with the check's.
    digest: Digest,
    /// The job, where a failure of this reading is kept for the run to
    /// report (None: the caller sees errors itself).
    shared: Option<Arc<TraceJob>>,
}

impl TraceSource {
    /// The I/O a record becomes (None: not replayed), with its pace.
    fn take(&mut self, rec: &super::TraceRecord) -> Option<IoUnit> {
        let j = &self.job;
        if j.device.is_some_and(|d| d != rec.device) {
            return None;
        }
        self.sync = None;
        let Some(d) = ddir_of(rec.op) else {
            // A flush: fio's handle_trace_flush queues a DDIR_SYNC with the
            // wait since the previous queue event, as an I/O's; with
            // replay_skip=sync its time is taken and the flush dropped.
            if j.replay.skip & SKIP_SYNC != 0 {
                if !j.absolute {
                    self.prev = Some(rec.time_ns);
                }
                return None;
            }
            self.pace = self.pace_of(rec.time_ns);
            self.prev = Some(rec.time_ns);
            self.sync = Some(SyncOp::Sync);
            return Some(IoUnit {
                ddir: Ddir::Write,
                offset: self.start,
                len: 0,
            });
        };
        let len = round_len(j.blktrace, j.replay.align, rec.len);
        if len == 0 || len > u64::from(u32::MAX) || j.replay.skip & (1 << d.index()) != 0 {
            // fio's queue_trace takes the time of every queue event
            // (delay_since_ttime, last_ttime) before it drops one of no
            // bytes or of a skipped direction: the next I/O's wait starts
            // here, and this one's is lost.
            if !j.absolute {
                self.prev = Some(rec.time_ns);
            }
            return None;
        }
        let shifted = match j.remap {
            Remap::Shift(s) => u64::try_from(i128::from(rec.offset) + i128::from(s)).ok()?,
            _ => rec.offset,
        };
        let mut o = shifted / j.replay.offset_scale.max(1);
        if j.replay.align > 0 {
            o &= !(j.replay.align - 1);
        }
        let o_checked = o;
        let cap = self.len;
        match j.remap {
            Remap::Wrap if o.saturating_add(len) > cap && cap > 0 => {
                o %= cap;
            }
            Remap::Scale if j.end > cap => {
                o = (u128::from(o) * u128::from(cap) / u128::from(j.end)) as u64;
            }
            _ => {}
        }
        if matches!(j.remap, Remap::Wrap | Remap::Scale) && o.saturating_add(len) > cap {
            // The tail would pass the end: the I/O moves back to fit,
            // 4 KiB aligned.
            o = cap.saturating_sub(len) & !4095;
        }
        self.digest.add(d, o_checked, len, rec.time_ns);
        self.pace = self.pace_of(rec.time_ns);
        self.prev = Some(rec.time_ns);
        Some(IoUnit {
            ddir: d,
            offset: self.start + o,
            len: len as u32,
        })
    }

    /// The pace of a replayed item (I/O or flush) recorded at `t`.
    fn pace_of(&self, t: u64) -> Pace {
        let j = &self.job;
        if j.replay.no_stall {
            Pace::None
        } else if j.absolute {
            Pace::SinceStart(scale(t.saturating_sub(j.t0), j.replay.time_scale_pct))
        } else {
            // fio keeps the wait in whole us (blktrace.c store_ipo and
            // handle_trace_flush: ipo->delay = ttime / 1000).
            match self.prev {
                Some(p) if t > p => match scale(t - p, j.replay.time_scale_pct) / 1_000 * 1_000 {
                    0 => Pace::None,
                    ns => Pace::AfterLastIssue(ns),
                },
                _ => Pace::None,
            }
        }
    }
}

impl TraceSource {
    /// The next replayed record with the I/O it became (flushes, which
    /// move no data, left out).
    fn next_pair(&mut self) -> Option<(super::TraceRecord, IoUnit)> {
        while let Ok(Some(rec)) = self.reader.next_record() {
            if let Some(u) = self.take(&rec).filter(|_| self.sync.is_none()) {
                return Some((rec, u));
            }
        }
        None
    }
}

/// The per-I/O comparison: one row per replayed I/O, in trace order, with
/// its recorded latency (empty when the trace has none) and the simulated
/// one. Simulated samples (`samples`, in completion order, offsets in the
/// job's region of `len` bytes) are matched to records by direction,
/// offset and length, first issued first completed.
pub fn per_io_csv(
    job: &TraceJob,
    samples: &[crate::report::LatSample],
    len: u64,
) -> Result<String> {
    use std::collections::{HashMap, VecDeque};
    let mut by_key: HashMap<(u8, u64, u32), VecDeque<usize>> = HashMap::new();
    for (i, s) in samples.iter().enumerate() {
        by_key
            .entry((s.ddir, s.offset, s.bs))
            .or_default()
            .push_back(i);
    }
    let mut src = job.source(0, len)?;
    let at = if job.format == Format::Blktrace {
        "record"
    } else {
        "line"
    };
    let mut out = format!(
        "{at},time_ns,op,offset,bytes,recorded_lat_ns,simulated_lat_ns,simulated_clat_ns\n"
    );
    while let Some((rec, u)) = src.next_pair() {
        let sim = by_key
            .get_mut(&(u.ddir as u8, u.offset, u.len))
            .and_then(VecDeque::pop_front)
            .map(|i| &samples[i]);
        let opt = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
        out += &format!(
            "{},{},{},{},{},{},{},{}\n",
            rec.at,
            rec.time_ns.saturating_sub(job.t0),
            rec.op.name(),
            u.offset,
            u.len,
            opt(rec.latency_ns()),
            opt(sim.map(|s| s.lat_ns)),
            opt(sim.map(|s| s.clat_ns)),
        );
    }
    Ok(out)
}

/// A recorded time scaled by fio's replay_time_scale (percent).
fn scale(ns: u64, pct: u32) -> u64 {
    (u128::from(ns) * 100 / u128::from(pct.max(1))).min(u128::from(u64::MAX)) as u64
}

impl IoSource for TraceSource {
    fn next_io(&mut self) -> Option<IoUnit> {
        // The file was read whole before the run: anything this reading
        // finds that the check did not (an error, an I/O past the device,
        // a different stream of I/Os, an early or late end) means it
        // changed since. The run ends the replay there and reports it
        // (`TraceJob::failure`) rather than ending short in silence.
        loop {
            let rec = match self.reader.next_record() {
                Ok(Some(rec)) => rec,
                Ok(None) => {
                    self.finish();
                    return None;
                }
                Err(e) => {
                    let what = format!("now: {}", e.message);
                    let at = e.line.map(u64::from);
                    self.fail(at, &what);
                    return None;
                }
            };
            let Some(u) = self.take(&rec) else { continue };
            if self.sync.is_some() {
                return Some(u);
            }
            let (ios, checked) = (self.digest.ios, self.checked().ios);
            if ios > checked {
                self.fail(
                    Some(rec.at),
                    &format!("it holds more than the {checked} I/Os it had"),
                );
                return None;
            }
            if u.offset + u64::from(u.len) > self.start + self.len {
                self.fail(
                    Some(rec.at),
                    &format!(
                        "{} {} bytes at offset {} now reaches past the end of the device",
                        describe(u.ddir),
                        u.len,
                        u.offset - self.start
                    ),
                );
                return None;
            }
            return Some(u);
        }
    }

    fn pace(&self) -> Pace {
        self.pace
    }

    fn sync(&self) -> Option<SyncOp> {
        self.sync
    }
}

impl TraceSource {
    /// What the checking pass replayed.
    fn checked(&self) -> Digest {
        self.shared.as_ref().map_or(self.digest, |j| j.digest)
    }

    /// The reading ended: it must have replayed what the check did.
    fn finish(&mut self) {
        let want = self.checked();
        if self.digest.ios < want.ios {
            let what = format!(
                "it ended after {} of the {} I/Os it had",
                self.digest.ios, want.ios
            );
            self.fail(None, &what);
        } else if self.digest != want {
            self.fail(None, "its I/Os are not those it had");
        }
    }

    /// Keep the first failure for the run to report.
    fn fail(&mut self, at: Option<u64>, what: &str) {
        if let Some(job) = &self.shared {
            let _ = job.failure.set(job.changed(at, what));
        }
    }
}

/// A shared trace job's source for a job clone (the fio source factory).
/// A failure to read the trace again is kept in the job
/// ([`TraceJob::failure`]) for the run to report.
pub fn source_of(job: &Arc<TraceJob>, start: u64, len: u64) -> Box<dyn IoSource> {
    match job.source(start, len) {
        Ok(mut s) => {
            s.shared = Some(Arc::clone(job));
            Box::new(s)
        }
        Err(e) => {
            let _ = job
                .failure
                .set(job.changed(None, &format!("it no longer opens: {}", e.message)));
            Box::new(Empty)
        }
    }
}

struct Empty;

impl IoSource for Empty {
    fn next_io(&mut self) -> Option<IoUnit> {
        None
    }
}
