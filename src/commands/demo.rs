//! `turnback demo`: a short scripted agent session in a scratch directory, so a
//! new user sees what turnback does before trusting it with real files. It runs
//! the agent through the library and shows each step as the commands print it;
//! one step runs `turnback revert` as a second process, as a person at another
//! shell would.

use std::path::{Path, PathBuf};
use std::process::Command;

use turnback_store::{Error, RevertOptions, Session, Store, Workspace};

use crate::commands::CliError;
use turnback::output::{Out, Role};
use turnback::text;

const START: &[(&str, &str)] = &[
    ("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n"),
    ("NOTES.md", "- remember the milk\n"),
];

pub(crate) fn run(out: &Out) -> Result<(), CliError> {
    let scratch = std::env::temp_dir().join(format!("turnback-demo-{}", std::process::id()));
    let result = script(out, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn step(out: &Out, n: u32, what: &str) {
    out.line(&format!(
        "\n{}",
        out.paint(Role::Header, &format!("{n}. {what}"))
    ));
}

fn indented(out: &Out, text: &str) {
    out.print(
        &text
            .lines()
            .map(|l| format!("   {l}\n"))
            .collect::<String>(),
    );
}

fn script(out: &Out, scratch: &Path) -> Result<(), CliError> {
    let home = scratch.join("store");
    let dir = scratch.join("workspace");
    for (path, contents) in START {
        put(&dir.join(path), contents)?;
    }
    let store = Store::new(&home);
    let session = store.session("demo-agent")?;
    let ws = Workspace::open(&dir)?;
    out.line(&format!(
        "A scratch workspace with src/lib.rs and NOTES.md, and a store for it (both are deleted at the end):\n   workspace: {}\n   store:     {}",
        dir.display(),
        home.display()
    ));

    step(
        out,
        1,
        "An agent edits through turnback in three messages; each change is backed up first.",
    );
    agent(&session, &ws)?;
    indented(out, &text::log(out, session.id(), &session.entries()?));

    step(
        out,
        2,
        "`turnback diff` shows each file against its first backup.",
    );
    indented(out, &text::diff(out, &session.diff(None)?, false));

    step(
        out,
        3,
        "`turnback undo` reverts the newest change: msg-3's new docs/guide.md goes.",
    );
    let r = session.undo(RevertOptions::default())?;
    indented(out, &text::revert(out, "undo", &r, &[]));

    step(
        out,
        4,
        "You fix src/util.rs by hand; a rewind would lose that, so it is refused.",
    );
    put(
        &dir.join("src/util.rs"),
        "pub fn helper() -> u32 {\n    7 // by hand\n}\n",
    )?;
    match session.rewind("msg-1", RevertOptions::default()) {
        Err(e @ Error::Refused { .. }) => {
            let e = CliError::from(e);
            let shown = format!(
                "$ turnback rewind msg-1\n{}(exit code {})",
                e.text(),
                e.code()
            );
            indented(out, &shown)
        }
        other => return Err(unexpected("a refusal", &format!("{other:?}"))),
    }

    step(
        out,
        5,
        "From another shell, `turnback revert src/lib.rs` finds the session by itself.",
    );
    indented(out, &second_process(out, &home, &dir)?);

    step(
        out,
        6,
        "`turnback rewind msg-1 --force` puts every file back as it was before the agent.",
    );
    let forced = RevertOptions {
        force: true,
        dry_run: false,
    };
    let r = session.rewind("msg-1", forced)?;
    indented(out, &text::revert(out, "rewind to before msg-1", &r, &[]));
    check_back_to_start(&dir)?;
    out.line("   The workspace is exactly as it started: src/lib.rs and NOTES.md, nothing else.");

    out.line(&format!(
        "\n{}",
        out.paint(Role::Header, "On your own files:")
    ));
    out.print(
        "   export TURNBACK_SESSION=my-agent-1         # the agent's conversation id\n   \
         printf 'new text\\n' | turnback write notes.txt --message call-1\n   \
         turnback rm old.txt --message call-2\n   \
         turnback log; turnback diff; turnback undo --dry-run; turnback undo\n   \
         Run `turnback --help` for every command, and see README.md.\n",
    );
    Ok(())
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
fn second_process(out: &Out, home: &Path, dir: &Path) -> Result<String, CliError> {
    let exe = std::env::current_exe().map_err(|e| CliError::new(format!("demo: {e}"), None))?;
    let color = if out.color { "always" } else { "never" };
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
