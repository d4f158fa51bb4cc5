//! The real agents, run offline against the scripted model of
//! `model_server.rs`, through sessions of several turns with their real
//! tools and their real hooks as `turnback install` configured them; then a
//! rewind from another process, and every file checked. `.ci/run` installs
//! the pinned versions with npm into `~/.cache/turnback-agents`
//! (`TURNBACK_AGENTS`); a test whose agent is not there says it skipped.
//!
//! The agents reach only 127.0.0.1: as root (CI) each test makes a network
//! namespace of its own (`unshare -n`, loopback only), the scripted model's
//! thread moves into it (setns) and the agent runs in it (`nsenter`); without
//! that, the model's address is still the scripted server's, telemetry and
//! updates are off, and any proxy-aware request elsewhere goes to a closed
//! local port.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::install::agent_cache;
use crate::model_server::{Api, ModelServer, Reply};
use crate::util::{Env, read_text, run_ok, skip};

/// Claude Code 2.1.332's native binary, as npm installs it.
fn claude_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TURNBACK_CLAUDE") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    agent_cache()
        .map(|d| {
            d.join("claude-code-2.1.332/node_modules/@anthropic-ai/claude-code/bin/claude.exe")
        })
        .filter(|p| p.is_file())
}

/// Runs `cmd` to its end, killed after `limit`.
fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A network namespace with only a loopback interface, held open by a
/// sleeping `unshare -n` process (killed on drop); `None` where one cannot be
/// made (not root, no `unshare`, `nsenter` or `ip`).
pub struct Netns {
    holder: std::process::Child,
    pub path: PathBuf,
}

impl Netns {
    pub fn new() -> Option<Netns> {
        if !cfg!(target_os = "linux") || !rustix::process::geteuid().is_root() {
            return None;
        }
        let mut holder = Command::new("unshare")
            .args(["-n", "sleep", "600"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        // Wait until the child is in its namespace (unshare execs sleep).
        let path = PathBuf::from(format!("/proc/{}/ns/net", holder.id()));
        let mine = std::fs::read_link("/proc/self/ns/net").ok()?;
        let start = Instant::now();
        while std::fs::read_link(&path).ok().is_none_or(|l| l == mine) {
            if start.elapsed() > Duration::from_secs(5) {
                let _ = holder.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let up = Command::new("nsenter")
            .arg(format!("--net={}", path.display()))
            .args(["ip", "link", "set", "lo", "up"])
            .status()
            .is_ok_and(|s| s.success());
        if !up {
            let _ = holder.kill();
            let _ = holder.wait();
            return None;
        }
        Some(Netns { holder, path })
    }

    /// `program` run inside the namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net={}", self.path.display()))
            .arg("--")
            .arg(program);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// `program`, in `netns` when there is one.
fn agent_command(netns: &Option<Netns>, program: impl AsRef<std::ffi::OsStr>) -> Command {
    match netns {
        Some(ns) => ns.command(program),
        None => Command::new(program),
    }
}

/// The namespace for a test, and whether it said so.
fn isolated() -> Option<Netns> {
    let ns = Netns::new();
    match &ns {
        Some(ns) => println!("network: a namespace of its own ({})", ns.path.display()),
        None => println!("network: the machine's (not root, or no unshare/nsenter/ip)"),
    }
    ns
}

/// What keeps an agent on loopback and quiet, with a private home.
fn offline(cmd: &mut Command, home: &Path, tmp: &Path) {
    cmd.env("HOME", home)
        .env("TMPDIR", tmp)
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("TURNBACK_SESSION")
        .env_remove("TURNBACK_WORKSPACE");
}

struct ClaudeRun<'a> {
    netns: &'a Option<Netns>,
    claude: &'a Path,
    env: &'a Env,
    home: &'a Path,
    tmp: &'a Path,
    server: &'a ModelServer,
}

impl ClaudeRun<'_> {
    /// One `claude -p PROMPT` (resuming `session`), its JSON result.
    fn turn(&self, prompt: &str, session: Option<&str>, replies: Vec<Reply>) -> Value {
        let n = replies.len();
        self.server.push(replies);
        let mut c = agent_command(self.netns, self.claude);
        c.current_dir(self.env.ws.path())
            .args(["-p", prompt, "--output-format", "json"])
            .args(["--permission-mode", "acceptEdits"])
            .args(["--allowedTools", "Read,Write,Edit,Bash"]);
        if let Some(s) = session {
            c.args(["--resume", s]);
        }
        offline(&mut c, self.home, self.tmp);
        c.env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", self.server.port),
        )
        .env("ANTHROPIC_API_KEY", "sk-scripted")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_TMPDIR", self.tmp)
        .env("TURNBACK_HOME", self.env.home.path());
        let out = run_bounded(c, Duration::from_secs(120));
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!(
            "$ claude -p {prompt:?}  (exit {:?})\n{stdout}",
            out.status.code()
        );
        assert!(
            out.status.success(),
            "claude: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            self.server.left(),
            0,
            "claude used {} of {n} replies",
            n - self.server.left()
        );
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    }
}

fn tool(id: &str, name: &str, input: Value) -> Reply {
    Reply::Tools(vec![(id.into(), name.into(), input)])
}

#[test]
fn real_claude_code_edits_are_protected_and_rewound_from_another_process() {
    let Some(claude) = claude_binary() else {
        skip(
            "real_agents::real_claude_code_edits_are_protected_and_rewound_from_another_process",
            "Claude Code 2.1.332 is not installed (.ci/run installs it with npm)",
        );
        return;
    };
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(env.path("notes.txt"), "alpha\nbeta\n").unwrap();
    let mut c = env.cmd(None);
    c.args(["install", "claude-code"]).env("HOME", home.path());
    run_ok(c, b"", "install claude-code");
    let start = crate::util::tree_digest(env.ws.path());
    let netns = isolated();
    let server = ModelServer::start(Api::Anthropic, netns.as_ref().map(|n| n.path.as_path()));
    let run = ClaudeRun {
        netns: &netns,
        claude: &claude,
        env: &env,
        home: home.path(),
        tmp: tmp.path(),
        server: &server,
    };
    let p = |rel: &str| env.path(rel).to_string_lossy().into_owned();

    // Turn 1: two Writes in one message (Claude Code runs them one after
    // the other), then two read-only Bash calls in one message (run at once,
    // their hooks overlapping).
    let r = run.turn(
        "create hello.txt and src/lib.rs",
        None,
        vec![
            Reply::Tools(vec![
                (
                    "toolu_w1".into(),
                    "Write".into(),
                    json!({"file_path": p("hello.txt"), "content": "hello\nworld\n"}),
                ),
                (
                    "toolu_w2".into(),
                    "Write".into(),
                    json!({"file_path": p("src/lib.rs"), "content": "pub fn f() {}\n"}),
                ),
            ]),
            Reply::Tools(vec![
                (
                    "toolu_l1".into(),
                    "Bash".into(),
                    json!({"command": "ls src", "description": "list"}),
                ),
                (
                    "toolu_l2".into(),
                    "Bash".into(),
                    json!({"command": "cat hello.txt", "description": "read"}),
                ),
            ]),
            Reply::Text("Created both.".into()),
        ],
    );
    let session = r["session_id"].as_str().unwrap().to_owned();
    let after_turn_1 = crate::util::tree_digest(env.ws.path());
    assert_eq!(read_text(env.path("hello.txt")), "hello\nworld\n");

    // Turn 2: Read then Edit (Claude Code's Edit wants a Read first), and a
    // shell edit.
    run.turn(
        "change world to there",
        Some(&session),
        vec![
            tool("toolu_r1", "Read", json!({"file_path": p("hello.txt")})),
            // An edit that fails (no such text): settled, nothing recorded.
            tool(
                "toolu_e0",
                "Edit",
                json!({"file_path": p("hello.txt"), "old_string": "not in the file", "new_string": "x"}),
            ),
            tool(
                "toolu_e1",
                "Edit",
                json!({"file_path": p("hello.txt"), "old_string": "world", "new_string": "there"}),
            ),
            tool(
                "toolu_b1",
                "Bash",
                json!({"command": "sed -i s/alpha/ALPHA/ notes.txt", "description": "edit notes"}),
            ),
            Reply::Text("Changed.".into()),
        ],
    );
    assert_eq!(read_text(env.path("hello.txt")), "hello\nthere\n");
    assert_eq!(read_text(env.path("notes.txt")), "ALPHA\nbeta\n");
    let after_turn_2 = crate::util::tree_digest(env.ws.path());

    // Turn 3: a Write over an existing file (after a Read).
    run.turn(
        "rewrite src/lib.rs",
        Some(&session),
        vec![
            tool("toolu_r2", "Read", json!({"file_path": p("src/lib.rs")})),
            tool(
                "toolu_w3",
                "Write",
                json!({"file_path": p("src/lib.rs"), "content": "pub fn g() {}\n"}),
            ),
            Reply::Text("Rewritten.".into()),
        ],
    );

    // The store has the agent's session, its prompts as turns, nothing open.
    let s = env.store().open_session(&session).unwrap();
    let ids: Vec<String> = s
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| e.message_id)
        .collect();
    assert_eq!(
        ids,
        ["toolu_w1", "toolu_w2", "toolu_e1", "toolu_b1", "toolu_w3"]
    );
    assert!(s.entries().unwrap().iter().all(|e| e.is_committed()));
    let prompts: Vec<String> = s
        .turns()
        .unwrap()
        .into_iter()
        .map(|t| t.turn.prompt)
        .collect();
    assert_eq!(
        prompts,
        [
            "create hello.txt and src/lib.rs",
            "change world to there",
            "rewrite src/lib.rs"
        ]
    );

    // From another process, turn by turn.
    let rewind = |turn: &str| {
        let mut c = env.cmd(Some(&session));
        c.args(["rewind", "--turn", turn]);
        let out = run_ok(c, b"", "rewind");
        println!(
            "$ turnback rewind --turn {turn}\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    rewind("3");
    assert_eq!(crate::util::tree_digest(env.ws.path()), after_turn_2);
    rewind("2");
    // The shell edit goes back with its turn: the scan bracket found it.
    assert_eq!(crate::util::tree_digest(env.ws.path()), after_turn_1);
    rewind("1");
    assert_eq!(crate::util::tree_digest(env.ws.path()), start);
}

/// Codex 0.171.0's native binary, as npm installs it.
fn codex() -> Option<PathBuf> {
    crate::install::codex_binary()
}

struct CodexRun<'a> {
    netns: &'a Option<Netns>,
    codex: &'a Path,
    env: &'a Env,
    home: &'a Path,
    tmp: &'a Path,
    server: &'a ModelServer,
}

impl CodexRun<'_> {
    fn command(&self) -> Command {
        let mut c = agent_command(self.netns, self.codex);
        c.current_dir(self.env.ws.path());
        offline(&mut c, self.home, self.tmp);
        c.env("CODEX_HOME", self.home.join(".codex"))
            .env("FAKE_API_KEY", "sk-scripted")
            .env("TURNBACK_HOME", self.env.home.path());
        c
    }

    /// One `codex exec` turn (resuming `session`), its JSON events.
    fn turn(&self, prompt: &str, session: Option<&str>, replies: Vec<Reply>) -> Vec<Value> {
        let n = replies.len();
        self.server.push(replies);
        let mut c = self.command();
        c.arg("exec");
        if let Some(s) = session {
            c.args(["resume", s]);
        }
        c.args([
            "--skip-git-repo-check",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            prompt,
        ]);
        let out = run_bounded(c, Duration::from_secs(120));
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!(
            "$ codex exec {prompt:?}  (exit {:?})\n{stdout}",
            out.status.code()
        );
        assert!(
            out.status.success(),
            "codex: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            self.server.left(),
            0,
            "codex used {} of {n} replies",
            n - self.server.left()
        );
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

#[test]
fn real_codex_patches_are_protected_and_rewound_from_another_process() {
    let Some(codex) = codex() else {
        skip(
            "real_agents::real_codex_patches_are_protected_and_rewound_from_another_process",
            "Codex 0.171.0 is not installed (.ci/run installs it with npm)",
        );
        return;
    };
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let netns = isolated();
    let server = ModelServer::start(Api::Responses, netns.as_ref().map(|n| n.path.as_path()));
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(
        home.path().join(".codex/config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"FAKE_API_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
            server.port
        ),
    )
    .unwrap();
    std::fs::write(env.path("existing.txt"), "line one\nline two\nline three\n").unwrap();
    std::fs::write(env.path("notes.txt"), "alpha\n").unwrap();
    let mut c = env.cmd(None);
    c.args(["install", "codex"])
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path().join(".codex"))
        .env("TURNBACK_CODEX", &codex);
    let said = run_ok(c, b"", "install codex");
    println!(
        "$ turnback install codex\n{}",
        String::from_utf8_lossy(&said.stdout)
    );
    let start = crate::util::tree_digest(env.ws.path());
    let run = CodexRun {
        netns: &netns,
        codex: &codex,
        env: &env,
        home: home.path(),
        tmp: tmp.path(),
        server: &server,
    };
    let patch = |id: &str, text: &str| tool(id, "apply_patch", json!({ "patch": text }));

    // Turn 1: a patch that adds one file and updates another.
    let events = run.turn(
        "add a file and fix line two",
        None,
        vec![
            patch(
                "call_p1",
                "*** Begin Patch\n*** Add File: added.txt\n+hello from the model\n*** Update File: existing.txt\n@@\n line one\n-line two\n+line two (patched)\n line three\n*** End Patch\n",
            ),
            Reply::Text("Patched.".into()),
        ],
    );
    let session = events
        .iter()
        .find_map(|e| e["thread_id"].as_str())
        .expect("a thread id")
        .to_owned();
    assert_eq!(read_text(env.path("added.txt")), "hello from the model\n");
    let after_turn_1 = crate::util::tree_digest(env.ws.path());

    // Turn 2: a patch that moves one file and deletes another.
    run.turn(
        "move existing.txt and delete added.txt",
        Some(&session),
        vec![
            patch(
                "call_p2",
                "*** Begin Patch\n*** Update File: existing.txt\n*** Move to: moved/existing.txt\n@@\n-line one\n+LINE ONE\n*** Delete File: added.txt\n*** End Patch\n",
            ),
            // A shell edit: one step of its call, found by the scan bracket.
            tool("call_s1", "exec_command", json!({"cmd": "sed -i s/alpha/ALPHA/ notes.txt"})),
            Reply::Text("Moved.".into()),
        ],
    );
    assert!(!env.path("added.txt").exists() && env.path("moved/existing.txt").exists());
    assert_eq!(read_text(env.path("notes.txt")), "ALPHA\n");

    let s = env.store().open_session(&session).unwrap();
    let entries = s.entries().unwrap();
    let got: Vec<(String, String)> = entries
        .iter()
        .map(|e| (e.message_id.clone(), e.path.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("call_p1".into(), "added.txt".into()),
            ("call_p1".into(), "existing.txt".into()),
            ("call_p2".into(), "existing.txt".into()),
            ("call_p2".into(), "moved/existing.txt".into()),
            ("call_p2".into(), "added.txt".into()),
            ("call_s1".into(), "notes.txt".into()),
        ]
    );
    assert!(entries.iter().all(|e| e.is_committed()));
    let prompts: Vec<String> = s
        .turns()
        .unwrap()
        .into_iter()
        .map(|t| t.turn.prompt)
        .collect();
    assert_eq!(
        prompts,
        [
            "add a file and fix line two",
            "move existing.txt and delete added.txt"
        ]
    );

    let rewind = |turn: &str| {
        let mut c = env.cmd(Some(&session));
        c.args(["rewind", "--turn", turn]);
        let out = run_ok(c, b"", "rewind");
        println!(
            "$ turnback rewind --turn {turn}\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    rewind("2");
    assert_eq!(crate::util::tree_digest(env.ws.path()), after_turn_1);
    rewind("1");
    assert_eq!(crate::util::tree_digest(env.ws.path()), start);
}

/// Gemini CLI 0.61.0's bundle, as npm installs it (run with node).
fn gemini_bundle() -> Option<PathBuf> {
    agent_cache()
        .map(|d| d.join("gemini-cli-0.61.0/node_modules/@google/gemini-cli/bundle/gemini.js"))
        .filter(|p| p.is_file())
}

#[test]
fn real_gemini_cli_edits_are_protected_and_rewound_from_another_process() {
    let (Some(bundle), true) = (
        gemini_bundle(),
        Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
    ) else {
        skip(
            "real_agents::real_gemini_cli_edits_are_protected_and_rewound_from_another_process",
            "Gemini CLI 0.61.0 (or node) is not installed (.ci/run installs it with npm)",
        );
        return;
    };
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let netns = isolated();
    let server = ModelServer::start(Api::Gemini, netns.as_ref().map(|n| n.path.as_path()));
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::write(
        home.path().join(".gemini/settings.json"),
        json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "model": {"name": "gemini-2.5-flash"},
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(env.path("existing.txt"), "say old greeting here\n").unwrap();
    std::fs::write(env.path("sedme.txt"), "alpha\n").unwrap();
    let mut c = env.cmd(None);
    c.args(["install", "gemini"]).env("HOME", home.path());
    run_ok(c, b"", "install gemini");
    let start = crate::util::tree_digest(env.ws.path());
    let turn = |prompt: &str, resume: bool, replies: Vec<Reply>| {
        let n = replies.len();
        server.push(replies);
        let mut c = agent_command(&netns, "node");
        c.arg(&bundle).current_dir(env.ws.path());
        c.args(["-p", prompt, "--yolo", "--skip-trust"]);
        if resume {
            c.args(["--resume", "latest"]);
        }
        offline(&mut c, home.path(), tmp.path());
        c.env("GEMINI_API_KEY", "scripted")
            .env(
                "GOOGLE_GEMINI_BASE_URL",
                format!("http://127.0.0.1:{}", server.port),
            )
            .env("GEMINI_CLI_NO_RELAUNCH", "true")
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .env("TURNBACK_HOME", env.home.path());
        let out = run_bounded(c, Duration::from_secs(120));
        println!(
            "$ gemini -p {prompt:?}  (exit {:?})\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            out.status.success(),
            "gemini: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            server.left(),
            0,
            "gemini used {} of {n} replies",
            n - server.left()
        );
    };
    let p = |rel: &str| env.path(rel).to_string_lossy().into_owned();

    turn(
        "create new_file.txt",
        false,
        vec![
            tool(
                "g1",
                "write_file",
                json!({"file_path": p("new_file.txt"), "content": "hello\n"}),
            ),
            // A relative path, resolved against cwd.
            tool(
                "g2",
                "write_file",
                json!({"file_path": "sub/rel.txt", "content": "B\n"}),
            ),
            Reply::Text("Created.".into()),
        ],
    );
    let after_turn_1 = crate::util::tree_digest(env.ws.path());
    assert_eq!(read_text(env.path("sub/rel.txt")), "B\n");
    turn(
        "change the greeting",
        true,
        vec![
            tool(
                "g3",
                "replace",
                json!({"file_path": p("existing.txt"), "instruction": "greet", "old_string": "old greeting", "new_string": "new greeting"}),
            ),
            // A replace that fails: AfterTool with an error, nothing recorded.
            tool(
                "g4",
                "replace",
                json!({"file_path": p("existing.txt"), "instruction": "no-op", "old_string": "NOT IN THE FILE", "new_string": "x"}),
            ),
            tool(
                "g5",
                "run_shell_command",
                json!({"command": "sed -i s/alpha/ALPHA/ sedme.txt", "description": "edit"}),
            ),
            Reply::Text("Changed.".into()),
        ],
    );
    assert_eq!(
        read_text(env.path("existing.txt")),
        "say new greeting here\n"
    );
    assert_eq!(read_text(env.path("sedme.txt")), "ALPHA\n");

    let sessions = env.store().session_ids().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let session = sessions[0].clone();
    let s = env.store().open_session(&session).unwrap();
    let got: Vec<(String, bool)> = s
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| (e.path.clone(), e.is_committed()))
        .collect();
    assert_eq!(
        got,
        [
            ("new_file.txt".into(), true),
            ("sub/rel.txt".into(), true),
            ("existing.txt".into(), true),
            ("sedme.txt".into(), true)
        ]
    );
    let prompts: Vec<String> = s
        .turns()
        .unwrap()
        .into_iter()
        .map(|t| t.turn.prompt)
        .collect();
    assert_eq!(prompts, ["create new_file.txt", "change the greeting"]);
    let rewind = |turn: &str| {
        let mut c = env.cmd(Some(&session));
        c.args(["rewind", "--turn", turn]);
        let out = run_ok(c, b"", "rewind");
        println!(
            "$ turnback rewind --turn {turn}\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    rewind("2");
    assert_eq!(crate::util::tree_digest(env.ws.path()), after_turn_1);
    rewind("1");
    assert_eq!(crate::util::tree_digest(env.ws.path()), start);
}
