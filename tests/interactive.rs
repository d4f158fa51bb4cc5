//! What needs a person at a terminal: the rewind picker (run under a real
//! pseudo-terminal with util-linux's `script`), and the example agent of
//! `examples/agent.rs`, driven line by line as a person would type.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use turnback_store::Store;

use crate::util::{self, Env};

/// `turnback ARGS` under a pseudo-terminal, with no session named.
fn on_a_terminal(env: &Env, args: &str, typed: &str) -> (String, i32) {
    util::on_a_terminal(env, None, args, typed)
}

/// Three turns through the library: a file per turn, and an edit in the last.
fn three_turns() -> Env {
    let env = Env::new();
    let s = env.session("agent");
    let ws = env.workspace();
    for (n, prompt) in ["write a", "write b", "write c and edit a"]
        .iter()
        .enumerate()
    {
        s.begin_turn(prompt, Some(n as u64 * 2)).unwrap();
        let name = ["a.txt", "b.txt", "c.txt"][n];
        s.write(&ws, name, name.as_bytes(), &format!("m{n}"))
            .unwrap();
    }
    s.write(&ws, "a.txt", &b"a, edited"[..], "m2-edit").unwrap();
    env
}

#[test]
fn the_picker_lists_turns_previews_and_rewinds_on_yes() {
    let env = three_turns();
    let (shown, code) = on_a_terminal(&env, "rewind", "2\ny\n");
    assert_eq!(code, 0, "{shown}");
    let listed: Vec<&str> = shown.lines().filter(|l| l.contains("UTC")).collect();
    assert_eq!(listed.len(), 3, "{shown}");
    assert!(
        listed[0].contains("\"write c and edit a\"") && listed[0].contains(" 2 files"),
        "newest first:\n{shown}"
    );
    assert!(listed[2].contains("\"write a\""), "{shown}");
    assert!(
        shown.contains("would change 3 files (dry run, nothing touched)"),
        "{shown}"
    );
    assert!(
        shown.contains("+a, edited") || shown.contains("-a, edited"),
        "the preview has a diff:\n{shown}"
    );
    assert!(
        shown.contains("Restore 3 files to how they were when turn 2 began? [y/N]"),
        "{shown}"
    );
    assert!(
        shown.contains("rewind to the start of turn 2 in session agent: 3 files"),
        "{shown}"
    );
    assert_eq!(std::fs::read(env.path("a.txt")).unwrap(), b"a.txt");
    assert!(!env.path("b.txt").exists() && !env.path("c.txt").exists());
    let bounds = env
        .store()
        .open_session("agent")
        .unwrap()
        .turn_bounds()
        .unwrap();
    assert_eq!(bounds.iter().map(|t| t.number).collect::<Vec<_>>(), [1]);
}

#[test]
fn the_picker_touches_nothing_unless_told_yes() {
    for typed in ["q\n", "2\nn\n", "2\n\n", "7\nq\n"] {
        let env = three_turns();
        let before = util::tree_digest(env.ws.path());
        let (shown, code) = on_a_terminal(&env, "rewind", typed);
        assert_eq!(code, 0, "{typed:?}: {shown}");
        assert!(shown.contains("nothing done"), "{typed:?}: {shown}");
        assert_eq!(
            util::tree_digest(env.ws.path()),
            before,
            "{typed:?} touched files"
        );
    }
}

#[test]
fn the_picker_pages_through_a_long_session() {
    let env = Env::new();
    let s = env.session("long");
    let ws = env.workspace();
    for n in 1..=23 {
        s.begin_turn(&format!("turn number {n}"), None).unwrap();
        s.write(&ws, format!("f{n}"), &b"x"[..], &format!("m{n}"))
            .unwrap();
    }
    let (shown, code) = on_a_terminal(&env, "rewind", "n\nn\np\nq\n");
    assert_eq!(code, 0, "{shown}");
    for window in ["(1-10 of 23)", "(11-20 of 23)", "(21-23 of 23)"] {
        assert!(shown.contains(window), "{window}: {shown}");
    }
    assert!(shown.contains("\"turn number 23\"") && shown.contains("\"turn number 1\""));
    assert_eq!(
        std::fs::read_dir(env.ws.path()).unwrap().count(),
        23,
        "nothing rewound"
    );
}

/// The example agent (`examples/agent.rs`), built here by cargo, in the
/// profile and target directory of the binary under test: `cargo test --test
/// tests` builds no example, so without this the test ran whatever agent an
/// earlier `cargo test --workspace` had left (or none). Fails, with cargo's
/// errors, if it cannot be built.
pub(crate) fn example_agent() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let bin = util::bin();
            let profile_dir = bin.parent().unwrap();
            let profile = match profile_dir.file_name().unwrap().to_str().unwrap() {
                "debug" => "dev",
                other => other,
            };
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new(cargo)
                .args(["build", "--example", "agent", "--profile", profile])
                .arg("--message-format=json-render-diagnostics")
                .arg("--manifest-path")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
                .arg("--target-dir")
                .arg(profile_dir.parent().unwrap())
                .stdin(Stdio::null())
                .output()
                .expect("cargo runs");
            assert!(
                out.status.success(),
                "cargo could not build examples/agent.rs:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let built = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "agent")
                .and_then(|m| m["executable"].as_str().map(PathBuf::from))
                .expect("cargo names the agent it built");
            assert!(built.is_file(), "{} is missing", built.display());
            built
        })
        .clone()
}

#[test]
fn the_example_agent_undoes_redoes_and_rewinds_files_and_conversation() {
    let env = Env::new();
    let typed = "make a hello world\nadd a greeting\ntidy the notes\nclean up\n\
                 /diff\n/undo\n/redo\n/rewind\n2\ny\n/log\n/quit\n";
    let mut child = Command::new(example_agent())
        .arg(env.ws.path())
        .arg(env.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example agent runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(typed.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{shown}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Four turns of tool calls: writes, edits, a move and a delete.
    for call in [
        "write src/main.rs",
        "edit src/main.rs",
        "move NOTES.md -> docs/NOTES.md",
        "delete src/greet.rs",
    ] {
        assert!(shown.contains(call), "{call}: {shown}");
    }
    // /diff after the four turns: each file against what it was before the
    // session (what is gone again, src/greet.rs and NOTES.md, is no change),
    // and nothing else in the output of that command.
    let outputs: Vec<&str> = shown.split("\n> ").collect();
    assert_eq!(
        outputs[5],
        "docs/NOTES.md: new file, +2 -0\n\
         --- /dev/null\n\
         +++ b/docs/NOTES.md\n\
         @@ -0,0 +1,2 @@\n\
         +# Notes\n\
         +- removed greet.rs\n\
         src/main.rs: new file, +4 -0\n\
         --- /dev/null\n\
         +++ b/src/main.rs\n\
         @@ -0,0 +1,4 @@\n\
         +fn main() {\n\
         +    println!(\"hello\");\n\
         +}\n\
         +// greets the user\n\
         2 files changed, 6 insertions(+), 0 deletions(-)",
        "what /diff showed"
    );
    // /undo took back the last edit of docs/NOTES.md, /redo put it back.
    assert!(
        shown.contains("undo in session") && shown.contains("redo in session"),
        "{shown}"
    );
    // /rewind with the picker: turn 2's start, files and conversation.
    assert!(
        shown.contains("Rewind to the start of which turn?"),
        "{shown}"
    );
    assert!(
        shown.contains("conversation rewound to 2 messages"),
        "{shown}"
    );
    assert_eq!(
        util::read_text(env.path("src/main.rs")),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
    assert_eq!(util::read_text(env.path("NOTES.md")), "# Notes\n");
    assert!(!env.path("docs").exists() && !env.path("src/greet.rs").exists());
    // What the store holds agrees: turn 1 only, its two writes.
    let store = Store::new(env.home.path());
    let ids = store.session_ids().unwrap();
    assert_eq!(ids.len(), 1);
    let session = store.open_session(&ids[0]).unwrap();
    assert_eq!(session.turn_bounds().unwrap().len(), 1);
    let paths: Vec<String> = session
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(paths, ["src/main.rs", "NOTES.md"]);
}
