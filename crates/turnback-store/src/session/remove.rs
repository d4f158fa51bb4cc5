//! Removing a file through the session: backed up, recorded, then deleted.

use std::path::Path;

use crate::error::{Error, Result};
use crate::index::{Entry, FileState, InFlight};
use crate::workspace::Workspace;

use super::handle::Session;
use super::write::Draft;

impl Session {
    /// Deletes `path` in `workspace`, protected: backed up first, then removed.
    /// Returns the entry.
    pub fn remove(
        &self,
        workspace: &Workspace,
        path: impl AsRef<Path>,
        message_id: &str,
    ) -> Result<Entry> {
        let rel = workspace.resolve_rel(path)?;
        self.store.refuse_inside(&rel.under(workspace.root()))?;
        let _lock = self.lock_file(workspace, &rel)?;
        let before = self.back_up_checked(workspace, &rel)?;
        let display = rel.under(workspace.root());
        let parent = match workspace.parent_of(&rel, false)? {
            Some(p) if before.exists => p,
            _ => return Err(Error::FileNotFound { path: display }),
        };
        let in_flight = InFlight { temp: None };
        let draft = Draft {
            rel: rel.clone(),
            before,
            after: Some(FileState::absent()),
            created_dirs: Vec::new(),
            in_flight: Some(in_flight),
        };
        let entry = self.record(workspace, message_id, vec![draft])?.remove(0);
        if let Err(failed) = parent.remove_target_reporting() {
            match failed.visible {
                true => self.settle_own(workspace, &rel),
                false => self.forget(workspace, &[entry.seq], &[], &mut None),
            }
            return Err(failed.error);
        }
        self.land(&[entry.seq]);
        Ok(Entry {
            in_flight: None,
            ..entry
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use crate::session::handle::tests::setup;

    #[test]
    fn remove_of_a_missing_file_records_nothing() {
        let (_h, _d, s, ws) = setup();
        match s.remove(&ws, "nope", "m") {
            Err(Error::FileNotFound { path }) => assert_eq!(path, ws.root().join("nope")),
            other => panic!("expected FileNotFound, got {other:?}"),
        }
        assert!(s.entries().unwrap().is_empty());
    }
}
