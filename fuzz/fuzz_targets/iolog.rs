#![no_main]
//! `iolog`: see flashpath::check::iolog_input for the input format.

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = flashpath::check::iolog_input(data, sandbox::sandbox());
});
