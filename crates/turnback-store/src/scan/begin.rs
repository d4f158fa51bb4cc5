//! Beginning a scan bracket: every file in scope stat'ed, the contents of
//! each one git does not already hold (dirty, untracked, outside git, racy)
//! in the workspace's baseline blobs, and the record written durably, all
//! before the command runs.

use std::collections::HashSet;

use time::OffsetDateTime;

use crate::error::Result;
use crate::relpath::RelPath;
use crate::session::Session;
use crate::workspace::Workspace;

use super::baseline::Baseline;
use super::record::{self, Body, Header, Seen, Source};
use super::walk;
use super::watch::Live;

/// The size above which a file a scan sees is not backed up: a change to it
/// is reported (and an undo cannot take it back). 64 MiB.
pub const DEFAULT_SIZE_LIMIT: u64 = 64 << 20;

/// How long a beginning may spend copying files into the baseline before it
/// copies no more: 10 s, well inside an agent's hook timeout (30 s and more),
/// which would otherwise kill the hook with nothing said.
pub const DEFAULT_COPY_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// How a scan is taken.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Files larger than this (bytes) are not backed up.
    pub size_limit: u64,
    /// The process that runs the command and ends the bracket (an agent's
    /// pid), if not this one: while it lives, a prune keeps the session
    /// ([`crate::SpareReason::Writing`]).
    pub owner_pid: Option<u32>,
    /// A beginning copies files into the baseline for at most this long
    /// (from its start); a file it did not copy is recorded as not backed
    /// up, and a change to it reported so.
    pub copy_budget: std::time::Duration,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            size_limit: DEFAULT_SIZE_LIMIT,
            owner_pid: None,
            copy_budget: DEFAULT_COPY_BUDGET,
        }
    }
}

/// A scan bracket begun in this process and watched while its command runs
/// ([`Session::begin_watched_scan`]): its commit looks again only where the
/// watch saw something happen, instead of walking the whole workspace. Where
/// the platform has no watcher, or a limit stops the watch, it is a bracket
/// like any other. Its id ends it from any process too (unwatched there).
#[derive(Debug)]
pub struct WatchedScan {
    pub(crate) id: String,
    pub(crate) live: Option<Live>,
}

impl WatchedScan {
    /// The scan's id, as [`Session::begin_scan`] returns it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// True while a watch covers the bracket (false where the platform has
    /// none or a limit stopped it: the commit walks the workspace).
    pub fn is_watched(&self) -> bool {
        self.live.is_some()
    }
}

/// A scan bracket open in a session ([`Session::open_scans`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenScan {
    /// Its id, for [`Session::commit_scan`] and [`Session::rollback_scan`].
    pub id: String,
    /// The message its entries will be recorded under.
    pub message_id: String,
    /// The command line it brackets, where known.
    pub command: Option<String>,
    /// The workspace it watches.
    pub workspace: std::path::PathBuf,
    /// When it began.
    pub began: OffsetDateTime,
}

impl Session {
    /// Begins a scan bracket on `workspace` before a command runs: records
    /// every file in scope and has each one's contents in hand (in git's
    /// index for a clean tracked file, else backed up now), durably. Returns
    /// the scan's id; end it with [`Session::commit_scan`] or
    /// [`Session::rollback_scan`], from this process or any other.
    pub fn begin_scan(
        &self,
        workspace: &Workspace,
        message_id: &str,
        command: Option<&str>,
    ) -> Result<String> {
        self.begin_scan_with(workspace, message_id, command, &ScanOptions::default())
    }

    /// [`Session::begin_scan`] with options.
    pub fn begin_scan_with(
        &self,
        workspace: &Workspace,
        message_id: &str,
        command: Option<&str>,
        opts: &ScanOptions,
    ) -> Result<String> {
        let (id, _) = self.begin(workspace, message_id, command, opts, false)?;
        Ok(id)
    }

    /// [`Session::begin_scan_with`], watched while the command runs (see
    /// [`WatchedScan`]): end it with [`Session::commit_watched_scan`] or
    /// [`Session::rollback_watched_scan`] in this process.
    pub fn begin_watched_scan(
        &self,
        workspace: &Workspace,
        message_id: &str,
        command: Option<&str>,
        opts: &ScanOptions,
    ) -> Result<WatchedScan> {
        let (id, live) = self.begin(workspace, message_id, command, opts, true)?;
        Ok(WatchedScan { id, live })
    }

    fn begin(
        &self,
        workspace: &Workspace,
        message_id: &str,
        command: Option<&str>,
        opts: &ScanOptions,
        watched: bool,
    ) -> Result<(String, Option<Live>)> {
        let started = std::time::Instant::now();
        self.view(|_| ())?;
        self.ensure_dir()?;
        let root = workspace.root().to_owned();
        let id = record::new_id();
        let scans = self.session_dir().scans_path();
        crate::sys::create_store_dir_all(&scans)
            .map_err(crate::Error::io("create directory", &scans))?;
        let clock = walk::fs_now(&scans.join(".clock"))?;
        let mut skip: HashSet<std::path::PathBuf> = HashSet::new();
        if let Ok(home) = std::fs::canonicalize(self.store().home()) {
            skip.insert(home);
        }
        // A watch that cannot be made (a limit) leaves a bracket unwatched.
        let mut watch = if watched {
            crate::sys::DirWatch::new().ok().flatten()
        } else {
            None
        };
        let identity = workspace.identity();
        let git_cache = super::baseline::git_cache_of(self.store(), &identity)?;
        let read_git = || super::git_cache::refresh(&root, &git_cache);
        // With git's listing cached for its index as it is (the common
        // case), the listing is read first, in milliseconds, and each clean
        // tracked file is written into the record by the walker's thread
        // that finds it. Else git reads its index while the walk runs, unless
        // the repository has a `.gitmodules` (a submodule's files would be
        // walked for nothing); a gitlink without one is walked, and dropped
        // below.
        let cached = super::git_cache::load_current(&root, &git_cache);
        let (git, found) = if cached.is_some() || super::git::may_have_submodules(&root) {
            let git = match cached {
                Some(g) => Some(g),
                None => read_git()?,
            };
            if let Some(g) = &git {
                skip.extend(g.submodules.iter().map(|s| root.join(s)));
            }
            let found = match &git {
                Some(g) => {
                    let take = |rel: &str, st: &walk::Stat, out: &mut Vec<u8>| {
                        let clean = |e: &super::git_index::IndexEntry| e.vouches_for(st, g.stamp);
                        match g.get(rel).filter(clean) {
                            Some(e) if !st.racy(clock) && !st.is_link() => {
                                record::push_git(out, rel, st, e.oid);
                                true
                            }
                            _ => false,
                        }
                    };
                    walk::list_watched_taking(&root, &skip, &mut watch, &take)?
                }
                None => walk::list_watched(&root, &skip, &mut watch)?,
            };
            (git, found)
        } else {
            let (git, found) = std::thread::scope(|scope| {
                let git = scope.spawn(read_git);
                let found = walk::list_watched(&root, &skip, &mut watch);
                let git = git.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                (git, found)
            });
            (git?, found?)
        };
        let mut found = found;
        let mut skipped: Vec<String> = Vec::new();
        if let Some(g) = &git {
            skipped.extend(g.submodules.iter().cloned());
            walk::drop_under(&mut found, &skipped);
        }
        let mut sources = Sources {
            session: self,
            workspace,
            identity: &identity,
            clock,
            limit: opts.size_limit,
            stamp: git.as_ref().map_or([i64::MIN, 0], |g| g.stamp),
            baseline: None,
            cap: self.store().settings().max_baseline_bytes.value,
            deadline: started.checked_add(opts.copy_budget),
            budget: opts.copy_budget,
            used: HashSet::new(),
        };
        // Each file the walk did not take written into the record's body;
        // then what git tracks and the walk did not list (an ignore file
        // names it), if anything.
        let (taken, mut tracked_seen) = std::mem::take(&mut found.taken);
        let mut body = Body::from_bytes(taken);
        for (path, stat) in &found.files {
            let entry = git.as_ref().and_then(|g| g.get(path));
            tracked_seen += usize::from(entry.is_some());
            sources.add(&mut body, path, *stat, entry)?;
        }
        if let Some(g) = &git
            && g.len() > tracked_seen
        {
            let listed: HashSet<&str> = body.files().filter_map(|f| Some(f.ok()?.path)).collect();
            let tracked: Vec<String> = g
                .paths()
                .filter(|p| !listed.contains(p))
                .map(str::to_owned)
                .collect();
            let mut also = walk::Found::default();
            walk::add_also(&root, &mut also, &tracked);
            for (path, stat) in &also.files {
                sources.add(&mut body, path, *stat, g.get(path))?;
            }
        }
        if let Some(b) = &mut sources.baseline {
            b.retain_seen(body.files().filter_map(|f| Some(f.ok()?.path)));
            b.save()?;
            // The copies nothing names now go, this beginning's kept.
            b.collect_if_needed(self.store(), &sources.used);
        }
        let header = Header {
            format: record::FORMAT,
            id: id.clone(),
            session: self.id().to_owned(),
            message_id: message_id.to_owned(),
            command: command.map(str::to_owned),
            workspace: identity,
            began: OffsetDateTime::now_utc(),
            clock,
            limit: opts.size_limit,
            dirs: found.dirs.into_iter().map(|(d, m)| (d, Some(m))).collect(),
            skipped,
            unnamed: found.unnamed,
            owner: Some(record::Owner::of(
                opts.owner_pid.unwrap_or_else(std::process::id),
            )),
        };
        record::save(self.session_dir(), &header, &body)?;
        crate::crash::point("scan-begun");
        Ok((
            id,
            watch.map(|watch| Live {
                watch,
                header,
                body,
            }),
        ))
    }

    /// The scan brackets open in this session, oldest first: begun and not
    /// yet committed or rolled back (a process that died in between leaves
    /// one open).
    pub fn open_scans(&self) -> Result<Vec<OpenScan>> {
        let mut open = Vec::new();
        for id in record::list(self.session_dir()) {
            if let Some(r) = record::load(self.session_dir(), &id, false)? {
                open.push(OpenScan {
                    id,
                    message_id: r.header.message_id,
                    command: r.header.command,
                    workspace: r.header.workspace.path,
                    began: r.header.began,
                });
            }
        }
        Ok(open)
    }
}

/// Where each file's contents at the beginning are: git's object for a clean
/// tracked file, else the workspace's baseline (opened, under its lock, at
/// the first file that needs it), or nowhere (a link, a file over the limit,
/// one the baseline had no room or the beginning no time left for).
struct Sources<'a> {
    session: &'a Session,
    workspace: &'a Workspace,
    identity: &'a crate::index::WorkspaceRoot,
    clock: [i64; 2],
    limit: u64,
    /// When git's index was written (its racy-entry rule).
    stamp: [i64; 2],
    baseline: Option<Baseline>,
    /// The disk the baseline's blobs may take (`max_baseline_bytes`).
    cap: u64,
    /// When the beginning stops copying (`None`: a budget past any clock).
    deadline: Option<std::time::Instant>,
    budget: std::time::Duration,
    /// The baseline blobs this beginning's record names.
    used: HashSet<String>,
}

impl Sources<'_> {
    /// Adds the file at `path` with stat `stat` (and git's `entry` for it)
    /// to `body`, as the record lists it; nothing when it went meanwhile.
    fn add(
        &mut self,
        body: &mut Body,
        path: &str,
        stat: walk::Stat,
        entry: Option<super::git_index::IndexEntry<'_>>,
    ) -> Result<()> {
        let racy = stat.racy(self.clock);
        if !racy
            && !stat.is_link()
            && let Some(e) = entry.filter(|e| e.vouches_for(&stat, self.stamp))
        {
            body.push_git(path, &stat, e.oid);
            return Ok(());
        }
        let source = if stat.is_link() {
            let at = self.workspace.root().join(path);
            let target = crate::sys::link_target_bytes(&at).unwrap_or_default();
            Source::Link(String::from_utf8_lossy(&target).into_owned())
        } else if stat.size > self.limit {
            Source::TooBig
        } else {
            let store = self.session.store();
            let b = match &mut self.baseline {
                Some(b) => b,
                None => self.baseline.insert(Baseline::open(
                    store,
                    self.identity,
                    store.options().file_lock_timeout,
                )?),
            };
            let late = self
                .deadline
                .is_some_and(|d| std::time::Instant::now() >= d);
            match b.lookup(path, &stat).filter(|_| !racy).map(str::to_owned) {
                Some(h) => Source::Baseline(h),
                // Not copied, rather than past the hook's timeout or the
                // cap: a change to it is reported not backed up.
                None if late => Source::NotCopied(format!(
                    "the scan's beginning ran out of time to copy it (it copies for {:?} at most)",
                    self.budget
                )),
                None if !b.room_for(stat.size, self.cap, store, &self.used) => {
                    Source::NotCopied(format!(
                        "the workspace's scan baseline is full (max_baseline_bytes, {} bytes)",
                        self.cap
                    ))
                }
                None => {
                    let Some(rel) = RelPath::new(path) else {
                        return Ok(());
                    };
                    match self.workspace.open_regular(&rel) {
                        // Gone meanwhile: the commit sees it as absent.
                        Ok(None) => return Ok(()),
                        Ok(Some(mut f)) => Source::Baseline(b.store(path, stat, racy, &mut f)?),
                        // One file no one let us read (a root-owned 0600
                        // file) must not switch protection off for the
                        // rest: a change of it is reported as not backed up.
                        Err(e) if e.is_permission_denied() => Source::NotCopied(
                            "it could not be read when the command began (permission denied)"
                                .into(),
                        ),
                        Err(e) => return Err(e),
                    }
                }
            }
        };
        if let Source::Baseline(h) = &source {
            self.used.insert(h.clone());
        }
        body.push(&Seen {
            path: path.to_owned(),
            stat,
            source,
            racy,
        });
        Ok(())
    }
}
