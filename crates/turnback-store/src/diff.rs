//! Comparing a backup with a file: line counts and a unified diff for text that
//! is small enough to hold; binary and too-big files are named as such.
//!
//! This is the only module that reads contents into memory, and only up to
//! [`MAX_DIFF_BYTES`] a side; anything larger is compared by hash alone.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use similar::{ChangeTag, TextDiff};

use crate::error::{Error, Result};
use crate::index::{Entry, FileState};
use crate::relpath::RelPath;
use crate::revert::FileRevert;
use crate::session::Session;
use crate::workspace::Workspace;

/// The largest side a diff reads into memory; above it a file is "too big".
pub const MAX_DIFF_BYTES: u64 = 4 * 1024 * 1024;

/// How long a line diff may take before it settles for a coarser answer.
const DIFF_DEADLINE: Duration = Duration::from_secs(2);

/// One file compared: `old` (a backup) against `new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The workspace root.
    pub workspace: PathBuf,
    /// The file's path relative to it.
    pub path: String,
    /// The old side.
    pub old: FileState,
    /// The new side.
    pub new: FileState,
    /// How they differ.
    pub body: DiffBody,
}

/// How two sides of a file differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffBody {
    /// Same contents.
    Same,
    /// Text on both sides (an absent side counts as empty text).
    Text {
        /// Lines only in the new side.
        insertions: usize,
        /// Lines only in the old side.
        deletions: usize,
        /// A unified diff (`--- a/PATH`, `+++ b/PATH`, hunks with 3 lines of context).
        unified: String,
    },
    /// A side holds a NUL byte or is not UTF-8: no line counts.
    Binary,
    /// A side is larger than [`MAX_DIFF_BYTES`]: compared by hash only.
    TooBig,
}

impl FileDiff {
    /// True when the old side did not exist.
    pub fn is_created(&self) -> bool {
        !self.old.exists && self.new.exists
    }

    /// True when the new side does not exist.
    pub fn is_deleted(&self) -> bool {
        self.old.exists && !self.new.exists
    }
}

impl Session {
    /// Each file the session changed: its oldest backup against the file as it
    /// is now, in path order. Files back at their oldest backup are left out.
    /// With `only`, just that file (relative to the workspace, or absolute).
    pub fn diff(&self, only: Option<(&Workspace, &Path)>) -> Result<Vec<FileDiff>> {
        let wanted = match only {
            Some((ws, path)) => Some(crate::workspace::candidate_files(ws, path)?),
            None => None,
        };
        let entries = self.entries()?;
        let mut oldest: Vec<&Entry> = Vec::new();
        for e in &entries {
            let file = e.absolute_path();
            if wanted.as_ref().is_some_and(|w| !w.contains(&file)) {
                continue;
            }
            if !oldest.iter().any(|o| o.absolute_path() == file) {
                oldest.push(e);
            }
        }
        let mut out = Vec::new();
        for e in oldest {
            let ws = Workspace::reopen(&e.workspace)?;
            let rel = e.rel_path();
            let now = ws.state_of(&rel)?;
            let d = self.compare(&ws, &rel, &e.before, Side::Blob, &now, Side::Workspace)?;
            if d.body != DiffBody::Same {
                out.push(d);
            }
        }
        out.sort_by(|a, b| (&a.workspace, &a.path).cmp(&(&b.workspace, &b.path)));
        Ok(out)
    }

    /// What a planned revert does to one file: the file as it is now against
    /// what the revert restores it to.
    pub fn revert_diff(&self, file: &FileRevert) -> Result<FileDiff> {
        let seq = file.seqs.first().copied().unwrap_or(0);
        let entry = self.view(|s| {
            self.entry_in(s, seq).cloned().or_else(|missing| {
                // A redo's entries are in the history until it is done.
                let mut undone = s.history.iter().flat_map(|r| &r.entries);
                undone.find(|e| e.seq == seq).cloned().ok_or(missing)
            })
        })??;
        let ws = Workspace::reopen(&entry.workspace)?;
        // A report may come from anywhere: its path is checked here.
        let rel = RelPath::new(&file.path).ok_or_else(|| Error::OutsideWorkspace {
            path: file.path.clone().into(),
            workspace: ws.root().to_owned(),
            via_link: None,
        })?;
        let now = ws.state_of(&rel)?;
        self.compare(&ws, &rel, &now, Side::Workspace, &file.target, Side::Blob)
    }

    pub(crate) fn compare(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        old: &FileState,
        old_side: Side,
        new: &FileState,
        new_side: Side,
    ) -> Result<FileDiff> {
        // A directory (a scan's) has no contents to compare: as a file, it
        // is not there.
        let as_file = |s: &FileState| match s.is_dir() {
            true => FileState::absent(),
            false => s.clone(),
        };
        let (old, new) = (&as_file(old), &as_file(new));
        let body = if old.same_contents(new) {
            DiffBody::Same
        } else if old.size > MAX_DIFF_BYTES || new.size > MAX_DIFF_BYTES {
            DiffBody::TooBig
        } else {
            match (
                self.read_side(ws, rel, old, old_side)?,
                self.read_side(ws, rel, new, new_side)?,
            ) {
                (Some(a), Some(b)) => {
                    let names = (
                        old.exists.then(|| quoted(&format!("a/{rel}"))),
                        new.exists.then(|| quoted(&format!("b/{rel}"))),
                    );
                    text_diff(names, &a, &b).unwrap_or(DiffBody::Binary)
                }
                // Grew past the limit since it was hashed.
                _ => DiffBody::TooBig,
            }
        };
        Ok(FileDiff {
            workspace: ws.root().to_owned(),
            path: rel.to_string(),
            old: old.clone(),
            new: new.clone(),
            body,
        })
    }

    /// The contents of one side, or `None` when over the limit.
    fn read_side(
        &self,
        ws: &Workspace,
        rel: &RelPath,
        state: &FileState,
        side: Side,
    ) -> Result<Option<Vec<u8>>> {
        let Some(hash) = state.sha256.as_deref() else {
            return Ok(Some(Vec::new()));
        };
        let (mut reader, display): (Box<dyn Read>, PathBuf) = match side {
            Side::Blob => {
                return self
                    .blobs()
                    .open_backup(self.id(), rel.as_str(), hash)?
                    .read_small(MAX_DIFF_BYTES);
            }
            Side::Workspace => match ws.open_regular(rel)? {
                Some(f) => (Box::new(f.file), f.display),
                None => return Ok(Some(Vec::new())),
            },
        };
        let mut buf = Vec::new();
        reader
            .by_ref()
            .take(MAX_DIFF_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(Error::io("read", &display))?;
        Ok((buf.len() as u64 <= MAX_DIFF_BYTES).then_some(buf))
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Side {
    Blob,
    Workspace,
}

/// `name` as git writes it in a diff's `---`/`+++` lines: as it is, or,
/// when it holds a control character, `"` or `\`, in double quotes with
/// C escapes (`"a/new\nline"`), so that a crafted file name can never forge
/// a line of the diff.
fn quoted(name: &str) -> String {
    if !name
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
    {
        return name.to_owned();
    }
    let mut out = String::from('"');
    for c in name.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\{b:03o}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A line diff of two texts; `None` when either is binary. A side named `None`
/// is absent and shows as `/dev/null`, as git and patch expect.
fn text_diff(names: (Option<String>, Option<String>), old: &[u8], new: &[u8]) -> Option<DiffBody> {
    let old = as_text(old)?;
    let new = as_text(new)?;
    let diff = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new);
    let (mut insertions, mut deletions) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => insertions += 1,
            ChangeTag::Delete => deletions += 1,
            ChangeTag::Equal => {}
        }
    }
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(
            names.0.as_deref().unwrap_or("/dev/null"),
            names.1.as_deref().unwrap_or("/dev/null"),
        )
        .to_string();
    Some(DiffBody::Text {
        insertions,
        deletions,
        unified,
    })
}

fn as_text(bytes: &[u8]) -> Option<&str> {
    if bytes.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_newline_or_a_quote_is_quoted_as_git_quotes_it() {
        assert_eq!(quoted("a/plain name.txt"), "a/plain name.txt");
        assert_eq!(quoted("a/new\nline"), "\"a/new\\nline\"");
        assert_eq!(quoted("b/say \"hi\"\\"), "\"b/say \\\"hi\\\"\\\\\"");
        assert_eq!(quoted("a/bell\u{7}"), "\"a/bell\\007\"");
    }

    #[test]
    fn counts_lines_and_renders_a_unified_diff() {
        let Some(DiffBody::Text {
            insertions,
            deletions,
            unified,
        }) = text_diff(
            (Some("a/a.txt".into()), Some("b/a.txt".into())),
            b"one\ntwo\nthree\n",
            b"one\n2\nthree\nfour\n",
        )
        else {
            panic!("text expected")
        };
        assert_eq!((insertions, deletions), (2, 1));
        assert!(
            unified.starts_with("--- a/a.txt\n+++ b/a.txt\n@@"),
            "{unified}"
        );
        assert!(
            unified.contains("-two\n") && unified.contains("+2\n") && unified.contains("+four\n")
        );
    }

    #[test]
    fn nul_or_invalid_utf8_is_binary() {
        assert_eq!(text_diff((None, None), b"a\0b", b"text"), None);
        assert_eq!(text_diff((None, None), b"text", b"\xff\xfe"), None);
    }

    #[test]
    fn a_session_diff_names_each_kind_of_change() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let s = crate::Store::new(home.path()).session("s").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let put = |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        put("edited.txt", b"a\nb\n");
        put("gone.txt", b"bye\n");
        put("same.txt", b"x\n");
        put("bin", b"\0\x01");
        put("big", &vec![b'a'; MAX_DIFF_BYTES as usize + 1]);
        s.write(&ws, "edited.txt", &b"a\nc\n"[..], "m").unwrap();
        s.write(&ws, "new.txt", &b"hi\n"[..], "m").unwrap();
        s.remove(&ws, "gone.txt", "m").unwrap();
        s.write(&ws, "same.txt", &b"y\n"[..], "m").unwrap();
        put("same.txt", b"x\n"); // back by hand: no longer a change
        s.write(&ws, "bin", &b"\0\x02"[..], "m").unwrap();
        s.write(&ws, "big", &b"small"[..], "m").unwrap();
        let diffs = s.diff(None).unwrap();
        let kinds: Vec<(&str, String)> = diffs
            .iter()
            .map(|d| {
                let kind = match &d.body {
                    DiffBody::Text {
                        insertions,
                        deletions,
                        ..
                    } => format!("+{insertions} -{deletions}"),
                    other => format!("{other:?}"),
                };
                (d.path.as_str(), kind)
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("big", "TooBig".to_string()),
                ("bin", "Binary".to_string()),
                ("edited.txt", "+1 -1".to_string()),
                ("gone.txt", "+0 -1".to_string()),
                ("new.txt", "+1 -0".to_string()),
            ]
        );
        assert!(diffs[3].is_deleted() && diffs[4].is_created());
        let DiffBody::Text { unified, .. } = &diffs[4].body else {
            panic!("text expected")
        };
        assert!(
            unified.starts_with("--- /dev/null\n+++ b/new.txt\n"),
            "{unified}"
        );
        let only = s.diff(Some((&ws, Path::new("new.txt")))).unwrap();
        assert_eq!(only.len(), 1);
    }

    /// A backup found corrupt (and moved aside) by a revert is named as
    /// corrupt by a diff too, as by every reader of backups, not as missing.
    #[test]
    fn a_diff_names_a_backup_found_corrupt_as_corrupt() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let s = crate::Store::new(home.path()).session("s").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("f"), b"old\n").unwrap();
        let e = s.write(&ws, "f", &b"new\n"[..], "m").unwrap();
        let blob = s.blobs().path(e.before.sha256.as_deref().unwrap());
        std::fs::write(&blob, b"bad\n").unwrap();
        let undo = s.undo(crate::RevertOptions::default()).unwrap_err();
        assert!(matches!(undo, Error::BlobCorrupt { .. }), "{undo:?}");
        match s.diff(None) {
            Err(Error::BlobCorrupt {
                moved_to: Some(_), ..
            }) => {}
            other => panic!("expected BlobCorrupt, got {other:?}"),
        }
    }
}
