//! Properties the fuzz targets (`fuzz/`) check, kept here so they can reach
//! private parsers. Not part of the stable API.

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

/// Operation sequences: each pair of bytes is one operation (write, remove,
/// rename, checkpoint and commit or roll back, undo, redo, rewind, a turn, an
/// edit by hand) on a scratch workspace. Whatever the sequence, nothing panics,
/// nothing appears outside the workspace and the store, the index always reads
/// back, and undoing everything (forced) restores the files the workspace
/// started with.
pub fn operation_sequence(data: &[u8]) {
    use crate::{Error, RevertOptions, Store, Workspace};

    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = std::env::temp_dir().join(format!("turnback-fuzz-{}-{n}", std::process::id()));
    let ws_dir = scratch.join("ws");
    std::fs::create_dir_all(ws_dir.join("d")).unwrap();
    std::fs::write(ws_dir.join("a"), b"start a").unwrap();
    std::fs::write(ws_dir.join("d/b"), b"start b").unwrap();
    let start = tree(&ws_dir);
    let store = Store::new(scratch.join("home"));
    let session = store.session("fuzz").unwrap();
    let ws = Workspace::open(&ws_dir).unwrap();
    const PATHS: [&str; 5] = ["a", "d/b", "d/c", "e/f", "g"];
    let force = RevertOptions {
        force: true,
        dry_run: false,
    };
    for (i, pair) in data.chunks(2).take(64).enumerate() {
        let (op, arg) = (pair[0], pair.get(1).copied().unwrap_or(0));
        let path = PATHS[usize::from(arg) % PATHS.len()];
        let other = PATHS[usize::from(arg / 8) % PATHS.len()];
        let msg = format!("m{i}");
        let contents = vec![b'x'; usize::from(arg % 7)];
        // Errors are fine (a missing file, a refusal); panics and escapes are not.
        let _ = match op % 10 {
            0 | 1 => session.write(&ws, path, &contents[..], &msg).map(drop),
            2 => session.remove(&ws, path, &msg).map(drop),
            3 => session.rename(&ws, path, other, &msg).map(drop),
            4 => session.checkpoint(&ws, path, &msg).and_then(|cp| {
                let _ = std::fs::write(ws_dir.join(path), &contents);
                if arg % 2 == 0 {
                    cp.commit().map(drop)
                } else {
                    cp.rollback()
                }
            }),
            5 => session
                .undo(if arg % 2 == 0 {
                    RevertOptions::default()
                } else {
                    force
                })
                .map(drop),
            6 => session.redo(RevertOptions::default()).map(drop),
            7 => session
                .rewind(&format!("m{}", usize::from(arg) % (i + 1)), force)
                .map(drop),
            8 => session.begin_turn("t", None).map(drop),
            _ => std::fs::write(ws_dir.join(path), b"by hand").map_err(|e| Error::Io {
                op: "write",
                path: path.into(),
                source: e,
            }),
        };
        let names: Vec<_> = std::fs::read_dir(&scratch)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            names.iter().all(|n| n == "ws" || n == "home"),
            "something escaped: {names:?}"
        );
        session.entries().expect("the index reads back");
    }
    loop {
        match session.undo(force) {
            Ok(_) => {}
            Err(Error::NothingToUndo { .. }) => break,
            Err(e) => panic!("undo after the sequence: {e}"),
        }
    }
    // Files made by hand are not the session's to take back; the session's own
    // changes are all undone, so each file it touched is as it started.
    let now = tree(&ws_dir);
    for (path, contents) in &start {
        let by_hand = data.chunks(2).take(64).any(|p| p[0] % 10 == 9);
        if now.get(path) != Some(contents) && !by_hand {
            panic!("{path} is not as it started: {:?}", now.get(path));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

fn tree(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                out.insert(p.strip_prefix(root).unwrap().display().to_string(), bytes);
            }
        }
    }
    out
}
