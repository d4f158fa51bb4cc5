//! `turnback demo`: a short scripted agent session in a scratch directory, so a
//! new user sees what turnback does before trusting it with real files.

use std::path::Path;

use turnback_store::{Error, RevertOptions, Store, Workspace};

use crate::commands::CliError;
use crate::report;

pub(crate) fn run() -> Result<(), CliError> {
    let scratch = std::env::temp_dir().join(format!("turnback-demo-{}", std::process::id()));
    let result = script(&scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn script(scratch: &Path) -> Result<(), CliError> {
    let io = |e: std::io::Error| CliError::new(format!("demo: {e}"), None);
    let home = scratch.join("store");
    let dir = scratch.join("workspace");
    std::fs::create_dir_all(dir.join("src")).map_err(io)?;
    std::fs::write(dir.join("src/lib.rs"), "pub fn answer() -> u32 { 41 }\n").map_err(io)?;
    std::fs::write(dir.join("NOTES.md"), "remember the milk\n").map_err(io)?;

    let store = Store::new(&home);
    let session = store.session("demo")?;
    let ws = Workspace::open(&dir)?;
    println!(
        "A scratch workspace at {} holds src/lib.rs and NOTES.md.",
        dir.display()
    );

    println!("\n1. The agent writes through turnback: every change is backed up first.");
    session.write(
        &ws,
        "src/lib.rs",
        &b"pub fn answer() -> u32 { 42 }\n"[..],
        "msg-1",
    )?;
    session.write(&ws, "src/util.rs", &b"pub fn helper() {}\n"[..], "msg-1")?;
    session.remove(&ws, "NOTES.md", "msg-2")?;
    session.write(
        &ws,
        "src/lib.rs",
        &b"pub fn answer() -> u32 { 43 }\n"[..],
        "msg-3",
    )?;
    for e in session.entries()? {
        println!("   {}", report::entry_line(&e));
    }

    println!("\n2. `undo` reverts the newest change (msg-3's edit of src/lib.rs).");
    print!(
        "{}",
        indent(&report::revert_text(
            &session.undo(RevertOptions::default())?
        ))
    );
    println!("   src/lib.rs now: {}", read(&dir.join("src/lib.rs")));

    println!(
        "\n3. Someone edits src/lib.rs by hand; a rewind to msg-1 is refused, nothing touched."
    );
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn answer() -> u32 { 7 } // by hand\n",
    )
    .map_err(io)?;
    match session.rewind("msg-1", RevertOptions::default()) {
        Err(e @ Error::Refused { .. }) => println!("   refused: {e}"),
        other => {
            return Err(CliError::new(
                format!("demo: expected a refusal, got {other:?}"),
                None,
            ));
        }
    }

    println!("\n4. With --force the rewind restores every file as it was before msg-1.");
    let opts = RevertOptions {
        force: true,
        dry_run: false,
    };
    print!(
        "{}",
        indent(&report::revert_text(&session.rewind("msg-1", opts)?))
    );
    println!("   src/lib.rs now: {}", read(&dir.join("src/lib.rs")));
    println!("   NOTES.md now: {}", read(&dir.join("NOTES.md")));
    println!(
        "   src/util.rs exists: {}",
        dir.join("src/util.rs").exists()
    );

    println!("\nOn real files: export TURNBACK_SESSION=my-agent, then have the agent run");
    println!(
        "`turnback write FILE < new-contents` and `turnback rm FILE`; undo with `turnback undo`,"
    );
    println!("`turnback revert FILE` or `turnback rewind MESSAGE` from any shell.");
    Ok(())
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_else(|_| "(absent)".into())
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("   {l}\n")).collect()
}
