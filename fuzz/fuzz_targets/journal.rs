//! `journal.jsonl` as read from disk: what the reader accepts is an index the
//! snapshot reader accepts too.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    turnback_store::fuzz_support::journal_replay(data);
});
