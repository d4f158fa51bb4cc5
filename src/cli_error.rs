//! The error a command ends with, as the user sees it: a message, a hint, and
//! a kind whose row of the one table (`turnback::errors`) gives its exit code,
//! its JSON name and, for a store error, its hint and extra JSON fields.
//! Nothing here decides those; it only carries what the table said.

use serde_json::Value;
use turnback::errors::Kind;
use turnback::{json, text};
use turnback_store::Error;

/// An error as the user sees it.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    hint: Option<String>,
    kind: Kind,
    /// The fields the table adds to the JSON object (boxed: errors stay small).
    more: Option<Box<Value>>,
}

impl CliError {
    /// An error the command line finds itself, of kind `error`.
    pub(crate) fn new(message: impl Into<String>, hint: Option<String>) -> Self {
        CliError {
            message: message.into(),
            hint,
            kind: Kind::Other,
            more: None,
        }
    }

    /// The same error, of another kind (its exit code and JSON name follow).
    pub(crate) fn kind(self, kind: impl Into<Kind>) -> Self {
        CliError {
            kind: kind.into(),
            ..self
        }
    }

    /// This error, said of the commit of scan `scan` of `session` after
    /// its command ran: the command's changes are NOT recorded yet, and the
    /// hint says how to record them (or put them back) once the cause is
    /// fixed. Never "nothing was lost": the files have changed.
    pub(crate) fn scan_not_recorded(self, scan: &str, session: &str) -> Self {
        CliError {
            message: format!(
                "the command ran, but what it changed is NOT recorded yet: {}",
                self.message
            ),
            hint: Some(format!(
                "its scan is still open: once the cause is fixed, `turnback --session {session} commit {scan}` records the changes (`turnback --session {session} rollback {scan}` puts the files back instead)"
            )),
            ..self
        }
    }

    /// A usage error: exit code 2.
    pub(crate) fn usage(message: impl Into<String>, hint: &str) -> Self {
        CliError::new(message, Some(hint.into())).kind(Kind::Usage)
    }

    /// The one-line message, without its hint.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The process's exit code.
    pub(crate) fn code(&self) -> u8 {
        self.kind.row().exit_code
    }

    /// The error as a person reads it: one line, and a hint line where there
    /// is one. Control characters are escaped: a message names files and ids
    /// an agent chose, which must not forge lines or reach the terminal raw.
    pub(crate) fn text(&self) -> String {
        let message = text::escape(&self.message);
        match &self.hint {
            Some(hint) => format!("error: {message}\nhint: {}\n", text::escape(hint)),
            None => format!("error: {message}\n"),
        }
    }

    /// The error as the JSON object of `docs/JSON.md`.
    pub(crate) fn json(&self) -> Value {
        json::error(
            self.kind.row().name,
            &self.message,
            self.hint.as_deref(),
            self.code(),
            self.more.as_deref(),
        )
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        let kind = Kind::from(e.kind());
        let row = kind.row();
        CliError {
            message: e.to_string(),
            hint: row.hint.of(&e),
            kind,
            more: row.json.map(|f| Box::new(f(&e))),
        }
    }
}
