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

/// Backups made from `data` read back as they were, whether stored whole,
/// compressed or as a difference from another; and `data` itself, put in a
/// blob directory as a blob (a store written by someone else), reads back
/// as bytes that the name check judges, or an error, never a panic. Works
/// in a scratch directory under the system's temporary directory.
pub fn blob_round_trip(data: &[u8]) {
    use std::io::Read;

    use crate::blobs::Blobs;
    let dir = std::env::temp_dir().join(format!(
        "turnback-fuzz-blob-{:016x}",
        crate::session_id::random_u64()
    ));
    let blobs = Blobs::new(dir.join("blobs")).compressing(true);
    // A file of at least 2 KiB (so that its backups take part, `bases.rs`):
    // `data`'s first part repeated, then again with its second part spliced
    // into the middle, and the second part alone.
    let split = data
        .first()
        .map_or(0, |&b| usize::from(b) * data.len() / 256);
    let (first, second) = data.split_at(split);
    let base: Vec<u8> = match first.is_empty() {
        true => Vec::new(),
        false => first
            .iter()
            .copied()
            .cycle()
            .take(2048 + 7 * first.len())
            .collect(),
    };
    let mut edited = base.clone();
    edited.splice(base.len() / 2..base.len() / 2, second.iter().copied());
    let source = dir.join("f");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let read_back = |hash: &str| -> crate::Result<Vec<u8>> {
        let mut backup = blobs.open_backup("fuzz", "f", hash)?;
        let mut out = Vec::new();
        let read = backup
            .reader()
            .read_to_end(&mut out)
            .map_err(crate::Error::io("read", "-"));
        backup.checked(read)?;
        let (actual, _) = crate::hash::hash_reader(&mut &out[..]).expect("hashing memory");
        backup.verify(&actual)?;
        Ok(out)
    };
    for contents in [&base[..], &edited[..], second] {
        std::fs::write(&source, contents).expect("a scratch file");
        let mut f = std::fs::File::open(&source).expect("the scratch file");
        let (hash, size) = blobs
            .store_file_then(&mut f, &source, |_, _| {})
            .expect("a backup in a scratch directory");
        assert_eq!(size, contents.len() as u64);
        let back = read_back(&hash).expect("a backup just made reads back");
        assert!(back == contents, "a backup read back other bytes");
    }
    // `data` as a blob (its corpus holds a difference and a compressed
    // blob, so that each decoder's path is taken).
    let name = "f".repeat(64);
    std::fs::write(blobs.path(&name), data).expect("a scratch blob");
    if let Ok(back) = read_back(&name) {
        let (actual, _) = crate::hash::hash_reader(&mut &back[..]).expect("hashing memory");
        assert_eq!(
            actual, name,
            "bytes that do not match the name were handed out"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
