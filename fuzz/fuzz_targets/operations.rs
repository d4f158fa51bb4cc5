//! Operation sequences on a scratch workspace: nothing panics, nothing escapes,
//! and undoing everything restores the start.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    turnback_store::fuzz_support::operation_sequence(data);
});
