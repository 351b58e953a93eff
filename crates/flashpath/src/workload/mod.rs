//! Workloads: fio job files (and later iozone command lines and block
//! traces), resolved into job specifications and per-job I/O streams.

pub mod fio;
pub mod iozone;

/// Data direction, in fio's order (read, write, trim).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Ddir {
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One I/O a job asks for: direction, byte offset on the device, length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoUnit {
    pub ddir: Ddir,
    pub offset: u64,
    pub len: u32,
}

/// Anything that yields a job's I/Os in order: a fio job's stream, an
/// iozone phase, a trace replayer. `None` means the job's work is done.
pub trait IoSource {
    fn next_io(&mut self) -> Option<IoUnit>;
}
