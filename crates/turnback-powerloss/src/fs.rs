//! The FUSE side: every request served from the in-memory state
//! (`model.rs`), and once the power is cut, every request fails with EIO.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::model::{DirOp, Kind, Meta, Node, State};

/// Nothing cached by the kernel: a power cycle changes the state under the
/// same mount.
const TTL: Duration = Duration::ZERO;

/// A directory's entries as opendir found them: inode, type, name.
type Listing = Vec<(u64, FileType, OsString)>;

/// The filesystem the session serves; the test holds the same state.
pub(crate) struct PowerLossFs {
    pub(crate) state: Arc<Mutex<State>>,
    /// Directory listings taken at opendir, by handle.
    listings: Mutex<HashMap<u64, Listing>>,
    next_fh: Mutex<u64>,
}

impl PowerLossFs {
    pub(crate) fn new(state: Arc<Mutex<State>>) -> Self {
        PowerLossFs {
            state,
            listings: Mutex::new(HashMap::new()),
            next_fh: Mutex::new(1),
        }
    }

    /// The state, or EIO once the power is cut.
    fn live(&self) -> Result<MutexGuard<'_, State>, Errno> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.dead {
            return Err(Errno::EIO);
        }
        Ok(state)
    }

    fn fh(&self) -> FileHandle {
        let mut next = self.next_fh.lock().unwrap_or_else(|e| e.into_inner());
        *next += 1;
        FileHandle(*next)
    }
}

fn file_type(kind: Kind) -> FileType {
    match kind {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
    }
}

fn attr(ino: u64, node: &Node) -> FileAttr {
    let size = match node.kind {
        Kind::Dir => 4096,
        _ => node.data.len() as u64,
    };
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: node.meta.atime,
        mtime: node.meta.mtime,
        ctime: node.meta.ctime,
        crtime: node.meta.ctime,
        kind: file_type(node.kind),
        perm: node.meta.perm,
        nlink: node.nlink,
        uid: node.meta.uid,
        gid: node.meta.gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn new_meta(req: &Request, mode: u32, umask: u32) -> Meta {
    let now = SystemTime::now();
    Meta {
        perm: (mode & !umask & 0o7777) as u16,
        uid: req.uid(),
        gid: req.gid(),
        atime: now,
        mtime: now,
        ctime: now,
    }
}

fn lookup_in(state: &State, parent: u64, name: &OsStr) -> Result<u64, Errno> {
    let dir = state.nodes.get(&parent).ok_or(Errno::ENOENT)?;
    if dir.kind != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    dir.entries.get(name).copied().ok_or(Errno::ENOENT)
}

fn touch_dir(state: &mut State, dir: u64) {
    if let Some(node) = state.nodes.get_mut(&dir) {
        let now = SystemTime::now();
        node.meta.mtime = now;
        node.meta.ctime = now;
    }
}

/// Links a new inode under `parent`, returns its attributes.
fn create_node(
    state: &mut State,
    parent: u64,
    name: &OsStr,
    node: Node,
) -> Result<FileAttr, Errno> {
    match lookup_in(state, parent, name) {
        Ok(_) => return Err(Errno::EEXIST),
        Err(e) if e != Errno::ENOENT => return Err(e),
        Err(_) => {}
    }
    let is_dir = node.kind == Kind::Dir;
    let ino = state.add(node);
    state.dir_op(parent, DirOp::Set(name.to_owned(), ino));
    if is_dir {
        state.nodes.get_mut(&parent).expect("parent").nlink += 1;
    }
    touch_dir(state, parent);
    Ok(attr(ino, &state.nodes[&ino]))
}

/// Drops the name `name` of `parent`, for unlink and rmdir.
fn remove(state: &mut State, parent: u64, name: &OsStr, want_dir: bool) -> Result<(), Errno> {
    let ino = lookup_in(state, parent, name)?;
    let node = &state.nodes[&ino];
    match (node.kind == Kind::Dir, want_dir) {
        (true, false) => return Err(Errno::EISDIR),
        (false, true) => return Err(Errno::ENOTDIR),
        (true, true) if !node.entries.is_empty() => return Err(Errno::ENOTEMPTY),
        _ => {}
    }
    state.dir_op(parent, DirOp::Remove(name.to_owned()));
    if want_dir {
        state.nodes.get_mut(&parent).expect("parent").nlink -= 1;
        state.nodes.get_mut(&ino).expect("node").nlink = 0;
    } else {
        let node = state.nodes.get_mut(&ino).expect("node");
        node.nlink = node.nlink.saturating_sub(1);
        node.meta.ctime = SystemTime::now();
    }
    touch_dir(state, parent);
    Ok(())
}

fn rename(
    state: &mut State,
    parent: u64,
    name: &OsStr,
    newparent: u64,
    newname: &OsStr,
    flags: RenameFlags,
) -> Result<(), Errno> {
    if flags.contains(RenameFlags::RENAME_EXCHANGE) || flags.contains(RenameFlags::RENAME_WHITEOUT)
    {
        return Err(Errno::EINVAL);
    }
    let ino = lookup_in(state, parent, name)?;
    let is_dir = state.nodes[&ino].kind == Kind::Dir;
    match lookup_in(state, newparent, newname) {
        Ok(target) if target == ino => return Ok(()),
        Ok(_) if flags.contains(RenameFlags::RENAME_NOREPLACE) => return Err(Errno::EEXIST),
        Ok(target) => {
            let node = &state.nodes[&target];
            match (node.kind == Kind::Dir, is_dir) {
                (true, false) => return Err(Errno::EISDIR),
                (false, true) => return Err(Errno::ENOTDIR),
                (true, true) if !node.entries.is_empty() => return Err(Errno::ENOTEMPTY),
                _ => {}
            }
            let target_node = state.nodes.get_mut(&target).expect("node");
            if is_dir {
                target_node.nlink = 0;
                state.nodes.get_mut(&newparent).expect("parent").nlink -= 1;
            } else {
                target_node.nlink = target_node.nlink.saturating_sub(1);
            }
        }
        Err(e) if e != Errno::ENOENT => return Err(e),
        Err(_) => {}
    }
    if parent == newparent {
        state.dir_op(
            parent,
            DirOp::Move(name.to_owned(), newname.to_owned(), ino),
        );
    } else {
        state.dir_op(parent, DirOp::Remove(name.to_owned()));
        state.dir_op(newparent, DirOp::Set(newname.to_owned(), ino));
        if is_dir {
            state.nodes.get_mut(&parent).expect("parent").nlink -= 1;
            state.nodes.get_mut(&newparent).expect("parent").nlink += 1;
        }
    }
    touch_dir(state, parent);
    touch_dir(state, newparent);
    state.nodes.get_mut(&ino).expect("node").meta.ctime = SystemTime::now();
    Ok(())
}

fn time(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    }
}

impl Filesystem for PowerLossFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = self.live().and_then(|state| {
            let ino = lookup_in(&state, parent.0, name)?;
            Ok(attr(ino, &state.nodes[&ino]))
        });
        match result {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let result = self.live().and_then(|state| {
            let node = state.nodes.get(&ino.0).ok_or(Errno::ENOENT)?;
            Ok(attr(ino.0, node))
        });
        match result {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = self.live().and_then(|mut state| {
            let node = state.nodes.get_mut(&ino.0).ok_or(Errno::ENOENT)?;
            let now = SystemTime::now();
            if let Some(mode) = mode {
                node.meta.perm = (mode & 0o7777) as u16;
            }
            if let Some(uid) = uid {
                node.meta.uid = uid;
            }
            if let Some(gid) = gid {
                node.meta.gid = gid;
            }
            if let Some(size) = size {
                if node.kind != Kind::File {
                    return Err(Errno::EISDIR);
                }
                node.data.resize(size as usize, 0);
                node.meta.mtime = now;
            }
            if let Some(t) = atime {
                node.meta.atime = time(t);
            }
            if let Some(t) = mtime {
                node.meta.mtime = time(t);
            }
            node.meta.ctime = now;
            Ok(attr(ino.0, node))
        });
        match result {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let result = self.live().and_then(|state| {
            let node = state.nodes.get(&ino.0).ok_or(Errno::ENOENT)?;
            if node.kind != Kind::Symlink {
                return Err(Errno::EINVAL);
            }
            Ok(node.data.clone())
        });
        match result {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(Errno::EPERM);
        }
        let result = self.live().and_then(|mut state| {
            let node = Node::new(Kind::File, new_meta(req, mode, umask));
            create_node(&mut state, parent.0, name, node)
        });
        match result {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let result = self.live().and_then(|mut state| {
            let node = Node::new(Kind::Dir, new_meta(req, mode, umask));
            create_node(&mut state, parent.0, name, node)
        });
        match result {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self
            .live()
            .and_then(|mut state| remove(&mut state, parent.0, name, false))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self
            .live()
            .and_then(|mut state| remove(&mut state, parent.0, name, true))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let result = self.live().and_then(|mut state| {
            let mut node = Node::new(Kind::Symlink, new_meta(req, 0o777, 0));
            // A symlink's target is written with its inode.
            node.data = std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec();
            node.durable_data = node.data.clone();
            create_node(&mut state, parent.0, link_name, node)
        });
        match result {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        match self
            .live()
            .and_then(|mut state| rename(&mut state, parent.0, name, newparent.0, newname, flags))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let result = self.live().and_then(|mut state| {
            if state.nodes.get(&ino.0).ok_or(Errno::ENOENT)?.kind == Kind::Dir {
                return Err(Errno::EPERM);
            }
            if lookup_in(&state, newparent.0, newname).is_ok() {
                return Err(Errno::EEXIST);
            }
            state.dir_op(newparent.0, DirOp::Set(newname.to_owned(), ino.0));
            touch_dir(&mut state, newparent.0);
            let node = state.nodes.get_mut(&ino.0).expect("node");
            node.nlink += 1;
            node.meta.ctime = SystemTime::now();
            Ok(attr(ino.0, node))
        });
        match result {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self
            .live()
            .and_then(|state| state.nodes.get(&ino.0).map(|_| ()).ok_or(Errno::ENOENT))
        {
            Ok(()) => reply.opened(self.fh(), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let result = self.live().and_then(|state| {
            let node = state.nodes.get(&ino.0).ok_or(Errno::ENOENT)?;
            let start = (offset as usize).min(node.data.len());
            let end = (start + size as usize).min(node.data.len());
            Ok(node.data[start..end].to_vec())
        });
        match result {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let result = self.live().and_then(|mut state| {
            let node = state.nodes.get_mut(&ino.0).ok_or(Errno::ENOENT)?;
            let start = offset as usize;
            let end = start + data.len();
            if node.data.len() < end {
                node.data.resize(end, 0);
            }
            node.data[start..end].copy_from_slice(data);
            let now = SystemTime::now();
            node.meta.mtime = now;
            node.meta.ctime = now;
            Ok(data.len() as u32)
        });
        match result {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        match self.live() {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.live() {
            Ok(mut state) => {
                state.fsync(ino.0);
                reply.ok()
            }
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let result = self.live().and_then(|state| {
            let node = state.nodes.get(&ino.0).ok_or(Errno::ENOENT)?;
            if node.kind != Kind::Dir {
                return Err(Errno::ENOTDIR);
            }
            let mut list = vec![
                (ino.0, FileType::Directory, OsString::from(".")),
                (ino.0, FileType::Directory, OsString::from("..")),
            ];
            for (name, &child) in &node.entries {
                list.push((child, file_type(state.nodes[&child].kind), name.clone()));
            }
            Ok(list)
        });
        match result {
            Ok(list) => {
                let fh = self.fh();
                self.listings
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(fh.0, list);
                reply.opened(fh, FopenFlags::empty())
            }
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if let Err(e) = self.live() {
            return reply.error(e);
        }
        let listings = self.listings.lock().unwrap_or_else(|e| e.into_inner());
        let Some(list) = listings.get(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        for (i, (ino, kind, name)) in list.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok()
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.listings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        reply.ok()
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.live() {
            Ok(mut state) => {
                state.fsync(ino.0);
                reply.ok()
            }
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        reply.statfs(1 << 24, 1 << 24, 1 << 24, 1 << 20, 1 << 20, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        match self.live() {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let result = self
            .live()
            .and_then(|mut state| match lookup_in(&state, parent.0, name) {
                Ok(_) if flags & libc::O_EXCL != 0 => Err(Errno::EEXIST),
                Ok(ino) => {
                    let node = state.nodes.get_mut(&ino).expect("node");
                    if node.kind == Kind::Dir {
                        return Err(Errno::EISDIR);
                    }
                    if flags & libc::O_TRUNC != 0 {
                        node.data.clear();
                    }
                    Ok(attr(ino, node))
                }
                Err(_) => {
                    let node = Node::new(Kind::File, new_meta(req, mode, umask));
                    create_node(&mut state, parent.0, name, node)
                }
            });
        match result {
            Ok(a) => reply.created(&TTL, &a, Generation(0), self.fh(), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }
}
