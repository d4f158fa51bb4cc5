//! Naming what to take back by number: the newest N steps (`undo N`), and
//! every change from one entry on (`rewind #N`); and reading a backup's
//! contents back, for the command line's `blame` and `show`.

use std::io::Read;

use crate::diff::{FileDiff, MAX_DIFF_BYTES, Side};
use crate::error::{Error, Result};
use crate::index::{Entry, FileState};
use crate::revert::{self, Kind, RevertOptions, RevertReport};
use crate::session::Session;
use crate::workspace::Workspace;

impl Session {
    /// Reverts the session's newest `n` steps (a rename's two sides are one
    /// step), checked all together before any file is touched, as one undo
    /// (one `redo` puts them all back). Fewer than `n` steps: all of them;
    /// none: [`Error::NothingToUndo`].
    pub fn undo_steps(&self, n: usize, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        let kind = Kind::named("undo");
        revert::revert_entries(self, opts, kind, &move |idx| {
            let mut steps: Vec<Option<u64>> = Vec::new();
            let mut seqs = Vec::new();
            for e in idx.entries.iter().rev() {
                // A step is a group (named by its first entry) or one entry.
                let step = e.group.or(Some(e.seq));
                if !steps.contains(&step) {
                    if steps.len() == n {
                        break;
                    }
                    steps.push(step);
                }
                seqs.push(e.seq);
            }
            // The other side of a group cut at the boundary comes along.
            for e in &idx.entries {
                if e.group.is_some() && steps.contains(&e.group) && !seqs.contains(&e.seq) {
                    seqs.push(e.seq);
                }
            }
            if seqs.is_empty() {
                return Err(Error::NothingToUndo {
                    session: id.clone(),
                });
            }
            Ok(seqs)
        })
    }

    /// Reverts every entry from entry `seq` on, newest first: every file goes
    /// back to how it was before that entry's change. An entry not in effect
    /// is [`Error::NoSuchEntry`].
    pub fn rewind_to_entry(&self, seq: u64, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        let kind = Kind::named("rewind");
        revert::revert_entries(self, opts, kind, &move |idx| {
            if idx.entry(seq).is_none() {
                return Err(Error::NoSuchEntry {
                    session: id.clone(),
                    seq,
                });
            }
            Ok(idx
                .entries
                .iter()
                .filter(|e| e.seq >= seq)
                .map(|e| e.seq)
                .collect())
        })
    }

    /// Reverts one file to how it was before entry `seq`: every entry of
    /// `seq`'s file (in its workspace) from `seq` on, newest first, with the
    /// other side of a rename among them; the session's other files are left
    /// as they are. One revert, as `turnback revert` makes (one `redo` puts it
    /// back). An entry not in effect is [`Error::NoSuchEntry`].
    pub fn revert_file_to_entry(&self, seq: u64, opts: RevertOptions) -> Result<RevertReport> {
        let id = self.id().to_owned();
        let kind = Kind::named("revert");
        revert::revert_entries(self, opts, kind, &move |idx| {
            let Some(first) = idx.entry(seq) else {
                return Err(Error::NoSuchEntry {
                    session: id.clone(),
                    seq,
                });
            };
            let file = first.absolute_path();
            let groups: Vec<u64> = idx
                .entries
                .iter()
                .filter(|e| e.seq >= seq && e.absolute_path() == file)
                .filter_map(|e| e.group)
                .collect();
            Ok(idx
                .entries
                .iter()
                .filter(|e| e.seq >= seq)
                .filter(|e| {
                    e.absolute_path() == file || e.group.is_some_and(|g| groups.contains(&g))
                })
                .map(|e| e.seq)
                .collect())
        })
    }

    /// The contents `state` names, read from this session's backup of `path`
    /// (an entry's `before`, or a later entry's `before` that equals an
    /// earlier `after`): `Ok(None)` for a file over [`MAX_DIFF_BYTES`],
    /// empty for an absent file. What is read is verified against the backup's
    /// hash: a damaged backup is [`Error::BlobCorrupt`] (and moved aside).
    pub fn backup_contents(&self, path: &str, state: &FileState) -> Result<Option<Vec<u8>>> {
        let Some(hash) = state.sha256.as_deref() else {
            return Ok(Some(Vec::new()));
        };
        if state.size > MAX_DIFF_BYTES {
            return Ok(None);
        }
        self.blobs()
            .open_backup(self.id(), path, hash)?
            .read_small(MAX_DIFF_BYTES)
    }

    /// Whether this session holds a backup with the contents `state` names
    /// (so [`Session::backup_contents`] can read it).
    pub fn has_backup(&self, state: &FileState) -> bool {
        state
            .sha256
            .as_deref()
            .is_none_or(|h| self.blobs().exists(h))
    }

    /// The file of `entry` as it is now in its workspace (what `status`
    /// compares with what the session left).
    pub fn current_state(&self, entry: &Entry) -> Result<FileState> {
        let ws = Workspace::reopen(&entry.workspace)?;
        ws.state_of(&entry.rel_path())
    }

    /// The file of `entry` as it is now in its workspace, and its contents
    /// (`None` over [`MAX_DIFF_BYTES`]; empty when absent).
    pub fn current_contents(&self, entry: &Entry) -> Result<(FileState, Option<Vec<u8>>)> {
        let ws = Workspace::reopen(&entry.workspace)?;
        let rel = entry.rel_path();
        let state = ws.state_of(&rel)?;
        if !state.exists || state.is_dir() {
            return Ok((state, Some(Vec::new())));
        }
        if state.size > MAX_DIFF_BYTES {
            return Ok((state, None));
        }
        let Some(f) = ws.open_regular(&rel)? else {
            return Ok((state, Some(Vec::new())));
        };
        let mut buf = Vec::new();
        let display = f.display.clone();
        f.file
            .take(MAX_DIFF_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(Error::io("read", &display))?;
        Ok((state, (buf.len() as u64 <= MAX_DIFF_BYTES).then_some(buf)))
    }
}

impl Workspace {
    /// The absolute paths an entry for `path` (relative to the current
    /// directory's workspace, or absolute) may be recorded under: the path as
    /// given, and with links inside the workspace resolved. What `log FILE`
    /// and `blame FILE` match entries with, as `revert` and `diff` do.
    pub fn candidate_files(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Vec<std::path::PathBuf>> {
        crate::workspace::candidate_files(self, path.as_ref())
    }
}

impl Session {
    /// What the entries `seqs` of this session did together, file by file:
    /// each file as it was before the oldest of them against the file as
    /// the newest of them left it, in path order (`show #N`, `diff #N`,
    /// `diff --turn N`). The "after" side is read from this session's
    /// backup with its contents (a later change's "before") or from the
    /// file when it is still so; a file whose "after" is neither (a checkpoint not
    /// committed, or contents since overwritten) is left out of the diffs
    /// and named in the second list.
    pub fn entries_diff(&self, seqs: &[u64]) -> Result<(Vec<FileDiff>, Vec<String>)> {
        let entries: Vec<Entry> = self
            .entries()?
            .into_iter()
            .filter(|e| seqs.contains(&e.seq))
            .collect();
        let mut files: Vec<(&Entry, &Entry)> = Vec::new();
        for e in &entries {
            match files
                .iter_mut()
                .find(|(first, _)| first.absolute_path() == e.absolute_path())
            {
                Some((_, last)) => *last = e,
                None => files.push((e, e)),
            }
        }
        let mut out = Vec::new();
        let mut unknown = Vec::new();
        for (first, last) in files {
            let ws = Workspace::reopen(&first.workspace)?;
            let rel = first.rel_path();
            let Some(after) = &last.after else {
                unknown.push(last.path.clone());
                continue;
            };
            let new_side = if self.has_backup(after) {
                Side::Blob
            } else if ws.current_state(&rel)?.same_contents(after) {
                Side::Workspace
            } else {
                unknown.push(last.path.clone());
                continue;
            };
            let before_side = Side::Blob;
            out.push(self.compare(&ws, &rel, &first.before, before_side, after, new_side)?);
        }
        out.sort_by(|a, b| (&a.workspace, &a.path).cmp(&(&b.workspace, &b.path)));
        Ok((out, unknown))
    }
}

#[cfg(test)]
mod tests {
    use crate::revert::RevertOptions;
    use crate::store::Store;
    use crate::workspace::Workspace;

    #[test]
    fn revert_file_to_entry_takes_back_that_file_only_from_that_entry_on() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(home.path()).session("s1").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        s.write(&ws, "a.txt", &b"a1"[..], "m1").unwrap();
        let second = s.write(&ws, "a.txt", &b"a2"[..], "m2").unwrap();
        s.write(&ws, "b.txt", &b"b1"[..], "m3").unwrap();
        s.write(&ws, "a.txt", &b"a3"[..], "m4").unwrap();
        let dry = RevertOptions {
            force: false,
            dry_run: true,
        };
        let plan = s.revert_file_to_entry(second.seq, dry).unwrap();
        assert_eq!(plan.files.len(), 1);
        assert_eq!(read("a.txt"), "a3", "a dry run touches nothing");
        s.revert_file_to_entry(second.seq, RevertOptions::default())
            .unwrap();
        assert_eq!(read("a.txt"), "a1", "as it was before #2");
        assert_eq!(read("b.txt"), "b1", "the other file left alone");
        let left: Vec<u64> = s.entries().unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(left, [1, 3]);
        assert!(
            s.revert_file_to_entry(second.seq, dry).is_err(),
            "#2 is gone"
        );
        s.redo(RevertOptions::default()).unwrap();
        assert_eq!(read("a.txt"), "a3", "one redo puts it all back");
    }
}
