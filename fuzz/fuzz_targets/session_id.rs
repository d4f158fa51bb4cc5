//! Session ids: an accepted id names exactly one child directory.
#![no_main]

// Debug assertions and overflow checks are half of what fuzzing finds:
// refuse a build without them (`cargo fuzz run -O`).
const _: () = assert!(
    cfg!(debug_assertions),
    "fuzz with debug assertions: `cargo fuzz run` without -O (or with -a)"
);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        turnback_store::fuzz_support::session_id(s);
    }
});
