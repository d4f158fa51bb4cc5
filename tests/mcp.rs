//! `turnback mcp`, spawned for real: the MCP handshake over a pipe
//! (`initialize`, `notifications/initialized`, `tools/list`, `tools/call`),
//! tool results compared with the command line's `--json`, a refusal as a
//! tool error that names the file and how to force, and the install line.

use serde_json::{Value, json};

use crate::serve::Served;
use crate::util::{Env, bin, read, tree_digest};

/// A `turnback mcp` past its handshake.
struct Mcp {
    served: Served,
    next: u64,
}

impl Mcp {
    /// Starts `turnback mcp` in `env` and does the handshake; returns the
    /// server and the `initialize` result.
    fn start(env: &Env) -> (Mcp, Value) {
        let served = Served::spawn(env.cmd(None).arg("mcp"));
        let mut m = Mcp { served, next: 0 };
        let init = m.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "turnback-tests", "version": "1"},
            }),
        );
        m.served
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        (m, init)
    }

    /// A JSON-RPC request; its `result`, which must be there.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.served
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let r = self.served.recv();
        assert_eq!(r["id"], id, "{r}");
        assert!(r.get("error").is_none(), "{method}: {r}");
        r["result"].clone()
    }

    /// `tools/call`: the result (`content`, `structuredContent`, `isError`).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

/// The one JSON line `turnback --json ARGS` prints, as `session`.
fn cli_json(env: &Env, session: &str, args: &[&str]) -> Value {
    let out = env
        .cmd(Some(session))
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The text of a tool result's first content block.
fn text(result: &Value) -> &str {
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    result["content"][0]["text"].as_str().unwrap()
}

#[test]
fn the_handshake_lists_every_tool_with_a_schema_and_a_description() {
    let env = Env::new();
    let (mut m, init) = Mcp::start(&env);
    assert_eq!(init["serverInfo"]["name"], "turnback", "{init}");
    assert_eq!(init["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert!(init["protocolVersion"].is_string(), "{init}");
    let list = m.request("tools/list", json!({}));
    let tools = list["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "log",
            "turns",
            "diff",
            "undo",
            "revert_file",
            "rewind",
            "redo"
        ]
    );
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert!(t["description"].as_str().unwrap().len() > 80, "{t}");
        let read_only = ["log", "turns", "diff"].contains(&t["name"].as_str().unwrap());
        assert_eq!(t["annotations"]["readOnlyHint"], read_only, "{t}");
        if !read_only {
            let props = &t["inputSchema"]["properties"];
            assert_eq!(props["dry_run"]["type"], "boolean", "{t}");
            assert_eq!(props["force"]["type"], "boolean", "{t}");
        }
    }
    let revert = tools.iter().find(|t| t["name"] == "revert_file").unwrap();
    assert_eq!(revert["inputSchema"]["required"], json!(["file"]));
    m.served.close();
}

#[test]
fn tools_answer_the_command_lines_json_and_a_refusal_says_how_to_force() {
    let env = Env::new();
    std::fs::write(env.path("NOTES.md"), "old\n").unwrap();
    let run = |args: &[&str], input: &[u8]| {
        let mut cmd = env.cmd(Some("agent-1"));
        cmd.args(args);
        crate::util::run_ok(cmd, input, "set-up")
    };
    run(&["turn", "--prompt", "edit the notes"], b"");
    run(&["write", "NOTES.md", "--message", "call-1"], b"mine\n");
    let (mut m, _) = Mcp::start(&env);
    // The read-only tools: the command line's JSON, structured and as text.
    for (tool, args, cli) in [
        ("log", json!({}), vec!["log"]),
        ("turns", json!({}), vec!["turns"]),
        (
            "diff",
            json!({"file": "NOTES.md"}),
            vec!["diff", "NOTES.md"],
        ),
        ("undo", json!({"dry_run": true}), vec!["undo", "--dry-run"]),
    ] {
        let r = m.call(tool, args);
        assert_eq!(r["isError"], false, "{tool}: {r}");
        let expected = cli_json(&env, "agent-1", &cli);
        assert_eq!(r["structuredContent"], expected, "{tool}");
        let shown: Value = serde_json::from_str(text(&r)).unwrap();
        assert_eq!(shown, expected, "{tool}");
    }
    let turns = m.call("turns", json!({"session": "agent-1"}));
    assert_eq!(
        turns["structuredContent"]["turns"][0]["prompt"],
        "edit the notes"
    );

    // The person edits the file: the undo is refused, nothing touched, and
    // the error says which file and how to go on.
    std::fs::write(env.path("NOTES.md"), "edited by hand\n").unwrap();
    let before = tree_digest(env.ws.path());
    let refused = m.call("undo", json!({}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["structuredContent"]["error"]["kind"], "refused");
    let says = text(&refused);
    for part in [
        "refused",
        "NOTES.md",
        "Nothing was changed",
        "dry_run: true",
        "force: true",
        "outside turnback",
    ] {
        assert!(says.contains(part), "{part:?} not in {says}");
    }
    assert_eq!(tree_digest(env.ws.path()), before);
    let forced = m.call("undo", json!({"force": true}));
    assert_eq!(forced["isError"], false, "{forced}");
    assert_eq!(forced["structuredContent"]["applied"], true);
    assert_eq!(read(env.path("NOTES.md")), b"old\n");
    let redo = m.call("redo", json!({"session": "agent-1", "dry_run": true}));
    assert_eq!(
        redo["structuredContent"]["files"][0]["path"], "NOTES.md",
        "{redo}"
    );

    // Calls the tools cannot make are tool errors too.
    for (tool, args, says) in [
        ("revert_file", json!({"fil": "NOTES.md"}), "fil"),
        ("rewind", json!({}), "turn"),
        ("rewind", json!({"turn": 9}), "turn-not-found"),
        ("format_disk", json!({}), "format_disk"),
        ("undo", json!({"dry_run": "yes"}), "dry_run"),
        ("rewind", json!({"turn": "first"}), "turn"),
    ] {
        let r = m.call(tool, args);
        assert_eq!(r["isError"], true, "{tool}: {r}");
        assert!(text(&r).contains(says), "{tool}: {r}");
        // The hint is MCP's own, not `serve`'s about JSON lines.
        assert!(!text(&r).contains("per line"), "{tool}: {r}");
    }
    // A rewind to the turn, as the model would: back to before turn 1.
    let back = m.call("rewind", json!({"turn": 1, "dry_run": true}));
    assert_eq!(back["isError"], false, "{back}");
    m.served.close();
}

#[test]
fn print_install_prints_the_agents_own_line_with_this_binary() {
    let env = Env::new();
    let out = env
        .cmd(None)
        .args(["mcp", "--print-install", "claude-code"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let exe = std::fs::canonicalize(bin()).unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("claude mcp add turnback -- {} mcp\n", exe.display())
    );
    let bad = env
        .cmd(None)
        .args(["mcp", "--print-install", "notepad"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// `turnback turns`, the command behind the `turns` tool: each turn in
/// effect with its prompt and the files it changed, as text and as JSON; a
/// rewind takes the turn away.
#[test]
fn turns_lists_the_turns_in_effect() {
    let env = Env::new();
    let run = |args: &[&str], input: &[u8]| {
        let mut cmd = env.cmd(Some("agent-1"));
        cmd.args(args).args(["--color", "never"]);
        crate::util::run_ok(cmd, input, "turns")
    };
    run(&["write", "z.txt", "--message", "m0"], b"z");
    // `turns` is issue 17's command (newest first, `number`); the MCP tool
    // and the serve op run it as it is.
    let none = run(&["turns"], b"");
    assert!(
        String::from_utf8_lossy(&none.stdout).starts_with("session agent-1: 0 turns\n"),
        "{}",
        String::from_utf8_lossy(&none.stdout)
    );
    run(
        &[
            "turn",
            "--prompt",
            "write two files",
            "--conversation-index",
            "4",
        ],
        b"",
    );
    run(&["write", "a.txt", "--message", "m1"], b"a");
    run(&["write", "b.txt", "--message", "m2"], b"b");
    run(&["turn", "--prompt", "think"], b"");
    let text = String::from_utf8(run(&["turns"], b"").stdout).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("turn 2 ") && lines[0].contains("0 files"),
        "{text}"
    );
    assert!(lines[0].ends_with("\"think\""), "{text}");
    assert!(
        lines[1].starts_with("turn 1 ")
            && lines[1].contains("2 files")
            && lines[1].ends_with("\"write two files\""),
        "{text}"
    );
    let json = cli_json(&env, "agent-1", &["turns"]);
    assert_eq!(json["session"], "agent-1");
    assert_eq!(json["turns"][0]["number"], 2);
    assert_eq!(json["turns"][0]["conversation_index"], Value::Null);
    assert_eq!(json["turns"][1]["conversation_index"], 4);
    assert_eq!(json["turns"][1]["entries"], 2);
    run(&["rewind", "--turn", "2"], b"");
    let json = cli_json(&env, "agent-1", &["turns"]);
    assert_eq!(json["turns"].as_array().unwrap().len(), 1, "{json}");
}
