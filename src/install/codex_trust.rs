//! Codex's hook trust, recorded through the installed Codex itself: `codex
//! app-server` (JSON-RPC, one object a line on stdio) answers `hooks/list`
//! with every hook, its `currentHash` and `trustStatus`, and
//! `config/batchWrite` upserts `hooks.state."<key>".trusted_hash` in its
//! `config.toml`. The hash is Codex's to compute: turnback never guesses it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// How long the app-server may take to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// The Codex binary: `TURNBACK_CODEX`, else `codex` on `PATH`.
pub(crate) fn codex_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TURNBACK_CODEX").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("codex"))
        .find(|p| p.is_file())
}

/// One hook as `hooks/list` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListedHook {
    pub key: String,
    pub command: String,
    pub source_path: String,
    pub current_hash: String,
    pub trust_status: String,
}

/// A running `codex app-server`.
struct AppServer {
    child: Child,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl AppServer {
    fn start(codex: &Path, cwd: &Path) -> Result<AppServer, String> {
        let mut child = Command::new(codex)
            .arg("app-server")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {} app-server: {e}", codex.display()))?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = AppServer {
            child,
            lines,
            next_id: 1,
        };
        server.call(
            "initialize",
            json!({"clientInfo": {"name": "turnback", "version": env!("CARGO_PKG_VERSION")}}),
        )?;
        server.send(&json!({"jsonrpc": "2.0", "method": "initialized"}))?;
        Ok(server)
    }

    fn send(&mut self, v: &Value) -> Result<(), String> {
        let stdin = self.child.stdin.as_mut().expect("piped");
        writeln!(stdin, "{v}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("codex app-server: {e}"))
    }

    /// Sends a request and waits for its answer (notifications skipped).
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let line = self
                .lines
                .recv_timeout(ANSWER_TIMEOUT)
                .map_err(|_| format!("codex app-server did not answer {method}"))?;
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(err) = v.get("error") {
                return Err(format!("codex app-server refused {method}: {err}"));
            }
            return Ok(v.get("result").cloned().unwrap_or(Value::Null));
        }
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every hook the installed Codex sees for `cwd`.
pub(crate) fn list_hooks(codex: &Path, cwd: &Path) -> Result<Vec<ListedHook>, String> {
    let mut server = AppServer::start(codex, cwd)?;
    list_with(&mut server, cwd)
}

fn list_with(server: &mut AppServer, cwd: &Path) -> Result<Vec<ListedHook>, String> {
    let result = server.call("hooks/list", json!({"cwds": [cwd]}))?;
    let mut hooks = Vec::new();
    for entry in result
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for h in entry
            .get("hooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let s = |k: &str| {
                h.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            hooks.push(ListedHook {
                key: s("key"),
                command: s("command"),
                source_path: s("sourcePath"),
                current_hash: s("currentHash"),
                trust_status: s("trustStatus"),
            });
        }
    }
    Ok(hooks)
}

/// Records trust in every hook of `file` that `is_ours` (by its command)
/// and Codex does not trust yet; returns their keys.
pub(crate) fn trust_ours(
    codex: &Path,
    cwd: &Path,
    file: &Path,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, String> {
    let mut server = AppServer::start(codex, cwd)?;
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
    let mine: Vec<ListedHook> = list_with(&mut server, cwd)?
        .into_iter()
        .filter(|h| is_ours(&h.command) && Path::new(&h.source_path) == file)
        .collect();
    let untrusted: Vec<&ListedHook> = mine
        .iter()
        .filter(|h| h.trust_status != "trusted")
        .collect();
    if untrusted.is_empty() {
        return Ok(Vec::new());
    }
    let mut state = serde_json::Map::new();
    for h in &untrusted {
        state.insert(h.key.clone(), json!({ "trusted_hash": h.current_hash }));
    }
    server.call(
        "config/batchWrite",
        json!({"edits": [{"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}]}),
    )?;
    // Read back: what Codex says now is what counts.
    let still: Vec<String> = list_with(&mut server, cwd)?
        .into_iter()
        .filter(|h| is_ours(&h.command) && Path::new(&h.source_path) == file)
        .filter(|h| h.trust_status != "trusted")
        .map(|h| h.key)
        .collect();
    if !still.is_empty() {
        return Err(format!("Codex still does not trust {}", still.join(", ")));
    }
    Ok(untrusted.iter().map(|h| h.key.clone()).collect())
}
