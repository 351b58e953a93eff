//! The host: CPU cores that run the kernel's I/O path (costs scaled by core
//! frequency), the threads (fio jobs) on them, and idle states.

pub mod cpu;
