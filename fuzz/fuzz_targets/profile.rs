#![no_main]
//! `profile`: see flashpath::check::profile_input for the input format.

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Relative profile includes resolve in the (empty) scratch folder.
    sandbox::sandbox();
    let _ = flashpath::check::profile_input(data);
});
