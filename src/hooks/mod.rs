//! The agents' hooks (`turnback hook claude-code|codex|gemini|cursor|copilot|qwen|droid|opencode`): each agent's
//! payload parsed into one event type (`event.rs`), then applied to the store
//! (`apply.rs`). A hook never breaks its agent: whatever happens it exits 0
//! (unless `--strict` asks that a failed backup block the tool), prints
//! nothing on stdout but a `systemMessage` for the person, and makes no
//! permission decision.

pub(crate) mod apply;
pub(crate) mod claude;
pub(crate) mod codex;
pub(crate) mod event;
pub(crate) mod gemini;
pub(crate) mod hosts;
pub(crate) mod large_event;
pub(crate) mod last_error;
pub(crate) mod outcome;
pub(crate) mod payload;
pub(crate) mod shell;

use event::{Agent, HookEvent};
use payload::{BadEvent, Payload};

/// The event of `agent` in `payload`.
pub(crate) fn parse(agent: Agent, payload: &Payload) -> Result<HookEvent, BadEvent> {
    match agent {
        Agent::ClaudeCode => claude::parse(payload),
        Agent::Codex => codex::parse(payload),
        Agent::Gemini => gemini::parse(payload),
        Agent::Cursor => hosts::parse(hosts::Host::Cursor, payload),
        Agent::Copilot => hosts::parse(hosts::Host::CopilotCli, payload),
        Agent::Qwen => hosts::parse(hosts::Host::Qwen, payload),
        Agent::Droid => hosts::parse(hosts::Host::Droid, payload),
        Agent::Opencode => hosts::parse(hosts::Host::Opencode, payload),
    }
}
