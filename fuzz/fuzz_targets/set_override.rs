#![no_main]
//! `set_override`: see flashpath::check::set_override_input for the input format.

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = flashpath::check::set_override_input(data, sandbox::sandbox());
});
