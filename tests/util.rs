//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use turnback_store::{Session, Store, Workspace};

/// The built `turnback` binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_turnback"))
}

/// A temporary store home and a temporary workspace.
pub struct Env {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

impl Env {
    pub fn new() -> Env {
        Env {
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    pub fn store(&self) -> Store {
        Store::new(self.home.path())
    }

    pub fn session(&self, id: &str) -> Session {
        self.store().session(id).unwrap()
    }

    pub fn workspace(&self) -> Workspace {
        Workspace::open(self.ws.path()).unwrap()
    }

    /// The absolute path of `rel` in the workspace.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.path().join(rel)
    }

    /// `turnback` run in the workspace with this home and (when given) session.
    pub fn cmd(&self, session: Option<&str>) -> Command {
        let mut c = Command::new(bin());
        c.current_dir(self.ws.path())
            .env("TURNBACK_HOME", self.home.path())
            .env_remove("TURNBACK_SESSION")
            .env_remove("TURNBACK_WORKSPACE");
        if let Some(s) = session {
            c.env("TURNBACK_SESSION", s);
        }
        c
    }
}

/// What a tree holds: every path under `root` (not following links) with its kind
/// and contents (files), target (links) or nothing (directories). Comparing two
/// digests shows whether anything was written, created or deleted.
pub fn tree_digest(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for e in read.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().to_owned();
        let md = std::fs::symlink_metadata(&p).unwrap();
        if md.is_symlink() {
            out.insert(
                rel,
                format!("link {}", std::fs::read_link(&p).unwrap().display()),
            );
        } else if md.is_dir() {
            out.insert(rel, "dir".into());
            walk(root, &p, out);
        } else {
            use std::os::unix::fs::PermissionsExt;
            let bytes = std::fs::read(&p).unwrap_or_default();
            out.insert(
                rel,
                format!(
                    "file {:o} {:?}",
                    md.permissions().mode() & 0o7777,
                    String::from_utf8_lossy(&bytes)
                ),
            );
        }
    }
}

/// Names in `dir` that look like turnback's temporaries.
pub fn stray_temps(dir: &Path) -> Vec<PathBuf> {
    tree_digest(dir)
        .into_keys()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".turnback-"))
        })
        .collect()
}
