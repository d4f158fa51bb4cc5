//! Helpers the model test, the `operations` fuzz target and the replay of its
//! corpus all need (and the other integration tests, through `util`): tree
//! walks, SHA-256 in hex, stray temporaries, the mode of a new file. Included
//! through `mod` by each, so std, sha2 and tempfile only.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256, computed independently of the store.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every path under `root` (not following links), names only: the same walk as
/// `util::tree_digest` without reading any file, which takes seconds for megabytes in
/// a debug build (and blocks on a fifo).
pub fn names_under(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<PathBuf>) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for e in read.flatten() {
            let p = e.path();
            out.insert(p.strip_prefix(root).unwrap().to_owned());
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                walk(root, &p, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

/// Names in `dir` that look like turnback's temporaries (found without reading
/// any file).
pub fn stray_temps(dir: &Path) -> Vec<PathBuf> {
    names_under(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".turnback-"))
        })
        .collect()
}

/// The mode of a file created with 0o666 (the umask applied), as both the store
/// and `std::fs::write` create new files.
pub fn default_mode() -> u32 {
    static MODE: OnceLock<u32> = OnceLock::new();
    *MODE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("probe");
        std::fs::write(&p, "").unwrap();
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777
    })
}
