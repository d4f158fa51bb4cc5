//! Durable replacement of a store file: write a temporary, fsync it, rename it
//! over the target, fsync the directory. Used for `index.json`; the workspace has
//! its own path through the capability (`workspace/`).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::sys;

/// How much of a replacement must survive a power cut once the call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Contents and the rename are on disk.
    Full,
    /// May be lost in a power cut, leaving the previous version (never a torn
    /// one): for changes whose loss recovery repairs. A replacement syncs the
    /// contents before the rename but not the directory after; a journal line
    /// is not synced (the next synced line, or the kernel, takes it to disk).
    MayBeLost,
}

/// Replaces the store file `path` with `bytes`, through the temporary `tmp`
/// beside it. The temporary's name is fixed (`layout.rs`), which is safe only
/// under the lock that serializes the file's writers; a crash leaves at most
/// that one file, which the next write truncates.
pub(crate) fn replace(path: &Path, tmp: &Path, bytes: &[u8], durability: Durability) -> Result<()> {
    let dir = path.parent().expect("a store file is in a directory");
    let result = replace_via(tmp, path, bytes);
    if result.is_err() {
        // A failed write (a full disk, say) leaves nothing behind; the
        // original is untouched.
        let _ = std::fs::remove_file(tmp);
    }
    result?;
    crate::crash::point("index-renamed");
    if durability == Durability::Full {
        sys::fsync_dir_path(dir).map_err(Error::io("sync directory", dir))?;
        crate::crash::point("index-dir-synced");
    }
    Ok(())
}

fn replace_via(tmp: &Path, target: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = crate::trust::open(
        sys::store_file_options()
            .write(true)
            .create(true)
            .truncate(true),
        tmp,
    )
    .map_err(crate::trust::store_io("create", tmp))?;
    f.write_all(bytes).map_err(Error::io("write", tmp))?;
    crate::crash::point("index-tmp-written");
    f.sync_all().map_err(Error::io("sync", tmp))?;
    crate::crash::point("index-tmp-synced");
    drop(f);
    std::fs::rename(tmp, target).map_err(Error::io("rename into place", target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let (path, tmp) = (dir.path().join("f.json"), dir.path().join("f.json.tmp"));
        replace(&path, &tmp, b"one", Durability::Full).unwrap();
        replace(&path, &tmp, b"two", Durability::MayBeLost).unwrap();
        assert_eq!(std::fs::read(dir.path().join("f.json")).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.json")]);
    }
}
