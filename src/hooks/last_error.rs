//! The last hook error, kept in the store home (`<home>/last-hook-error.json`)
//! so that `turnback doctor` can show it: a hook's own message may have gone
//! by unseen (Claude Code shows `systemMessage` only in some modes).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The file's name in the store home.
pub(crate) const FILE: &str = "last-hook-error.json";

/// Where the last hook error of the store at `home` is kept.
pub(crate) fn path(home: &Path) -> PathBuf {
    home.join(FILE)
}

/// Keeps `message` as the last error of a hook of `agent`, for `event`.
/// Best effort: a hook that cannot write it has said its message already.
pub(crate) fn record(home: &Path, agent: &str, event: &str, message: &str) {
    let time = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let v = json!({ "time": time, "agent": agent, "event": event, "message": message });
    let _ = crate::sys::write_private(home, FILE, v.to_string().as_bytes());
}

/// The last hook error, if one was kept.
pub(crate) fn read(home: &Path) -> Option<Value> {
    let bytes = std::fs::read(path(home)).ok()?;
    serde_json::from_slice(&bytes).ok()
}
