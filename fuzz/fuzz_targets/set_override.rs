#![no_main]
//! `set_override`: see flashpath::check::set_override_input for the input format.

#[path = "sandbox.rs"]
mod sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Relative profile includes resolve in the (empty) scratch folder.
    sandbox::sandbox();
    let _ = flashpath::check::set_override_input(data);
});
