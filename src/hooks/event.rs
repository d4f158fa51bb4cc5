//! The one event type every agent's hook payload is parsed into: what the
//! hook does next depends on this alone, never on an agent's field names.

use std::path::PathBuf;

/// The agents whose hooks turnback speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
    // Cursor's own hooks (`.cursor/hooks.json`); Cursor also runs Claude
    // Code's, which `claude-code` recognises. (No doc comment: clap would
    // show it beside the value.)
    Cursor,
    // GitHub Copilot CLI's own hooks file (`~/.copilot/hooks/turnback.json`);
    // it also runs Claude Code's, which `claude-code` recognises.
    Copilot,
    // Qwen Code (`.qwen/settings.json`), Claude-shaped.
    Qwen,
    // Factory Droid (`~/.factory/settings.json`), Claude-shaped.
    Droid,
    // opencode, through turnback's plugin (`turnback.ts`), which sends a
    // Claude-shaped event per tool call.
    Opencode,
}

impl Agent {
    /// The name on the command line (`turnback hook NAME`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Copilot => "copilot",
            Agent::Qwen => "qwen",
            Agent::Droid => "droid",
            Agent::Opencode => "opencode",
        }
    }
}

/// One hook call, as turnback understands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HookEvent {
    /// The agent's session id: the turnback session, unchanged.
    pub session: String,
    /// The agent's project directory: the workspace.
    pub workspace: PathBuf,
    /// The agent's own name of the event (for messages).
    pub name: String,
    /// The subagent the event is from (`agent_id`), `None` for the main
    /// agent: subagents run beside each other, each its tools one at a time.
    pub context: Option<String>,
    pub kind: EventKind,
    /// The agent reports a file tool done before its writes reach the disk
    /// (VS Code's agent: microsoft/vscode#315926): after such a tool its
    /// backups stay open, and the next event settles them (committed as the
    /// file is then, dropped if it never changed).
    pub late_writes: bool,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// The user sent a prompt: a turn begins.
    Prompt { prompt: String },
    /// A tool is about to run.
    Before(ToolCall),
    /// A tool ran and succeeded.
    After(ToolCall),
    /// A tool ran and failed, or was interrupted.
    Failed(ToolCall),
    /// Anything else of the session (start, stop, end, an interrupt): only
    /// what is still open is settled.
    Other,
}

/// A tool call and what it touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolCall {
    /// The message id entries are recorded under.
    pub id: CallId,
    /// The agent's tool name.
    pub tool_name: String,
    pub tool: Tool,
}

/// How a call is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallId {
    /// The agent's own id (`tool_use_id`): equal before and after.
    Given(String),
    /// No id came (Gemini CLI): a digest of the tool name and its exact
    /// input; before and after pair up first in, first out.
    Digest(String),
}

/// What a tool touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tool {
    /// A file tool: every path it may change (absolute, or relative to the
    /// workspace), in order, without repeats.
    Files(Vec<PathBuf>),
    /// A shell command.
    Shell { command: String },
    /// A tool turnback does not protect (reads, searches, MCP tools).
    Untracked,
}

impl ToolCall {
    /// The message id of this call's entries; for a digest, the prefix every
    /// one of its calls' ids starts with.
    pub(crate) fn message_prefix(&self) -> String {
        match &self.id {
            CallId::Given(id) => id.clone(),
            CallId::Digest(d) => format!("{d}#"),
        }
    }
}

/// A digest naming a call that has no id: the tool's name and its input,
/// exactly as the agent sent it (serde_json keeps the order of the fields).
/// SHA-256, so the same input gives the same id in every turnback version.
pub(crate) fn digest_of(agent: Agent, tool_name: &str, input: &serde_json::Value) -> String {
    digest_named(agent.name(), tool_name, input)
}

/// [`digest_of`] under any name: `NAME-` and the digest.
pub(crate) fn digest_named(name: &str, tool_name: &str, input: &serde_json::Value) -> String {
    use sha2::{Digest, Sha256};
    let text = serde_json::to_string(input).unwrap_or_default();
    let mut h = Sha256::new();
    h.update(tool_name.as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    let hex: String = h.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{name}-{hex}")
}
