//! Moving a file through the session: both sides backed up and recorded as
//! one step, then one `rename`.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{Error, Result};
use crate::index::{Entry, FileState, InFlight};
use crate::workspace::Workspace;

use super::handle::Session;
use super::write::Draft;

impl Session {
    /// Moves `from` to `to` (both in `workspace`) as one undoable step: undo puts
    /// the file back under its old name and removes the new one (or restores
    /// what `to` held before), refusing if either changed since. The move is one
    /// `rename` through the capability; missing directories of `to` are created.
    /// Returns the two entries (`from`, then `to`), which share a group.
    pub fn rename(
        &self,
        workspace: &Workspace,
        from: impl AsRef<Path>,
        to: impl AsRef<Path>,
        message_id: &str,
    ) -> Result<Vec<Entry>> {
        let from_rel = workspace.resolve_rel(&from)?;
        let to_rel = workspace.resolve_rel(&to)?;
        let root = workspace.root();
        for rel in [&from_rel, &to_rel] {
            self.store.refuse_inside(&rel.under(root))?;
        }
        let files = BTreeSet::from([from_rel.under(root), to_rel.under(root)]);
        if files.len() == 1 {
            return Err(Error::io("move", to_rel.under(root))(
                std::io::Error::other("it is the same file as the source"),
            ));
        }
        let _locks = self.lock_files(&files)?;
        self.view_live(|_| ())?;
        let before_from = self.back_up(workspace, &from_rel)?;
        let from_parent = match workspace.parent_of(&from_rel, false)? {
            Some(p) if before_from.exists => p,
            _ => {
                return Err(Error::FileNotFound {
                    path: from_rel.under(root),
                });
            }
        };
        let before_to = self.back_up(workspace, &to_rel)?;
        let mut dir_lock = self.lock_parent_dir(workspace, &to_rel)?;
        // Recorded before they are made, as for a write.
        let missing = workspace.missing_dirs(&to_rel);
        let drafts = vec![
            Draft {
                rel: from_rel.clone(),
                before: before_from.clone(),
                after: Some(FileState::absent()),
                created_dirs: Vec::new(),
                in_flight: Some(InFlight { temp: None }),
            },
            Draft {
                rel: to_rel.clone(),
                before: before_to,
                after: Some(before_from),
                created_dirs: missing,
                in_flight: Some(InFlight { temp: None }),
            },
        ];
        let entries = self.record(workspace, message_id, drafts)?;
        let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
        let to_parent = match workspace.parent_of(&to_rel, true) {
            Ok(p) => p.expect("parent_of creates what is missing"),
            Err(e) => {
                self.forget(workspace, &seqs, &[], &mut dir_lock);
                return Err(e);
            }
        };
        if let Err(failed) = from_parent.move_target_to(&to_parent) {
            match failed.visible {
                // Moved, but perhaps not durably: let the files decide.
                true => self.settle_held(&files),
                false => self.forget(workspace, &seqs, &to_parent.created, &mut dir_lock),
            }
            return Err(failed.error);
        }
        self.land(&seqs);
        Ok(entries
            .into_iter()
            .map(|e| Entry {
                in_flight: None,
                ..e
            })
            .collect())
    }
}
