//! Which entries a path the caller gives names: as written and with links
//! resolved, matched by absolute path.

use std::path::{Path, PathBuf};

use super::root::Workspace;
use crate::error::Result;
use crate::relpath::RelPath;

/// The absolute paths an entry for `path` may be recorded under: as written (`.`
/// and `..` applied lexically), and with links resolved as a checkpoint would.
/// Entries are matched by absolute path, so nested workspaces see each other's.
pub(crate) fn candidate_files(workspace: &Workspace, path: &Path) -> Result<Vec<PathBuf>> {
    Ok(candidate_paths(workspace, path)?
        .into_iter()
        .map(|rel| rel.under(workspace.root()))
        .collect())
}

fn candidate_paths(workspace: &Workspace, path: &Path) -> Result<Vec<RelPath>> {
    let mut out = Vec::new();
    let relative = if path.is_absolute() {
        path.strip_prefix(workspace.root()).ok().map(Path::to_owned)
    } else {
        Some(path.to_owned())
    };
    if let Some(lexical) = relative.and_then(|r| RelPath::lexical(&r)) {
        out.push(lexical);
    }
    match workspace.resolve_rel(path) {
        Ok(real) if !out.contains(&real) => out.push(real),
        Ok(_) => {}
        Err(e) if out.is_empty() => return Err(e),
        Err(_) => {}
    }
    Ok(out)
}
