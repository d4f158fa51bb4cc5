//! Properties the fuzz targets (`fuzz/`) check, kept here so they can reach
//! private parsers. Not part of the stable API. (The `operations` target's
//! property needs only the public API and the model of the store, which live
//! with the model test: `tests/model/fuzzing.rs`.)

use std::path::{Component, Path};

use crate::index::Index;
use crate::relpath::is_relative_path;

/// What parses as an index re-serializes to an index that parses to the same
/// value, and nothing that parses names a blob or a path unsafely.
pub fn index_round_trip(bytes: &[u8]) {
    let Ok(idx) = Index::parse(bytes, "fuzz", Path::new("index.json")) else {
        return;
    };
    for e in &idx.entries {
        assert!(is_relative_path(&e.path));
        relative_path(&e.path);
    }
    let out = serde_json::to_vec(&idx).expect("an index always serializes");
    let again = Index::parse(&out, "fuzz", Path::new("index.json"))
        .expect("what was accepted is accepted again");
    assert_eq!(idx, again);
}

/// What the journal reader accepts (replayed on an empty snapshot) is an index
/// the snapshot reader accepts too: the journal's checks, done one op at a
/// time, are as strict as the whole index's.
pub fn journal_replay(bytes: &[u8]) {
    let Some(idx) = crate::journal::replay_on_empty(bytes) else {
        return;
    };
    let out = serde_json::to_vec(&idx).expect("an index always serializes");
    let again = Index::parse(&out, "fuzz", Path::new("index.json"))
        .expect("what the journal built, the snapshot reader accepts");
    assert_eq!(idx, again);
}

/// What the summary reader (`index.summary`) accepts of `body`, the bytes
/// after its checksum line (given the right checksum, which random bytes
/// would never have), names no path unsafely, and is read back the same once
/// written.
pub fn summary_round_trip(body: &[u8]) {
    crate::journal::summary_round_trip(body);
}

/// The summary of the session `id` whose directory is `dir` (where it is
/// trusted: it matches the index files) says what the whole index says:
/// `Err` names what differs.
pub fn summary_agrees(dir: &Path, id: &str) -> Result<(), String> {
    let dir = crate::layout::SessionDir::at(dir.to_owned(), id);
    crate::journal::summary_agrees(dir.index_files(), id)
}

/// An accepted session id is exactly one plain path component.
pub fn session_id(id: &str) {
    if crate::session_id::validate(id).is_ok() {
        let comps: Vec<_> = Path::new(id).components().collect();
        assert_eq!(comps, vec![Component::Normal(id.as_ref())], "{id:?}");
    }
}

/// An accepted relative path has only plain components.
pub fn relative_path(p: &str) {
    if is_relative_path(p) {
        assert!(
            Path::new(p)
                .components()
                .all(|c| matches!(c, Component::Normal(_))),
            "{p:?}"
        );
    }
}
