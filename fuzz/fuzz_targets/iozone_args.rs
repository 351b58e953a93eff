#![no_main]
//! `iozone_args`: see flashpath::check::iozone_args_input for the input format.

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Relative profile includes resolve in the (empty) scratch folder.
    sandbox::sandbox();
    let _ = flashpath::check::iozone_args_input(data);
});
