//! Platform code of the command line, kept apart as the store keeps its own:
//! what standard input is, before `turnback write` takes it as a file's new
//! contents.

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
