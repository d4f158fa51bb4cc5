//! `journal.jsonl` as read from disk: what the reader accepts is an index the
//! snapshot reader accepts too.
#![no_main]

// Debug assertions and overflow checks are half of what fuzzing finds:
// refuse a build without them (`cargo fuzz run -O`).
const _: () = assert!(
    cfg!(debug_assertions),
    "fuzz with debug assertions: `cargo fuzz run` without -O (or with -a)"
);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    turnback_store::fuzz_support::journal_replay(data);
});
