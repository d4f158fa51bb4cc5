//! `index.json` as read from disk: whatever parses re-serializes to the same meaning.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    turnback_store::fuzz_support::index_round_trip(data);
});
