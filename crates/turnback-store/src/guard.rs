//! The stale-read guard: an agent may overwrite an existing file only if it read
//! it in this session and it is unchanged since (by content hash, not mtime).
//!
//! The marks live in the session's index, so they hold across the agent's
//! processes. Losing the newest mark in a crash is harmless (the agent reads the
//! file again), so a mark is a journal line that is not synced.

use std::path::Path;

use crate::durable::Durability;
use crate::error::{Error, Result};
use crate::session::Session;
use crate::workspace::Workspace;

impl Session {
    /// Notes that the agent read `path` (as it is now): a later
    /// [`Session::check_write`] passes while the file stays like this.
    pub fn note_read(&self, workspace: &Workspace, path: impl AsRef<Path>) -> Result<()> {
        let rel = workspace.resolve_rel(path)?;
        let state = workspace.current_state(&rel)?;
        let file = rel.under(workspace.root());
        self.mutate(Durability::MayBeLost, |idx| {
            idx.mark_read(file, state);
            Ok(())
        })
    }

    /// Checks that the agent may overwrite `path`: a file that does not exist may
    /// be created; an existing one must have been read in this session (or
    /// written through it) and be unchanged since. Otherwise
    /// [`Error::NotRead`] or [`Error::ChangedSinceRead`].
    pub fn check_write(&self, workspace: &Workspace, path: impl AsRef<Path>) -> Result<()> {
        let rel = workspace.resolve_rel(path)?;
        let now = workspace.current_state(&rel)?;
        if !now.exists {
            return Ok(());
        }
        let file = rel.under(workspace.root());
        let mark = self.view(|s| s.read_mark(&file).cloned())?;
        match mark {
            None => Err(Error::NotRead {
                session: self.id().to_owned(),
                path: file,
            }),
            Some(m) if !m.state.same_contents(&now) => Err(Error::ChangedSinceRead {
                session: self.id().to_owned(),
                path: file,
            }),
            Some(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Error, Store, Workspace};

    #[test]
    fn a_file_must_be_read_and_unchanged_before_it_is_overwritten() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(home.path()).session("s").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        s.check_write(&ws, "new.txt").unwrap(); // creating is always allowed
        std::fs::write(dir.path().join("a"), "one").unwrap();
        assert!(matches!(
            s.check_write(&ws, "a"),
            Err(Error::NotRead { .. })
        ));
        s.note_read(&ws, "a").unwrap();
        s.check_write(&ws, "a").unwrap();
        std::fs::write(dir.path().join("a"), "two").unwrap();
        assert!(matches!(
            s.check_write(&ws, "a"),
            Err(Error::ChangedSinceRead { .. })
        ));
        // A write through the session counts as knowing the file.
        s.write(&ws, "a", &b"three"[..], "m").unwrap();
        s.check_write(&ws, "a").unwrap();
        // Same mtime games do not fool it: contents are compared.
        let other = Store::new(home.path()).session("t").unwrap();
        assert!(matches!(
            other.check_write(&ws, "a"),
            Err(Error::NotRead { .. })
        ));
    }
}
