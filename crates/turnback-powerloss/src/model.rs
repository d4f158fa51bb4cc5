//! The filesystem as two states: what reads see (the page cache) and what a
//! disk holds (durable). A file's data and attributes become durable at an
//! fsync of that file; a directory's entries at an fsync of that directory,
//! its pending entry operations applied in order (the strict POSIX reading:
//! an fsync of a file does not make its name durable). A cut keeps only the
//! durable state, or (the random mode) the durable state with a random subset
//! of the unsynced changes applied in a random order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::SystemTime;

/// The kind of an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
}

/// Attributes that follow the data: durable at an fsync of the inode.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meta {
    pub(crate) perm: u16,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) atime: SystemTime,
    pub(crate) mtime: SystemTime,
    pub(crate) ctime: SystemTime,
}

/// One change to a directory's entries not yet covered by an fsync of it.
#[derive(Clone, Debug)]
pub(crate) enum DirOp {
    /// `name` now names inode `ino` (a create, link, mkdir, or the target
    /// side of a rename from another directory).
    Set(OsString, u64),
    /// `name` is gone (unlink, rmdir, the source side of a rename to
    /// another directory).
    Remove(OsString),
    /// A rename inside this directory: atomic, as on every journaling
    /// filesystem.
    Move(OsString, OsString, u64),
}

/// One inode.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) meta: Meta,
    pub(crate) durable_meta: Meta,
    /// A file's bytes, a symlink's target.
    pub(crate) data: Vec<u8>,
    pub(crate) durable_data: Vec<u8>,
    pub(crate) entries: BTreeMap<OsString, u64>,
    pub(crate) durable_entries: BTreeMap<OsString, u64>,
    pub(crate) pending: Vec<DirOp>,
    /// Names in the current state (directories: 2 + subdirectories).
    pub(crate) nlink: u32,
}

impl Node {
    pub(crate) fn new(kind: Kind, meta: Meta) -> Node {
        Node {
            kind,
            meta,
            durable_meta: meta,
            data: Vec::new(),
            durable_data: Vec::new(),
            entries: BTreeMap::new(),
            durable_entries: BTreeMap::new(),
            pending: Vec::new(),
            nlink: if kind == Kind::Dir { 2 } else { 1 },
        }
    }
}

fn apply(entries: &mut BTreeMap<OsString, u64>, op: &DirOp) {
    match op {
        DirOp::Set(name, ino) => {
            entries.insert(name.clone(), *ino);
        }
        DirOp::Remove(name) => {
            entries.remove(name);
        }
        DirOp::Move(from, to, ino) => {
            if entries.get(from) == Some(ino) {
                entries.remove(from);
            }
            entries.insert(to.clone(), *ino);
        }
    }
}

/// How a cut treats what was never synced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutMode {
    /// Everything unsynced is lost.
    Strict,
    /// A random subset of the unsynced changes reaches the disk, in a
    /// random order (a file's new bytes may reach it in part), as a disk's
    /// write cache may: the same seed gives the same choice.
    Random(u64),
}

/// The whole filesystem.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) nodes: HashMap<u64, Node>,
    next_ino: u64,
    /// fsync and fdatasync calls (of files and directories) served so far.
    pub(crate) syncs: u64,
    /// Cut the power when `syncs` reaches this.
    pub(crate) cut_at: Option<u64>,
    /// The power is cut: every request fails with EIO, nothing changes.
    pub(crate) dead: bool,
    pub(crate) mode: CutMode,
}

pub(crate) const ROOT: u64 = 1;

/// A file in the backing directory's root, hidden from the mount, that keeps
/// each inode's number across an unmount: a disk keeps them across a reboot
/// (and the store tells a replaced directory by its inode).
pub(crate) const INODES: &str = ".powerloss-inodes";

impl State {
    pub(crate) fn add(&mut self, node: Node) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(ino, node);
        ino
    }

    pub(crate) fn dir_op(&mut self, dir: u64, op: DirOp) {
        let node = self.nodes.get_mut(&dir).expect("directory");
        apply(&mut node.entries, &op);
        node.pending.push(op);
    }

    /// An fsync of inode `ino`; cuts the power if this is the sync the test
    /// asked for.
    pub(crate) fn fsync(&mut self, ino: u64) {
        if let Some(node) = self.nodes.get_mut(&ino) {
            match node.kind {
                Kind::Dir => {
                    for op in std::mem::take(&mut node.pending) {
                        apply(&mut node.durable_entries, &op);
                    }
                }
                _ => node.durable_data = node.data.clone(),
            }
            node.durable_meta = node.meta;
        }
        self.syncs += 1;
        if self.cut_at == Some(self.syncs) {
            self.dead = true;
        }
    }

    /// Everything made durable (a clean shutdown).
    pub(crate) fn sync_all(&mut self) {
        for node in self.nodes.values_mut() {
            node.durable_data = node.data.clone();
            node.durable_meta = node.meta;
            node.durable_entries = node.entries.clone();
            node.pending.clear();
        }
    }

    /// The random mode's share of the unsynced changes, made durable.
    fn apply_random(&mut self, seed: u64) {
        let mut rng = Rng(seed | 1);
        let mut inos: Vec<u64> = self.nodes.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let node = self.nodes.get_mut(&ino).expect("node");
            let mut ops = std::mem::take(&mut node.pending);
            // A random order, then a random subset of it.
            for i in (1..ops.len()).rev() {
                ops.swap(i, rng.below(i as u64 + 1) as usize);
            }
            for op in &ops {
                if rng.below(2) == 0 {
                    apply(&mut node.durable_entries, op);
                }
            }
            if node.kind == Kind::File && node.data != node.durable_data {
                match rng.below(3) {
                    0 => {}
                    1 => node.durable_data = node.data.clone(),
                    _ => {
                        // Torn: the new bytes up to a random point, the old
                        // ones after it.
                        let cut = rng.below(node.data.len() as u64 + 1) as usize;
                        let mut torn = node.data[..cut].to_vec();
                        if node.durable_data.len() > cut {
                            torn.extend_from_slice(&node.durable_data[cut..]);
                        }
                        node.durable_data = torn;
                    }
                }
            }
        }
    }

    /// A state with only the root directory.
    pub(crate) fn empty() -> State {
        let now = SystemTime::now();
        let meta = Meta {
            perm: 0o755,
            uid: 0,
            gid: 0,
            atime: now,
            mtime: now,
            ctime: now,
        };
        let mut state = State {
            nodes: HashMap::new(),
            next_ino: ROOT,
            syncs: 0,
            cut_at: None,
            dead: false,
            mode: CutMode::Strict,
        };
        state.add(Node::new(Kind::Dir, meta));
        state
    }

    /// Reads a directory tree into a state that is all durable; inodes the
    /// tree does not number get numbers from `floor` up (never one the
    /// kernel may still hold for another file).
    pub(crate) fn load(dir: &Path, floor: u64) -> io::Result<State> {
        let mut state = State::empty();
        let md = std::fs::symlink_metadata(dir)?;
        let root = state.nodes.get_mut(&ROOT).expect("root");
        root.meta = meta_of(&md);
        root.durable_meta = root.meta;
        let mut numbers = HashMap::new();
        match std::fs::read(dir.join(INODES)) {
            Ok(bytes) => {
                for line in bytes.split(|&b| b == 0).filter(|l| !l.is_empty()) {
                    let (ino, path) =
                        line.split_at(line.iter().position(|&b| b == b'/').unwrap_or(0));
                    let ino: u64 = std::str::from_utf8(ino)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| io::Error::other("a bad line in the inode file"))?;
                    numbers.insert(OsStr::from_bytes(&path[1..]).to_owned(), ino);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        state.next_ino = (numbers.values().copied().max().unwrap_or(ROOT).max(ROOT) + 1).max(floor);
        let mut seen = HashMap::new();
        state.load_dir(dir, Path::new(""), ROOT, &mut seen, &numbers)?;
        state.sync_all();
        Ok(state)
    }

    fn load_dir(
        &mut self,
        path: &Path,
        rel: &Path,
        ino: u64,
        seen: &mut HashMap<(u64, u64), u64>,
        numbers: &HashMap<OsString, u64>,
    ) -> io::Result<()> {
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if ino == ROOT && entry.file_name() == INODES {
                continue;
            }
            let child_path = entry.path();
            let child_rel = rel.join(entry.file_name());
            let md = std::fs::symlink_metadata(&child_path)?;
            let key = (md.dev(), md.ino());
            let child = if let (false, Some(&known)) = (md.is_dir(), seen.get(&key)) {
                self.nodes.get_mut(&known).expect("node").nlink += 1;
                known
            } else {
                let ft = md.file_type();
                let kind = if ft.is_dir() {
                    Kind::Dir
                } else if ft.is_symlink() {
                    Kind::Symlink
                } else if ft.is_file() {
                    Kind::File
                } else {
                    continue;
                };
                let mut node = Node::new(kind, meta_of(&md));
                match kind {
                    Kind::File => node.data = std::fs::read(&child_path)?,
                    Kind::Symlink => {
                        node.data = std::fs::read_link(&child_path)?
                            .as_os_str()
                            .as_bytes()
                            .to_vec()
                    }
                    Kind::Dir => {}
                }
                let child = match numbers.get(child_rel.as_os_str()) {
                    Some(&n) if !self.nodes.contains_key(&n) => {
                        self.nodes.insert(n, node);
                        n
                    }
                    _ => self.add(node),
                };
                seen.insert(key, child);
                if kind == Kind::Dir {
                    self.nodes.get_mut(&ino).expect("dir").nlink += 1;
                    self.load_dir(&child_path, &child_rel, child, seen, numbers)?;
                }
                child
            };
            self.nodes
                .get_mut(&ino)
                .expect("dir")
                .entries
                .insert(entry.file_name(), child);
        }
        Ok(())
    }

    /// A reboot: the state becomes what `dir` holds, the power on again.
    /// Inode numbers keep growing across it.
    pub(crate) fn reload(&mut self, dir: &Path) -> io::Result<()> {
        let mode = self.mode;
        *self = State::load(dir, self.next_ino)?;
        self.mode = mode;
        Ok(())
    }

    /// Writes what the disk holds into `dir` (emptied first): after a cut,
    /// the durable state (in the random mode, with its share of the rest);
    /// without one, everything (a clean unmount syncs).
    pub(crate) fn store(&mut self, dir: &Path) -> io::Result<()> {
        if !self.dead {
            self.sync_all();
        } else if let CutMode::Random(seed) = self.mode {
            self.apply_random(seed);
        }
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if std::fs::symlink_metadata(&path)?.is_dir() {
                std::fs::remove_dir_all(&path)?;
            } else {
                std::fs::remove_file(&path)?;
            }
        }
        let mut written = HashMap::new();
        let mut dirs = HashSet::from([ROOT]);
        let mut numbers = Vec::new();
        self.store_dir(
            dir,
            Path::new(""),
            ROOT,
            &mut written,
            &mut dirs,
            &mut numbers,
        )?;
        std::fs::write(dir.join(INODES), numbers)?;
        set_meta(dir, &self.nodes[&ROOT].durable_meta)
    }

    fn store_dir(
        &self,
        path: &Path,
        rel: &Path,
        ino: u64,
        written: &mut HashMap<u64, std::path::PathBuf>,
        dirs: &mut HashSet<u64>,
        numbers: &mut Vec<u8>,
    ) -> io::Result<()> {
        for (name, &child) in &self.nodes[&ino].durable_entries {
            if ino == ROOT && name == INODES {
                continue;
            }
            let node = &self.nodes[&child];
            let child_path = path.join(name);
            let child_rel = rel.join(name);
            numbers.extend_from_slice(format!("{child}/").as_bytes());
            numbers.extend_from_slice(child_rel.as_os_str().as_bytes());
            numbers.push(0);
            match node.kind {
                Kind::Dir => {
                    // A directory reachable twice (a rename between two
                    // directories, both synced halfway) is written once.
                    if !dirs.insert(child) {
                        continue;
                    }
                    std::fs::create_dir(&child_path)?;
                    self.store_dir(&child_path, &child_rel, child, written, dirs, numbers)?;
                }
                Kind::File => {
                    if let Some(first) = written.get(&child) {
                        std::fs::hard_link(first, &child_path)?;
                        continue;
                    }
                    std::fs::write(&child_path, &node.durable_data)?;
                    written.insert(child, child_path.clone());
                }
                Kind::Symlink => {
                    std::os::unix::fs::symlink(OsStr::from_bytes(&node.durable_data), &child_path)?;
                    continue;
                }
            }
            set_meta(&child_path, &node.durable_meta)?;
        }
        Ok(())
    }
}

fn meta_of(md: &std::fs::Metadata) -> Meta {
    Meta {
        perm: (md.mode() & 0o7777) as u16,
        uid: md.uid(),
        gid: md.gid(),
        atime: md.accessed().unwrap_or(SystemTime::UNIX_EPOCH),
        mtime: md.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        ctime: md.modified().unwrap_or(SystemTime::UNIX_EPOCH),
    }
}

fn set_meta(path: &Path, meta: &Meta) -> io::Result<()> {
    std::os::unix::fs::chown(path, Some(meta.uid), Some(meta.gid))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(u32::from(meta.perm)))?;
    let file = std::fs::File::open(path)?;
    file.set_times(
        std::fs::FileTimes::new()
            .set_accessed(meta.atime)
            .set_modified(meta.mtime),
    )
}

/// A small deterministic generator (xorshift64*): the random mode needs no
/// more, and the same seed replays the same cut.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(state: &mut State, dir: u64, name: &str, bytes: &[u8]) -> u64 {
        let meta = state.nodes[&ROOT].meta;
        let mut node = Node::new(Kind::File, meta);
        node.data = bytes.to_vec();
        let ino = state.add(node);
        state.dir_op(dir, DirOp::Set(name.into(), ino));
        ino
    }

    #[test]
    fn a_cut_keeps_only_what_was_synced() {
        let tmp = std::env::temp_dir().join(format!("powerloss-model-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let mut state = State::empty();
        let a = file(&mut state, ROOT, "a", b"old");
        state.fsync(a);
        state.fsync(ROOT);
        // New bytes synced, but renamed over by an unsynced temporary.
        state.nodes.get_mut(&a).unwrap().data = b"new".to_vec();
        let t = file(&mut state, ROOT, "a.tmp", b"tmp");
        state.fsync(t);
        state.dir_op(ROOT, DirOp::Move("a.tmp".into(), "a".into(), t));
        state.dead = true;
        state.store(&tmp).unwrap();
        let names: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != INODES)
            .collect();
        assert_eq!(names, vec![OsString::from("a")]);
        assert_eq!(std::fs::read(tmp.join("a")).unwrap(), b"old");
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
