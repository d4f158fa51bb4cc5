//! Reading and writing an agent's settings file: a JSON object (with
//! comments where the agent reads them), written back through a temporary
//! renamed over it (its permissions kept), so the agent never reads half a
//! file, and the file as it was kept beside it first. A file that is not a
//! JSON object is refused, untouched. A settings file that is a symbolic link
//! (dotfiles kept by stow or chezmoi) is written through: the file it leads
//! to is replaced, the link stays.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::jsonc::{self, Doc};

/// A settings file as read: its text, where each value is in it, and its
/// value.
pub(crate) struct Settings {
    /// The text (`{}` for a file that is absent or blank).
    pub text: String,
    pub doc: Doc,
    pub map: Map<String, Value>,
    /// Whether the agent reads comments in it (and so may the parser).
    pub comments: bool,
    /// Whether the file held anything: a file worth a backup.
    pub existed: bool,
}

/// The settings in `path` (comments allowed when `comments`); an absent (or
/// blank) file is empty settings.
pub(crate) fn read(path: &Path, comments: bool) -> Result<Settings, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let existed = !bytes.iter().all(u8::is_ascii_whitespace);
    let text = match String::from_utf8(bytes) {
        Ok(t) if existed => t,
        Ok(_) => "{}\n".to_owned(),
        Err(_) => {
            return Err(format!(
                "{} is not valid JSON (it is not UTF-8)",
                path.display()
            ));
        }
    };
    let doc = jsonc::parse(&text, comments)
        .map_err(|e| format!("{} is not valid JSON ({e})", path.display()))?;
    let Value::Object(map) = doc.root.value() else {
        return Err(format!("{} is not a JSON object", path.display()));
    };
    Ok(Settings {
        text,
        doc,
        map,
        comments,
        existed,
    })
}

/// Where the file as it was before install or uninstall changed it is kept:
/// beside the path the agent reads (beside the link, for a link: not in the
/// user's dotfiles).
pub(crate) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".turnback-backup");
    path.with_file_name(name)
}

/// The file a write of `path` replaces: `path` itself or, when it is a
/// symbolic link, the file the link leads to (renaming over the link would
/// put a plain file in its place and cut the user's dotfiles off). A link
/// that leads nowhere is refused: writing through it would create a file
/// somewhere the user did not pick.
fn destination(path: &Path) -> Result<PathBuf, String> {
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
            let to = std::fs::read_link(path).unwrap_or_default();
            format!(
                "{} is a symbolic link to {}, which cannot be followed ({e})",
                path.display(),
                to.display()
            )
        }),
        _ => Ok(path.to_owned()),
    }
}

/// Writes `text` over the settings `old` read from `path` (through it,
/// when it is a symbolic link), making its directory if needed; the text
/// it had is kept in [`backup_path`] first. Returns where the backup is
/// (`None` when the file held nothing).
pub(crate) fn write(path: &Path, old: &Settings, text: &str) -> Result<Option<PathBuf>, String> {
    let target = destination(path)?;
    let backup = old.existed.then(|| backup_path(path));
    if let Some(b) = &backup {
        // Only the file itself is written if this fails: the settings are
        // as they were, whatever happened to the backup's temporary.
        replace(b, &old.text, Some(&target))?;
    }
    replace(&target, text, None)?;
    Ok(backup)
}

/// Puts `text` at `path` atomically: a temporary beside it, renamed over
/// it, with the permissions of `path` (or of `like`: a backup is as private
/// as the settings it copies).
fn replace(path: &Path, text: &str, like: Option<&Path>) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("settings.json");
    let temp = dir.join(format!(".{name}.turnback-{}.tmp", std::process::id()));
    let done = (|| {
        std::fs::write(&temp, text)?;
        if let Ok(md) = std::fs::metadata(like.unwrap_or(path)) {
            std::fs::set_permissions(&temp, md.permissions())?;
        }
        std::fs::rename(&temp, path)
    })();
    done.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write {}: {e}", path.display())
    })
}
