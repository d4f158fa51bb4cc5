//! Operation sequences on a scratch workspace, checked step by step against
//! the model of the store that the model test uses (`tests/model/`): every
//! result as predicted, the workspace, entries, turns and history as the
//! model has them, and nothing escaped through the links the input plants.
//! The decoding and the checks: `tests/model/fuzzing.rs`.
#![no_main]

#[path = "../../tests/model/driver.rs"]
mod driver;
#[path = "../../tests/model/fuzzing.rs"]
mod fuzzing;
#[path = "../../tests/model/reference.rs"]
mod reference;
#[path = "../../tests/model/support.rs"]
mod support;

// Debug assertions and overflow checks are half of what fuzzing finds:
// refuse a build without them (`cargo fuzz run -O`).
const _: () = assert!(
    cfg!(debug_assertions),
    "fuzz with debug assertions: `cargo fuzz run` without -O (or with -a)"
);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzzing::run(data);
});
