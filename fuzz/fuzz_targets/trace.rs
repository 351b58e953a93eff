#![no_main]
//! `trace`: see flashpath::check::trace_input for the input format.

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = flashpath::check::trace_input(data, sandbox::sandbox());
});
