//! `turnback demo`: a short scripted agent session in a scratch directory, so a
//! new user sees what turnback does before trusting it with real files. It runs
//! the agent through the library, then shows each step as the commands print
//! it; one step runs `turnback revert` as a second process, as a person at
//! another shell would.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use turnback::output::{Out, Role};
use turnback::text;
use turnback_store::{
    Entry, Error, FileDiff, RevertOptions, RevertReport, Session, Store, Workspace,
};

use crate::cli_error::CliError;
use crate::render::Report;

const START: &[(&str, &str)] = &[
    ("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n"),
    ("NOTES.md", "- remember the milk\n"),
];

/// Run a short scripted agent session in a scratch directory and undo parts of it
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback demo")]
pub(crate) struct DemoArgs {}

/// What the demo did, step by step, for the text that tells it.
pub(crate) struct Demo {
    workspace: PathBuf,
    store: PathBuf,
    session: String,
    /// Step 1: the agent's entries.
    entries: Vec<Entry>,
    /// Step 2: `turnback diff`.
    diff: Vec<FileDiff>,
    /// Step 3: `turnback undo`.
    undo: RevertReport,
    /// Step 4: the rewind refused.
    refusal: CliError,
    /// Step 5: what `turnback revert src/lib.rs` in a second process printed.
    second: String,
    /// Step 6: `turnback rewind msg-1 --force`.
    rewind: RevertReport,
}

impl Report for Demo {
    /// The demo is for a person: text even with `--json`.
    fn json(&self) -> Option<Value> {
        None
    }

    fn text(&self, out: &Out) -> String {
        let step = |n: u32, what: &str| {
            format!("\n{}\n", out.paint(Role::Header, &format!("{n}. {what}")))
        };
        let mut s = format!(
            "A scratch workspace with src/lib.rs and NOTES.md, and a store for it (both are deleted at the end):\n   workspace: {}\n   store:     {}\n",
            self.workspace.display(),
            self.store.display()
        );
        s += &step(
            1,
            "An agent edits through turnback in three messages; each change is backed up first.",
        );
        s += &indented(&text::log(out, &self.session, &self.entries));
        s += &step(
            2,
            "`turnback diff` shows each file against its first backup.",
        );
        s += &indented(&text::diff(out, &self.diff, false));
        s += &step(
            3,
            "`turnback undo` reverts the newest change: msg-3's new docs/guide.md goes.",
        );
        s += &indented(&text::revert(out, "undo", &self.undo, &[]));
        s += &step(
            4,
            "You fix src/util.rs by hand; a rewind would lose that, so it is refused.",
        );
        s += &indented(&format!(
            "$ turnback rewind msg-1\n{}(exit code {})",
            self.refusal.text(),
            self.refusal.code()
        ));
        s += &step(
            5,
            "From another shell, `turnback revert src/lib.rs` finds the session by itself.",
        );
        s += &indented(&self.second);
        s += &step(
            6,
            "`turnback rewind msg-1 --force` puts every file back as it was before the agent.",
        );
        s += &indented(&text::revert(
            out,
            "rewind to before msg-1",
            &self.rewind,
            &[],
        ));
        s += "   The workspace is exactly as it started: src/lib.rs and NOTES.md, nothing else.\n";
        s += &format!(
            "\n{}\n",
            out.paint(Role::Header, "Next, on your own project:")
        );
        s += "   turnback install claude-code    # or codex, or gemini: its edits are backed up from now on\n   \
              turnback doctor                 # check that it is protected\n   \
              turnback log                    # after the agent's work: what it changed\n   \
              turnback undo                   # take its last change back (turnback redo puts it back)\n   \
              Run `turnback --help` for every command, and see README.md.\n";
        s
    }
}

/// Runs the demo in a scratch directory, deleted at the end. `style` is how
/// the report will be shown, for the second process to colour its output
/// the same way.
pub(crate) fn run(style: Out, _: &DemoArgs) -> Result<Demo, CliError> {
    let scratch = std::env::temp_dir().join(format!("turnback-demo-{}", std::process::id()));
    let result = script(style, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn indented(text: &str) -> String {
    text.lines().map(|l| format!("   {l}\n")).collect()
}

fn script(style: Out, scratch: &Path) -> Result<Demo, CliError> {
    let home = scratch.join("store");
    let dir = scratch.join("workspace");
    for (path, contents) in START {
        put(&dir.join(path), contents)?;
    }
    let store = Store::new(&home);
    let session = store.session("demo-agent")?;
    let ws = Workspace::open(&dir)?;

    agent(&session, &ws)?;
    let entries = session.entries()?;
    let diff = session.diff(None)?;
    let undo = session.undo(RevertOptions::default())?;

    put(
        &dir.join("src/util.rs"),
        "pub fn helper() -> u32 {\n    7 // by hand\n}\n",
    )?;
    let refusal = match session.rewind("msg-1", RevertOptions::default()) {
        Err(e @ Error::Refused { .. }) => CliError::from(e),
        other => return Err(unexpected("a refusal", &format!("{other:?}"))),
    };

    let second = second_process(style, &home, &dir)?;

    let forced = RevertOptions {
        force: true,
        dry_run: false,
    };
    let rewind = session.rewind("msg-1", forced)?;
    check_back_to_start(&dir)?;
    Ok(Demo {
        workspace: dir,
        store: home,
        session: session.id().to_owned(),
        entries,
        diff,
        undo,
        refusal,
        second,
        rewind,
    })
}

/// The scripted agent: creates, edits and deletes files across three messages.
fn agent(session: &Session, ws: &Workspace) -> Result<(), CliError> {
    let lib2 = "pub mod util;\n\npub fn answer() -> u32 {\n    util::helper() + 1\n}\n";
    session.write(ws, "src/lib.rs", lib2.as_bytes(), "msg-1")?;
    session.write(
        ws,
        "src/util.rs",
        &b"pub fn helper() -> u32 {\n    41\n}\n"[..],
        "msg-1",
    )?;
    session.remove(ws, "NOTES.md", "msg-2")?;
    let lib3 =
        "pub mod util;\n\n/// The answer.\npub fn answer() -> u32 {\n    util::helper() + 1\n}\n";
    session.write(ws, "src/lib.rs", lib3.as_bytes(), "msg-3")?;
    session.write(
        ws,
        "docs/guide.md",
        &b"# Guide\n\nCall `answer()`.\n"[..],
        "msg-3",
    )?;
    Ok(())
}

/// Runs this same binary as a second process, as a person at another shell.
fn second_process(style: Out, home: &Path, dir: &Path) -> Result<String, CliError> {
    let exe = std::env::current_exe().map_err(|e| CliError::new(format!("demo: {e}"), None))?;
    let color = if style.color { "always" } else { "never" };
    let o = Command::new(exe)
        .args(["revert", "src/lib.rs", "--color", color])
        .current_dir(dir)
        .env("TURNBACK_HOME", home)
        .env_remove("TURNBACK_SESSION")
        .env_remove("TURNBACK_WORKSPACE")
        .output()
        .map_err(|e| CliError::new(format!("demo: could not run a second turnback: {e}"), None))?;
    if !o.status.success() {
        return Err(unexpected(
            "the second process to succeed",
            &String::from_utf8_lossy(&o.stderr),
        ));
    }
    Ok(format!(
        "$ turnback revert src/lib.rs\n{}{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    ))
}

fn check_back_to_start(dir: &Path) -> Result<(), CliError> {
    for (path, contents) in START {
        let now = std::fs::read_to_string(dir.join(path)).unwrap_or_default();
        if now != *contents {
            return Err(unexpected(&format!("{path} as it started"), &now));
        }
    }
    for gone in ["src/util.rs", "docs"] {
        if dir.join(gone).exists() {
            return Err(unexpected(&format!("{gone} gone"), "it is still there"));
        }
    }
    Ok(())
}

fn put(path: &PathBuf, contents: &str) -> Result<(), CliError> {
    let io = |e: std::io::Error| CliError::new(format!("demo: {}: {e}", path.display()), None);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, contents).map_err(io)
}

fn unexpected(wanted: &str, got: &str) -> CliError {
    CliError::new(
        format!("demo: expected {wanted}, got {got}"),
        Some("this is a bug in turnback; please report it".into()),
    )
}
