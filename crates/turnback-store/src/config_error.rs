//! The two ways settings can be wrong ([`crate::Error::BadConfig`],
//! [`crate::Error::BadSetting`]): each names where, so that the person can
//! fix it.

use std::path::PathBuf;

/// A config file that does not parse, or holds a key that is unknown or a
/// value that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "config file {} line {line}{}: {reason}",
    path.display(),
    key.as_ref().map(|k| format!(", key {k:?}")).unwrap_or_default()
)]
pub struct ConfigFileError {
    /// The config file.
    pub path: PathBuf,
    /// The line (1 is the first).
    pub line: usize,
    /// The key, when the line has one.
    pub key: Option<String>,
    /// What is wrong.
    pub reason: String,
}

/// An environment variable that overrides a setting, holding a wrong value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?}: {reason}")]
pub struct SettingError {
    /// The variable.
    pub name: String,
    /// Its value.
    pub value: String,
    /// What is wrong.
    pub reason: String,
}
