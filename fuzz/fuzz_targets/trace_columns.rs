#![no_main]
//! `trace_columns`: see flashpath::check::trace_columns_input for the
//! input format (a --columns mapping line, then a delimited trace).

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = flashpath::check::trace_columns_input(data, sandbox::sandbox());
});
