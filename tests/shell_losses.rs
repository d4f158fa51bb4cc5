//! Shell brackets that once lost or hid work, through `turnback run` as real
//! processes: each test failed before its fix.

use std::process::{Command, Output};

use crate::util::Env;

/// `turnback ARGS` in the workspace under an open-file limit of `fds` (a
/// macOS shell allows 256), set by the shell that then becomes turnback.
fn limited(env: &Env, fds: u32, session: Option<&str>, args: &[&str]) -> Output {
    let mut c: Command = env.command("sh", session);
    c.arg("-c")
        .arg(format!("ulimit -n {fds} && exec \"$0\" \"$@\""))
        .arg(crate::util::bin())
        .args(args);
    c.output().unwrap()
}

fn ok(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The number of the files a command made, recorded, undone and redone
/// under an open-file limit far below it: the locks of a bracket's files no
/// longer take one descriptor each, nor does a revert's work.
#[test]
fn a_command_that_makes_many_files_is_recorded_and_undone_under_a_low_file_limit() {
    let env = Env::new();
    let files = 1_000;
    let made = format!("mkdir g && cd g && seq -f f%g 1 {files} | xargs touch");
    std::fs::write(env.path("kept.txt"), "before\n").unwrap();
    let edit = format!("{made} && echo after > ../kept.txt");
    let out = limited(&env, 48, None, &["--json", "run", "--", "sh", "-c", &edit]);
    let report: serde_json::Value = serde_json::from_str(&ok(out, "run")).unwrap();
    let changes = report["changes"].as_array().unwrap();
    // The files, their directory and kept.txt.
    assert_eq!(changes.len(), files + 2, "{report}");
    let session = report["session"].as_str().unwrap().to_owned();
    ok(
        limited(&env, 48, Some(&session), &["undo"]),
        "undo under the limit",
    );
    assert!(!env.path("g").exists(), "the made directory is still there");
    assert_eq!(std::fs::read(env.path("kept.txt")).unwrap(), b"before\n");
    ok(
        limited(&env, 48, Some(&session), &["redo"]),
        "redo under the limit",
    );
    assert_eq!(std::fs::read_dir(env.path("g")).unwrap().count(), files);
    assert_eq!(std::fs::read(env.path("kept.txt")).unwrap(), b"after\n");
}
