//! Platform code of the command line, kept apart as the store keeps its own:
//! what standard input is, before `turnback write` takes it as a file's new
//! contents; for the hooks and `doctor`, the agent's process, a private file
//! in the store home, whether `flock` holds in a directory and what
//! filesystem it is on.

/// Why standard input cannot be the new contents of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StdinProblem {
    /// It was closed when turnback started (`turnback write F <&-`). Rust's
    /// runtime opens `/dev/null` in its place before `main`, so it would read
    /// as empty and empty the file.
    Closed,
    /// It is open, but not for reading (`0>file`).
    NotReadable,
    /// A terminal: the contents would be whatever a person types.
    Terminal,
}

/// What is wrong with standard input as a file's contents, if anything.
pub(crate) fn stdin_problem() -> Option<StdinProblem> {
    imp::stdin_problem()
}

#[cfg(unix)]
mod imp {
    use std::io::IsTerminal;
    use std::os::fd::AsFd;

    use rustix::fs::{FileType, OFlags};

    use super::StdinProblem;

    pub(super) fn stdin_problem() -> Option<StdinProblem> {
        let stdin = std::io::stdin();
        let fd = stdin.as_fd();
        let (Ok(st), Ok(flags)) = (rustix::fs::fstat(fd), rustix::fs::fcntl_getfl(fd)) else {
            // Not even an open descriptor: a runtime that does not reopen it.
            return Some(StdinProblem::Closed);
        };
        let access = flags & OFlags::RWMODE;
        // What the runtime put there is `/dev/null` opened read-write; a
        // person's `< /dev/null` is read-only and stays an empty file.
        let is_null = || {
            FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice
                && rustix::fs::stat("/dev/null").is_ok_and(|null| null.st_rdev == st.st_rdev)
        };
        if access == OFlags::RDWR && is_null() {
            return Some(StdinProblem::Closed);
        }
        if access == OFlags::WRONLY {
            return Some(StdinProblem::NotReadable);
        }
        stdin.is_terminal().then_some(StdinProblem::Terminal)
    }

    pub(super) use super::{
        unix_flock_holds as flock_holds, unix_parent_pid as parent_pid,
        unix_write_private as write_private,
    };

    /// The command name and parent of process `pid` (`/proc/<pid>/stat`).
    #[cfg(target_os = "linux")]
    pub(super) fn process_name_and_parent(pid: u32) -> Option<(String, u32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let name = stat.get(open + 1..close)?.to_owned();
        let ppid = stat
            .get(close + 1..)?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some((name, ppid))
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn process_name_and_parent(_pid: u32) -> Option<(String, u32)> {
        None
    }

    #[cfg(target_os = "linux")]
    pub(super) fn network_filesystem(dir: &std::path::Path) -> Option<&'static str> {
        let st = rustix::fs::statfs(dir).ok()?;
        // The magic numbers of statfs(2)'s f_type.
        Some(match st.f_type as u64 {
            0x6969 => "NFS",
            0x517b => "SMB",
            0xff53_4d42 => "CIFS",
            0xfe53_4d42 => "SMB2",
            0x6573_5546 => "FUSE (maybe sshfs or a network mount)",
            0x0102_1997 => "9p",
            0x00c3_6400 => "Ceph",
            0x5346_414f => "AFS",
            0x6b41_4653 => "AFS (kAFS)",
            _ => return None,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn network_filesystem(_dir: &std::path::Path) -> Option<&'static str> {
        None
    }
}

#[cfg(not(unix))]
mod imp {
    use std::io::IsTerminal;

    use super::StdinProblem;

    /// Elsewhere only a terminal is told apart.
    pub(super) fn stdin_problem() -> Option<StdinProblem> {
        std::io::stdin()
            .is_terminal()
            .then_some(StdinProblem::Terminal)
    }
}

/// The agent that ran this hook: the parent process, or, when the parent
/// is a shell the agent ran the hook's command line in (Codex and Gemini
/// CLI take a command line), the shell's parent. A shell exits with its
/// command, so a mark naming it would be stale at once.
pub(crate) fn agent_pid() -> u32 {
    let parent = imp::parent_pid();
    match imp::process_name_and_parent(parent) {
        Some((name, grandparent))
            if grandparent > 1
                && matches!(name.as_str(), "sh" | "bash" | "dash" | "zsh" | "ksh") =>
        {
            grandparent
        }
        _ => parent,
    }
}

/// Writes `bytes` as `dir/name`, private to this user (0600), through a
/// temporary renamed over it.
pub(crate) fn write_private(
    dir: &std::path::Path,
    name: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
    imp::write_private(dir, name, bytes)
}

/// True when an exclusive `flock` on a file in `dir` keeps a second open of
/// the same file from taking it: false on a filesystem where locks do not
/// hold (some network filesystems).
pub(crate) fn flock_holds(dir: &std::path::Path) -> std::io::Result<bool> {
    imp::flock_holds(dir)
}

/// The network filesystem `dir` is on (NFS, SMB, ...), where `flock` may not
/// exclude another machine's process; `None` for a local one, or where it
/// cannot be told.
pub(crate) fn network_filesystem(dir: &std::path::Path) -> Option<&'static str> {
    imp::network_filesystem(dir)
}

#[cfg(unix)]
mod private_files {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::Path;

    use rustix::fs::{FlockOperation, flock};

    pub(crate) fn parent_pid() -> u32 {
        rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get() as u32)
    }

    pub(crate) fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&temp)?;
        f.write_all(bytes)?;
        drop(f);
        std::fs::rename(&temp, dir.join(name)).inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
    }

    pub(crate) fn flock_holds(dir: &Path) -> std::io::Result<bool> {
        let path = dir.join(format!(".doctor-flock.{}", std::process::id()));
        let open = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
        };
        let first = open()?;
        let second = open();
        let result = (|| {
            let second = second?;
            flock(&first, FlockOperation::NonBlockingLockExclusive)?;
            Ok(flock(&second, FlockOperation::NonBlockingLockExclusive).is_err())
        })();
        let _ = std::fs::remove_file(&path);
        result
    }
}

#[cfg(unix)]
use private_files::{
    flock_holds as unix_flock_holds, parent_pid as unix_parent_pid,
    write_private as unix_write_private,
};

/// While a command `turnback run` started is running: a Ctrl-C or Ctrl-\ at
/// the terminal reaches the whole foreground process group, and must stop
/// the command, not turnback, which then records what the command did. So
/// turnback ignores SIGINT and SIGQUIT until this is dropped; the command
/// gets them back at their defaults ([`default_signals_in_child`]).
pub(crate) struct InterruptsIgnored(#[cfg(unix)] [libc::sighandler_t; 2]);

impl InterruptsIgnored {
    pub(crate) fn new() -> InterruptsIgnored {
        #[cfg(unix)]
        // SAFETY: `signal` with SIG_IGN installs no handler code; the
        // previous dispositions are put back on drop.
        unsafe {
            InterruptsIgnored([
                libc::signal(libc::SIGINT, libc::SIG_IGN),
                libc::signal(libc::SIGQUIT, libc::SIG_IGN),
            ])
        }
        #[cfg(not(unix))]
        InterruptsIgnored()
    }
}

impl Drop for InterruptsIgnored {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: puts back what `new` found.
        unsafe {
            libc::signal(libc::SIGINT, self.0[0]);
            libc::signal(libc::SIGQUIT, self.0[1]);
        }
    }
}

/// Set by SIGTERM (and SIGHUP) once [`note_termination`] is called.
static TERMINATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// For `ui`: SIGTERM and SIGHUP no longer end the process at once but are
/// noted ([`terminated`]), so that the full-screen view puts the terminal
/// back before it exits. The handler only stores to an atomic, which is
/// async-signal-safe.
pub(crate) fn note_termination() {
    #[cfg(unix)]
    {
        extern "C" fn noted(_: libc::c_int) {
            TERMINATED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let handler: extern "C" fn(libc::c_int) = noted;
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
            libc::signal(libc::SIGHUP, handler as libc::sighandler_t);
        }
    }
}

/// For `ui`: a thread that ends the process when its terminal has hung up
/// (the terminal emulator or `script` gone: standard input reports
/// `POLLHUP`), which the terminal library may never report and then spins
/// on, or when a noted SIGTERM or SIGHUP ([`note_termination`]) has not
/// ended the view within a second. There is no terminal left to put back.
pub(crate) fn exit_on_hangup() {
    #[cfg(unix)]
    std::thread::spawn(|| {
        use std::time::{Duration, Instant};
        let mut noted: Option<Instant> = None;
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let mut fds = [libc::pollfd {
                fd: 0,
                events: 0,
                revents: 0,
            }];
            // SAFETY: one valid pollfd, a zero timeout.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) };
            let gone = libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
            if ready > 0 && fds[0].revents & gone != 0 {
                std::process::exit(129);
            }
            if terminated()
                && noted.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(1)
            {
                std::process::exit(143);
            }
        }
    });
}

/// True once a signal [`note_termination`] watches for has come.
pub(crate) fn terminated() -> bool {
    TERMINATED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Makes `cmd`'s process start with SIGINT and SIGQUIT at their defaults
/// (an ignored signal stays ignored across `exec`).
pub(crate) fn default_signals_in_child(cmd: &mut std::process::Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: between fork and exec only `signal`, which is
        // async-signal-safe, is called.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGQUIT, libc::SIG_DFL);
                Ok(())
            });
        }
    }
}

/// Opens (creating it, private) the lock file `dir/name` and holds an
/// exclusive `flock` on it until the file is dropped: the hooks' shell
/// calls of one session take their turn through it. Neither `dir` nor the
/// file may be a symbolic link (a store home another user could write must
/// not aim the open elsewhere). Where `flock` does not exist the file is
/// opened and nothing is held.
pub(crate) fn lock_exclusive(dir: &std::path::Path, name: &str) -> std::io::Result<std::fs::File> {
    std::fs::create_dir_all(dir)?;
    if std::fs::symlink_metadata(dir)?.file_type().is_symlink() {
        return Err(std::io::Error::other(format!(
            "{} is a symbolic link",
            dir.display()
        )));
    }
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    let file = o.open(dir.join(name))?;
    #[cfg(unix)]
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(file)
}

#[cfg(all(test, unix))]
mod tests {
    use super::lock_exclusive;

    #[test]
    fn the_shell_lock_follows_no_symbolic_link() {
        let home = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        // The lock directory planted as a link: refused, nothing made there.
        std::os::unix::fs::symlink(elsewhere.path(), home.path().join("hook-locks")).unwrap();
        assert!(lock_exclusive(&home.path().join("hook-locks"), "s.lock").is_err());
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
        // The lock file planted as a link to a file: refused, the file untouched.
        let dir = home.path().join("real");
        std::fs::create_dir(&dir).unwrap();
        let victim = elsewhere.path().join("victim");
        std::fs::write(&victim, "mine\n").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("s.lock")).unwrap();
        assert!(lock_exclusive(&dir, "s.lock").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
        // A plain one is made, private, and held.
        let f = lock_exclusive(&dir, "t.lock").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("t.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        drop(f);
    }
}
