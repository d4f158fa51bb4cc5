//! The on-disk format is a contract: every released format version has a
//! checked-in example here that this build must still read, and every fuzz
//! corpus input is checked against the fuzz targets' properties.

use std::path::{Path, PathBuf};

use turnback_store::{FileState, Store};

// The `operations` target's property: the model of the store, its driver and
// the decoding of an input, shared with the model test and the fuzz target.
#[path = "../../../tests/model/driver.rs"]
mod driver;
#[path = "../../../tests/model/fuzzing.rs"]
mod fuzzing;
#[path = "../../../tests/model/reference.rs"]
mod reference;
#[path = "../../../tests/model/support.rs"]
mod support;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/formats")
        .join(name)
}

#[test]
fn reads_format_1() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/s");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(example("v1-index.json"), dir.join("index.json")).unwrap();
    let entries = Store::new(home.path())
        .open_session("s")
        .unwrap()
        .entries()
        .unwrap();
    assert_eq!(entries.len(), 2);
    let e = &entries[0];
    assert_eq!(
        (e.seq, e.message_id.as_str(), e.path.as_str(), e.version),
        (1, "m1", "src/lib.rs", 1)
    );
    assert_eq!(e.workspace.path, Path::new("/w"));
    assert_eq!((e.workspace.dev, e.workspace.ino), (1, 2));
    assert_eq!(e.before.size, 3);
    assert_eq!(e.before.mode, Some(0o644));
    assert_eq!(e.after, Some(FileState::absent()));
    assert_eq!(e.time.unix_timestamp(), 1_796_047_200);
    let pending = &entries[1];
    assert!(pending.after.is_none());
    assert_eq!(pending.created_dirs, vec!["new".to_string()]);
    // Its workspace does not exist here, so opening could not settle it: kept as is.
    assert!(pending.in_flight.as_ref().unwrap().temp.is_some());
}

#[test]
fn reads_format_2() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/s");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(example("v2-index.json"), dir.join("index.json")).unwrap();
    let s = Store::new(home.path()).open_session("s").unwrap();
    // Two turns; a rename (two entries in one group); an undo kept for redo.
    let turns = s.turn_bounds().unwrap();
    let prompts: Vec<_> = turns
        .iter()
        .map(|t| (t.number, t.prompt.as_str(), t.conversation_index))
        .collect();
    assert_eq!(
        prompts,
        [(1, "create a and b", Some(0)), (2, "rename a", Some(2))]
    );
    let entries = s.entries().unwrap();
    let shape: Vec<_> = entries
        .iter()
        .map(|e| (e.seq, e.path.as_str(), e.turn, e.group))
        .collect();
    assert_eq!(
        shape,
        [
            (1, "a.txt", 1, None),
            (2, "dir/b.txt", 1, None),
            (3, "a.txt", 2, Some(3)),
            (4, "c.txt", 2, Some(3))
        ]
    );
    let history = s.history().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].kind, "undo");
    assert_eq!(history[0].entries[0].seq, 5);
    assert_eq!(history[0].files[0].path, "dir/b.txt");
    assert!(history[0].files[0].overwritten.as_ref().unwrap().exists);
}

#[test]
fn the_first_change_to_a_format_2_session_rewrites_it_as_format_3() {
    // Before any journal line: an older build would read index.json alone and
    // miss the journal, so it must find a format it refuses instead.
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/s");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(example("v2-index.json"), dir.join("index.json")).unwrap();
    let s = Store::new(home.path()).open_session("s").unwrap();
    let entries = s.entries().unwrap();
    s.begin_turn("a third turn", None).unwrap();
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    // The current format (3 when this test was written; 4 since the gap of
    // eviction was recorded).
    assert_eq!(index["format"], turnback_store::FORMAT_VERSION);
    assert_eq!(
        index["turns"].as_array().unwrap().len(),
        3,
        "the change is in it"
    );
    let journal = std::fs::read(dir.join("journal.jsonl")).unwrap_or_default();
    assert!(journal.is_empty(), "a journal line before the rewrite");
    s.begin_turn("a fourth turn", None).unwrap();
    assert!(!std::fs::read(dir.join("journal.jsonl")).unwrap().is_empty());
    let again = Store::new(home.path()).open_session("s").unwrap();
    assert_eq!(again.entries().unwrap(), entries);
    assert_eq!(again.turn_bounds().unwrap().len(), 4);
}

#[test]
fn reads_format_3() {
    // A snapshot holding the first turn, and a journal of every kind of line
    // since: a read mark, writes and their landings, a second turn, two undos
    // and a redo.
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/s");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["index.json", "journal.jsonl"] {
        std::fs::copy(example(&format!("v3/{name}")), dir.join(name)).unwrap();
    }
    let s = Store::new(home.path()).open_session("s").unwrap();
    let prompts: Vec<_> = s
        .turn_bounds()
        .unwrap()
        .iter()
        .map(|t| (t.number, t.prompt.clone(), t.conversation_index))
        .collect();
    assert_eq!(
        prompts,
        [(1, "edit a".into(), Some(0)), (2, "add b".into(), Some(2))]
    );
    let entries = s.entries().unwrap();
    let shape: Vec<_> = entries
        .iter()
        .map(|e| (e.seq, e.path.as_str(), e.turn, e.in_flight.is_some()))
        .collect();
    assert_eq!(shape, [(1, "a.txt", 1, false), (2, "dir/b.txt", 2, false)]);
    assert_eq!(entries[1].created_dirs, ["dir"]);
    let history = s.history().unwrap();
    assert_eq!(history.len(), 1, "the second undo was redone");
    assert_eq!((history[0].id, history[0].entries[0].seq), (1, 3));
    // The snapshot alone is the session as of its journal line 1.
    std::fs::remove_file(dir.join("journal.jsonl")).unwrap();
    let s = Store::new(home.path()).open_session("s").unwrap();
    assert!(s.entries().unwrap().is_empty());
    assert_eq!(s.turn_bounds().unwrap().len(), 1);
}

#[test]
fn reads_format_4() {
    // A snapshot whose caps evicted two entries (m1's a.txt, m2's b.txt),
    // and a journal line that adds entry 4 and evicts entry 3 (m3's a.txt)
    // in the same change.
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/s");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["index.json", "journal.jsonl"] {
        std::fs::copy(example(&format!("v4/{name}")), dir.join(name)).unwrap();
    }
    let s = Store::new(home.path()).open_session("s").unwrap();
    let entries = s.entries().unwrap();
    let shape: Vec<_> = entries.iter().map(|e| (e.seq, e.path.as_str())).collect();
    assert_eq!(shape, [(4, "c.txt")]);
    let gap = s.evicted().unwrap().expect("a gap");
    assert_eq!((gap.entries, gap.through_seq), (3, 3));
    let files: Vec<_> = gap
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.seq, f.message_id.as_str(), f.turn))
        .collect();
    assert_eq!(files, [("a.txt", 3, "m3", 2), ("b.txt", 2, "m2", 1)]);
    let messages: Vec<_> = gap
        .messages
        .iter()
        .map(|m| (m.id.as_str(), m.seq))
        .collect();
    assert_eq!(messages, [("m1", 1), ("m2", 2), ("m3", 3)]);
    assert_eq!(gap.newest.unix_timestamp(), 1_796_119_203);
    // A rewind past the gap names what it cannot restore, before it looks at
    // any file (this workspace does not exist here).
    match s.rewind("m2", turnback_store::RevertOptions::default()) {
        Err(turnback_store::Error::Evicted { files, .. }) => {
            assert_eq!(files, [Path::new("/w/a.txt"), Path::new("/w/b.txt")])
        }
        other => panic!("{other:?}"),
    }
    match s.rewind_to_turn(2, turnback_store::RevertOptions::default()) {
        Err(turnback_store::Error::Evicted { files, .. }) => {
            assert_eq!(files, [Path::new("/w/a.txt")])
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn reads_format_5() {
    // A scan's step: a directory removed (with its mode), a file replaced by
    // a directory, a file made in it; and an undo of a scan that made a
    // directory, kept for redo.
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/s");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(example("v5/index.json"), dir.join("index.json")).unwrap();
    let s = Store::new(home.path()).open_session("s").unwrap();
    let entries = s.entries().unwrap();
    let shape: Vec<_> = entries
        .iter()
        .map(|e| {
            let after = e.after.as_ref().unwrap();
            (
                e.path.as_str(),
                e.before.is_dir(),
                after.is_dir(),
                after.exists,
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("old", true, false, false),
            ("f", false, true, true),
            ("f/x", false, false, true)
        ]
    );
    assert_eq!(entries[0].before.mode, Some(0o700));
    assert!(
        entries
            .iter()
            .all(|e| e.scan.is_some() && e.group == Some(1))
    );
    let history = s.history().unwrap();
    let undone = &history[0].files[0];
    assert!(undone.overwritten.as_ref().unwrap().is_dir());
    assert!(!undone.restored.exists);
}

#[test]
fn the_first_change_to_a_format_3_session_rewrites_it_as_format_4() {
    // An older build reads format 3 and would not see a gap: the snapshot is
    // rewritten (with the change in it) before any journal line.
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/s");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["index.json", "journal.jsonl"] {
        std::fs::copy(example(&format!("v3/{name}")), dir.join(name)).unwrap();
    }
    let s = Store::new(home.path()).open_session("s").unwrap();
    let entries = s.entries().unwrap();
    s.begin_turn("a third turn", None).unwrap();
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    // The current format (4 when this test was written; 5 since a scan
    // records directories and backups may be compressed).
    assert_eq!(index["format"], turnback_store::FORMAT_VERSION);
    let journal = std::fs::read(dir.join("journal.jsonl")).unwrap_or_default();
    assert!(journal.is_empty(), "a journal line before the rewrite");
    let again = Store::new(home.path()).open_session("s").unwrap();
    assert_eq!(again.entries().unwrap(), entries);
    assert_eq!(again.turn_bounds().unwrap().len(), 3);
    assert!(again.evicted().unwrap().is_none());
}

/// `value` with every workspace `/w` (device 1, inode 2) of the example made
/// `root` (this test's directory), so that a restore may write there.
fn rebase(value: &mut serde_json::Value, root: &serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "workspace" && v["path"] == "/w" {
                    *v = root.clone();
                } else {
                    rebase(v, root);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| rebase(v, root)),
        _ => {}
    }
}

#[test]
fn reads_format_5_with_compressed_backups() {
    // Two writes: src/lib.rs (5 KiB of source, its backup a compressed blob)
    // and logo.bin (noise, its backup raw: compression did not help); then
    // an undo puts both back from their blobs, each verified against its name.
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (dir, root) = install_example("v5-compressed", 5, home.path(), ws.path());
    let s = Store::new(home.path()).open_session("s").unwrap();
    let entries = s.entries().unwrap();
    let shape: Vec<_> = entries.iter().map(|e| (e.seq, e.path.as_str())).collect();
    assert_eq!(shape, [(1, "src/lib.rs"), (2, "logo.bin")]);
    let blob = |e: &turnback_store::Entry| {
        std::fs::read(dir.join("blobs").join(e.before.sha256.as_deref().unwrap())).unwrap()
    };
    let (lib, logo) = (blob(&entries[0]), blob(&entries[1]));
    assert!(lib.starts_with(b"\x5b\x2a\x4d\x18\x10\0\0\0turnback"));
    assert!(
        (lib.len() as u64) < entries[0].before.size * 3 / 4,
        "compressed"
    );
    assert_eq!(logo.len() as u64, entries[1].before.size, "raw");
    // A diff reads both through the decoder.
    let text = s
        .backup_contents("src/lib.rs", &entries[0].before)
        .unwrap()
        .unwrap();
    assert!(text.starts_with(b"//! "), "{:?}", &text[..20]);
    // The workspace holds what the writes left; the undo restores the rest.
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "// rewritten\n").unwrap();
    std::fs::write(root.join("logo.bin"), "not a logo\n").unwrap();
    let forced = turnback_store::RevertOptions {
        force: true,
        ..Default::default()
    };
    s.rewind("m1", forced).unwrap();
    for e in &entries {
        let bytes = std::fs::read(root.join(&e.path)).unwrap();
        let (hash, size) = sha256(&bytes);
        assert_eq!((Some(hash), size), (e.before.sha256.clone(), e.before.size));
    }
    assert_eq!(std::fs::read(root.join("src/lib.rs")).unwrap(), text);
}

/// Installs the example session `name` (of format `format`, with blobs) as
/// session `s` of the store `home`, its workspace `/w` made `ws`: the
/// session's directory and the workspace's real path.
fn install_example(
    name: &str,
    format: u64,
    home: &std::path::Path,
    ws: &std::path::Path,
) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::canonicalize(ws).unwrap();
    let md = std::fs::metadata(&root).unwrap();
    let here = serde_json::json!({ "path": root, "dev": md.dev(), "ino": md.ino() });
    let dir = home.join("sessions/s");
    std::fs::create_dir_all(dir.join("blobs")).unwrap();
    let mut index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(example(&format!("{name}/index.json"))).unwrap())
            .unwrap();
    assert_eq!(index["format"], format);
    rebase(&mut index, &here);
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
    let mut journal = String::new();
    for line in std::fs::read_to_string(example(&format!("{name}/journal.jsonl")))
        .unwrap()
        .lines()
    {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        rebase(&mut v, &here);
        journal.push_str(&format!("{v}\n"));
    }
    std::fs::write(dir.join("journal.jsonl"), journal).unwrap();
    for blob in std::fs::read_dir(example(&format!("{name}/blobs"))).unwrap() {
        let blob = blob.unwrap();
        std::fs::copy(blob.path(), dir.join("blobs").join(blob.file_name())).unwrap();
    }
    (dir, root)
}

#[test]
fn reads_format_6_with_backups_stored_as_differences() {
    // Three writes of src/lib.rs (5 KiB of source): the first backup is
    // compressed alone, the next two are differences from it (with the pins
    // that keep it); every backup reads back, a prune with no handle open
    // keeps all three, and a rewind puts the first version back.
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (dir, root) = install_example("v6-delta", 6, home.path(), ws.path());
    let store = Store::new(home.path());
    let s = store.open_session("s").unwrap();
    let entries = s.entries().unwrap();
    let shape: Vec<_> = entries.iter().map(|e| (e.seq, e.path.as_str())).collect();
    assert_eq!(
        shape,
        [(1, "src/lib.rs"), (2, "src/lib.rs"), (3, "src/lib.rs")]
    );
    let blob = |e: &turnback_store::Entry| {
        std::fs::read(dir.join("blobs").join(e.before.sha256.as_deref().unwrap())).unwrap()
    };
    assert!(blob(&entries[0]).starts_with(b"\x5b\x2a\x4d\x18\x10\0\0\0turnback"));
    for e in &entries[1..] {
        let b = blob(e);
        assert!(
            b.starts_with(b"\x5b\x2a\x4d\x18\x30\0\0\0turndiff"),
            "{:?}",
            &b[..16]
        );
        assert!((b.len() as u64) < e.before.size / 10, "a difference");
    }
    for e in &entries {
        let bytes = s.backup_contents(&e.path, &e.before).unwrap().unwrap();
        assert_eq!(
            sha256(&bytes),
            (e.before.sha256.clone().unwrap(), e.before.size)
        );
    }
    drop(s);
    let names = |d: &std::path::Path| -> std::collections::BTreeSet<_> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    };
    let before = names(&dir.join("blobs"));
    store
        .prune(&turnback_store::Retention::default(), None, false)
        .unwrap();
    assert_eq!(
        names(&dir.join("blobs")),
        before,
        "the prune took something"
    );
    let s = store.open_session("s").unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "the end\n").unwrap();
    s.rewind("m1", turnback_store::RevertOptions::default())
        .unwrap();
    let bytes = std::fs::read(root.join("src/lib.rs")).unwrap();
    assert_eq!(
        sha256(&bytes),
        (
            entries[0].before.sha256.clone().unwrap(),
            entries[0].before.size
        )
    );
}

fn sha256(bytes: &[u8]) -> (String, u64) {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    let hex = d.iter().map(|b| format!("{b:02x}")).collect();
    (hex, bytes.len() as u64)
}

#[test]
fn the_first_change_to_a_format_4_session_rewrites_it_as_format_5() {
    // An older build reads format 4 and would take a directory a scan
    // recorded for a damaged file state: the snapshot is rewritten (with the
    // change in it) before any journal line, and it refuses it by number.
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions/s");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["index.json", "journal.jsonl"] {
        std::fs::copy(example(&format!("v4/{name}")), dir.join(name)).unwrap();
    }
    let s = Store::new(home.path()).open_session("s").unwrap();
    let entries = s.entries().unwrap();
    let gap = s.evicted().unwrap();
    s.begin_turn("a third turn", None).unwrap();
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    // The current format (5 when this test was written; 6 since a backup may
    // be stored as a difference from another).
    assert_eq!(index["format"], turnback_store::FORMAT_VERSION);
    let journal = std::fs::read(dir.join("journal.jsonl")).unwrap_or_default();
    assert!(journal.is_empty(), "a journal line before the rewrite");
    let again = Store::new(home.path()).open_session("s").unwrap();
    assert_eq!(again.entries().unwrap(), entries);
    assert_eq!(again.evicted().unwrap(), gap);
    assert_eq!(again.turn_bounds().unwrap().len(), 3);
}

#[test]
fn fuzz_corpora_hold_their_properties() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut ran = 0;
    for (target, check) in [
        (
            "index_json",
            &(|b: &[u8]| turnback_store::fuzz_support::index_round_trip(b)) as &dyn Fn(&[u8]),
        ),
        ("session_id", &|b: &[u8]| {
            if let Ok(s) = std::str::from_utf8(b) {
                turnback_store::fuzz_support::session_id(s)
            }
        }),
        ("relative_path", &|b: &[u8]| {
            if let Ok(s) = std::str::from_utf8(b) {
                turnback_store::fuzz_support::relative_path(s)
            }
        }),
        ("operations", &|b: &[u8]| fuzzing::run(b)),
        ("journal", &|b: &[u8]| {
            turnback_store::fuzz_support::journal_replay(b)
        }),
        ("summary", &|b: &[u8]| {
            turnback_store::fuzz_support::summary_round_trip(b)
        }),
        ("blob", &|b: &[u8]| {
            turnback_store::fuzz_support::blob_round_trip(b)
        }),
    ] {
        for f in std::fs::read_dir(corpus.join(target)).unwrap() {
            check(&std::fs::read(f.unwrap().path()).unwrap());
            ran += 1;
        }
    }
    assert!(ran >= 6, "the corpora went missing: {ran} inputs");
}
