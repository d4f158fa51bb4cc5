//! The symbolic links a command made, removed or changed: reported as not
//! undone, never recorded, never followed. What a link replaced (a file, or
//! a directory and its files) is recorded as removed, from the backup the
//! beginning took: an undo refuses while the link stands in its way (the
//! workspace capability refuses a link on the way) and restores it once the
//! link is gone.

use crate::workspace::Workspace;

use super::changes::Candidate;
use super::dirs::DirChanges;
use super::record::Source;
use super::report::{PathKind, Unrecorded};

/// Takes out of `candidates` (and `dirs`) every change a link is part of,
/// noting each in `unrecorded`; returns the rest.
pub(super) fn sort_out(
    ws: &Workspace,
    candidates: Vec<Candidate>,
    dirs: &mut DirChanges,
    unrecorded: &mut Vec<Unrecorded>,
) -> Vec<Candidate> {
    let links: Vec<String> = candidates
        .iter()
        .filter(|c| c.now.is_some_and(|s| s.is_link()))
        .map(|c| c.path.clone())
        .collect();
    let under = |p: &str| {
        links
            .iter()
            .find(|l| {
                p.strip_prefix(l.as_str())
                    .is_some_and(|r| r.starts_with('/'))
            })
            .cloned()
    };
    let mut rest = Vec::with_capacity(candidates.len());
    for c in candidates {
        if let Some(link) = under(&c.path) {
            if c.before
                .as_ref()
                .is_some_and(|b| !matches!(b.source, Source::Link(_)))
            {
                // A file of a directory the link replaced: gone from the
                // workspace, its backup in hand. Never looked at through
                // the link.
                rest.push(Candidate { now: None, ..c });
            } else {
                unrecorded.push(Unrecorded::UnderLink { path: c.path, link });
            }
            continue;
        }
        let was = match c.before.as_ref().map(|b| &b.source) {
            Some(Source::Link(t)) => Some(t.clone()),
            _ => None,
        };
        let is = c.now.filter(|s| s.is_link()).map(|_| target(ws, &c.path));
        if was.is_none() && is.is_none() {
            rest.push(c);
            continue;
        }
        if was.is_some() && was == is {
            continue;
        }
        // What else is there on the other side: a file, or a directory
        // (whose change goes with the link's), or nothing.
        // A file or a directory the link replaced is recorded as removed
        // (the beginning backed it up; an undo refuses while the link is in
        // its way); the link itself is only reported.
        let before = match was {
            Some(target) => PathKind::Link { target },
            None if c.before.is_some() => {
                rest.push(Candidate {
                    now: None,
                    ..c.clone()
                });
                PathKind::File
            }
            None if dirs.removed.contains_key(&c.path) => PathKind::Directory,
            None => PathKind::Absent,
        };
        let now = match is {
            Some(target) => PathKind::Link { target },
            None if c.now.is_some() => PathKind::File,
            None if dirs.made.remove(&c.path).is_some() => PathKind::Directory,
            None => PathKind::Absent,
        };
        unrecorded.push(Unrecorded::Link {
            path: c.path,
            before,
            now,
        });
    }
    // The directories that were where a link leads now stay in
    // `dirs.removed`: gone as far as the workspace goes, recorded as removed.
    rest.sort_by(|a, b| a.path.cmp(&b.path));
    rest
}

/// The target of the link at `path` (lossily, if it is not UTF-8).
fn target(ws: &Workspace, path: &str) -> String {
    let t = crate::sys::link_target_bytes(&ws.root().join(path)).unwrap_or_default();
    String::from_utf8_lossy(&t).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Symbolic links a command made, removed, changed, or put where a file or a
    /// directory was are reported exactly (what was there, what is), never
    /// recorded and never followed (not even to look at what was in the
    /// directory a link replaced). What a link replaced is recorded as
    /// removed: the undo refuses while the link is in its way, then brings
    /// it back once the link is gone.
    #[test]
    fn symbolic_links_are_reported_never_followed_and_what_they_replaced_comes_back() {
        use std::os::unix::fs::symlink;
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let s = crate::Store::new(home.path()).session("s").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let d = dir.path();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("inner"), "outside\n").unwrap();
        std::fs::write(d.join("a"), "a\n").unwrap();
        std::fs::write(d.join("f"), "f\n").unwrap();
        std::fs::create_dir(d.join("g")).unwrap();
        std::fs::write(d.join("g/inner"), "inner\n").unwrap();
        symlink("old-target", d.join("old")).unwrap();
        symlink("t1", d.join("re")).unwrap();
        let id = s.begin_scan(&ws, "m", None).unwrap();
        std::fs::write(d.join("a"), "b\n").unwrap();
        std::fs::remove_file(d.join("f")).unwrap();
        symlink("elsewhere", d.join("f")).unwrap();
        std::fs::remove_dir_all(d.join("g")).unwrap();
        symlink(outside.path(), d.join("g")).unwrap();
        std::fs::remove_file(d.join("old")).unwrap();
        std::fs::remove_file(d.join("re")).unwrap();
        symlink("t2", d.join("re")).unwrap();
        symlink("made-target", d.join("new")).unwrap();
        let r = s.commit_scan(&id).unwrap();
        let mut kinds: Vec<_> = r
            .changes
            .iter()
            .map(|c| (c.path.as_str(), c.kind))
            .collect();
        kinds.sort_by_key(|(p, _)| *p);
        use crate::ScanChangeKind::{Deleted, Modified};
        assert_eq!(
            kinds,
            [
                ("a", Modified),
                ("f", Deleted),
                ("g", Deleted),
                ("g/inner", Deleted)
            ]
        );
        let link = |t: &str| PathKind::Link { target: t.into() };
        let out = outside.path().to_string_lossy().into_owned();
        let l = |path: &str, before, now| Unrecorded::Link {
            path: path.into(),
            before,
            now,
        };
        assert_eq!(
            r.unrecorded,
            [
                l("f", PathKind::File, link("elsewhere")),
                l("g", PathKind::Directory, link(&out)),
                l("new", PathKind::Absent, link("made-target")),
                l("old", link("old-target"), PathKind::Absent),
                l("re", link("t1"), link("t2")),
            ]
        );
        let e = s.entries().unwrap();
        assert_eq!(e.len(), 4);
        let marked = &e[0].scan.as_ref().unwrap().not_undoable;
        assert_eq!(marked, &["new", "old", "re"]);
        // The links stand in the way: refused, nothing written, nothing
        // followed.
        match s.undo(crate::RevertOptions::default()) {
            Err(crate::Error::UnsafePath { .. }) => {}
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "b\n");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("inner")).unwrap(),
            "outside\n",
            "nothing followed out of the workspace"
        );
        assert_eq!(std::fs::read_link(d.join("g")).unwrap(), outside.path());
        // Once they are gone, everything they replaced comes back.
        std::fs::remove_file(d.join("f")).unwrap();
        std::fs::remove_file(d.join("g")).unwrap();
        s.undo(crate::RevertOptions::default()).unwrap();
        assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "a\n");
        assert_eq!(std::fs::read_to_string(d.join("f")).unwrap(), "f\n");
        assert_eq!(
            std::fs::read_to_string(d.join("g/inner")).unwrap(),
            "inner\n"
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("inner")).unwrap(),
            "outside\n"
        );
    }
}
