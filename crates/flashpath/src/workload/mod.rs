//! Workloads: fio job files, iozone and dd command lines and fio I/O logs,
//! a host layer that garbage-collects zones ([`hostgc`]),
//! resolved into job specifications and per-job I/O streams.

pub mod dd;
pub mod fio;
pub mod hostgc;
pub mod iolog;
pub mod iozone;
pub mod trace;

// The I/O vocabulary every layer shares lives below them all.
pub use crate::types::{Ddir, IoUnit};

/// When a paced source (a log replay) lets the I/O it just gave be issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// At once (the job's own rate limits still apply).
    None,
    /// This long (ns) after the job's previous issue (fio's iolog_delay).
    AfterLastIssue(u64),
    /// Not before this long (ns) after the job started (a trace replayed
    /// at its recorded times).
    SinceStart(u64),
    /// Not before this long (ns) after the run started, fio's genesis (a
    /// v2 `wait`: iolog.c read_iolog_get sleeps until
    /// `mtime_since_genesis()` reaches it, so a job that starts later,
    /// after a startdelay or a stonewall, waits less or not at all).
    SinceGenesis(u64),
}

/// A sync a replayed log or trace asks for (fio's DDIR_SYNC and
/// DDIR_DATASYNC: an iolog's `sync` / `datasync` entry, a blktrace flush,
/// blktrace.c handle_trace_flush). fio reports both in its sync latency
/// and counts only DDIR_SYNC in `sync.total_ios` (stat.c
/// show_ddir_status_json: `total_io_u[DDIR_SYNC]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOp {
    Sync,
    Datasync,
}

/// Anything that yields a job's I/Os in order: a fio job's stream, an
/// iozone phase, a trace replayer. `None` means the job's work is done.
pub trait IoSource {
    fn next_io(&mut self) -> Option<IoUnit>;
    /// The pacing of the I/O `next_io` returned last. The thread sleeps
    /// until then without reaping, as fio sleeps inside get_io_u.
    fn pace(&self) -> Pace {
        Pace::None
    }
    /// Whether what `next_io` returned last is a sync rather than an I/O
    /// (its unit then carries no data: length 0). Only replays have them.
    fn sync(&self) -> Option<SyncOp> {
        None
    }
    /// Before `next_io`: per direction (read, write), how long until the
    /// job's rate limit lets it issue (0: due or behind), None if not
    /// rate-limited. A mixed fio job switches to the direction that is
    /// due (io_u.c rate_ddir); other sources ignore it.
    fn rate_view(&mut self, _until_due: [Option<u64>; 2]) {}
    /// Where a sequential source goes on in direction `ddir`: the device
    /// offset the last I/O, as issued, ended at (fio's f->last_pos, which
    /// get_io_u sets after zonemode=zbd moved the I/O). Other sources
    /// ignore it.
    fn set_last_pos(&mut self, _ddir: Ddir, _end: u64) {}
    /// Which of the job's files device offset `offset` lies in, and where
    /// in that file (fio logs an I/O against its own file, write_iolog's
    /// `name.clone.file`): `None` for a source of one file, whose offset
    /// in its region is the file offset.
    fn file_of(&self, _offset: u64) -> Option<(u32, u64)> {
        None
    }
}
