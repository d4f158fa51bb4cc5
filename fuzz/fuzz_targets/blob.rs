//! Blobs: backups made of the input (whole, compressed or as differences
//! from one another) read back as they were, and the input itself read as a
//! blob (a store written by someone else) yields nothing unverified.
#![no_main]

// Debug assertions and overflow checks are half of what fuzzing finds:
// refuse a build without them (`cargo fuzz run -O`).
const _: () = assert!(
    cfg!(debug_assertions),
    "fuzz with debug assertions: `cargo fuzz run` without -O (or with -a)"
);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    turnback_store::fuzz_support::blob_round_trip(data);
});
