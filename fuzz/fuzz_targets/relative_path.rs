//! Workspace-relative paths from the index: an accepted one cannot climb out.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        turnback_store::fuzz_support::relative_path(s);
    }
});
