//! The command line as a person sees it: the human output of every command, as
//! insta snapshots under `tests/snapshots/`.
//!
//! Each snapshot is a transcript: the command line as run (the store home is
//! always given by `TURNBACK_HOME`, which is not shown; a session given by
//! `TURNBACK_SESSION` is), then its standard output, its standard error and its
//! exit code. What varies between runs is filtered: the temporary workspace and
//! home (`[WS]`, `[HOME]`), times (`[TIME]`, in UTC by `TZ=UTC`; "now" is
//! fixed a day and a half later by `TURNBACK_NOW` so that a relative time
//! reads `1 day ago`; padded to the width of a time where a
//! column follows it, so tables stay aligned), SHA-256 hex and process ids.
//! Every command runs with `--color never`, except in the test of colour itself.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::{self, Env};

// ---------------------------------------------------------------------------
// Running a command and showing what it printed

/// What one run of `turnback` showed.
pub(crate) struct Ran {
    /// The command line, as a person would type it.
    pub(crate) line: String,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) code: Option<i32>,
}

impl Ran {
    /// The transcript of the run: command line, stdout, stderr, exit code.
    pub(crate) fn block(&self) -> String {
        let code = self
            .code
            .map_or_else(|| "none (killed by a signal)".to_owned(), |c| c.to_string());
        format!(
            "$ {}\n{}{}[exit code: {code}]\n",
            self.line,
            stream("stdout", &self.stdout),
            stream("stderr", &self.stderr)
        )
    }

    /// Asserts the exit code, showing the whole run if it is another.
    pub(crate) fn expect(self, code: i32) -> Ran {
        assert_eq!(
            self.code,
            Some(code),
            "unexpected exit code:\n{}",
            self.block()
        );
        self
    }
}

fn stream(name: &str, text: &str) -> String {
    if text.is_empty() {
        return format!("[{name}: empty]\n");
    }
    let mut s = format!("[{name}]\n{text}");
    if !text.ends_with('\n') {
        s.push_str("\n[no newline at end]\n");
    }
    s
}

/// One `turnback` command to run in an [`Env`]'s workspace.
pub(crate) struct Turnback<'a> {
    env: &'a Env,
    args: Vec<String>,
    session: Option<&'a str>,
    stdin: Option<Vec<u8>>,
    subdir: Option<&'a str>,
    vars: Vec<(&'a str, &'a str)>,
    removed: Vec<&'a str>,
}

/// `turnback ARGS` (split on spaces), with `--color never` appended unless the
/// arguments choose a colour or ask for help.
pub(crate) fn tb<'a>(env: &'a Env, args: &str) -> Turnback<'a> {
    let mut args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
    let help = args.iter().any(|a| a == "--help");
    if !help && !args.iter().any(|a| a.starts_with("--color")) {
        args.extend(["--color".into(), "never".into()]);
    }
    Turnback {
        env,
        args,
        session: None,
        stdin: None,
        subdir: None,
        vars: Vec::new(),
        removed: Vec::new(),
    }
}

impl<'a> Turnback<'a> {
    /// As an agent: `TURNBACK_SESSION=id`.
    pub(crate) fn session(mut self, id: &'a str) -> Self {
        self.session = Some(id);
        self
    }

    /// These bytes on standard input (else it is empty).
    pub(crate) fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = Some(bytes.to_vec());
        self
    }

    /// Run in this directory of the workspace instead of its root.
    pub(crate) fn subdir(mut self, dir: &'a str) -> Self {
        self.subdir = Some(dir);
        self
    }

    /// With this environment variable set (shown on the command line).
    pub(crate) fn var(mut self, name: &'a str, value: &'a str) -> Self {
        self.vars.push((name, value));
        self
    }

    /// Without this environment variable.
    pub(crate) fn without(mut self, name: &'a str) -> Self {
        self.removed.push(name);
        self
    }

    pub(crate) fn run(self) -> Ran {
        let mut cmd: Command = self.env.cmd(self.session);
        // Whatever the test runner's environment says about colour, the output
        // is the same.
        for v in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM"] {
            cmd.env_remove(v);
        }
        for v in &self.removed {
            cmd.env_remove(v);
        }
        // Times: local time is UTC, and "now" (`TURNBACK_NOW`, not shown) is
        // a day and a half after the run, so that "how long ago" reads "1 day
        // ago" however long the test took (under 12 hours).
        cmd.env("TZ", "UTC");
        if !self.vars.iter().any(|(k, _)| *k == "TURNBACK_NOW") {
            let now = time::OffsetDateTime::now_utc() + time::Duration::hours(36);
            let now = now
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap();
            cmd.env("TURNBACK_NOW", now);
        }
        let mut line = String::new();
        if let Some(dir) = self.subdir {
            cmd.current_dir(self.env.path(dir));
            line.push_str(&format!("cd {dir} && "));
        }
        if let Some(bytes) = &self.stdin {
            line.push_str(&format!("printf '{}' | ", bytes.escape_ascii()));
        }
        for (k, v) in &self.vars {
            cmd.env(k, v);
            line.push_str(&format!("{k}={v} "));
        }
        if let Some(s) = self.session {
            line.push_str(&format!("TURNBACK_SESSION={s} "));
        }
        line.push_str("turnback");
        for a in &self.args {
            line.push(' ');
            line.push_str(a);
        }
        cmd.args(&self.args)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("run turnback");
        if let Some(bytes) = &self.stdin {
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(bytes).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        Ran {
            line,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code(),
        }
    }
}

/// The transcripts of several runs, one after another, each expected to exit
/// with its code.
pub(crate) fn transcript(runs: Vec<(Turnback<'_>, i32)>) -> String {
    runs.into_iter()
        .map(|(t, code)| t.run().expect(code).block())
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// Snapshots and their filters

/// `s` escaped as a regular expression that matches it literally.
pub(crate) fn literal(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

pub(crate) const TIME: &str = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC";

/// Filters for what varies between runs: the env's paths, times, hashes.
pub(crate) fn settings(env: &Env) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_omit_expression(true);
    for (dir, name) in [(env.ws.path(), "[WS]"), (env.home.path(), "[HOME]")] {
        if let Ok(real) = dir.canonicalize()
            && real != dir
        {
            s.add_filter(&literal(&real.display().to_string()), name);
        }
        s.add_filter(&literal(&dir.display().to_string()), name);
    }
    // A time followed by a column keeps its width (23 characters), so that the
    // columns after it line up as they do on screen.
    // A time followed by how long ago it was is not a column.
    s.add_filter(&format!(r"{TIME} \("), "[TIME] (");
    s.add_filter(&format!("{TIME} "), format!("{:<23} ", "[TIME]"));
    s.add_filter(TIME, "[TIME]");
    s.add_filter(r"\b[0-9a-f]{64}\b", "[SHA256]");
    // How long ago a fixed day was grows by one every day.
    s.add_filter(r"unchanged for \d+ days", "unchanged for [DAYS] days");
    s
}

/// Asserts the snapshot `name` of `text`, with `env`'s filters and a
/// description of the scenario.
pub(crate) fn snap(env: &Env, name: &str, description: &str, text: &str) {
    let mut s = settings(env);
    s.set_description(description);
    s.bind(|| insta::assert_snapshot!(name, text));
}

// ---------------------------------------------------------------------------
// The scenario: a workspace and an agent session

pub(crate) const LIB_V1: &str = "pub fn answer() -> u32 {\n    41\n}\n";
pub(crate) const LIB_V2: &str =
    "pub mod util;\n\npub fn answer() -> u32 {\n    util::helper() + 1\n}\n";
pub(crate) const UTIL: &str = "pub fn helper() -> u32 {\n    41\n}\n";
pub(crate) const NOTES: &str = "- remember the milk\n- call the bank\n";
pub(crate) const GUIDE: &str = "# Guide\n\nCall `answer()`.\n";
const LOGO_V1: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
const LOGO_V2: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06";

/// A workspace with `src/lib.rs`, `NOTES.md` and `logo.png`.
pub(crate) fn workspace() -> Env {
    let env = Env::new();
    std::fs::create_dir_all(env.path("src")).unwrap();
    std::fs::write(env.path("src/lib.rs"), LIB_V1).unwrap();
    std::fs::write(env.path("NOTES.md"), NOTES).unwrap();
    std::fs::write(env.path("logo.png"), LOGO_V1).unwrap();
    env
}

/// The workspace after session `agent-1` worked in it through `turnback write`
/// and `turnback rm`, in three messages, and the transcript of those runs:
///
/// - msg-1 changes `src/lib.rs` and creates `src/util.rs`;
/// - msg-2 deletes `NOTES.md`;
/// - msg-3 changes the binary `logo.png` and creates `docs/guide.md`.
pub(crate) fn agent_session() -> (Env, String) {
    let env = workspace();
    let s = "agent-1";
    let text = transcript(vec![
        (
            tb(&env, "write src/lib.rs --message msg-1")
                .session(s)
                .stdin(LIB_V2.as_bytes()),
            0,
        ),
        (
            tb(&env, "write src/util.rs --message msg-1")
                .session(s)
                .stdin(UTIL.as_bytes()),
            0,
        ),
        (tb(&env, "rm NOTES.md --message msg-2").session(s), 0),
        (
            tb(&env, "write logo.png --message msg-3")
                .session(s)
                .stdin(LOGO_V2),
            0,
        ),
        (
            tb(&env, "write docs/guide.md --message msg-3")
                .session(s)
                .stdin(GUIDE.as_bytes()),
            0,
        ),
    ]);
    assert_eq!(util::read_text(env.path("src/lib.rs")), LIB_V2);
    assert_eq!(util::read_text(env.path("src/util.rs")), UTIL);
    assert!(!env.path("NOTES.md").exists());
    assert_eq!(util::read(env.path("logo.png")), LOGO_V2);
    assert_eq!(util::read_text(env.path("docs/guide.md")), GUIDE);
    (env, text)
}

/// After [`agent_session`], a second agent (`agent-2`) changes `src/lib.rs` again
/// and creates `TODO.md`, in message fix-1.
pub(crate) const LIB_V3: &str =
    "pub mod util;\n\n/// The answer.\npub fn answer() -> u32 {\n    util::helper() + 1\n}\n";
pub(crate) const TODO: &str = "- document util\n";

pub(crate) fn two_sessions() -> (Env, String) {
    let (env, mut text) = agent_session();
    text.push('\n');
    text.push_str(&transcript(vec![
        (
            tb(&env, "write src/lib.rs --message fix-1")
                .session("agent-2")
                .stdin(LIB_V3.as_bytes()),
            0,
        ),
        (
            tb(&env, "write TODO.md --message fix-1")
                .session("agent-2")
                .stdin(TODO.as_bytes()),
            0,
        ),
    ]));
    (env, text)
}

// ---------------------------------------------------------------------------
// Agents' commands: write, rm, checkpoint, commit, rollback

#[test]
fn write_and_rm() {
    let (env, text) = agent_session();
    snap(
        &env,
        "write_and_rm",
        "An agent (session agent-1) changes, creates and deletes files in three messages.",
        &text,
    );
}

#[test]
fn checkpoint_commit_rollback() {
    let env = workspace();
    let s = "agent-1";
    let cp = tb(&env, "checkpoint src/lib.rs --message edit-1")
        .session(s)
        .run()
        .expect(0);
    assert_eq!(cp.stdout, "1\n", "checkpoint prints only the entry number");
    let log = tb(&env, "log").run().expect(0);
    std::fs::write(env.path("src/lib.rs"), LIB_V2).unwrap();
    let commit = tb(&env, "commit 1").session(s).run().expect(0);
    let cp2 = tb(&env, "checkpoint NOTES.md --message edit-2")
        .session(s)
        .run()
        .expect(0);
    assert_eq!(cp2.stdout, "2\n");
    std::fs::write(env.path("NOTES.md"), "scribbles\n").unwrap();
    let rollback = tb(&env, "rollback 2").session(s).run().expect(0);
    assert_eq!(util::read_text(env.path("NOTES.md")), NOTES);
    assert_eq!(util::read_text(env.path("src/lib.rs")), LIB_V2);
    let log2 = tb(&env, "log").run().expect(0);
    let text = [
        cp.block(),
        log.block(),
        "(the agent edits src/lib.rs itself)\n".into(),
        commit.block(),
        cp2.block(),
        "(the agent scribbles over NOTES.md, then gives up)\n".into(),
        rollback.block(),
        log2.block(),
    ]
    .join("\n");
    snap(
        &env,
        "checkpoint_commit_rollback",
        "An agent brackets its own edits: checkpoint, edit, commit; checkpoint, edit, rollback.",
        &text,
    );
}

// ---------------------------------------------------------------------------
// People's commands: undo, revert, rewind, and a refusal

#[test]
fn undo() {
    let (env, _) = agent_session();
    let before = util::tree_digest(env.ws.path());
    let dry = tb(&env, "undo --dry-run").run().expect(0);
    assert_eq!(
        util::tree_digest(env.ws.path()),
        before,
        "a dry run touches nothing"
    );
    let real = tb(&env, "undo").run().expect(0);
    assert!(!env.path("docs/guide.md").exists());
    let dry2 = tb(&env, "undo --dry-run").run().expect(0);
    let real2 = tb(&env, "undo").run().expect(0);
    assert_eq!(util::read(env.path("logo.png")), LOGO_V1);
    let text = [dry.block(), real.block(), dry2.block(), real2.block()].join("\n");
    snap(
        &env,
        "undo",
        "After agent-1's three messages, a person undoes the newest change (msg-3's new \
         docs/guide.md), previewing it first, then the one before (the binary logo.png).",
        &text,
    );
}

#[test]
fn revert_file() {
    let (env, _) = agent_session();
    let text = transcript(vec![
        (tb(&env, "revert src/lib.rs --dry-run"), 0),
        (tb(&env, "revert src/lib.rs"), 0),
        (tb(&env, "revert util.rs").subdir("src"), 0),
    ]);
    assert_eq!(util::read_text(env.path("src/lib.rs")), LIB_V1);
    assert!(!env.path("src/util.rs").exists());
    assert_eq!(util::read_text(env.path("docs/guide.md")), GUIDE);
    snap(
        &env,
        "revert_file",
        "After agent-1's three messages, a person reverts src/lib.rs (no --session: turnback \
         finds the session that changed it last), then src/util.rs from inside src/.",
        &text,
    );
}

#[test]
fn rewind() {
    let (env, _) = agent_session();
    let before = util::tree_digest(env.ws.path());
    let dry = tb(&env, "rewind msg-2 --dry-run").run().expect(0);
    assert_eq!(
        util::tree_digest(env.ws.path()),
        before,
        "a dry run touches nothing"
    );
    let real = tb(&env, "rewind msg-2").run().expect(0);
    assert_eq!(util::read_text(env.path("NOTES.md")), NOTES);
    assert_eq!(util::read(env.path("logo.png")), LOGO_V1);
    assert!(!env.path("docs").exists());
    assert_eq!(util::read_text(env.path("src/lib.rs")), LIB_V2);
    let log = tb(&env, "log").run().expect(0);
    let text = [dry.block(), real.block(), log.block()].join("\n");
    snap(
        &env,
        "rewind",
        "After agent-1's three messages, a person rewinds to before msg-2: a preview, the \
         rewind, and the log left (msg-1 only).",
        &text,
    );
}

#[test]
fn refusal_and_force() {
    let (env, _) = agent_session();
    std::fs::write(
        env.path("src/util.rs"),
        "pub fn helper() -> u32 {\n    7 // by hand\n}\n",
    )
    .unwrap();
    let before = util::tree_digest(env.ws.path());
    let refused = tb(&env, "rewind msg-1").run().expect(3);
    assert_eq!(
        util::tree_digest(env.ws.path()),
        before,
        "a refusal touches nothing"
    );
    // A dry run is a check: it shows the conflict and exits 3 as the real one would.
    let dry = tb(&env, "rewind msg-1 --dry-run").run().expect(3);
    let forced = tb(&env, "rewind msg-1 --force").run().expect(0);
    assert_eq!(util::read_text(env.path("src/lib.rs")), LIB_V1);
    assert_eq!(util::read_text(env.path("NOTES.md")), NOTES);
    assert_eq!(util::read(env.path("logo.png")), LOGO_V1);
    assert!(!env.path("src/util.rs").exists());
    assert!(!env.path("docs").exists());
    let text = [
        "(a person edits src/util.rs by hand after agent-1 created it)\n".into(),
        refused.block(),
        dry.block(),
        forced.block(),
    ]
    .join("\n");
    snap(
        &env,
        "refusal_and_force",
        "A rewind that would lose a hand edit is refused (exit 3, nothing touched); the dry \
         run shows the conflict; --force goes ahead.",
        &text,
    );
}

#[test]
fn refusal_names_the_other_session() {
    let (env, _) = two_sessions();
    let before = util::tree_digest(env.ws.path());
    let refused = tb(&env, "rewind msg-1 --session agent-1").run().expect(3);
    assert_eq!(
        util::tree_digest(env.ws.path()),
        before,
        "a refusal touches nothing"
    );
    let dry = tb(&env, "rewind msg-1 --session agent-1 --dry-run")
        .run()
        .expect(3);
    let revert = tb(&env, "revert src/lib.rs").run().expect(0);
    assert_eq!(util::read_text(env.path("src/lib.rs")), LIB_V2);
    let text = [refused.block(), dry.block(), revert.block()].join("\n");
    snap(
        &env,
        "refusal_names_the_other_session",
        "agent-2 changed src/lib.rs after agent-1: rewinding agent-1 is refused naming \
         agent-2's message; `revert src/lib.rs` picks agent-2, which changed it last.",
        &text,
    );
}

// ---------------------------------------------------------------------------
// Looking: log, diff, sessions, prune

#[test]
fn log() {
    let (env, _) = agent_session();
    let text = transcript(vec![(tb(&env, "log"), 0)]);
    snap(
        &env,
        "log",
        "agent-1's three messages, grouped by message.",
        &text,
    );
}

#[test]
fn log_all_and_sessions() {
    let (env, _) = two_sessions();
    let text = transcript(vec![
        (tb(&env, "log"), 0),
        (tb(&env, "log --all"), 0),
        (tb(&env, "sessions"), 0),
    ]);
    snap(
        &env,
        "log_all_and_sessions",
        "Two sessions in one workspace: the newest one's log, every log, the list of sessions.",
        &text,
    );
}

#[test]
fn sessions_empty() {
    let env = Env::new();
    let text = transcript(vec![(tb(&env, "sessions"), 0)]);
    snap(&env, "sessions_empty", "A store with no session.", &text);
}

#[test]
fn diff() {
    let (env, _) = agent_session();
    let text = transcript(vec![
        (tb(&env, "diff"), 0),
        (tb(&env, "diff --stat"), 0),
        (tb(&env, "diff src/lib.rs"), 0),
    ]);
    snap(
        &env,
        "diff",
        "After agent-1's three messages: every file against its first backup (a change, new \
         files, a deleted file, a binary file), the summary, one file.",
        &text,
    );
}

#[test]
fn prune_dry_run() {
    let env = workspace();
    let store = env.store();
    let ws = env.workspace();
    // An old session, last changed on a fixed day long ago (2025-01-01), so that
    // the time in the output is fixed too.
    let old = store.session("old-session").unwrap();
    old.write(&ws, "src/lib.rs", LIB_V2.as_bytes(), "m1")
        .unwrap();
    let long_ago = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_735_689_600);
    set_mtime(&old.dir().join("index.json"), long_ago);
    set_mtime(&old.dir().join("journal.jsonl"), long_ago);
    // Twenty recent sessions, so that the old one is not among the 20 newest; one
    // holds a backup nothing names any more, older than the grace period.
    // (A session is on disk from its first change; these have none, so their
    // directories are made by hand.)
    for i in 1..=20 {
        let dir = store.home().join(format!("sessions/recent-{i:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("lock"), b"").unwrap();
    }
    // A write whose new contents never arrived: its backup of NOTES.md is named
    // by no entry.
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("the agent's pipe closed"))
        }
    }
    let recent = store.session("recent-01").unwrap();
    let err = recent.write(&ws, "NOTES.md", Broken, "m1").unwrap_err();
    assert!(err.to_string().contains("the agent's pipe closed"), "{err}");
    for blob in std::fs::read_dir(recent.dir().join("blobs")).unwrap() {
        set_mtime(&blob.unwrap().path(), long_ago);
    }
    // A handle open in this process keeps its session in use, which a prune
    // never removes: let them go first.
    drop((old, recent));
    let before = util::tree_digest(env.home.path());
    let text = transcript(vec![(tb(&env, "prune --dry-run"), 0)]);
    assert_eq!(
        util::tree_digest(env.home.path()),
        before,
        "a dry run deletes nothing"
    );
    snap(
        &env,
        "prune_dry_run",
        "21 sessions: old-session last changed on 2025-01-01 and is not among the 20 newest; \
         recent-01 holds an unused backup from that day.",
        &text,
    );
}

fn set_mtime(p: &Path, t: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .or_else(|_| std::fs::File::open(p))
        .unwrap()
        .set_modified(t)
        .unwrap();
}

// ---------------------------------------------------------------------------
// Colour

fn has_ansi(s: &str) -> bool {
    s.contains("\x1b[")
}

#[test]
fn color() {
    let (env, _) = agent_session();
    for cmd in ["diff", "log", "undo --dry-run"] {
        let always = tb(&env, &format!("{cmd} --color always")).run().expect(0);
        assert!(has_ansi(&always.stdout), "{}", always.block());
        let never = tb(&env, &format!("{cmd} --color never")).run().expect(0);
        assert!(!has_ansi(&never.stdout), "{}", never.block());
        // `auto` (the default) under a pipe: off.
        let auto = tb(&env, &format!("{cmd} --color auto")).run().expect(0);
        assert!(!has_ansi(&auto.stdout), "{}", auto.block());
        let no_color = tb(&env, &format!("{cmd} --color auto"))
            .var("NO_COLOR", "1")
            .run()
            .expect(0);
        assert!(!has_ansi(&no_color.stdout), "{}", no_color.block());
        // The plain text is the same with and without colour.
        assert_eq!(strip_ansi(&always.stdout), never.stdout);
    }
}

/// `s` without its ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Help, completions, manual page, demo

#[test]
fn help() {
    let env = Env::new();
    // As on a fresh shell: no TURNBACK_HOME to show in `[env: ...]`.
    let top = tb(&env, "--help").without("TURNBACK_HOME").run().expect(0);
    snap(&env, "help", "The top-level --help.", &top.block());
    let undo = tb(&env, "undo --help")
        .without("TURNBACK_HOME")
        .run()
        .expect(0);
    snap(
        &env,
        "help_undo",
        "The --help of one subcommand.",
        &undo.block(),
    );

    // It opens with what a person does, not with the plumbing: the first
    // paragraph names undo, rewind, revert, log and install, and the first
    // commands listed are the ones that take changes back.
    let opening = top.stdout.split("\nUsage:").next().unwrap();
    let opening = opening.split_whitespace().collect::<Vec<_>>().join(" ");
    for c in ["undo", "rewind", "revert", "log", "install"] {
        assert!(opening.contains(&format!("turnback {c}")), "{opening}");
    }
    assert!(!opening.contains("turnback write"), "{opening}");
    let first = top.stdout.split("\nCommands:\n").nth(1).unwrap();
    assert!(first.starts_with("  undo "), "{first}");

    // A default that is a setting reads as its value and the setting's name,
    // not as if the name were the value.
    let prune = tb(&env, "prune --help").run().expect(0);
    let words = prune
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains("[default: 20, or the keep_sessions setting]")
            && words.contains("[default: 30, or the keep_days setting]")
            && !words.contains("[default: keep_"),
        "{}",
        prune.block()
    );

    // Every subcommand the top-level help lists (for people, then the agent
    // plumbing) has an example.
    let listed = |heading: &str| -> Vec<String> {
        top.stdout
            .split(heading)
            .nth(1)
            .unwrap_or_else(|| panic!("a {heading:?} section"))
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter(|l| !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|c| *c != "help")
            .map(str::to_owned)
            .collect()
    };
    let mut commands = listed("\nCommands:");
    commands.extend(listed("\nAgent plumbing"));
    assert!(commands.len() >= 15, "{commands:?}");
    for c in &commands {
        let h = tb(&env, &format!("{c} --help")).run().expect(0);
        assert!(h.stdout.contains("Example"), "{}", h.block());
    }
}

#[test]
fn completions_and_man() {
    let env = Env::new();
    let bash = tb(&env, "completions bash").run().expect(0);
    assert!(!bash.stdout.trim().is_empty());
    assert!(bash.stdout.contains("turnback"), "{}", bash.block());
    assert!(bash.stderr.is_empty(), "{}", bash.block());
    let man = tb(&env, "man").run().expect(0);
    assert!(man.stdout.starts_with(".ie"), "not roff:\n{}", man.block());
    assert!(man.stdout.contains(".TH turnback"), "{}", man.block());
    assert!(man.stderr.is_empty(), "{}", man.block());
}

#[test]
fn demo() {
    let env = Env::new();
    let ran = tb(&env, "demo").run().expect(0);
    assert!(ran.stderr.is_empty(), "{}", ran.block());
    // It ends on what a person does next (protect an agent), not on the
    // plumbing agents run.
    let next = ran.stdout.rsplit("\n\n").next().unwrap();
    assert!(
        next.contains("turnback install") && !next.contains("turnback write"),
        "{next}"
    );
    let mut s = settings(&env);
    s.set_description("`turnback demo`, from start to end.");
    let tmp = std::env::temp_dir();
    s.add_filter(
        &literal(tmp.display().to_string().trim_end_matches('/')),
        "[TMP]",
    );
    s.add_filter(r"turnback-demo-\d+", "turnback-demo-[PID]");
    let text = ran.block();
    s.bind(|| insta::assert_snapshot!("demo", text));
}

#[test]
fn turns_moves_and_redo() {
    let env = workspace();
    let text = transcript(vec![
        (
            tb(&env, "turn --prompt first --conversation-index 0").session("agent-1"),
            0,
        ),
        (
            tb(&env, "write src/lib.rs --message t1-1")
                .session("agent-1")
                .stdin(LIB_V2.as_bytes()),
            0,
        ),
        (
            tb(&env, "turn --prompt second --conversation-index 2").session("agent-1"),
            0,
        ),
        (
            tb(&env, "mv NOTES.md docs/NOTES.md --message t2-1").session("agent-1"),
            0,
        ),
        (tb(&env, "rewind --turn 2 --dry-run"), 0),
        (tb(&env, "rewind --turn 2"), 0),
        (tb(&env, "redo --dry-run"), 0),
        (tb(&env, "redo"), 0),
        (tb(&env, "undo"), 0),
        (tb(&env, "redo"), 0),
        (tb(&env, "redo"), 1),
        (tb(&env, "rewind --turn 9"), 1),
    ]);
    assert_eq!(
        std::fs::read_to_string(env.path("docs/NOTES.md")).unwrap(),
        NOTES
    );
    assert!(!env.path("NOTES.md").exists());
    assert_eq!(
        std::fs::read_to_string(env.path("src/lib.rs")).unwrap(),
        LIB_V2
    );
    snap(
        &env,
        "turns_moves_and_redo",
        "Two turns (an edit, then a move); a preview and a rewind to turn 2, its redo, an undo of the move and its redo; then nothing to redo and an unknown turn.",
        &text,
    );
}

/// A session whose every change was undone is still the one a person means:
/// `redo` without `--session` finds it by its undone entries.
#[test]
fn redo_after_undoing_everything_finds_the_session() {
    let env = workspace();
    tb(&env, "write src/util.rs --message m1")
        .session("agent-1")
        .stdin(UTIL.as_bytes())
        .run()
        .expect(0);
    tb(&env, "undo").run().expect(0);
    assert!(!env.path("src/util.rs").exists());
    let redo = tb(&env, "redo").run().expect(0);
    assert!(
        redo.stderr.contains("using session agent-1"),
        "{}",
        redo.block()
    );
    assert_eq!(
        std::fs::read_to_string(env.path("src/util.rs")).unwrap(),
        UTIL
    );
}
