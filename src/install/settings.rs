//! Reading and writing an agent's settings file: a JSON object, written back
//! whole through a temporary renamed over it (its permissions kept), so the
//! agent never reads half a file. A file that is not a JSON object is
//! refused, untouched. A settings file that is a symbolic link (dotfiles kept
//! by stow or chezmoi) is written through: the file it leads to is replaced,
//! the link stays.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The settings in `path`; an absent (or empty) file is empty settings.
pub(crate) fn read(path: &Path) -> Result<Map<String, Value>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!("{} is not a JSON object", path.display())),
        Err(e) => Err(format!("{} is not valid JSON ({e})", path.display())),
    }
}

/// The settings as written: two-space indents, a newline at the end.
pub(crate) fn render(settings: &Map<String, Value>) -> String {
    let mut s = serde_json::to_string_pretty(settings).expect("a JSON map always serializes");
    s.push('\n');
    s
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

/// Writes `settings` to `path` (through it, when it is a symbolic link),
/// making its directory if needed.
pub(crate) fn write(path: &Path, settings: &Map<String, Value>) -> Result<(), String> {
    let path = &destination(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("settings.json");
    let temp = dir.join(format!(".{name}.turnback-{}.tmp", std::process::id()));
    let done = (|| {
        std::fs::write(&temp, render(settings))?;
        if let Ok(md) = std::fs::metadata(path) {
            std::fs::set_permissions(&temp, md.permissions())?;
        }
        std::fs::rename(&temp, path)
    })();
    done.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write {}: {e}", path.display())
    })
}
