//! `index.summary` as read from disk (after its checksum line): what the
//! reader accepts names no path unsafely and reads back the same.
#![no_main]

// Debug assertions and overflow checks are half of what fuzzing finds:
// refuse a build without them (`cargo fuzz run -O`).
const _: () = assert!(
    cfg!(debug_assertions),
    "fuzz with debug assertions: `cargo fuzz run` without -O (or with -a)"
);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    turnback_store::fuzz_support::summary_round_trip(data);
});
