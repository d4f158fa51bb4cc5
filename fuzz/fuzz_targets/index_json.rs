//! `index.json` as read from disk: whatever parses re-serializes to the same meaning.
#![no_main]

// Debug assertions and overflow checks are half of what fuzzing finds:
// refuse a build without them (`cargo fuzz run -O`).
const _: () = assert!(
    cfg!(debug_assertions),
    "fuzz with debug assertions: `cargo fuzz run` without -O (or with -a)"
);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    turnback_store::fuzz_support::index_round_trip(data);
});
