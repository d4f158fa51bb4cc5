//! Settings a user can see: how many sessions and days retention keeps,
//! each session's caps on entries and stored bytes, and whether backups are
//! compressed, and how much disk each workspace's scan baseline may take;
//! each value with where it came from (a default, the config
//! file, the environment, a flag).
//!
//! The config file is `$XDG_CONFIG_HOME/turnback/config.toml` (else
//! `~/.config/turnback/config.toml`); every key is optional. The environment
//! overrides the file, and a command's flag overrides both. A file that does
//! not parse, or holds a key that is unknown or a value that is wrong, is an
//! error naming the file, the line and the key: a setting silently ignored
//! would keep (or drop) what the user did not mean.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::{DeTable, DeValue};

use crate::config_error::{ConfigFileError, SettingError};
use crate::error::{Error, Result};

/// The file's keys, and the environment variables that override them, in the
/// order `turnback config` lists them.
pub const KEYS: [(&str, &str); 6] = [
    ("keep_sessions", "TURNBACK_KEEP_SESSIONS"),
    ("keep_days", "TURNBACK_KEEP_DAYS"),
    ("max_entries", "TURNBACK_MAX_ENTRIES"),
    ("max_bytes", "TURNBACK_MAX_BYTES"),
    ("compress_backups", "TURNBACK_COMPRESS_BACKUPS"),
    ("max_baseline_bytes", "TURNBACK_MAX_BASELINE_BYTES"),
];

/// The default of `max_baseline_bytes`: 256 MiB of disk per workspace.
pub const DEFAULT_MAX_BASELINE_BYTES: u64 = 256 << 20;

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Built in.
    Default,
    /// The config file, at this line.
    File {
        /// The file.
        path: PathBuf,
        /// The line of the key (1 is the first).
        line: usize,
    },
    /// This environment variable.
    Env(&'static str),
    /// This flag of the command.
    Flag(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line } => write!(f, "{} line {line}", path.display()),
            Source::Env(name) => f.write_str(name),
            Source::Flag(name) => f.write_str(name),
        }
    }
}

/// One setting's value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting<T> {
    /// The value in force.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

impl<T> Setting<T> {
    fn default(value: T) -> Self {
        Setting {
            value,
            source: Source::Default,
        }
    }

    /// Replaces the value, from `source` (a command's flag, say).
    pub fn set(&mut self, value: T, source: Source) {
        *self = Setting { value, source };
    }
}

/// The settings in force: retention and the per-session caps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Retention keeps this many most recently changed sessions.
    pub keep_sessions: Setting<usize>,
    /// Retention keeps every session changed within this many days.
    pub keep_days: Setting<u64>,
    /// A session keeps at most this many entries; a change past it evicts
    /// the oldest.
    pub max_entries: Setting<usize>,
    /// A session's backups take at most this many bytes (of the files backed
    /// up); a change past it evicts the oldest entries.
    pub max_bytes: Setting<u64>,
    /// New backups of files are compressed (zstd) where that makes them
    /// smaller (`docs/FORMAT.md`, "Blob encoding"); either way every backup
    /// reads back.
    pub compress_backups: Setting<bool>,
    /// A workspace's scan baseline (`baselines/<key>/blobs/`, the copies a
    /// scan bracket takes of the files git does not hold) takes at most this
    /// many bytes of disk; a beginning that would go past it copies no more,
    /// and a change to a file it did not copy is reported not backed up.
    pub max_baseline_bytes: Setting<u64>,
    /// The config file looked for (it may not exist); `None` without a home
    /// directory to find it in.
    pub config_file: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            keep_sessions: Setting::default(20),
            keep_days: Setting::default(30),
            max_entries: Setting::default(2_000),
            max_bytes: Setting::default(1 << 30),
            compress_backups: Setting::default(true),
            max_baseline_bytes: Setting::default(DEFAULT_MAX_BASELINE_BYTES),
            config_file: None,
        }
    }
}

impl Settings {
    /// The settings of this process: the defaults, the config file at
    /// [`Settings::config_path`], and the environment.
    pub fn load() -> Result<Settings> {
        // An empty variable counts as unset.
        Settings::load_from(Settings::config_path().as_deref(), |name| {
            std::env::var_os(name).filter(|v| !v.is_empty())
        })
    }

    /// The settings from the config file `config` (absent: none) and the
    /// environment `env` gives.
    pub fn load_from(
        config: Option<&Path>,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Settings> {
        let mut s = Settings {
            config_file: config.map(Path::to_owned),
            ..Settings::default()
        };
        if let Some(path) = config {
            match std::fs::read(path) {
                Ok(bytes) => s.apply_file(path, &bytes)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("read config file", path)(e)),
            }
        }
        for (key, var) in KEYS {
            let Some(value) = env(var).filter(|v| !v.is_empty()) else {
                continue;
            };
            let bad = |reason: String| {
                Error::BadSetting(SettingError {
                    name: var.to_owned(),
                    value: value.to_string_lossy().into_owned(),
                    reason,
                })
            };
            let text = value.to_str().ok_or_else(|| bad("not UTF-8".into()))?;
            s.set_key(key, Raw::Text(text), Source::Env(var))
                .map_err(bad)?;
        }
        Ok(s)
    }

    /// `$XDG_CONFIG_HOME/turnback/config.toml` (an absolute
    /// `XDG_CONFIG_HOME` only, as the XDG spec says), else
    /// `~/.config/turnback/config.toml`.
    pub fn config_path() -> Option<PathBuf> {
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute());
        xdg.or_else(|| dirs::home_dir().map(|h| h.join(".config")))
            .map(|d| d.join("turnback").join("config.toml"))
    }

    /// How long retention keeps a session after its last change.
    pub fn keep_for(&self) -> Duration {
        Duration::from_secs(self.keep_days.value.saturating_mul(24 * 3600))
    }

    /// Where the value of `key` (one of [`KEYS`]) came from.
    pub fn source_of(&self, key: &str) -> &Source {
        match key {
            "keep_sessions" => &self.keep_sessions.source,
            "keep_days" => &self.keep_days.source,
            "max_entries" => &self.max_entries.source,
            "max_bytes" => &self.max_bytes.source,
            "compress_backups" => &self.compress_backups.source,
            "max_baseline_bytes" => &self.max_baseline_bytes.source,
            _ => panic!("{key} is not a setting"),
        }
    }

    fn apply_file(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        let bad = |line, key, reason| {
            Error::BadConfig(ConfigFileError {
                path: path.to_owned(),
                line,
                key,
                reason,
            })
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|e| bad(line_of(bytes, e.valid_up_to()), None, "not UTF-8".into()))?;
        let table = DeTable::parse(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(bytes, s.start));
            bad(line, None, e.message().trim().to_owned())
        })?;
        for (key, value) in table.get_ref() {
            let line = line_of(bytes, key.span().start);
            let name: &str = key.get_ref();
            let raw = match value.get_ref() {
                DeValue::Integer(i) => Raw::Int(i.as_str(), i.radix()),
                DeValue::String(s) => Raw::Text(s),
                DeValue::Boolean(b) => Raw::Bool(*b),
                other => Raw::Other(other.type_str()),
            };
            let source = Source::File {
                path: path.to_owned(),
                line,
            };
            self.set_key(name, raw, source)
                .map_err(|reason| bad(line, Some(name.to_owned()), reason))?;
        }
        Ok(())
    }

    /// Sets `key` to `raw`, from `source`; the reason it cannot be.
    fn set_key(&mut self, key: &str, raw: Raw<'_>, source: Source) -> Result<(), String> {
        match key {
            "keep_sessions" => self.keep_sessions.set(count(raw, 0)? as usize, source),
            "keep_days" => self.keep_days.set(count(raw, 0)?, source),
            "max_entries" => self.max_entries.set(count(raw, 1)? as usize, source),
            "max_bytes" => self.max_bytes.set(bytes(raw)?, source),
            "compress_backups" => self.compress_backups.set(boolean(raw)?, source),
            "max_baseline_bytes" => self.max_baseline_bytes.set(bytes(raw)?, source),
            _ => {
                let known: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                return Err(format!("unknown key; the keys are {}", known.join(", ")));
            }
        }
        Ok(())
    }
}

/// A value as the file or the environment gives it.
enum Raw<'a> {
    /// An integer of the file (its digits, its radix).
    Int(&'a str, u32),
    /// A string of the file, or an environment variable.
    Text(&'a str),
    /// A boolean of the file.
    Bool(bool),
    /// Anything else of the file (its TOML type).
    Other(&'static str),
}

/// `true` or `false` (the environment also takes `1`/`0`, `yes`/`no`,
/// `on`/`off`).
fn boolean(raw: Raw<'_>) -> Result<bool, String> {
    const WANTED: &str = "expected true or false";
    match raw {
        Raw::Bool(b) => Ok(b),
        Raw::Text(t) => match t.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(format!("{WANTED}, found {t:?}")),
        },
        Raw::Int(d, _) => Err(format!("{WANTED}, found {d}")),
        Raw::Other(ty) => Err(format!("{WANTED}, found a {ty}")),
    }
}

/// A whole number of at least `min`.
fn count(raw: Raw<'_>, min: u64) -> Result<u64, String> {
    let n = match raw {
        Raw::Int(digits, radix) => u64::from_str_radix(digits, radix).ok(),
        Raw::Text(t) => t.trim().parse::<u64>().ok(),
        Raw::Bool(_) | Raw::Other(_) => None,
    };
    let wanted = || format!("expected a whole number of at least {min}");
    match n {
        Some(n) if n >= min && n <= usize::MAX as u64 => Ok(n),
        _ => Err(match raw {
            Raw::Text(t) => format!("{}, found {t:?}", wanted()),
            Raw::Int(d, _) => format!("{}, found {d}", wanted()),
            Raw::Bool(_) => format!("{}, found a boolean", wanted()),
            Raw::Other(ty) => format!("{}, found a {ty}", wanted()),
        }),
    }
}

/// A size in bytes: a whole number, or one with a unit (`K`, `M`, `G`, `T`,
/// powers of 1024, optionally followed by `iB` or `B`): `500M`, `2G`,
/// `1GiB`. At least 1.
fn bytes(raw: Raw<'_>) -> Result<u64, String> {
    const WANTED: &str =
        "expected a size in bytes of at least 1, like 1073741824, \"500M\" or \"2G\"";
    match raw {
        Raw::Int(digits, radix) => match u64::from_str_radix(digits, radix) {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("{WANTED}, found {digits}")),
        },
        Raw::Text(t) => parse_size(t).ok_or_else(|| format!("{WANTED}, found {t:?}")),
        Raw::Bool(_) => Err(format!("{WANTED}, found a boolean")),
        Raw::Other(ty) => Err(format!("{WANTED}, found a {ty}")),
    }
}

/// `500M`, `2G`, `1GiB`, `4096`: bytes, or `None`.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let n: u64 = number.parse().ok()?;
    let unit = unit.trim().to_ascii_uppercase();
    let unit = unit
        .strip_suffix("IB")
        .or_else(|| unit.strip_suffix('B'))
        .unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift).filter(|&n| n >= 1)
}

/// The line (from 1) of byte `offset` of `bytes`.
fn line_of(bytes: &[u8], offset: usize) -> usize {
    1 + bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(file: &str, env: &[(&str, &str)]) -> Result<Settings> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, file).unwrap();
        Settings::load_from(Some(&path), |name| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn defaults_then_the_file_then_the_environment() {
        let s = load("", &[]).unwrap();
        assert_eq!(
            (s.keep_sessions.value, s.keep_days.value),
            (20, 30),
            "the defaults"
        );
        assert_eq!((s.max_entries.value, s.max_bytes.value), (2000, 1 << 30));
        assert_eq!(s.max_bytes.source, Source::Default);
        let s = load(
            "# mine\nkeep_days = 7\nmax_bytes = \"500M\"\nmax_entries = 100\n",
            &[
                ("TURNBACK_MAX_ENTRIES", "50"),
                ("TURNBACK_KEEP_SESSIONS", ""),
            ],
        )
        .unwrap();
        assert_eq!(s.keep_days.value, 7);
        assert!(matches!(s.keep_days.source, Source::File { line: 2, .. }));
        assert_eq!(s.max_bytes.value, 500 << 20);
        assert!(matches!(s.max_bytes.source, Source::File { line: 3, .. }));
        assert_eq!(s.max_entries.value, 50);
        assert_eq!(s.max_entries.source, Source::Env("TURNBACK_MAX_ENTRIES"));
        assert_eq!(s.keep_sessions.source, Source::Default, "empty is unset");
        assert_eq!(s.keep_for(), Duration::from_secs(7 * 24 * 3600));
    }

    #[test]
    fn a_missing_file_is_the_defaults() {
        let s = Settings::load_from(Some(Path::new("/nonexistent/config.toml")), |_| None);
        assert_eq!(s.unwrap().keep_sessions.value, 20);
    }

    #[test]
    fn a_bad_file_names_the_file_the_line_and_the_key() {
        for (text, line, key, why) in [
            (
                "keep_days = 3\n\nkeep_dayz = 4\n",
                3,
                Some("keep_dayz"),
                "unknown key",
            ),
            ("\nmax_entries = 0\n", 2, Some("max_entries"), "at least 1"),
            ("keep_days = \"soon\"\n", 1, Some("keep_days"), "\"soon\""),
            (
                "max_bytes = true\n",
                1,
                Some("max_bytes"),
                "found a boolean",
            ),
            ("max_bytes = \"5Q\"\n", 1, Some("max_bytes"), "\"5Q\""),
            ("keep_days = 3\nkeep_sessions = \n", 2, None, ""),
        ] {
            match load(text, &[]) {
                Err(Error::BadConfig(ConfigFileError {
                    path,
                    line: l,
                    key: k,
                    reason,
                })) => {
                    assert!(path.ends_with("config.toml"));
                    assert_eq!((l, k.as_deref()), (line, key), "{text:?}: {reason}");
                    assert!(reason.contains(why), "{text:?}: {reason}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_bad_environment_variable_is_named() {
        match load("", &[("TURNBACK_MAX_BYTES", "lots")]) {
            Err(Error::BadSetting(SettingError { name, value, .. })) => {
                assert_eq!(
                    (name.as_str(), value.as_str()),
                    ("TURNBACK_MAX_BYTES", "lots")
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn compress_backups_is_a_boolean_from_the_file_or_the_environment() {
        assert!(load("", &[]).unwrap().compress_backups.value);
        let s = load("compress_backups = false\n", &[]).unwrap();
        assert!(!s.compress_backups.value);
        let s = load(
            "compress_backups = false\n",
            &[("TURNBACK_COMPRESS_BACKUPS", "on")],
        );
        assert!(s.unwrap().compress_backups.value, "the environment wins");
        let err = load("compress_backups = 1\n", &[]).unwrap_err().to_string();
        assert!(err.contains("expected true or false"), "{err}");
        assert!(load("", &[("TURNBACK_COMPRESS_BACKUPS", "perhaps")]).is_err());
    }

    #[test]
    fn max_baseline_bytes_is_a_size_from_the_file_or_the_environment() {
        let s = load("", &[]).unwrap();
        assert_eq!(s.max_baseline_bytes.value, DEFAULT_MAX_BASELINE_BYTES);
        let s = load("max_baseline_bytes = \"64M\"\n", &[]).unwrap();
        assert_eq!(s.max_baseline_bytes.value, 64 << 20);
        let s = load(
            "max_baseline_bytes = \"64M\"\n",
            &[("TURNBACK_MAX_BASELINE_BYTES", "1G")],
        )
        .unwrap();
        assert_eq!(s.max_baseline_bytes.value, 1 << 30);
        assert_eq!(
            s.source_of("max_baseline_bytes"),
            &Source::Env("TURNBACK_MAX_BASELINE_BYTES")
        );
        assert!(load("max_baseline_bytes = 0\n", &[]).is_err());
    }

    #[test]
    fn sizes_have_binary_units() {
        for (text, n) in [
            ("4096", Some(4096)),
            ("500M", Some(500 << 20)),
            ("2G", Some(2 << 30)),
            ("1GiB", Some(1 << 30)),
            ("3 kb", Some(3 << 10)),
            ("1T", Some(1 << 40)),
            ("0", None),
            ("-1", None),
            ("1.5G", None),
            ("G", None),
            ("99999999999T", None),
        ] {
            assert_eq!(parse_size(text), n, "{text}");
        }
    }
}
