//! Turns global flags into the store, session and workspace a command works on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use turnback::errors::Kind;
use turnback_store::{
    ChoiceReason, ErrorKind, Session, SessionChoice, SessionSummary, Settings, Store, Workspace,
};

use crate::cli::Cli;
use crate::cli_error::CliError;
use crate::render::Renderer;

pub(crate) struct Context {
    pub store: Store,
    /// How the command's output is written (the rewind picker writes its
    /// preview before it asks).
    pub render: Renderer,
    pub cwd: PathBuf,
    workspace: Option<PathBuf>,
    session: Option<String>,
    /// With `--json`, stderr carries only an error object: no notes.
    quiet: bool,
    /// `--quiet`: no "using session" note.
    no_session_note: bool,
    /// The agent sessions a long-lived `turnback serve` keeps open between
    /// requests (so that a write does not open its session again); `None`
    /// in a process that runs one command.
    open: Option<OpenSessions>,
    /// The session the command opened last: the one in use, which the
    /// store's daily prune never removes.
    used: std::cell::RefCell<Option<String>>,
}

/// Agent sessions kept open by id, shared by the requests of one server.
pub(crate) type OpenSessions = Arc<crate::serve::OpenSessions>;

impl Context {
    pub(crate) fn new(cli: &Cli, render: Renderer) -> Result<Context, CliError> {
        let store = match &cli.home {
            Some(home) => Store::new(home),
            None => Store::open_default()?,
        };
        // Read once, here: retention and the caps every command obeys.
        let store = store.with_settings(Settings::load()?);
        let cwd = std::env::current_dir()
            .map_err(|e| CliError::new(format!("cannot read the current directory: {e}"), None))?;
        Ok(Context {
            store,
            render,
            cwd,
            workspace: cli.workspace.clone(),
            session: cli.session.clone(),
            quiet: cli.json,
            no_session_note: cli.json || cli.quiet,
            open: None,
            used: Default::default(),
        })
    }

    /// The context of one request of `turnback serve`: the server's store,
    /// current directory and open sessions, the request's session and
    /// workspace (in `cli`). Quiet: the server's stderr carries no notes.
    pub(crate) fn serving(
        cli: &Cli,
        render: Renderer,
        store: Store,
        cwd: PathBuf,
        open: OpenSessions,
    ) -> Context {
        Context {
            store,
            render,
            cwd,
            workspace: cli.workspace.clone(),
            session: cli.session.clone(),
            quiet: true,
            no_session_note: true,
            open: Some(open),
            used: Default::default(),
        }
    }

    /// Tells the person something on stderr (not with `--json`).
    fn note(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    /// Tells the person, one line each, which store directories the command
    /// made private (not with `--json`).
    pub(crate) fn report_notices(&self) {
        for t in self.store.take_notices() {
            self.note(&format!("note: {t}: backups were readable by other users"));
        }
    }

    /// After a command that changed a session: the store's daily prune, if
    /// it is due (`Store::prune_if_due`; it never waits for another prune),
    /// sparing the session the command used.
    pub(crate) fn prune_if_due(&self) {
        let used = self.used.borrow().clone();
        self.store.prune_if_due(used.as_deref());
    }

    /// The workspace: `--workspace`, else the current directory.
    pub(crate) fn workspace(&self) -> Result<Workspace, CliError> {
        Ok(Workspace::open(
            self.workspace.as_deref().unwrap_or(&self.cwd),
        )?)
    }

    /// A path the user typed, made absolute against the current directory.
    pub(crate) fn user_path(&self, p: &Path) -> PathBuf {
        self.cwd.join(p)
    }

    /// The session named by `--session` or `TURNBACK_SESSION`, if any.
    pub(crate) fn named_session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The existing session `id`, confined to the command's workspace
    /// (`--workspace` or the current directory): nothing it restores is in an
    /// unrelated directory.
    fn open(&self, id: &str) -> Result<Session, CliError> {
        Ok(self.confine(self.store.open_session(id)?))
    }

    fn confine(&self, session: Session) -> Session {
        *self.used.borrow_mut() = Some(session.id().to_owned());
        session.confine_to(self.workspace.as_deref().unwrap_or(&self.cwd))
    }

    /// Every session with changes in the workspace (or the named one), oldest
    /// change first. A listing (`log --all`) wants every session whose
    /// workspace overlaps this one either way, a parent's included; the
    /// session a person means ([`Store::choose_session`]) must have changed
    /// something under it. Two questions, two filters.
    pub(crate) fn workspace_sessions(&self) -> Result<Vec<Session>, CliError> {
        if let Some(id) = &self.session {
            return Ok(vec![self.open(id)?]);
        }
        self.workspace_summaries()?
            .iter()
            .map(|s| self.open(&s.id))
            .collect()
    }

    /// The summaries of the sessions [`Context::workspace_sessions`] opens
    /// (without a named session), oldest change first: what `ui` lists.
    pub(crate) fn workspace_summaries(&self) -> Result<Vec<SessionSummary>, CliError> {
        let ws = self.workspace()?;
        Ok(self
            .store
            .sessions()?
            .into_iter()
            .filter(|s| {
                s.workspaces
                    .iter()
                    .any(|w| w.starts_with(ws.root()) || ws.root().starts_with(w))
            })
            .collect())
    }

    /// The existing session `id`, confined to the command's workspace, as
    /// every command that restores opens it.
    pub(crate) fn open_session(&self, id: &str) -> Result<Session, CliError> {
        self.open(id)
    }

    /// The session an agent names (flag or environment): required.
    pub(crate) fn agent_session(&self) -> Result<Session, CliError> {
        let id = self.session.as_deref().ok_or_else(|| {
            CliError::usage(
                "no session given",
                "pass --session ID or set TURNBACK_SESSION (an agent uses its conversation id)",
            )
        })?;
        let Some(open) = &self.open else {
            return Ok(self.confine(self.store.session(id)?));
        };
        let session = open.get_or_open(id, std::time::Instant::now(), || self.store.session(id))?;
        Ok(self.confine(session))
    }

    /// The session a person means: the named one, else the one with the
    /// newest change to a file under the workspace directory (a session
    /// rooted in a parent directory that changed only a sibling's files is not
    /// one).
    pub(crate) fn person_session(&self) -> Result<Session, CliError> {
        // A named session needs no workspace to be chosen in (and is not
        // refused for a workspace that cannot be opened).
        if let Some(id) = self.named_session() {
            return self.open(id);
        }
        let ws = self.workspace()?;
        self.chosen_session(SessionChoice::ChangedUnder(ws.root()))
    }

    /// The session `redo` puts back: the named one, else the one whose undo,
    /// revert or rewind of a file under the workspace directory was the last,
    /// else (none has one) the one a person means, which then has nothing to
    /// redo.
    pub(crate) fn redo_session(&self) -> Result<Session, CliError> {
        if let Some(id) = self.named_session() {
            return self.open(id);
        }
        let ws = self.workspace()?;
        self.chosen_session(SessionChoice::RevertedUnder(ws.root()))
    }

    /// The session to revert `file` in: the named one, else the one that changed
    /// it last.
    pub(crate) fn session_for_file(
        &self,
        ws: &Workspace,
        file: &Path,
    ) -> Result<Session, CliError> {
        self.chosen_session(SessionChoice::ChangedFile(ws, file))
    }

    /// The session [`Store::choose_session`] picks, opened and confined, with
    /// a note saying why when the person did not name it. The rules live in
    /// the store; here are only the words.
    fn chosen_session(&self, choice: SessionChoice<'_>) -> Result<Session, CliError> {
        let Some(chosen) = self.store.choose_session(self.named_session(), choice)? else {
            return Err(match choice {
                SessionChoice::ChangedUnder(dir) | SessionChoice::RevertedUnder(dir) => {
                    CliError::new(
                        format!("no session has changes in {}", dir.display()),
                        Some("pass --session ID; `turnback sessions` lists them".into()),
                    )
                    .kind(Kind::NoSession)
                }
                SessionChoice::ChangedFile(ws, file) => never_backed_up(ws, file, &self.cwd),
            });
        };
        let id = &chosen.id;
        if self.no_session_note {
            return self.open(id);
        }
        match (chosen.reason, choice) {
            (ChoiceReason::Named, _) => {}
            (ChoiceReason::ChangedUnder, SessionChoice::ChangedUnder(dir))
            | (ChoiceReason::ChangedUnder, SessionChoice::RevertedUnder(dir)) => {
                self.note(&format!(
                    "using session {id} (the newest with changes in {})",
                    turnback::text::escape_path(dir)
                ))
            }
            (ChoiceReason::RevertedUnder, SessionChoice::RevertedUnder(dir)) => {
                self.note(&format!(
                    "using session {id} (the last to undo, revert or rewind in {})",
                    dir.display()
                ))
            }
            (ChoiceReason::ChangedFile, SessionChoice::ChangedFile(_, file)) => {
                let shown = file.strip_prefix(&self.cwd).unwrap_or(file);
                self.note(&format!(
                    "using session {id} (it changed {} last)",
                    turnback::text::escape_path(shown)
                ))
            }
            (reason, _) => unreachable!("choose_session gave {reason:?} for {choice:?}"),
        }
        self.open(id)
    }
}

/// The error for a file no session here changed: named as the person typed
/// it (relative to the current directory), saying turnback never backed it
/// up, and in a git repository how to get the committed version back.
pub(crate) fn never_backed_up(ws: &Workspace, file: &Path, cwd: &Path) -> CliError {
    never_backed_up_by(ws, file, cwd, None)
}

/// [`never_backed_up`], of the one session `session` when it is named.
pub(crate) fn never_backed_up_by(
    ws: &Workspace,
    file: &Path,
    cwd: &Path,
    session: Option<&str>,
) -> CliError {
    let shown = turnback::text::escape_path(file.strip_prefix(cwd).unwrap_or(file));
    let in_git = ws.root().ancestors().any(|d| d.join(".git").exists());
    let hint = if in_git {
        format!(
            "`git restore {shown}` brings back the committed version (this is a git repository)"
        )
    } else {
        "turnback can put back only what an agent wrote through it; `turnback log --all` lists what sessions here changed".to_owned()
    };
    let who = match session {
        Some(id) => format!("session {id:?} has no change"),
        None => "no session has a change".to_owned(),
    };
    CliError::new(
        format!("{who} to {shown} here: turnback never backed it up"),
        Some(hint),
    )
    .kind(ErrorKind::NoChangeToFile)
}
