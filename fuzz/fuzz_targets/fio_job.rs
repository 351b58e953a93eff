#![no_main]
//! `fio_job`: see flashpath::check::fio_job_input for the input format.

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = flashpath::check::fio_job_input(data, sandbox::sandbox());
});
