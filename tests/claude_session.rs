//! A whole Claude Code session played as Claude Code plays it, without
//! Claude Code: `turnback install claude-code` writes the settings, this test
//! reads them back and runs the configured commands as Claude Code does (exec
//! form, `cwd` the project, `CLAUDE_PROJECT_DIR` and `CLAUDE_PID` set, the
//! event as JSON on stdin, the PostToolUse hooks of parallel calls at once),
//! over several turns: writes, edits, a failed edit, a denied one, shell
//! edits, a second session on the same workspace. Then another process
//! rewinds, and every file is checked. Run with `--nocapture` for the
//! transcript.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::util::{Env, read_text, run_ok, tree_digest};

/// The hooks Claude Code would run, read from the settings file install wrote.
struct Claude {
    ws: PathBuf,
    home: PathBuf,
    store: PathBuf,
    hooks: Value,
    session: String,
    log: Vec<String>,
}

/// Claude Code's matcher: absent, empty or `*` is every tool; letters,
/// digits, `_`, `|` and `,` are exact names. (turnback's hooks use no regex.)
fn matches(matcher: Option<&str>, tool: Option<&str>) -> bool {
    match (matcher, tool) {
        (None | Some("") | Some("*"), _) => true,
        (Some(m), Some(t)) => {
            assert!(
                m.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_|, -".contains(c)),
                "a regex matcher: {m}"
            );
            m.split(['|', ',']).any(|n| n.trim() == t)
        }
        (Some(_), None) => true,
    }
}

impl Claude {
    fn new(env: &Env, home: &Path, session: &str) -> Claude {
        let settings = env.path(".claude/settings.local.json");
        let v: Value = serde_json::from_str(&read_text(&settings)).unwrap();
        Claude {
            ws: env.ws.path().to_owned(),
            home: home.to_owned(),
            store: env.home.path().to_owned(),
            hooks: v["hooks"].clone(),
            session: session.to_owned(),
            log: Vec::new(),
        }
    }

    /// The commands configured for `event` (and `tool`), started with
    /// `payload` on stdin, all at once as Claude Code runs matching hooks.
    fn start(&self, event: &str, tool: Option<&str>, payload: &Value) -> Vec<Child> {
        let mut children = Vec::new();
        for group in self.hooks[event].as_array().into_iter().flatten() {
            if !matches(group["matcher"].as_str(), tool) {
                continue;
            }
            for h in group["hooks"].as_array().unwrap() {
                assert_eq!(h["type"], "command");
                let args: Vec<String> = h["args"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|x| {
                                x.as_str()
                                    .unwrap()
                                    .replace("${CLAUDE_PROJECT_DIR}", self.ws.to_str().unwrap())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut c = Command::new(h["command"].as_str().unwrap());
                c.args(&args)
                    .current_dir(&self.ws)
                    .env("HOME", &self.home)
                    .env("TURNBACK_HOME", &self.store)
                    .env_remove("TURNBACK_SESSION")
                    .env_remove("TURNBACK_WORKSPACE")
                    .env("CLAUDE_PROJECT_DIR", &self.ws)
                    .env("CLAUDE_PID", std::process::id().to_string())
                    .env("CLAUDE_CODE_SESSION_ID", &self.session)
                    .env("CLAUDECODE", "1")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let mut child = c.spawn().unwrap();
                use std::io::Write;
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(payload.to_string().as_bytes()).unwrap();
                drop(stdin);
                children.push(child);
            }
        }
        children
    }

    /// Calls of one message that run at once, as Claude Code runs them:
    /// each its own PreToolUse, then (as soon as that is done) its
    /// PostToolUse, so one call's Pre may overlap another's Post.
    fn parallel(&mut self, tool: &str, calls: &[(&str, &Value)]) {
        let mut pres: Vec<Option<Vec<Child>>> = calls
            .iter()
            .map(|(id, input)| {
                let p = self.tool_payload("PreToolUse", id, tool, input);
                Some(self.start("PreToolUse", Some(tool), &p))
            })
            .collect();
        let mut posts = Vec::new();
        while pres.iter().any(Option::is_some) {
            for (i, slot) in pres.iter_mut().enumerate() {
                let ended = slot.as_mut().is_some_and(|children| {
                    children.iter_mut().all(|c| c.try_wait().unwrap().is_some())
                });
                if ended {
                    let (id, input) = calls[i];
                    self.finish(
                        &format!("PreToolUse {tool} {id} (parallel)"),
                        slot.take().unwrap(),
                    );
                    let p = self.tool_payload("PostToolUse", id, tool, input);
                    posts.push((id, self.start("PostToolUse", Some(tool), &p)));
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for (id, children) in posts {
            self.finish(&format!("PostToolUse {tool} {id} (parallel)"), children);
        }
    }

    /// Waits for hooks started by [`Claude::start`]: each must exit 0 with
    /// nothing on stdout.
    fn finish(&mut self, what: &str, children: Vec<Child>) {
        let n = children.len();
        assert!(n > 0, "{what}: no hook is configured");
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{what}: {out:?}");
            assert!(
                out.stdout.is_empty(),
                "{what}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        let line = format!("[{}] {what}: {n} hook(s), exit 0, silent", &self.session);
        println!("{line}");
        self.log.push(line);
    }

    fn base(&self, event: &str) -> Value {
        json!({
            "session_id": self.session,
            "transcript_path": self.home.join(format!(".claude/projects/p/{}.jsonl", self.session)),
            "cwd": self.ws,
            "permission_mode": "acceptEdits",
            "hook_event_name": event,
        })
    }

    fn event(&mut self, event: &str, extra: Value) {
        let mut p = self.base(event);
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        let children = self.start(event, None, &p);
        self.finish(event, children);
    }

    fn prompt(&mut self, text: &str) {
        self.event("UserPromptSubmit", json!({ "prompt": text }));
    }

    fn tool_payload(&self, event: &str, id: &str, tool: &str, input: &Value) -> Value {
        let mut p = self.base(event);
        p["tool_name"] = tool.into();
        p["tool_input"] = input.clone();
        p["tool_use_id"] = id.into();
        p
    }

    fn pre(&mut self, id: &str, tool: &str, input: &Value) {
        let p = self.tool_payload("PreToolUse", id, tool, input);
        let c = self.start("PreToolUse", Some(tool), &p);
        self.finish(&format!("PreToolUse {tool} {id}"), c);
    }

    fn post(&mut self, id: &str, tool: &str, input: &Value) {
        let mut p = self.tool_payload("PostToolUse", id, tool, input);
        p["tool_response"] = json!({"success": true});
        let c = self.start("PostToolUse", Some(tool), &p);
        self.finish(&format!("PostToolUse {tool} {id}"), c);
    }

    fn failed(&mut self, id: &str, tool: &str, input: &Value, error: &str) {
        let mut p = self.tool_payload("PostToolUseFailure", id, tool, input);
        p["error"] = error.into();
        p["is_interrupt"] = false.into();
        let c = self.start("PostToolUseFailure", Some(tool), &p);
        self.finish(&format!("PostToolUseFailure {tool} {id}"), c);
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }

    /// A `Write` tool call: Pre, the tool, Post.
    fn write(&mut self, id: &str, rel: &str, contents: &str) {
        let input = json!({"file_path": self.path(rel), "content": contents});
        self.pre(id, "Write", &input);
        if let Some(d) = self.path(rel).parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(self.path(rel), contents).unwrap();
        self.post(id, "Write", &input);
    }

    /// An `Edit` tool call: Pre, the tool, Post.
    fn edit(&mut self, id: &str, rel: &str, old: &str, new: &str) {
        let input = self.edit_input(rel, old, new);
        self.pre(id, "Edit", &input);
        self.apply_edit(rel, old, new);
        self.post(id, "Edit", &input);
    }

    fn edit_input(&self, rel: &str, old: &str, new: &str) -> Value {
        json!({"file_path": self.path(rel), "old_string": old, "new_string": new, "replace_all": false})
    }

    fn apply_edit(&self, rel: &str, old: &str, new: &str) {
        let text = read_text(self.path(rel));
        assert!(text.contains(old), "{rel}: {old:?} not in {text:?}");
        std::fs::write(self.path(rel), text.replacen(old, new, 1)).unwrap();
    }
}

fn digest(ws: &Path) -> BTreeMap<PathBuf, String> {
    tree_digest(ws)
}

fn rewind(env: &Env, session: &str, args: &[&str]) -> String {
    let mut c = env.cmd(Some(session));
    c.arg("rewind").args(args);
    let out = run_ok(c, b"", "rewind");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!(
        "$ turnback --session {session} rewind {}\n{text}",
        args.join(" ")
    );
    text
}

#[test]
fn a_whole_claude_code_session_through_the_installed_hooks_then_a_rewind_from_another_process() {
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(env.path("notes.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(env.path("README.md"), "# app\n").unwrap();
    let mut c = env.cmd(None);
    c.args(["install", "claude-code"]).env("HOME", home.path());
    let said = run_ok(c, b"", "install");
    println!(
        "$ turnback install claude-code\n{}",
        String::from_utf8_lossy(&said.stdout)
    );

    let mut a = Claude::new(&env, home.path(), "9f0c1e2a-aaaa-4bbb-8ccc-000000000001");
    a.event("SessionStart", json!({"source": "startup"}));
    let start = digest(env.ws.path());

    // Turn 1: two Writes of one message, one after the other.
    a.prompt("create the library");
    a.write(
        "toolu_01",
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    );
    a.write("toolu_02", "src/main.rs", "fn main() {}\n");
    a.event("Stop", json!({"stop_hook_active": false}));
    let after_turn_1 = digest(env.ws.path());

    // Turn 2: an edit; a failed edit; a denied write; shell calls, two of
    // them at once (each its Pre, command and Post, as Claude Code runs
    // read-only Bash calls: one's Pre overlaps the other's Post).
    a.prompt("rename add to sum, and tidy up");
    a.edit("toolu_03", "src/lib.rs", "pub fn add", "pub fn sum");
    let bad = a.edit_input("README.md", "not there", "x");
    a.pre("toolu_04", "Edit", &bad);
    a.failed(
        "toolu_04",
        "Edit",
        &bad,
        "String to replace not found in file.",
    );
    let denied = json!({"file_path": a.path("secret.txt"), "content": "no"});
    a.pre("toolu_05", "Write", &denied); // the person said no: nothing follows
    let ls = json!({"command": "ls src", "description": "list"});
    let cat = json!({"command": "cat notes.txt", "description": "read"});
    a.parallel("Bash", &[("toolu_06", &ls), ("toolu_07", &cat)]);
    // A shell edit: one step of its call, found by the scan bracket.
    let sed = json!({"command": "sed -i s/alpha/ALPHA/ notes.txt", "description": "edit"});
    a.pre("toolu_08", "Bash", &sed);
    std::fs::write(env.path("notes.txt"), "ALPHA\nbeta\n").unwrap();
    a.post("toolu_08", "Bash", &sed);
    // A slash command's call of turnback itself.
    let log = json!({"command": format!("{} log", crate::util::bin().display())});
    a.pre("toolu_09", "Bash", &log);
    a.post("toolu_09", "Bash", &log);
    a.event("Stop", json!({"stop_hook_active": false}));
    let after_turn_2 = digest(env.ws.path());

    // Turn 3, with a second session on the same workspace: B's edit of
    // src/lib.rs waits for A's mark, then backs up A's "after".
    a.prompt("add a doc comment");
    let mut b = Claude::new(&env, home.path(), "9f0c1e2a-bbbb-4bbb-8ccc-000000000002");
    b.event("SessionStart", json!({"source": "startup"}));
    b.prompt("make sum const");
    let a_input = a.edit_input("src/lib.rs", "pub fn sum", "/// Adds.\npub fn sum");
    a.pre("toolu_10", "Edit", &a_input);
    let b_input = b.edit_input("src/lib.rs", "pub fn sum", "pub const fn sum");
    let b_pre = b.start(
        "PreToolUse",
        Some("Edit"),
        &b.tool_payload("PreToolUse", "toolu_b1", "Edit", &b_input),
    );
    a.apply_edit("src/lib.rs", "pub fn sum", "/// Adds.\npub fn sum");
    a.post("toolu_10", "Edit", &a_input);
    b.finish("PreToolUse Edit toolu_b1 (waited for A's mark)", b_pre);
    b.apply_edit("src/lib.rs", "pub fn sum", "pub const fn sum");
    b.post("toolu_b1", "Edit", &b_input);
    b.event("Stop", json!({"stop_hook_active": false}));
    a.write("toolu_11", "src/extra.rs", "// extra\n");
    a.event("Stop", json!({"stop_hook_active": false}));
    a.event("SessionEnd", json!({"reason": "other"}));
    b.event("SessionEnd", json!({"reason": "other"}));
    assert_eq!(
        read_text(env.path("src/lib.rs")),
        "/// Adds.\npub const fn sum(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    );

    // What the store holds: no entry left open, the failed and denied calls
    // dropped, the read-only shell calls found nothing, the shell edit
    // recorded under its call.
    let store = env.store();
    let sa = store.open_session(&a.session).unwrap();
    let ids: Vec<String> = sa
        .entries()
        .unwrap()
        .iter()
        .map(|e| e.message_id.clone())
        .collect();
    assert_eq!(
        ids,
        [
            "toolu_01", "toolu_02", "toolu_03", "toolu_08", "toolu_10", "toolu_11"
        ]
    );
    assert!(sa.entries().unwrap().iter().all(|e| e.is_committed()));
    let prompts: Vec<String> = sa
        .turns()
        .unwrap()
        .into_iter()
        .map(|t| t.turn.prompt)
        .collect();
    assert_eq!(
        prompts,
        [
            "create the library",
            "rename add to sum, and tidy up",
            "add a doc comment"
        ]
    );

    // From another process: A's turn 3 cannot be rewound over B's edit...
    let mut c = env.cmd(Some(&a.session));
    c.args(["rewind", "--turn", "3"]);
    let out = crate::util::run_with_input(c, b"");
    assert_eq!(
        out.status.code(),
        Some(3),
        "refused: B changed src/lib.rs since"
    );
    println!(
        "$ turnback --session {} rewind --turn 3\n{}",
        a.session,
        String::from_utf8_lossy(&out.stderr)
    );
    // ...until B's edit is undone.
    let mut c = env.cmd(Some(&b.session));
    c.arg("undo");
    run_ok(c, b"", "undo B");
    rewind(&env, &a.session, &["--turn", "3"]);
    assert_eq!(digest(env.ws.path()), after_turn_2);
    rewind(&env, &a.session, &["--turn", "2"]);
    // The shell edit of turn 2 goes back with its turn.
    assert_eq!(digest(env.ws.path()), after_turn_1);
    rewind(&env, &a.session, &["--turn", "1"]);
    assert_eq!(digest(env.ws.path()), start);
    assert!(!env.path("src").exists());
    assert!(!env.path("secret.txt").exists());
    println!("transcript: {} hook calls", a.log.len() + b.log.len());
}
