//! fio job files: the grammar as fio 3.33 reads it, the options that shape
//! I/O, and the per-job I/O stream (offsets, sizes, directions).

pub mod job;

pub use job::*;
