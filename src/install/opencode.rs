//! opencode: a plugin file of turnback's own, `turnback.ts`, in
//! `~/.config/opencode/plugins/` (the default, `--user`; `XDG_CONFIG_HOME`
//! moves `~/.config`) or the workspace's `.opencode/plugins/` (`--project`).
//! opencode runs no hook commands: its plugins are modules it loads, whose
//! `tool.execute.before` / `tool.execute.after` it awaits around each tool
//! call. turnback's plugin imports nothing (it works offline) and pipes a
//! Claude-shaped event per call (`hook_event_name`, `session_id`, `cwd`,
//! `tool_name`, `tool_input`, `tool_use_id` = opencode's `callID`, and
//! `agent_id` = the same: opencode runs the calls of one reply at once, so
//! each call is a context of its own) to `turnback hook opencode`; a
//! prompt (`chat.message`) begins a turn, `session.idle` settles what is
//! left open, a tool part that ends in `error` is a failed call. It throws
//! (which blocks the tool) only when the hook exits 2, which it does only
//! with `--strict`.
//!
//! The command is one line of the file (`const TURNBACK_COMMAND = [...]`,
//! a JSON list): a flag the user adds there (`--strict`) is kept by a
//! reinstall. A file of that name without turnback's mark, or whose
//! command is not turnback's hook line, is the user's: refused untouched.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{AgentHooks, Layout, Scope, Wanted, is_our_hook, our_program};

pub(crate) struct Opencode;

/// The plugin's name in its directory.
pub(crate) const FILE: &str = "turnback.ts";

/// The first line of every plugin install writes.
const MARK: &str = "// turnback-plugin: written by `turnback install opencode`";

/// The line that holds the command.
const COMMAND_LINE: &str = "const TURNBACK_COMMAND = ";

/// The hooks the plugin uses (what doctor counts).
const EVENTS: [&str; 4] = [
    "chat.message",
    "tool.execute.before",
    "tool.execute.after",
    "event",
];

/// opencode's directory of the user's configuration.
fn config_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("opencode"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set: cannot find ~/.config/opencode")?;
    Ok(PathBuf::from(home).join(".config/opencode"))
}

/// opencode's configuration directory, for `install` with no agent.
pub(crate) fn user_dir() -> Option<PathBuf> {
    config_dir().ok()
}

impl AgentHooks for Opencode {
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String> {
        Ok(match scope {
            Scope::Project => ws.join(".opencode/plugins").join(FILE),
            Scope::Default | Scope::User => config_dir()?.join("plugins").join(FILE),
        })
    }

    fn wanted(&self, exe: &Path) -> Vec<Wanted> {
        let handler = handler(&[exe.to_string_lossy().into_owned()]);
        EVENTS
            .into_iter()
            .map(|event| Wanted::new(event, None, &handler))
            .collect()
    }

    fn is_ours(&self, handler: &Value) -> bool {
        is_our_hook(handler, "opencode")
    }

    fn program_of(&self, handler: &Value) -> Option<PathBuf> {
        our_program(handler, "opencode")
    }

    /// The plugin read as settings ([`as_settings`]): each event's list
    /// holds the handler itself.
    fn layout(&self) -> Layout {
        Layout::Flat
    }
}

/// The handler (exec form) of the command `program hook opencode FLAGS…`
/// (`words` is the program and the flags).
fn handler(words: &[String]) -> Value {
    let mut args = vec![Value::from("hook"), Value::from("opencode")];
    args.extend(words.iter().skip(1).map(|w| Value::from(w.as_str())));
    json!({"command": words.first().cloned().unwrap_or_default(), "args": args})
}

/// What is at the plugin's path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plugin {
    Absent,
    /// turnback's, running this handler.
    Ours(Value),
    /// The user's, and why it is not turnback's.
    Foreign(String),
}

/// The plugin at `path`.
pub(crate) fn read(path: &Path) -> Result<Plugin, String> {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Plugin::Absent),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if !text.starts_with(MARK) {
        return Ok(Plugin::Foreign(
            "it does not begin with turnback's mark".into(),
        ));
    }
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(COMMAND_LINE))
        .map(|l| l.trim().trim_end_matches(';'));
    let words: Option<Vec<String>> = line.and_then(|l| serde_json::from_str(l).ok());
    let Some(words) = words else {
        return Ok(Plugin::Foreign(format!(
            "its `{}` line is not a list of strings",
            COMMAND_LINE.trim_end_matches(" = ")
        )));
    };
    let rest: Vec<String> = words.iter().skip(1).cloned().collect();
    let h = json!({"command": words.first().cloned().unwrap_or_default(), "args": rest});
    if !is_our_hook(&h, "opencode") {
        return Ok(Plugin::Foreign(
            "its command is not turnback's hook line".into(),
        ));
    }
    Ok(Plugin::Ours(h))
}

/// The plugin as hooks settings (`{"hooks": {EVENT: [HANDLER]}}`), for
/// doctor and status: empty unless it is turnback's.
pub(crate) fn as_settings(p: &Plugin) -> Map<String, Value> {
    let mut m = Map::new();
    if let Plugin::Ours(h) = p {
        let hooks: Map<String, Value> = EVENTS
            .iter()
            .map(|e| ((*e).to_owned(), json!([h])))
            .collect();
        m.insert("hooks".into(), Value::Object(hooks));
    }
    m
}

/// The events the plugin hooks, for a report.
pub(crate) fn events() -> &'static [&'static str] {
    &EVENTS
}

/// The words of `handler` (exec form): its program, then its arguments.
pub(crate) fn words_of(handler: &Value) -> Vec<String> {
    let mut w = vec![handler["command"].as_str().unwrap_or_default().to_owned()];
    w.extend(
        handler["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned),
    );
    w
}

/// The plugin's text, running `command` (the program and its arguments).
pub(crate) fn text(command: &[String]) -> String {
    let list = serde_json::to_string(command).unwrap_or_else(|_| "[]".into());
    format!(
        "{MARK}; `turnback uninstall opencode` removes it.\n{}{COMMAND_LINE}{list};\n{}",
        HEAD, BODY
    )
}

const HEAD: &str = "\
// Each tool call opencode makes is sent, as one JSON event on stdin, to the command below, which
// backs up the files the call changes (`turnback log`, `turnback undo`). A flag added to the
// command (\"--strict\": a tool whose files could not be backed up is blocked) is kept when
// `turnback install opencode` runs again. This file imports nothing.
";

const BODY: &str = r#"
async function send(event) {
  const input = JSON.stringify(event);
  try {
    const bun = globalThis.Bun;
    if (bun) {
      const p = bun.spawn(TURNBACK_COMMAND, {
        stdin: new Blob([input]),
        stdout: "pipe",
        stderr: "pipe",
      });
      const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
      await new Response(p.stdout).text();
      return { code, stderr };
    }
    const cp = process.getBuiltinModule("node:child_process");
    return await new Promise((resolve) => {
      const child = cp.spawn(TURNBACK_COMMAND[0], TURNBACK_COMMAND.slice(1), {
        stdio: ["pipe", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      child.on("error", (e) => resolve({ code: -1, stderr: String(e) }));
      child.on("close", (code) => resolve({ code: code ?? -1, stderr }));
      child.stdin.on("error", () => {});
      child.stdin.end(input);
    });
  } catch (e) {
    return { code: -1, stderr: String(e) };
  }
}

export const TurnbackPlugin = async ({ directory }) => {
  const cwd = directory || process.cwd();
  // The calls sent before and not yet after: callID -> tool and input.
  const open = new Map();
  const envelope = (sessionID, name) => ({ hook_event_name: name, session_id: sessionID, cwd });
  const call = (sessionID, name, callID, tool, input) => ({
    ...envelope(sessionID, name),
    tool_name: tool,
    tool_input: input ?? {},
    tool_use_id: callID,
    agent_id: callID,
  });
  const done = async (sessionID, callID, failed) => {
    const c = open.get(callID);
    if (!c) return;
    open.delete(callID);
    const name = failed ? "PostToolUseFailure" : "PostToolUse";
    await send(call(sessionID, name, callID, c.tool, c.input));
  };
  return {
    "chat.message": async (input, output) => {
      const parts = (output && output.parts) || [];
      const prompt = parts
        .filter((p) => p && p.type === "text" && !p.synthetic && typeof p.text === "string")
        .map((p) => p.text)
        .join("\n");
      await send({ ...envelope(input.sessionID, "UserPromptSubmit"), prompt });
    },
    "tool.execute.before": async (input, output) => {
      const args = output && output.args;
      open.set(input.callID, { tool: input.tool, input: args });
      const r = await send(call(input.sessionID, "PreToolUse", input.callID, input.tool, args));
      if (r.code === 2) {
        open.delete(input.callID);
        throw new Error(r.stderr.trim() || "turnback --strict: the tool was blocked");
      }
    },
    "tool.execute.after": async (input) => {
      await done(input.sessionID, input.callID, false);
    },
    event: async ({ event }) => {
      const props = (event && event.properties) || {};
      if (event.type === "message.part.updated") {
        const part = props.part || {};
        const status = part.state && part.state.status;
        if (part.type === "tool" && (status === "completed" || status === "error")) {
          await done(part.sessionID, part.callID, status === "error");
        }
      } else if (event.type === "session.idle" && props.sessionID) {
        await send(envelope(props.sessionID, "Stop"));
      }
    },
  };
};
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_reads_back_as_turnbacks_with_its_flags() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join(FILE);
        let words: Vec<String> = ["/bin/turnback", "hook", "opencode", "--strict"]
            .map(str::to_owned)
            .to_vec();
        std::fs::write(&f, text(&words)).unwrap();
        let Plugin::Ours(h) = read(&f).unwrap() else {
            panic!("not ours")
        };
        assert_eq!(words_of(&h), words);
        std::fs::write(&f, "export const Mine = async () => ({})\n").unwrap();
        assert!(matches!(read(&f).unwrap(), Plugin::Foreign(_)));
        let other = text(&["/bin/sh".into(), "-c".into(), "rm -rf /".into()]);
        std::fs::write(&f, other).unwrap();
        assert!(matches!(read(&f).unwrap(), Plugin::Foreign(_)));
    }
}
