//! The on-disk format is a contract: every released format version has a
//! checked-in example here that this build must still read, and every fuzz
//! corpus input is checked against the fuzz targets' properties.

use std::path::{Path, PathBuf};

use turnback_store::{FileState, Store};

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
        ("operations", &|b: &[u8]| {
            turnback_store::fuzz_support::operation_sequence(b)
        }),
    ] {
        for f in std::fs::read_dir(corpus.join(target)).unwrap() {
            check(&std::fs::read(f.unwrap().path()).unwrap());
            ran += 1;
        }
    }
    assert!(ran >= 6, "the corpora went missing: {ran} inputs");
}
