//! Where the store lives: the home directory holding every session.
//!
//! Never the workspace unless the user says so (through `TURNBACK_HOME`).

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// The environment variable that names the store home, overriding every default.
pub const HOME_ENV: &str = "TURNBACK_HOME";

/// Finds the store home: `$TURNBACK_HOME`, else `<state dir>/turnback`
/// (on Linux `~/.local/state/turnback`), else `<local data dir>/turnback`,
/// else `~/.turnback`. With none of them, checkpoints are off: [`Error::NoHome`].
pub fn default_home() -> Result<PathBuf> {
    resolve(
        std::env::var_os(HOME_ENV),
        dirs::state_dir(),
        dirs::data_local_dir(),
        dirs::home_dir(),
    )
}

fn resolve(
    env: Option<OsString>,
    state: Option<PathBuf>,
    data_local: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Result<PathBuf> {
    if let Some(env) = env.filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(env));
    }
    state
        .or(data_local)
        .map(|d| d.join("turnback"))
        .or_else(|| home.map(|h| h.join(".turnback")))
        .ok_or(Error::NoHome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<PathBuf> {
        Some(PathBuf::from(s))
    }

    #[test]
    fn env_wins_over_everything() {
        let got = resolve(Some("/custom".into()), p("/s"), p("/d"), p("/h")).unwrap();
        assert_eq!(got, PathBuf::from("/custom"));
    }

    #[test]
    fn empty_env_is_ignored() {
        let got = resolve(Some("".into()), p("/s"), p("/d"), p("/h")).unwrap();
        assert_eq!(got, PathBuf::from("/s/turnback"));
    }

    #[test]
    fn falls_back_in_order() {
        assert_eq!(
            resolve(None, None, p("/d"), p("/h")).unwrap(),
            PathBuf::from("/d/turnback")
        );
        assert_eq!(
            resolve(None, None, None, p("/h")).unwrap(),
            PathBuf::from("/h/.turnback")
        );
    }

    #[test]
    fn nothing_means_checkpoints_off() {
        assert!(matches!(
            resolve(None, None, None, None),
            Err(Error::NoHome)
        ));
    }
}
