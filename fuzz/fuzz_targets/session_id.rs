//! Session ids: an accepted id names exactly one child directory.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        turnback_store::fuzz_support::session_id(s);
    }
});
