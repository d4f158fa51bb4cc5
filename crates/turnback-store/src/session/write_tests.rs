//! The unit tests of `session/write.rs`, kept apart so that module stays short.

use super::*;
use crate::session::handle::tests::setup;

#[test]
fn write_records_before_and_after() {
    let (_h, dir, s, ws) = setup();
    std::fs::write(dir.path().join("a.txt"), "old").unwrap();
    let e = s.write(&ws, "a.txt", &b"new!"[..], "m1").unwrap();
    assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"new!");
    assert_eq!(e.before.size, 3);
    assert_eq!(e.after.as_ref().unwrap().size, 4);
    assert!(e.in_flight.is_none());
    let stored = s.entries().unwrap();
    assert_eq!(stored, vec![e.clone()]);
    let blob = s.blobs().path(e.before.sha256.as_deref().unwrap());
    assert_eq!(std::fs::read(blob).unwrap(), b"old");
}

#[test]
fn the_same_bytes_again_record_nothing_and_leave_the_file_alone() {
    let (_h, dir, s, ws) = setup();
    let file = dir.path().join("a.txt");
    std::fs::write(&file, "same\n").unwrap();
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&file).unwrap());
    let none = s
        .write_unless_same(&ws, "a.txt", &b"same\n"[..], "m1", &Expected::default())
        .unwrap();
    assert!(none.is_none());
    assert!(s.entries().unwrap().is_empty());
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&meta),
        inode,
        "not replaced"
    );
    // Other bytes are a change as ever; then the same again is not.
    let e = s
        .write_unless_same(&ws, "a.txt", &b"new\n"[..], "m2", &Expected::default())
        .unwrap()
        .unwrap();
    assert_eq!(e.message_id, "m2");
    let again = s.write_unless_same(&ws, "a.txt", &b"new\n"[..], "m3", &Expected::default());
    assert!(again.unwrap().is_none());
    assert_eq!(s.entries().unwrap().len(), 1);
    // An empty file is not the absence of one.
    let created = s.write_unless_same(&ws, "b.txt", &b""[..], "m4", &Expected::default());
    assert!(created.unwrap().is_some());
    // No temporary stays beside the file.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "b.txt"]);
}

#[test]
fn versions_count_changes_per_file() {
    let (_h, _d, s, ws) = setup();
    s.write(&ws, "a", &b"1"[..], "m").unwrap();
    s.write(&ws, "b", &b"1"[..], "m").unwrap();
    let e = s.write(&ws, "a", &b"2"[..], "m").unwrap();
    assert_eq!(e.version, 2);
    assert_eq!(e.seq, 3);
}

#[test]
fn a_dead_writers_half_done_change_is_settled_by_the_next_one() {
    let (_h, dir, s, ws) = setup();
    std::fs::write(dir.path().join("f"), "before").unwrap();
    // Entry recorded and temporary linked, then the writer "died".
    let f = RelPath::new("f").unwrap();
    let before = s.back_up(&ws, &f).unwrap();
    let parent = ws.parent_of(&f, true).unwrap().unwrap();
    let mut new = NewContents::create(&parent, 0o666).unwrap();
    let (h, n) = new.fill(&mut &b"after"[..], Path::new("x")).unwrap();
    new.seal(None).unwrap();
    new.link().unwrap();
    let temp = new.temp_name().to_owned();
    std::mem::forget(new);
    let after = FileState::present(h, n, 0o644);
    let inflight = InFlight {
        temp: Some(temp.clone()),
    };
    let draft = Draft {
        rel: f,
        before,
        after: Some(after),
        created_dirs: vec![],
        in_flight: Some(inflight),
    };
    s.record(&ws, "m", vec![draft]).unwrap();
    assert!(dir.path().join(&temp).exists());
    // Any later change settles it: file at before, so the entry goes.
    s.write(&ws, "g", &b"x"[..], "m2").unwrap();
    let entries = s.entries().unwrap();
    assert_eq!(
        entries.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(),
        ["g"]
    );
    assert!(!dir.path().join(&temp).exists());
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"before");
}

#[test]
fn new_contents_that_fail_to_arrive_change_nothing() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("pipe closed"))
        }
    }
    let (_h, dir, s, ws) = setup();
    std::fs::write(dir.path().join("kept"), "old").unwrap();
    let err = s.write(&ws, "kept", Broken, "m").unwrap_err();
    assert!(err.to_string().contains("pipe closed"), "{err}");
    let err = s.write(&ws, "new/deep/f", Broken, "m").unwrap_err();
    assert!(
        matches!(&err, Error::Io { op: "read", .. }) && err.to_string().contains("pipe closed"),
        "{err:?}"
    );
    assert!(s.entries().unwrap().is_empty());
    assert_eq!(std::fs::read(dir.path().join("kept")).unwrap(), b"old");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("kept")],
        "directories or temporaries left"
    );
}
