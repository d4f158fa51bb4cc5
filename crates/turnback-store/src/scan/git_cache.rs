//! What `git ls-files` last said of a workspace's index, kept in its
//! baseline (`baselines/<key>/git-index`) and used again while the index
//! file is the same file with the same stat: running git and parsing its
//! listing is most of a scan's beginning in a large repository, and it
//! would run on the core the walk wants.
//!
//! The index is never read here; only its stat is compared (git writes a
//! new index file each time it changes one). A cache that does not parse,
//! or was made with other `GIT_*` settings, is not used; git is asked
//! again. An entry that names a path that is not relative, or an object
//! that is not hex, is never used (`git_index.rs`). Even a
//! stale entry cannot vouch for a file that changed: it vouches only for the
//! stat it lists, the stat git saw when it hashed the object it names.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::error::Result;

use super::bytes::{Reader, put};
use super::git::{self, GitIndex};
use super::git_index::Entries;
use super::walk::Stat;

const MAGIC: &[u8] = b"turnback git index cache 1\n";

/// The git settings that make `ls-files` read another index: with any set,
/// no cache is used.
const GIT_ENV: [&str; 4] = [
    "GIT_DIR",
    "GIT_INDEX_FILE",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
];

/// What tells one index file from another: its stat (inode, size,
/// modification and change times).
pub(crate) type Key = [i64; 6];

/// Asks git for its index ([`git::read_index`]) and caches the listing at
/// `cache`: what a beginning does when [`load_current`] found none.
pub(crate) fn refresh(root: &Path, cache: &Path) -> Result<Option<GitIndex>> {
    let key = key_of(git::index_file(root).as_deref());
    let git = git::read_index(root)?;
    if let (Some(k), Some(g)) = (key, &git)
        // Kept only if the index did not change while git read it.
        && key_of(git::index_file(root).as_deref()) == Some(k)
    {
        save(cache, k, g);
    }
    Ok(git)
}

/// The cached listing, if it is of the index as it is now.
pub(crate) fn load_current(root: &Path, cache: &Path) -> Option<GitIndex> {
    load(cache, key_of(git::index_file(root).as_deref())?)
}

/// The key of the index file at `index`, if it is there and no `GIT_*`
/// setting points elsewhere.
pub(crate) fn key_of(index: Option<&Path>) -> Option<Key> {
    if GIT_ENV.iter().any(|v| std::env::var_os(v).is_some()) {
        return None;
    }
    let md = std::fs::symlink_metadata(index?).ok()?;
    let st = Stat::of(&md);
    Some([
        st.ino as i64,
        st.size as i64,
        st.times[0],
        st.times[1],
        st.times[2],
        st.times[3],
    ])
}

/// The listing cached at `path` for the index with `key`, if it is that one.
pub(crate) fn load(path: &Path, key: Key) -> Option<GitIndex> {
    let mut file = crate::trust::open_read(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut bytes = Vec::with_capacity(usize::try_from(size).ok()? + 1);
    // The magic and the key first: a cache of another index is not read on.
    let head = MAGIC.len() + 8 * key.len();
    (&mut file).take(head as u64).read_to_end(&mut bytes).ok()?;
    let mut r = Reader(bytes.strip_prefix(MAGIC)?);
    for k in key {
        if r.i64()? != k {
            return None;
        }
    }
    file.read_to_end(&mut bytes).ok()?;
    let mut r = Reader(&bytes[head..]);
    let stamp = [r.i64()?, r.i64()?];
    let mut submodules = Vec::new();
    for _ in 0..r.u32()? {
        let p = r.text()?;
        if !crate::relpath::is_relative_path(p) {
            return None;
        }
        submodules.push(p.to_owned());
    }
    let n = r.u32()? as usize;
    let start = bytes.len() - r.0.len();
    bytes.drain(..start);
    let entries = Entries::from_bytes(bytes, n);
    let g = GitIndex::read(entries, submodules, stamp)?;
    Some(g)
}

/// Caches `index`, read from the index file with `key`, at `path`: through
/// a temporary of this process, renamed into place, not synced (a cache lost
/// is built again). A failure is ignored: git is only asked again.
pub(crate) fn save(path: &Path, key: Key, index: &GitIndex) {
    let (entries, n) = index.entries().as_bytes();
    let mut out = Vec::with_capacity(MAGIC.len() + 128 + entries.len());
    out.extend_from_slice(MAGIC);
    for k in key.iter().chain(&index.stamp) {
        out.extend_from_slice(&k.to_le_bytes());
    }
    out.extend_from_slice(&(index.submodules.len() as u32).to_le_bytes());
    for s in &index.submodules {
        put(&mut out, s.as_bytes());
    }
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.extend_from_slice(entries);
    let Some(dir) = path.parent() else { return };
    let temp: PathBuf = dir.join(format!(
        "git-index.tmp-{}-{:08x}",
        std::process::id(),
        crate::session_id::random_u64() as u32
    ));
    let written = (|| -> std::io::Result<()> {
        crate::sys::create_store_dir_all(dir)?;
        let mut f = crate::trust::open(
            crate::sys::store_file_options()
                .write(true)
                .create_new(true),
            &temp,
        )?;
        f.write_all(&out)?;
        drop(f);
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::git_index::IndexEntry;

    fn index_of(entries: &[(&str, &str)]) -> GitIndex {
        let mut es = Entries::default();
        for (path, oid) in entries {
            es.push(
                path,
                &IndexEntry {
                    oid,
                    mode: 0o100644,
                    size: 7,
                    times: [1, 2, 3, 4],
                    ino: 9,
                },
            );
        }
        GitIndex::new(es, vec!["sub".into()], [5, 6])
    }

    fn index() -> GitIndex {
        index_of(&[("a/b.rs", "0123abcd"), ("c", "ffff")])
    }

    #[test]
    fn a_cache_reads_back_for_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baselines/k/git-index");
        let key = [1, 2, 3, 4, 5, 6];
        save(&path, key, &index());
        let got = load(&path, key).expect("read back");
        assert_eq!(got.stamp, [5, 6]);
        assert_eq!(got.submodules, ["sub"]);
        let mut paths: Vec<&str> = got.paths().collect();
        paths.sort();
        assert_eq!(paths, ["a/b.rs", "c"]);
        let e = got.get("a/b.rs").unwrap();
        assert_eq!(
            (e.oid, e.mode, e.size, e.times, e.ino),
            ("0123abcd", 0o100644, 7, [1, 2, 3, 4], 9)
        );
        assert!(
            load(&path, [1, 2, 3, 4, 5, 7]).is_none(),
            "another index file"
        );
        // No temporary left behind.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn a_damaged_or_hostile_cache_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("git-index");
        let key = [1, 2, 3, 4, 5, 6];
        save(&path, key, &index_of(&[("a", "0a"), ("../outside", "0a")]));
        let got = load(&path, key).unwrap();
        assert_eq!(
            got.paths().collect::<Vec<_>>(),
            ["a"],
            "a path out of the workspace"
        );
        save(&path, key, &index_of(&[("a", "not hex")]));
        assert_eq!(
            load(&path, key).unwrap().get("a"),
            None,
            "an object that is not hex"
        );
        save(&path, key, &index());
        let whole = std::fs::read(&path).unwrap();
        for cut in [1, whole.len() / 2, whole.len() - 1] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            assert!(load(&path, key).is_none(), "cut at {cut}");
        }
        let mut longer = whole.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert!(load(&path, key).is_none(), "trailing bytes");
    }
}
