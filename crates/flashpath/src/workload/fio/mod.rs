//! fio job files: the grammar as fio 3.33 reads it, the options that shape
//! I/O, and the per-job I/O stream (offsets, sizes, directions).
//!
//! Before a run: [`replay`] lets a `read_iolog` decide its job's file and
//! size, [`setup`] makes fio's setup checks (and refuses what flashpath
//! does not model), [`layout`] places the files on the device and [`plan`]
//! makes one thread per job clone.

mod bc;
mod callbacks;
mod draft;
pub mod e4defrag;
pub mod errors;
pub mod flow;
mod ini;
pub mod job;
pub mod layout;
mod number;
pub(crate) mod options;
mod parse;
pub mod placement;
pub mod plan;
pub mod replay;
pub mod setup;
pub mod steadystate;
pub mod stream;
pub mod thread;
mod value;
pub mod zbd;

pub use draft::NOT_MODELLED;
pub use ini::ParseContext;
pub use job::*;
pub use number::fio_resolved_number;
pub use options::options_markdown;
pub use parse::{parse_job_file, parse_job_str};
pub use stream::IoStream;
pub use thread::{ExitWhat, FioThread, Step, ThreadPlan};

impl crate::workload::IoSource for IoStream {
    fn next_io(&mut self) -> Option<crate::workload::IoUnit> {
        self.next()
    }
    fn rate_view(&mut self, until_due: [Option<u64>; 2]) {
        self.set_rate_view(until_due);
    }
    fn set_last_pos(&mut self, ddir: crate::workload::Ddir, end: u64) {
        self.move_last_pos(ddir, end);
    }
    fn file_of(&self, offset: u64) -> Option<(u32, u64)> {
        self.file_of_offset(offset)
    }
}
