//! Reading a hook's stdin: one JSON object, checked field by field. Anything
//! else (truncated, not an object, a field of the wrong type) is an error
//! that says what is wrong, and the hook ignores the event.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The most of an event a hook reads whole, and keeps. A `Write` of a large
/// file carries its whole contents: past this the event is read on without
/// them (`large_event.rs`); what is left, if still past this, is ignored,
/// not half read.
pub(crate) const MAX_EVENT_BYTES: u64 = 64 << 20;

/// An event that cannot be understood, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadEvent(pub String);

impl std::fmt::Display for BadEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad(what: impl Into<String>) -> BadEvent {
    BadEvent(what.into())
}

/// Reads the event object from `input`: whole up to [`MAX_EVENT_BYTES`],
/// past that without the contents of the files it carries.
pub(crate) fn read_object(input: &mut dyn Read) -> Result<Payload, BadEvent> {
    let mut bytes = Vec::new();
    (&mut *input)
        .take(MAX_EVENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(format!("cannot read the event from stdin: {e}")))?;
    if bytes.len() as u64 > MAX_EVENT_BYTES {
        let rest = std::io::Cursor::new(bytes).chain(input);
        return super::large_event::read(rest, MAX_EVENT_BYTES)
            .map(Payload)
            .map_err(bad);
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(Payload(map)),
        Ok(_) => Err(bad("the event is not a JSON object")),
        Err(e) if e.is_eof() => Err(bad(format!("the event is truncated ({e})"))),
        Err(e) => Err(bad(format!("the event is not JSON ({e})"))),
    }
}

/// A hook's event object.
#[derive(Debug, Clone)]
pub(crate) struct Payload(pub Map<String, Value>);

impl Payload {
    /// A string field that must be there.
    pub(crate) fn str(&self, key: &str) -> Result<&str, BadEvent> {
        match self.0.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(bad(format!("`{key}` is not a string"))),
            None => Err(bad(format!("`{key}` is missing"))),
        }
    }

    /// A string field that may be missing (or null).
    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&str>, BadEvent> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(bad(format!("`{key}` is not a string"))),
        }
    }

    /// A field of any type.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// `cwd`, which must be an absolute path.
    pub(crate) fn cwd(&self) -> Result<PathBuf, BadEvent> {
        absolute(self.str("cwd")?, "cwd")
    }

    /// `tool_input` as an object (an absent one is empty).
    pub(crate) fn tool_input(&self) -> Result<Map<String, Value>, BadEvent> {
        match self.0.get("tool_input") {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(bad("`tool_input` is not an object")),
        }
    }
}

/// `text` as an absolute path (`what` names it in the error).
pub(crate) fn absolute(text: &str, what: &str) -> Result<PathBuf, BadEvent> {
    let p = PathBuf::from(text);
    if text.is_empty() || text.contains('\0') || !p.is_absolute() {
        return Err(bad(format!("`{what}` is not an absolute path: {text:?}")));
    }
    Ok(p)
}

/// A path a tool names, made absolute against the agent's `cwd`.
pub(crate) fn tool_path(cwd: &Path, text: &str, what: &str) -> Result<PathBuf, BadEvent> {
    if text.is_empty() || text.contains('\0') {
        return Err(bad(format!("`{what}` is not a path: {text:?}")));
    }
    Ok(cwd.join(text))
}

/// A string field of a tool's input that must be there.
pub(crate) fn input_str<'a>(input: &'a Map<String, Value>, key: &str) -> Result<&'a str, BadEvent> {
    match input.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(bad(format!("`tool_input.{key}` is not a string"))),
        None => Err(bad(format!("`tool_input.{key}` is missing"))),
    }
}

/// The workspace: the project directory the agent's environment names
/// (`var`), else its `cwd`.
pub(crate) fn workspace_from(var: &str, cwd: &Path) -> Result<PathBuf, BadEvent> {
    match std::env::var(var) {
        Ok(dir) if !dir.is_empty() => absolute(&dir, var),
        _ => Ok(cwd.to_owned()),
    }
}
