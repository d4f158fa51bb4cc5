//! Session ids: validated when given, sortable by time when generated.
//!
//! A session id becomes a directory name in the store, so it must never be able
//! to name anything but a child of `<home>/sessions/`.

use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// The longest session id accepted.
pub const MAX_LEN: usize = 128;

/// Checks that `id` is 1 to 128 of `A-Z a-z 0-9 . _ -` and does not start with `.`
/// (which also rules out `.` and `..`).
pub fn validate(id: &str) -> Result<()> {
    let bad = |reason| {
        Err(Error::InvalidSessionId {
            id: id.to_owned(),
            reason,
        })
    };
    if id.is_empty() {
        return bad("it is empty");
    }
    if id.len() > MAX_LEN {
        return bad("it is longer than 128 characters");
    }
    if id.starts_with('.') {
        return bad("it starts with '.'");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return bad("only A-Z a-z 0-9 . _ - are allowed");
    }
    Ok(())
}

/// A new session id: UTC time to the microsecond, then random hex, so ids sort by
/// creation time and two processes starting at once still differ.
pub fn generate() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!(
        "[year][month][day]T[hour][minute][second].[subsecond digits:6]Z"
    );
    let stamp = now.format(&fmt).expect("a fixed format always formats");
    format!("{stamp}-{:08x}", random_u64() as u32)
}

/// Randomness without a dependency: the standard library seeds every
/// `RandomState` from the operating system.
pub(crate) fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_agent_ids() {
        for id in ["a", "sess-1", "2026.11.30_x", &"x".repeat(128)] {
            validate(id).unwrap();
        }
    }

    #[test]
    fn refuses_what_could_escape_or_hide() {
        for id in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "../x",
            "a\\b",
            "a b",
            "é",
            &"x".repeat(129),
        ] {
            assert!(
                matches!(validate(id), Err(Error::InvalidSessionId { .. })),
                "{id:?} was accepted"
            );
        }
    }

    #[test]
    fn generated_ids_are_valid_distinct_and_sort_by_time() {
        let a = generate();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = generate();
        validate(&a).unwrap();
        validate(&b).unwrap();
        assert_ne!(a, b);
        assert!(a < b, "{a} should sort before {b}");
    }
}
