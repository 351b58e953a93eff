//! fio job files: the grammar as fio 3.33 reads it, the options that shape
//! I/O, and the per-job I/O stream (offsets, sizes, directions).

pub mod job;
pub mod options;
mod parse;
pub mod stream;
pub mod thread;

pub use job::*;
pub use parse::{fio_resolved_number, parse_job_file, parse_job_str, ParseContext};
pub use stream::IoStream;
pub use thread::{FioThread, Step, ThreadPlan};

impl crate::workload::IoSource for IoStream {
    fn next_io(&mut self) -> Option<crate::workload::IoUnit> {
        self.next()
    }
    fn rate_view(&mut self, until_due: [Option<u64>; 2]) {
        self.set_rate_view(until_due);
    }
}
