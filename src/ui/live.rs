//! Whether the store changed since the screen was drawn: a cheap look at
//! the files a change touches (`docs/FORMAT.md`: a session's directory, its
//! `index.json` and `journal.jsonl`; the `sessions` directory a new session
//! is made in), a few stats and no read, taken at most a few times a second.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How often the store is looked at.
pub(crate) const EVERY: Duration = Duration::from_millis(250);

/// The state of the files looked at: equal stamps, no change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Stamp(Vec<Option<(SystemTime, u64)>>);

/// The stamp of the store under `home`, for the sessions `ids`.
pub(crate) fn stamp<'a>(home: &Path, ids: impl Iterator<Item = &'a str>) -> Stamp {
    let sessions = home.join("sessions");
    let mut out = vec![look(&sessions)];
    for id in ids {
        let dir = sessions.join(id);
        out.push(look(&dir));
        out.push(look(&dir.join("index.json")));
        out.push(look(&dir.join("journal.jsonl")));
    }
    Stamp(out)
}

fn look(p: &Path) -> Option<(SystemTime, u64)> {
    let md = std::fs::metadata(p).ok()?;
    Some((md.modified().ok()?, md.len()))
}
