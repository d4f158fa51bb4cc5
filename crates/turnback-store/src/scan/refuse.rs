//! What a scan's rollback checks before it records or touches anything: a
//! file goes back where the command made a directory only when the rollback
//! takes away everything in it. One holding what the scan did not record (an
//! ignored file, say) refuses the rollback up front (`NotEmpty`, as an undo
//! refuses), so it never stops part way.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::error::{Conflict, ConflictReason, Error, Result};
use crate::session::Draft;
use crate::workspace::Workspace;

/// [`Error::Refused`] (one [`ConflictReason::NotEmpty`] per file, naming
/// what is in the way) when a rollback of `changes` (each file's change, its
/// "after" what the workspace holds now) would have to put a file back in
/// place of a directory that holds something the rollback does not take
/// away. Reads the workspace only.
pub(super) fn not_empty(session: &str, ws: &Workspace, changes: &[&Draft]) -> Result<()> {
    // What the rollback leaves absent: everything the command made.
    let taken: HashSet<PathBuf> = changes
        .iter()
        .filter(|d| !d.before.exists)
        .map(|d| d.rel.under(ws.root()))
        .collect();
    let mut conflicts = Vec::new();
    for d in changes {
        let now_dir = d.after.as_ref().is_some_and(|a| a.is_dir());
        if !(now_dir && d.before.exists && !d.before.is_dir()) {
            continue;
        }
        if let Some(found) = crate::revert::left_in(ws, &d.rel, &taken)? {
            conflicts.push(Conflict {
                workspace: ws.root().to_owned(),
                path: d.rel.to_string(),
                // No entry is recorded for a rollback.
                seq: 0,
                reason: ConflictReason::NotEmpty { found },
            });
        }
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    Err(Error::Refused {
        session: session.to_owned(),
        conflicts,
    })
}
