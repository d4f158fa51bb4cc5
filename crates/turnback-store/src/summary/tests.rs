//! The summary against the indexes: every lookup that uses it gives what
//! reading every index gives (the code before the summary, kept here as the
//! reference), whatever the records hold: stale, damaged, another
//! session's, a link, or in a directory others may write.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use crate::index::{Entry, Index, RevertRecord, RevertedFile};
use crate::layout::SummaryPaths;
use crate::{RevertOptions, Store, Workspace};

use crate::test_rng::Rng;

/// Every readable session's index, as the lookups read them before the
/// summary.
fn indexes(store: &Store) -> Vec<(String, Index)> {
    let timeout = store.options().session_lock_timeout;
    store
        .session_ids()
        .unwrap()
        .into_iter()
        .filter_map(|id| {
            let idx = store.session_dir(&id).read_index(timeout).ok()?;
            Some((id, idx))
        })
        .collect()
}

fn touches_under(r: &RevertRecord, dir: &Path) -> bool {
    r.files
        .iter()
        .map(RevertedFile::absolute_path)
        .chain(r.entries.iter().map(Entry::absolute_path))
        .any(|f| f.starts_with(dir))
}

/// The session for which `when` gives the newest time (ties: the larger id).
fn newest_by(store: &Store, when: impl Fn(&Index) -> Option<OffsetDateTime>) -> Option<String> {
    let mut best: Option<(OffsetDateTime, String)> = None;
    for (id, idx) in indexes(store) {
        if let Some(t) = when(&idx)
            && best.as_ref().is_none_or(|(b, _)| t >= *b)
        {
            best = Some((t, id));
        }
    }
    best.map(|(_, id)| id)
}

fn reference_under(store: &Store, dir: &Path) -> Option<String> {
    // The newest change in effect; where no session has one, the newest
    // take-back.
    newest_by(store, |idx| {
        idx.entries
            .iter()
            .filter(|e| e.absolute_path().starts_with(dir))
            .map(|e| e.time)
            .max()
    })
    .or_else(|| reference_redo_under(store, dir))
}

fn reference_redo_under(store: &Store, dir: &Path) -> Option<String> {
    newest_by(store, |idx| {
        idx.history
            .iter()
            .filter(|r| touches_under(r, dir))
            .map(|r| r.time)
            .max()
    })
}

fn reference_for(store: &Store, ws: &Workspace, path: &Path) -> Option<String> {
    let candidates = crate::workspace::candidate_files(ws, path).unwrap();
    let mut best: Option<(String, Entry)> = None;
    for (id, idx) in indexes(store) {
        for e in idx.entries {
            if candidates.contains(&e.absolute_path())
                && best
                    .as_ref()
                    .is_none_or(|(_, b)| (e.time, e.seq) > (b.time, b.seq))
            {
                best = Some((id.clone(), e));
            }
        }
    }
    best.map(|(id, _)| id)
}

/// What `sessions` lists of each session, as the indexes give it.
fn reference_listing(store: &Store) -> Vec<(String, Vec<PathBuf>, usize)> {
    let mut out: Vec<_> = indexes(store)
        .into_iter()
        .map(|(id, idx)| {
            let recorded = idx.history.iter().flat_map(|r| &r.entries);
            let mut workspaces: Vec<PathBuf> = Vec::new();
            for e in idx.entries.iter().chain(recorded) {
                if !workspaces.contains(&e.workspace.path) {
                    workspaces.push(e.workspace.path.clone());
                }
            }
            (id, workspaces, idx.entries.len())
        })
        .collect();
    out.sort();
    out
}

/// A home with sessions writing, undoing and redoing files of a workspace
/// and of a workspace nested in it.
struct Bed {
    _home: tempfile::TempDir,
    _dir: tempfile::TempDir,
    store: Store,
    outer: Workspace,
    inner: Workspace,
}

const FILES: [&str; 5] = [
    "top.txt",
    "a/one.txt",
    "a/two.txt",
    "b/c/deep.txt",
    "b/side.txt",
];
const SESSIONS: [&str; 4] = ["s1", "s2", "s3", "s4"];

fn bed() -> Bed {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for d in ["a", "b/c"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
    }
    let store = Store::new(home.path());
    let outer = Workspace::open(dir.path()).unwrap();
    let inner = Workspace::open(dir.path().join("b")).unwrap();
    Bed {
        _home: home,
        _dir: dir,
        store,
        outer,
        inner,
    }
}

impl Bed {
    /// One random change: a write (through either workspace), an undo or a
    /// redo, forced so that most go through.
    fn step(&self, rng: &mut Rng, n: usize) {
        let s = self
            .store
            .session(SESSIONS[rng.below(SESSIONS.len())])
            .unwrap();
        let forced = RevertOptions {
            force: true,
            dry_run: false,
        };
        match rng.below(6) {
            0 => {
                let _ = s.undo(forced);
            }
            1 => {
                let _ = s.redo(forced);
            }
            2 => {
                let file = FILES[rng.below(FILES.len())];
                let _ = s.revert(&self.outer, file, forced);
            }
            _ => {
                let file = FILES[rng.below(FILES.len())];
                let body = format!("{n}\n");
                match file.strip_prefix("b/") {
                    Some(rel) if rng.below(2) == 0 => {
                        let _ = s.write(&self.inner, rel, body.as_bytes(), &format!("m{n}"));
                    }
                    _ => {
                        let _ = s.write(&self.outer, file, body.as_bytes(), &format!("m{n}"));
                    }
                }
            }
        }
    }

    /// Every lookup, with the summary and from the indexes, compared.
    fn check(&self, when: &str) {
        let store = &self.store;
        let root = self.outer.root();
        let dirs = [
            root.to_owned(),
            root.parent().unwrap().to_owned(),
            root.join("a"),
            root.join("b"),
            root.join("b/c"),
            root.join("b/c/"),
            root.join("a/one.txt"),
            root.join("nowhere"),
        ];
        for d in &dirs {
            assert_eq!(
                store.latest_session_under(d).unwrap(),
                reference_under(store, d),
                "{when}: latest_session_under {}",
                d.display()
            );
            assert_eq!(
                store.latest_redo_session_under(d).unwrap(),
                reference_redo_under(store, d),
                "{when}: latest_redo_session_under {}",
                d.display()
            );
        }
        for f in FILES.iter().chain(&["missing.txt"]) {
            assert_eq!(
                store.latest_session_for(&self.outer, f).unwrap(),
                reference_for(store, &self.outer, Path::new(f)),
                "{when}: latest_session_for {f}"
            );
        }
        // Entries of a workspace since a time, as a scan's commit asks.
        let mut times: Vec<OffsetDateTime> = indexes(store)
            .iter()
            .flat_map(|(_, idx)| idx.entries.iter().map(|e| e.time))
            .collect();
        times.sort();
        let mut since: Vec<OffsetDateTime> = times.iter().step_by(3).copied().collect();
        since.extend(times.last().map(|t| *t + time::Duration::nanoseconds(1)));
        since.push(OffsetDateTime::UNIX_EPOCH);
        for ws in [&self.outer, &self.inner] {
            let root = ws.root();
            for t in &since {
                let seqs = |mut v: Vec<(String, u64)>| {
                    v.sort();
                    v
                };
                let got = store
                    .entries_in_root_since(root, *t, |e| e.seq % 2 == 0 || e.path.contains('a'))
                    .unwrap()
                    .into_iter()
                    .map(|(id, e)| (id, e.seq))
                    .collect();
                let want = indexes(store)
                    .into_iter()
                    .flat_map(|(id, idx)| {
                        idx.entries
                            .into_iter()
                            .filter(|e| e.workspace.path == root && e.time >= *t)
                            .filter(|e| e.seq % 2 == 0 || e.path.contains('a'))
                            .map(move |e| (id.clone(), e.seq))
                    })
                    .collect();
                assert_eq!(
                    seqs(got),
                    seqs(want),
                    "{when}: entries_in_root_since {} {t}",
                    root.display()
                );
            }
        }
        let mut listed: Vec<_> = store
            .sessions()
            .unwrap()
            .into_iter()
            .map(|s| (s.id, s.workspaces, s.entries))
            .collect();
        listed.sort();
        assert_eq!(listed, reference_listing(store), "{when}: sessions");
    }

    fn records(&self) -> SummaryPaths {
        SummaryPaths::new(self.store.home())
    }
}

/// Damages session `id`'s record in one of several ways.
fn damage(paths: &SummaryPaths, id: &str, other: &str, how: usize) {
    let path = paths.record(id);
    let Ok(bytes) = std::fs::read(&path) else {
        return;
    };
    let header_end = bytes.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    let damaged: Vec<u8> = match how {
        // Its header alone: the file lines are gone.
        0 => bytes[..header_end].to_vec(),
        // Cut in the middle of a line.
        1 => bytes[..bytes.len() / 2].to_vec(),
        // Not a record at all.
        2 => b"{\"format\":1,\"session\":".to_vec(),
        // Another session's record under its name.
        3 => match std::fs::read(paths.record(other)) {
            Ok(b) => b,
            Err(_) => return,
        },
        // Another session's record, claiming to be this one's (its stamp
        // is the other's).
        4 => match std::fs::read(paths.record(other)) {
            Ok(b) => String::from_utf8_lossy(&b)
                .replacen(
                    &format!("\"session\":\"{other}\""),
                    &format!("\"session\":\"{id}\""),
                    1,
                )
                .into_bytes(),
            Err(_) => return,
        },
        // A newer format this build does not know.
        _ => String::from_utf8_lossy(&bytes)
            .replacen("\"format\":1", "\"format\":99", 1)
            .into_bytes(),
    };
    std::fs::write(&path, damaged).unwrap();
}

#[test]
fn every_lookup_gives_what_the_indexes_give_as_the_sessions_change() {
    for seed in 1..=6u64 {
        let bed = bed();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for n in 0..40 {
            bed.step(&mut rng, n);
            bed.check(&format!("seed {seed}, step {n}"));
        }
        for id in bed.store.session_ids().unwrap() {
            assert!(
                bed.records().record(&id).exists(),
                "seed {seed}: {id} has no record"
            );
        }
    }
}

#[test]
fn a_damaged_or_foreign_record_never_changes_an_answer() {
    let bed = bed();
    let mut rng = Rng(0xDEAD_BEEF);
    for n in 0..30 {
        bed.step(&mut rng, n);
    }
    bed.check("records made");
    for how in 0..6 {
        for (i, id) in SESSIONS.iter().enumerate() {
            bed.check(&format!("before damage {how} of {id}"));
            damage(&bed.records(), id, SESSIONS[(i + 1) % SESSIONS.len()], how);
            bed.check(&format!("damage {how} of {id}"));
        }
    }
}

#[test]
fn a_record_is_what_a_lookup_reads_while_its_stamp_holds() {
    // The cost the summary saves: a session whose files did not change is
    // not read. Its index is made unreadable in place, keeping its length
    // and time: the stamp still holds, so the record answers (this is also
    // exactly the change the stamp cannot see).
    let bed = bed();
    let s = bed.store.session("s1").unwrap();
    s.write(&bed.outer, "top.txt", &b"x\n"[..], "m").unwrap();
    s.compact().unwrap();
    drop(s);
    assert_eq!(
        bed.store
            .latest_session_under(bed.outer.root())
            .unwrap()
            .as_deref(),
        Some("s1")
    );
    let index = bed.store.session_dir("s1").index_files().index.clone();
    let md = std::fs::metadata(&index).unwrap();
    let garbage = vec![b' '; md.len() as usize];
    std::fs::write(&index, garbage).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&index)
        .unwrap()
        .set_modified(md.modified().unwrap())
        .unwrap();
    assert_eq!(
        bed.store
            .latest_session_under(bed.outer.root())
            .unwrap()
            .as_deref(),
        Some("s1"),
        "answered from the record, without the index"
    );
    assert!(bed.store.sessions().unwrap()[0].problem.is_none());
    // Without the record, the index is read, and found damaged.
    std::fs::remove_file(bed.records().record("s1")).unwrap();
    assert_eq!(
        bed.store.latest_session_under(bed.outer.root()).unwrap(),
        None
    );
    assert!(bed.store.sessions().unwrap()[0].problem.is_some());
}

#[test]
fn a_record_behind_a_link_or_in_a_directory_others_may_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let bed = bed();
    let mut rng = Rng(77);
    for n in 0..20 {
        bed.step(&mut rng, n);
    }
    bed.check("records made");
    let paths = bed.records();
    // s1's record made a link to s2's.
    let forged = paths.dir.join("forged");
    std::fs::rename(paths.record("s2"), &forged).unwrap();
    std::fs::remove_file(paths.record("s1")).ok();
    std::os::unix::fs::symlink(&forged, paths.record("s1")).unwrap();
    bed.check("a record that is a link");
    // A directory others may write is neither read nor written.
    std::fs::set_permissions(&paths.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    for id in SESSIONS {
        damage(&paths, id, "s1", 3);
    }
    bed.step(&mut rng, 99);
    bed.check("a summary directory others may write");
    std::fs::set_permissions(&paths.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn records_are_private_and_prune_drops_those_of_the_sessions_it_removes() {
    use std::os::unix::fs::PermissionsExt;
    let bed = bed();
    for id in ["old", "new"] {
        let s = bed.store.session(id).unwrap();
        s.write(&bed.outer, format!("{id}.txt"), &b"x\n"[..], "m")
            .unwrap();
    }
    bed.store.sessions().unwrap();
    let paths = bed.records();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&paths.dir), 0o700);
    assert_eq!(mode(&paths.record("old")), 0o600);
    // A writer killed before its rename left a temporary.
    let dead = paths.dir.join(".tmp-999999999-0000000000000000");
    std::fs::write(&dead, b"half").unwrap();
    // "old" made to look 100 days old, then pruned (keeping one).
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(100 * 24 * 3600);
    let dir = bed.store.session_dir("old");
    for p in [
        dir.index_files().index.clone(),
        dir.index_files().journal.clone(),
    ] {
        if let Ok(f) = std::fs::File::options().write(true).open(&p) {
            f.set_modified(t).unwrap();
        }
    }
    let retention = crate::Retention {
        keep_recent: 1,
        keep_for: std::time::Duration::from_secs(24 * 3600),
        ..crate::Retention::default()
    };
    let report = bed.store.prune(&retention, None, false).unwrap();
    assert_eq!(report.removed.len(), 1, "{report:?}");
    assert!(!paths.record("old").exists());
    assert!(paths.record("new").exists());
    assert!(!dead.exists(), "a dead writer's temporary is swept");
}

#[test]
fn a_record_reads_back_whole_and_a_short_one_reads_as_none() {
    let bed = bed();
    let mut rng = Rng(5);
    for n in 0..15 {
        bed.step(&mut rng, n);
    }
    let dir = bed.store.session_dir("s1");
    let Ok(idx) = dir.load() else {
        panic!("s1 unreadable");
    };
    let record = super::record::Record::of("s1", &idx, dir.index_stamp().unwrap());
    let bytes = record.to_bytes();
    let cut = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let header: super::record::Header = serde_json::from_slice(&bytes[..cut]).unwrap();
    assert_eq!(header, record.header);
    let files = super::record::parse_files(&bytes[cut..], header.files).unwrap();
    assert_eq!(files, record.files);
    // One line short (a record torn at a line's end): no lines at all.
    let last = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    if header.files > 0 {
        assert_eq!(
            super::record::parse_files(&bytes[cut..last], header.files),
            None
        );
    }
    // Every file and directory below its root is in the filter.
    let filter = header.path_filter().unwrap();
    for l in &files {
        assert!(filter.may_contain(&l.file));
        let parent = l.file.parent().unwrap();
        if !header.roots.iter().any(|r| r.path == parent) {
            assert!(filter.may_contain(parent), "{}", parent.display());
        }
    }
}
