//! What a write and a restore keep of a file besides its bytes, and what the
//! command line makes of what it is given: owners and setuid bits, a missing or
//! cut standard input, hard links, control characters in names, sparse files.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::util::{self, Env};

/// Runs `turnback ARGS` under a pseudo-terminal (util-linux's `script`), typing
/// `typed`; returns what the terminal showed and the exit code.
fn on_a_terminal(env: &Env, session: &str, args: &str, typed: &str) -> (String, i32) {
    let line = format!("{} {args} --color never", util::bin().display());
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(env.ws.path())
        .env("TURNBACK_HOME", env.home.path())
        .env("TURNBACK_SESSION", session)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs the command under a pseudo-terminal");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(typed.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).replace('\r', ""),
        out.status.code().unwrap_or(-1),
    )
}

// ------------------------------------------------ control characters in names

/// A raw control character (C0 but the line ends the output itself makes, DEL,
/// C1) in `s`, if any.
fn raw_control(s: &str) -> Option<char> {
    s.chars()
        .find(|&c| (c < ' ' && c != '\n') || c == '\x7f' || ('\u{80}'..='\u{9f}').contains(&c))
}

#[test]
fn control_characters_in_names_ids_and_prompts_are_escaped_in_text_but_not_in_json() {
    let env = Env::new();
    let s = env.session("agent");
    let ws = env.workspace();
    let name = "a\x1b[2Jb\nc";
    let message = "call\x1b]0;pwned\x07-1\u{9b}";
    s.begin_turn("clear \x1b[2J the screen", None).unwrap();
    s.write(&ws, name, &b"x\n"[..], message).unwrap();

    let log = env
        .cmd(Some("agent"))
        .args(["log", "--color", "never"])
        .output()
        .unwrap();
    assert!(log.status.success());
    let shown = String::from_utf8(log.stdout).unwrap();
    assert_eq!(raw_control(&shown), None, "{shown:?}");
    // A header, the message line and the entry line: the newline in the
    // name makes no line of its own.
    assert_eq!(shown.lines().count(), 3, "{shown:?}");
    assert!(shown.contains(r"a\e[2Jb\nc"), "{shown:?}");
    assert!(shown.contains(r"call\e]0;pwned\x07-1\u{9b}"), "{shown:?}");

    // JSON escapes by itself: the name comes back exactly.
    let json = env
        .cmd(Some("agent"))
        .args(["log", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["entries"][0]["path"], name);
    assert_eq!(v["entries"][0]["message_id"], message);

    // A preview, a diff and an error line name the file too.
    for args in [
        &["undo", "--dry-run", "--color", "never"][..],
        &["diff", "--color", "never"],
    ] {
        let out = env.cmd(Some("agent")).args(args).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(r"a\e[2Jb\nc"), "{args:?}: {text:?}");
        assert_eq!(raw_control(&text), None, "{args:?}: {text:?}");
    }
    let err = env
        .cmd(Some("agent"))
        .args(["rm", "gone\x1b[31m", "--color", "never"])
        .output()
        .unwrap();
    let text = String::from_utf8(err.stderr).unwrap();
    assert!(!err.status.success());
    assert!(text.contains(r"gone\e[31m"), "{text:?}");
    assert_eq!(raw_control(&text), None, "{text:?}");

    // The picker and its preview, on a terminal.
    let (shown, code) = on_a_terminal(&env, "agent", "rewind", "1\nn\n");
    assert_eq!(code, 0, "{shown:?}");
    assert!(shown.contains("nothing done"), "{shown:?}");
    assert!(
        shown.contains(r"a\e[2Jb\nc"),
        "the preview names the file: {shown:?}"
    );
    assert_eq!(raw_control(&shown), None, "{shown:?}");
}
