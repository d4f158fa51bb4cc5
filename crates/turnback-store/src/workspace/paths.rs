//! Which entries a path the caller gives names: as written and with links
//! resolved, matched by absolute path.

use std::path::{Component, Path, PathBuf};

use super::root::Workspace;
use crate::error::Result;
use crate::index::is_relative_path;

/// The absolute paths an entry for `path` may be recorded under: as written (`.`
/// and `..` applied lexically), and with links resolved as a checkpoint would.
/// Entries are matched by absolute path, so nested workspaces see each other's.
pub(crate) fn candidate_files(workspace: &Workspace, path: &Path) -> Result<Vec<PathBuf>> {
    Ok(candidate_paths(workspace, path)?
        .into_iter()
        .map(|rel| workspace.root().join(rel))
        .collect())
}

fn candidate_paths(workspace: &Workspace, path: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let relative = if path.is_absolute() {
        path.strip_prefix(workspace.root()).ok().map(Path::to_owned)
    } else {
        Some(path.to_owned())
    };
    if let Some(lexical) = relative.and_then(|r| lexical_normal(&r)) {
        out.push(lexical);
    }
    match workspace.resolve(path) {
        Ok(real) if !out.contains(&real) => out.push(real),
        Ok(_) => {}
        Err(e) if out.is_empty() => return Err(e),
        Err(_) => {}
    }
    Ok(out)
}

fn lexical_normal(p: &Path) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_str()?),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    let s = parts.join("/");
    is_relative_path(&s).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_paths() {
        assert_eq!(
            lexical_normal(Path::new("a/./b/../c")).as_deref(),
            Some("a/c")
        );
        assert_eq!(lexical_normal(Path::new("../a")), None);
        assert_eq!(lexical_normal(Path::new("/a")), None);
        assert_eq!(lexical_normal(Path::new(".")), None);
    }
}
