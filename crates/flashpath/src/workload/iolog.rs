//! fio's I/O logs (`read_iolog=`), read and replayed as fio 3.33 does
//! (iolog.c: `read_iolog`, `read_iolog_get`, `iolog_delay`).
//!
//! Version 2: `FILE ACTION [OFFSET LENGTH]`, with `wait` lines whose
//! "offset" is a time in ms since the run started (fio's genesis). Version 3:
//! `TIMESTAMP FILE ACTION [OFFSET LENGTH]`, timestamps in us since the job
//! started; an entry's delay is its timestamp less the previous entry's,
//! and fio sleeps that long after the previous issue before it issues the
//! entry (`iolog_delay`), without reaping what is in flight (fio 3.36
//! reaps meanwhile: `trace::replay::ReplayDelay`). File actions
//! (`add`, `open`, `close`) issue nothing; their delays are slept all the
//! same, so here they fold into the next I/O's delay. `sync` and
//! `datasync` entries are replayed as fio replays them: an fsync or
//! fdatasync of the file, paced as an I/O is (the thread's sync path).
//! fio 3.33 applies `replay_skip` to blktrace files only (blktrace.c), not
//! to iologs: an iolog replays every entry whatever `replay_skip` says.

use crate::error::{quote, InputError, Result};
use crate::workload::{Ddir, IoSource, IoUnit, Pace, SyncOp};
use std::sync::Arc;

/// How a replay changes the log (fio's replay_* options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayOptions {
    /// replay_no_stall: issue as fast as possible (all delays 0).
    pub no_stall: bool,
    /// replay_time_scale: delays scaled by 100 / this percentage.
    pub time_scale_pct: u32,
    /// replay_scale: offsets divided by this.
    pub offset_scale: u64,
    /// replay_align: offsets rounded down to this (a power of two), 0 none.
    pub align: u64,
    /// replay_skip: bit per direction (fio's DDIR_* order) not replayed
    /// (blktrace files only, as fio 3.33: iologs ignore it).
    pub skip: u8,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            no_stall: false,
            time_scale_pct: 100,
            offset_scale: 1,
            align: 0,
            skip: 0,
        }
    }
}

/// replay_skip's bit for sync entries (fio's DDIR_SYNC = 3).
pub const SKIP_SYNC: u8 = 1 << 3;

/// One I/O of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IologEntry {
    pub unit: IoUnit,
    pub pace: Pace,
    /// The log line it came from (1-based), for messages.
    pub line: u32,
    /// A `sync` / `datasync` entry rather than an I/O (its unit then
    /// holds the log's offset and a length of 0).
    pub sync: Option<SyncOp>,
}

/// The longest pause a log may ask for, in us: a v3 gap between two
/// entries (after replay_time_scale) or a v2 `wait` since the run started.
/// fio would sleep that long; the simulation would advance its clock
/// through the idle time, and a corrupt timestamp near 2^64 must not make
/// it spin for years of virtual time or wrap the nanosecond clock.
pub const MAX_PAUSE_US: u64 = 24 * 3600 * 1_000_000;

/// A parsed log: its I/Os in order and the one file they address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iolog {
    pub version: u8,
    pub file: String,
    pub entries: Vec<IologEntry>,
    /// One past the highest byte addressed (the file must be this large).
    pub end: u64,
    /// Bytes of all I/Os (fio adds each entry's length to `size`).
    pub bytes: u64,
    /// v3 timestamps that went backwards: how many, and the first's line
    /// (fio issues such an entry at once; the run warns of it).
    pub backwards: (u64, u32),
    /// `trim` entries left out, as fio 3.33 leaves them out: how many, and
    /// the first's line (the run warns of them).
    pub trims_skipped: (u64, u32),
    /// `sync` and `datasync` entries replayed.
    pub syncs: u64,
}

impl Iolog {
    /// The first I/O that reaches past `capacity` bytes, as an error
    /// naming the log (`file`) and the line: the log addresses the device
    /// directly, so an offset past its end is the log's mistake.
    pub fn check_within(&self, file: &str, capacity: u64) -> Result<()> {
        match self
            .entries
            .iter()
            .find(|e| e.sync.is_none() && e.unit.offset + u64::from(e.unit.len) > capacity)
        {
            None => Ok(()),
            Some(e) => Err(InputError::new(
                file,
                Some(e.line),
                format!(
                    "{} {} bytes at offset {} reaches past the end of the device ({} bytes)",
                    match e.unit.ddir {
                        Ddir::Read => "a read of",
                        Ddir::Write => "a write of",
                        Ddir::Trim => "a trim of",
                    },
                    e.unit.len,
                    e.unit.offset,
                    capacity
                ),
            )),
        }
    }

    pub fn source(self: &Arc<Self>, start: u64) -> IologSource {
        IologSource {
            log: Arc::clone(self),
            start,
            next: 0,
            pace: Pace::None,
            sync: None,
        }
    }

    /// The reads and writes of the log (its syncs left out).
    pub fn ios(&self) -> impl Iterator<Item = &IologEntry> {
        self.entries.iter().filter(|e| e.sync.is_none())
    }
}

/// Parse log text; `file` names it in messages.
pub fn parse(file: &str, text: &str, opts: &ReplayOptions) -> Result<Iolog> {
    let at = |line: usize, msg: String| InputError::new(file, Some(line as u32), msg);
    let mut lines = text.lines().enumerate();
    let version = match lines.next() {
        Some((_, l)) if l.trim_end() == "fio version 2 iolog" => 2,
        Some((_, l)) if l.trim_end() == "fio version 3 iolog" => 3,
        Some((_, l)) => {
            return Err(at(
                1,
                format!(
                    "not a fio iolog: the first line must be 'fio version 2 iolog' or \
                     'fio version 3 iolog', not {} (version 1 logs are not read)",
                    quote(l.trim_end())
                ),
            ))
        }
        None => return Err(InputError::new(file, None, "empty iolog".to_string())),
    };
    let mut log = Iolog {
        version,
        file: String::new(),
        entries: Vec::new(),
        end: 0,
        bytes: 0,
        backwards: (0, 0),
        trims_skipped: (0, 0),
        syncs: 0,
    };
    // Delay owed to the next I/O (v3: slept by file actions before it).
    let mut owed_us = 0u64;
    let mut last_ts: u64 = 0;
    let mut wait_until_ms: Option<u64> = None;
    for (i, raw) in lines {
        let line = i + 1;
        let line_u32 = u32::try_from(line).unwrap_or(u32::MAX);
        let fields: Vec<&str> = raw.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let rest = if version == 3 {
            let ts: u64 = fields[0].parse().map_err(|_| {
                at(
                    line,
                    format!("{} is not a timestamp in us", quote(fields[0])),
                )
            })?;
            // iolog.c delay_since_ttime: nothing before the first stamp,
            // nothing when time runs backwards, scaled by 100/pct.
            if ts < last_ts {
                if log.backwards.0 == 0 {
                    log.backwards.1 = line_u32;
                }
                log.backwards.0 += 1;
            }
            let delay = if last_ts == 0 || opts.no_stall || ts < last_ts {
                0
            } else {
                u128::from(ts - last_ts) * 100 / u128::from(opts.time_scale_pct.max(1))
            };
            last_ts = ts;
            owed_us = match u64::try_from(u128::from(owed_us) + delay) {
                Ok(us) if us <= MAX_PAUSE_US => us,
                _ => {
                    return Err(at(
                        line,
                        format!(
                            "timestamp {ts} asks for a pause of more than {} hours since the \
                             previous I/O; flashpath replays pauses up to that",
                            MAX_PAUSE_US / 3_600_000_000
                        ),
                    ))
                }
            };
            &fields[1..]
        } else {
            &fields[..]
        };
        let (fname, action) = match rest {
            [f, a, ..] => (*f, *a),
            _ => {
                return Err(at(
                    line,
                    format!("expected FILE ACTION, got {}", quote(raw.trim())),
                ))
            }
        };
        let io = match action {
            "add" | "open" | "close" => {
                if rest.len() != 2 {
                    return Err(at(line, format!("'{action}' takes no offset or length")));
                }
                one_file(&mut log.file, fname).map_err(|m| at(line, m))?;
                continue;
            }
            "wait" if version == 3 => {
                // fio: "ignoring wait command with version 3".
                continue;
            }
            "wait" => {
                let ms = rest
                    .get(2)
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| {
                        at(line, "wait needs a time in ms since the run started".into())
                    })?;
                if ms > MAX_PAUSE_US / 1_000 {
                    return Err(at(
                        line,
                        format!(
                            "wait until {ms} ms is more than {} hours after the job started; \
                             flashpath replays pauses up to that",
                            MAX_PAUSE_US / 3_600_000_000
                        ),
                    ));
                }
                if !opts.no_stall {
                    wait_until_ms = Some(ms);
                }
                continue;
            }
            "read" => Ddir::Read,
            "write" => Ddir::Write,
            "trim" => {
                // fio 3.33's read_iolog2 knows no trim: it prints "bad
                // ddir: 2" and skips the line (the entry's delay folds into
                // the next I/O's, as a file action's does), so the log
                // replays without its trims (tests/fixtures/traces/
                // fio-upstream-t0038: fio 3.33's run, 0 trims); fio 3.34
                // replays them (commit dd6500e9).
                if log.trims_skipped.0 == 0 {
                    log.trims_skipped.1 = line_u32;
                }
                log.trims_skipped.0 += 1;
                continue;
            }
            // fio's DDIR_SYNC and DDIR_DATASYNC: replayed as the
            // engine's fsync / fdatasync of the file (read_iolog2 reads
            // them as it reads an I/O, offset and length included).
            "sync" => Ddir::Write,
            "datasync" => Ddir::Write,
            other => return Err(at(line, format!("unknown iolog action {}", quote(other)))),
        };
        let sync = match action {
            "sync" => Some(SyncOp::Sync),
            "datasync" => Some(SyncOp::Datasync),
            _ => None,
        };
        let (offset, len) = match rest {
            [_, _, o, l] => (
                o.parse::<u64>()
                    .map_err(|_| at(line, format!("{} is not a byte offset", quote(o))))?,
                l.parse::<u32>()
                    .map_err(|_| at(line, format!("{} is not a length in bytes", quote(l))))?,
            ),
            _ => return Err(at(line, format!("'{action}' needs OFFSET LENGTH"))),
        };
        if len == 0 && sync.is_none() {
            return Err(at(line, "an I/O of 0 bytes".into()));
        }
        if offset.checked_add(u64::from(len)).is_none() {
            return Err(at(
                line,
                format!(
                    "offset {offset} plus length {len} passes the end of any device (2^64 bytes)"
                ),
            ));
        }
        one_file(&mut log.file, fname).map_err(|m| at(line, m))?;
        let mut offset = offset / opts.offset_scale.max(1);
        if opts.align > 0 {
            offset &= !(opts.align - 1);
        }
        let pace = match (version, wait_until_ms.take()) {
            (2, Some(ms)) => Pace::SinceGenesis(ms * 1_000_000),
            (2, None) => Pace::None,
            _ if owed_us > 0 => Pace::AfterLastIssue(owed_us * 1_000),
            _ => Pace::None,
        };
        owed_us = 0;
        if sync.is_some() {
            // A sync moves no data: fio's io_u has the log's offset and
            // length, which its fsync ignores.
            log.syncs += 1;
            log.entries.push(IologEntry {
                unit: IoUnit {
                    ddir: io,
                    offset,
                    len: 0,
                },
                pace,
                line: line_u32,
                sync,
            });
            continue;
        }
        // Scaling and aligning only lower the offset: no overflow here.
        log.end = log.end.max(offset + u64::from(len));
        log.bytes = log.bytes.saturating_add(u64::from(len));
        log.entries.push(IologEntry {
            unit: IoUnit {
                ddir: io,
                offset,
                len,
            },
            pace,
            line: line_u32,
            sync: None,
        });
    }
    // fio's read_iolog2: "if (!reads && !writes && !waits) return false"
    // (a log of syncs alone fails to initialise).
    if log.ios().next().is_none() {
        let trims = if log.trims_skipped.0 > 0 {
            " (fio 3.33 skips its trims: 'bad ddir: 2')"
        } else {
            ""
        };
        return Err(InputError::new(
            file,
            None,
            format!("the iolog has no read or write to replay{trims}"),
        ));
    }
    Ok(log)
}

/// The log's one file: the first name seen; another name is refused.
fn one_file(file: &mut String, name: &str) -> std::result::Result<(), String> {
    if file.is_empty() {
        *file = name.to_string();
    } else if file != name {
        return Err(format!(
            "a second file {} (the log also uses {}): replaying several files from one \
             iolog is not simulated yet",
            quote(name),
            quote(file)
        ));
    }
    Ok(())
}

/// A replay of one log, offsets placed in the job's file region.
pub struct IologSource {
    log: Arc<Iolog>,
    start: u64,
    next: usize,
    pace: Pace,
    sync: Option<SyncOp>,
}

impl IoSource for IologSource {
    fn next_io(&mut self) -> Option<IoUnit> {
        let e = self.log.entries.get(self.next)?;
        self.next += 1;
        self.pace = e.pace;
        self.sync = e.sync;
        Some(IoUnit {
            offset: self.start + e.unit.offset,
            ..e.unit
        })
    }

    fn pace(&self) -> Pace {
        self.pace
    }

    fn sync(&self) -> Option<SyncOp> {
        self.sync
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Ns;

    /// Sum of a v3 log's I/O delays (ns).
    fn total_stall(log: &Iolog) -> Ns {
        log.entries
            .iter()
            .map(|e| match e.pace {
                Pace::AfterLastIssue(d) => d,
                _ => 0,
            })
            .sum()
    }

    const V3: &str = "fio version 3 iolog\n22 /f add\n441 /f open\n450 /f read 4096 8192\n\
                      588 /f write 0 4096\n700 /f trim 8192 4096\n900 /f close\n";

    #[test]
    fn v3_delays_are_gaps_and_file_actions_fold_into_the_next_io() {
        let log = parse("t.iolog", V3, &ReplayOptions::default()).unwrap();
        assert_eq!(log.file, "/f");
        let paces: Vec<Pace> = log.entries.iter().map(|e| e.pace).collect();
        // add at 22 has no delay (the first stamp); open 419 us, read 9 us.
        assert_eq!(
            paces,
            vec![Pace::AfterLastIssue(428_000), Pace::AfterLastIssue(138_000)]
        );
        // The trim on line 6 is left out, as fio 3.33 leaves it out.
        assert_eq!(log.end, 12288);
        assert_eq!(log.bytes, 8192 + 4096);
        assert_eq!(log.trims_skipped, (1, 6));
        assert!(log.entries.iter().all(|e| e.unit.ddir != Ddir::Trim));
    }

    /// fio 3.33 skips a trim line ("bad ddir: 2"); its gap still passes
    /// before the next I/O (the next entry's delay is from the last one
    /// fio kept), and its bytes add nothing to the job's size
    /// (tests/fixtures/traces/fio-upstream-t0038: 0 trims, 10 writes).
    #[test]
    fn trims_are_skipped_as_fio_3_33_skips_them() {
        let t = "fio version 3 iolog\n10 /f write 0 4096\n30 /f trim 0 2147483648\n\
                 100 /f write 4096 4096\n";
        let log = parse("t.iolog", t, &ReplayOptions::default()).unwrap();
        assert_eq!(log.entries.len(), 2);
        assert_eq!(log.entries[1].pace, Pace::AfterLastIssue(90_000));
        assert_eq!((log.end, log.bytes), (8192, 8192));
        assert_eq!(log.trims_skipped, (1, 3));
        let only = "fio version 3 iolog\n10 /f trim 0 4096\n";
        let e = parse("t.iolog", only, &ReplayOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad ddir: 2"), "{e}");
    }

    #[test]
    fn replay_options_change_the_log_as_fio_does() {
        let o = ReplayOptions {
            no_stall: false,
            time_scale_pct: 200,
            offset_scale: 2,
            align: 4096,
            skip: 1 << Ddir::Trim.index(),
        };
        let log = parse("t.iolog", V3, &o).unwrap();
        assert_eq!(log.entries.len(), 2);
        // fio scales each gap in floating point and truncates it:
        // 419 us -> 209, 9 us -> 4.
        assert_eq!(log.entries[0].pace, Pace::AfterLastIssue(213_000));
        // 4096 / 2 = 2048, aligned down to 4096 -> 0.
        assert_eq!(log.entries[0].unit.offset, 0);
        let fast = ReplayOptions {
            no_stall: true,
            ..ReplayOptions::default()
        };
        let log = parse("t.iolog", V3, &fast).unwrap();
        assert!(log.entries.iter().all(|e| e.pace == Pace::None));
    }

    #[test]
    fn v2_waits_pace_from_the_job_start() {
        let t = "fio version 2 iolog\n/f add\n/f open\n/f read 0 4096\n/f wait 5 0\n\
                 /f write 4096 4096\n/f close\n";
        let log = parse("t.iolog", t, &ReplayOptions::default()).unwrap();
        assert_eq!(log.entries[0].pace, Pace::None);
        assert_eq!(log.entries[1].pace, Pace::SinceGenesis(5_000_000));
    }

    #[test]
    fn bad_logs_name_the_line() {
        let cases = [
            ("fio version 1 iolog\n", ":1", "version"),
            ("fio version 3 iolog\n10 /f read 0\n", ":2", "OFFSET LENGTH"),
            ("fio version 3 iolog\nx /f read 0 4096\n", ":2", "timestamp"),
            (
                "fio version 3 iolog\n1 /f read 0 4096\n2 /g read 0 4096\n",
                ":3",
                "second file",
            ),
            (
                "fio version 3 iolog\n1 /f read 0 4096\n2 /f sync\n",
                ":3",
                "OFFSET LENGTH",
            ),
            // fio's read_iolog2: no read, write or wait, no replay.
            ("fio version 3 iolog\n1 /f sync 0 0\n", "", "no read"),
            ("fio version 3 iolog\n1 /f frob 0 4096\n", ":2", "frob"),
            ("fio version 3 iolog\n1 /f add\n", "", "no read"),
        ];
        for (text, line, what) in cases {
            let e = parse("t.iolog", text, &ReplayOptions::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("t.iolog{line}")), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }

    /// `sync` and `datasync` are replayed where they stand, paced as
    /// I/Os are, moving no data; replay_skip does not touch an iolog (fio
    /// 3.33 applies it to blktrace files only).
    #[test]
    fn syncs_are_replayed_in_place_and_replay_skip_leaves_an_iolog_alone() {
        let t = "fio version 3 iolog\n10 /f write 0 4096\n30 /f sync 0 0\n\
                 50 /f datasync 8192 4096\n70 /f read 4096 4096\n";
        let skip_all = ReplayOptions {
            skip: SKIP_SYNC | 0b111,
            ..ReplayOptions::default()
        };
        let log = Arc::new(parse("t.iolog", t, &skip_all).unwrap());
        let kinds: Vec<Option<SyncOp>> = log.entries.iter().map(|e| e.sync).collect();
        assert_eq!(
            kinds,
            vec![None, Some(SyncOp::Sync), Some(SyncOp::Datasync), None]
        );
        assert_eq!(log.syncs, 2);
        assert_eq!(log.entries[1].pace, Pace::AfterLastIssue(20_000));
        assert_eq!(log.entries[2].pace, Pace::AfterLastIssue(20_000));
        // The datasync's offset and length move no data and size nothing.
        assert_eq!((log.end, log.bytes), (8192, 8192));
        assert_eq!(log.ios().count(), 2);
        let mut s = log.source(0);
        let mut seen = Vec::new();
        while let Some(u) = s.next_io() {
            seen.push((u.len, s.sync()));
        }
        assert_eq!(
            seen,
            vec![
                (4096, None),
                (0, Some(SyncOp::Sync)),
                (0, Some(SyncOp::Datasync)),
                (4096, None)
            ]
        );
    }

    #[test]
    fn the_source_places_offsets_in_the_region_and_ends() {
        let log = Arc::new(parse("t.iolog", V3, &ReplayOptions::default()).unwrap());
        let mut s = log.source(1 << 20);
        let mut n = 0;
        while let Some(u) = s.next_io() {
            assert!(u.offset >= 1 << 20);
            n += 1;
        }
        assert_eq!(n, 2);
        assert_eq!(total_stall(&log), 566_000);
    }
}
