#![no_main]
//! `dd_args`: see flashpath::check::dd_args_input for the input format.

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sandbox::sandbox();
    let _ = flashpath::check::dd_args_input(data);
});
