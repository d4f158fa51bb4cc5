//! What a hook event came to: the messages for the person, whether a
//! backup failed, and what was done for a shell call. Filled in by
//! `apply.rs` and `shell.rs`, read by `commands/hook.rs`.

/// What the hook tells the agent.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Lines for the person (the hook's `systemMessage`).
    pub messages: Vec<String>,
    /// A backup failed before a file tool ran (what `--strict` blocks on).
    pub backup_failed: bool,
    /// A note for the log, not shown: what was done for a shell call.
    pub shell: Option<ShellOutcome>,
}

impl Outcome {
    pub(crate) fn say(&mut self, text: String) {
        self.messages.push(format!("turnback: {text}"));
    }
}

/// What the hook did for a shell call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShellOutcome {
    /// The command is turnback itself (`turnback undo` from a slash
    /// command): never scanned, or its own restore would be recorded as the
    /// agent's change.
    Turnback,
    /// A bracket was begun before the command (its scan id).
    Begun(String),
    /// The call's bracket was committed: this many files recorded.
    Committed(usize),
    /// No bracket of this call was open (never begun, or already ended).
    NotOpen,
    /// The scan failed; the message says why.
    Failed,
}
