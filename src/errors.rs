//! The one table of how an error is reported: for every kind of error, its
//! stable JSON `kind` name, the exit code, the hint (what to do next) and the
//! fields its JSON object carries besides the common ones. `docs/JSON.md`
//! ("Errors") documents it; a test below checks the two agree.
//!
//! A store error's kind is [`ErrorKind`], which is exhaustive although
//! [`Error`] is not: [`row`] matches it without a catch-all arm, so a new kind
//! of store error does not compile until it has a row here.

use serde_json::{Value, json};
use turnback_store::{Conflict, ConflictReason, Error, ErrorKind, UnsafeReason};

/// Exit code of an error.
pub const EXIT_ERROR: u8 = 1;
/// Exit code of a usage error: a flag or argument missing or wrong, no
/// session given to an agent's command, a config file that does not parse.
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a refusal: a file changed since, or is in an unrelated
/// workspace; nothing was touched.
pub const EXIT_REFUSED: u8 = 3;

/// Every kind of error the command line reports: the store's, and the few it
/// finds itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An error of the store.
    Store(ErrorKind),
    /// A command line the parser rejects, or one missing what the command
    /// needs (no session given, no turn or message where it cannot ask).
    Usage,
    /// A person's command without `--session`, and no session has changes
    /// in the workspace.
    NoSession,
    /// `write` with a standard input that is closed or not open for reading.
    NoInput,
    /// Anything else (the terminal, the demo, the manual page).
    Other,
}

impl Kind {
    /// The kinds the command line finds itself. When one is added, add it
    /// here too: the test below checks every kind in this list and the store's.
    const OWN: [Kind; 4] = [Kind::Usage, Kind::NoSession, Kind::NoInput, Kind::Other];

    /// Every kind: the store's, then the command line's own.
    pub fn all() -> impl Iterator<Item = Kind> {
        ErrorKind::ALL
            .iter()
            .copied()
            .map(Kind::Store)
            .chain(Kind::OWN)
    }

    /// This kind's row of the table.
    pub fn row(self) -> Row {
        row(self)
    }
}

impl From<ErrorKind> for Kind {
    fn from(k: ErrorKind) -> Kind {
        Kind::Store(k)
    }
}

/// How one kind of error is reported.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The JSON `kind`: a stable name for programs to branch on.
    pub name: &'static str,
    /// The process's exit code: [`EXIT_ERROR`], [`EXIT_USAGE`] or [`EXIT_REFUSED`].
    pub exit_code: u8,
    /// What the person can do next, for a store error. The command line's own
    /// errors say their hint where they are made.
    pub hint: Hint,
    /// The fields the JSON object carries besides `kind`, `message`, `hint`,
    /// `exit_code` and `conflicts` (which is `null` unless this sets it), as
    /// an object; `None` for most kinds.
    pub json: Option<fn(&Error) -> Value>,
}

/// The hint of a row.
#[derive(Debug, Clone, Copy)]
pub enum Hint {
    /// No hint.
    None,
    /// Always this text.
    Text(&'static str),
    /// Made from the error (it names the error's file or workspace).
    Of(fn(&Error) -> Option<String>),
}

impl Hint {
    /// The hint for `e`, an error of this row's kind.
    pub fn of(&self, e: &Error) -> Option<String> {
        match self {
            Hint::None => None,
            Hint::Text(t) => Some((*t).to_owned()),
            Hint::Of(f) => f(e),
        }
    }
}

/// The row of `kind`.
pub fn row(kind: Kind) -> Row {
    use ErrorKind as E;
    let error = |name| Row {
        name,
        exit_code: EXIT_ERROR,
        hint: Hint::None,
        json: None,
    };
    let hint = |name, hint| Row {
        hint,
        ..error(name)
    };
    let text = |name, t| hint(name, Hint::Text(t));
    let revert_what = "`turnback log` lists what this session can revert; --session picks another";
    let busy = "another agent is working on it; try again in a moment";
    let put_back = "put the directory back as it was and try again; nothing was written";
    let lost_backup = "this backup cannot be restored; the session's other files are unaffected";
    let reread = "read the file again, then write it";
    let store = match kind {
        Kind::Store(k) => k,
        Kind::Usage => {
            return Row {
                exit_code: EXIT_USAGE,
                ..error("usage")
            };
        }
        Kind::NoSession => return error("no-session"),
        Kind::NoInput => return error("no-input"),
        Kind::Other => return error("error"),
    };
    match store {
        E::Refused => Row {
            exit_code: EXIT_REFUSED,
            json: Some(|e| match e {
                Error::Refused { conflicts, .. } => {
                    json!({ "conflicts": self::conflicts(conflicts) })
                }
                _ => Value::Null,
            }),
            ..hint(
                "refused",
                Hint::Of(|e| {
                    match e {
                    // Forcing does not help: what is in the way must go first.
                    Error::Refused { conflicts, .. }
                        if !conflicts.is_empty()
                            && conflicts
                                .iter()
                                .all(|c| matches!(c.reason, ConflictReason::NotEmpty { .. })) =>
                    {
                        Some("move what the directory holds elsewhere (the changes did not make it), then try again".into())
                    }
                    _ => Some("--dry-run shows the changes; --force overwrites them".into()),
                }
                }),
            )
        },
        E::OutsideScope => Row {
            exit_code: EXIT_REFUSED,
            ..hint(
                "outside-scope",
                Hint::Of(|e| match e {
                    Error::OutsideScope { workspace, .. } => {
                        let w = workspace.display();
                        Some(format!("run it in {w} or pass --workspace {w}"))
                    }
                    _ => None,
                }),
            )
        },
        E::InvalidSessionId => Row {
            exit_code: EXIT_USAGE,
            ..text(
                "invalid-session-id",
                "a session id is 1 to 128 of A-Z a-z 0-9 . _ - and does not start with '.'",
            )
        },
        E::NoHome => text("no-home", "set TURNBACK_HOME or pass --home DIR"),
        E::SessionNotFound => text(
            "session-not-found",
            "`turnback sessions` lists the sessions of this store",
        ),
        E::CorruptIndex => hint(
            "corrupt-index",
            Hint::Of(|e| match e {
                Error::CorruptIndex { path, .. } => Some(format!(
                    "move {} aside to start the session over; its backups stay where they are",
                    path.display()
                )),
                _ => None,
            }),
        ),
        E::NewerFormat => text(
            "newer-format",
            "this store was written by a newer turnback: use that one",
        ),
        E::Io => hint(
            "io",
            Hint::Of(|e| match e {
                Error::Io { source, path, .. } => Some(match source.kind() {
                    std::io::ErrorKind::NotFound => format!("check that {} exists", path.display()),
                    std::io::ErrorKind::PermissionDenied => {
                        format!("check the permissions of {}", path.display())
                    }
                    std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                        "free some space and try again; nothing was lost".into()
                    }
                    _ => "nothing was lost; try again once the cause is fixed".into(),
                }),
                _ => None,
            }),
        ),
        E::OutsideWorkspace => text(
            "outside-workspace",
            "pass --workspace DIR to protect files under another root",
        ),
        E::NotRegularFile => text("not-regular-file", "turnback protects regular files only"),
        E::FileNotFound => text("file-not-found", "check the path; nothing was changed"),
        E::NonUtf8Path => error("non-utf8-path"),
        // Found before anything is written (a link where a directory or a
        // file was): a refusal, as a changed file is.
        E::UnsafePath => Row {
            exit_code: EXIT_REFUSED,
            ..text(
                "unsafe-path",
                "move the symbolic link (or what else is in the way) aside, then try again; nothing was written",
            )
        },
        E::WorkspaceMoved => text("workspace-moved", put_back),
        E::FileBusy => text("file-busy", busy),
        E::SessionBusy => text("session-busy", busy),
        E::NothingToUndo => text("nothing-to-undo", revert_what),
        E::NoChangeToFile => text("no-change-to-file", revert_what),
        E::MessageNotFound => text("message-not-found", revert_what),
        E::NothingToRedo => text(
            "nothing-to-redo",
            "there is no undo, revert or rewind left to take back",
        ),
        E::TurnNotFound => text(
            "turn-not-found",
            "`turnback rewind` on a terminal lists the turns",
        ),
        E::BlobMissing => text("backup-missing", lost_backup),
        E::BlobCorrupt => text("backup-corrupt", lost_backup),
        E::NoSuchEntry => text(
            "no-such-entry",
            "`turnback log` lists the session's entries",
        ),
        E::AlreadyCommitted => text("already-committed", "undo or revert it instead"),
        E::NotRead => text("not-read", reread),
        E::ChangedSinceRead => text("changed-since-read", reread),
        E::ContentsMismatch => Row {
            json: Some(|e| match e {
                Error::ContentsMismatch {
                    expected_size,
                    expected_sha256,
                    actual_size,
                    actual_sha256,
                    ..
                } => expected_actual(
                    *expected_size,
                    expected_sha256.as_deref(),
                    *actual_size,
                    actual_sha256,
                ),
                _ => Value::Null,
            }),
            ..text(
                "contents-mismatch",
                "the file was not touched: send the whole contents again",
            )
        },
        E::UnsafeStore => hint("unsafe-store", Hint::Of(unsafe_store_hint)),
        E::Evicted => Row {
            exit_code: EXIT_REFUSED,
            json: Some(|e| match e {
                Error::Evicted { files, .. } => json!({ "files": files }),
                _ => Value::Null,
            }),
            ..text(
                "evicted",
                "`turnback log` shows what the caps evicted; --force restores the other files",
            )
        },
        E::BadConfig => Row {
            exit_code: EXIT_USAGE,
            json: Some(|e| match e {
                Error::BadConfig(c) => json!({ "path": c.path, "line": c.line, "key": c.key }),
                _ => Value::Null,
            }),
            ..hint(
                "bad-config",
                Hint::Of(|e| match e {
                    Error::BadConfig(c) => Some(format!(
                        "fix line {} of {} (docs/USAGE.md lists the keys); nothing was done",
                        c.line,
                        c.path.display()
                    )),
                    _ => None,
                }),
            )
        },
        E::BadSetting => Row {
            exit_code: EXIT_USAGE,
            json: Some(|e| match e {
                Error::BadSetting(b) => json!({ "name": b.name, "value": b.value }),
                _ => Value::Null,
            }),
            ..text(
                "bad-setting",
                "unset the variable or set it to a value docs/USAGE.md's settings allow; nothing was done",
            )
        },
        E::NoSuchScan => text(
            "no-such-scan",
            "`turnback checkpoint --scan` prints a scan's id; `turnback log` shows what a committed one recorded",
        ),
        E::ScanFailed => text(
            "scan-failed",
            "nothing was changed; fix what the message says (is `git` installed?) and try again",
        ),
        E::InsideStore => hint(
            "inside-store",
            Hint::Of(|e| match e {
                Error::InsideStore { home, .. } => Some(format!(
                    "the store home {} is inside this workspace: its files are not the agent's to change (pass --home DIR for a store outside the workspace)",
                    home.display()
                )),
                _ => None,
            }),
        ),
    }
}

/// What to do about a store that is not safe to use, by the reason.
fn unsafe_store_hint(e: &Error) -> Option<String> {
    let Error::UnsafeStore { path, reason } = e else {
        return None;
    };
    let path = path.display();
    Some(match reason {
        UnsafeReason::WritableByOthers { .. } => {
            format!("chmod go-w {path}, or pass --home DIR to use another store")
        }
        UnsafeReason::SymbolicLink => format!(
            "turnback never makes {path} a symbolic link: remove it if you did not, or pass --home DIR to use another store"
        ),
        UnsafeReason::ForeignWorkspace { .. } => {
            "this session is not yours to restore: pass --session for one of your own".into()
        }
        _ => "it belongs to another user: pass --home DIR (or set TURNBACK_HOME) to use a store of your own".into(),
    })
}

/// The name of why a file refused a revert (its `reason`, and its
/// `status` in a report's JSON).
pub fn conflict_reason(reason: &ConflictReason) -> &'static str {
    match reason {
        ConflictReason::ChangedSince { .. } => "changed-since",
        ConflictReason::NeverCommitted => "never-committed",
        ConflictReason::Shared { .. } => "shared",
        ConflictReason::NotEmpty { .. } => "not-empty",
    }
}

/// The `expected` and `actual` fields of a `contents-mismatch` error.
pub fn expected_actual(
    expected_size: Option<u64>,
    expected_sha256: Option<&str>,
    actual_size: u64,
    actual_sha256: &str,
) -> Value {
    json!({
        "expected": { "size": expected_size, "sha256": expected_sha256 },
        "actual": { "size": actual_size, "sha256": actual_sha256 },
    })
}

/// The files that refused a revert, for the JSON error.
pub fn conflicts(conflicts: &[Conflict]) -> Value {
    let list: Vec<Value> = conflicts
        .iter()
        .map(|c| {
            let (reason, by) = match &c.reason {
                ConflictReason::ChangedSince { by } => (
                    "changed-since",
                    by.as_ref()
                        .map(|b| json!({ "session": b.session, "message_id": b.message_id, "seq": b.seq }))
                        .unwrap_or(Value::Null),
                ),
                ConflictReason::NeverCommitted | ConflictReason::NotEmpty { .. } => {
                    (conflict_reason(&c.reason), Value::Null)
                }
                ConflictReason::Shared { with } => (
                    "shared",
                    with.first()
                        .map(|s| json!({ "session": s, "message_id": null, "seq": null }))
                        .unwrap_or(Value::Null),
                ),
            };
            json!({ "workspace": c.workspace, "path": c.path, "seq": c.seq, "reason": reason, "changed_by": by })
        })
        .collect();
    Value::Array(list)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::*;

    /// The kinds table of `docs/JSON.md`: each name (a row may name two) and
    /// the exit code the row gives it.
    fn documented_kinds() -> BTreeMap<String, u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/JSON.md");
        let doc = std::fs::read_to_string(&path).expect("docs/JSON.md");
        let table = doc
            .split("\n| kind | exit code | when |\n")
            .nth(1)
            .expect("docs/JSON.md has the kinds table");
        let mut kinds = BTreeMap::new();
        for line in table.lines().skip(1).take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code: u8 = cells[2].parse().expect("an exit code");
            for name in cells[1].split('/') {
                let name = name.trim().trim_matches('`');
                assert!(
                    kinds.insert(name.to_owned(), code).is_none(),
                    "{name} twice"
                );
            }
        }
        kinds
    }

    #[test]
    fn every_kind_has_a_distinct_name_an_exit_code_and_its_row_in_json_md() {
        let documented = documented_kinds();
        let mut names = HashSet::new();
        for kind in Kind::all() {
            let row = kind.row();
            assert!(names.insert(row.name), "{kind:?}: {} twice", row.name);
            assert!(
                [EXIT_ERROR, EXIT_USAGE, EXIT_REFUSED].contains(&row.exit_code),
                "{kind:?}: exit code {}",
                row.exit_code
            );
            assert_eq!(
                documented.get(row.name),
                Some(&row.exit_code),
                "{kind:?}: docs/JSON.md's kinds table should list `{}` with exit code {}",
                row.name,
                row.exit_code
            );
        }
        let unknown: Vec<&String> = documented
            .keys()
            .filter(|k| !names.contains(k.as_str()))
            .collect();
        assert!(unknown.is_empty(), "documented but no kind: {unknown:?}");
    }

    #[test]
    fn the_rows_fill_hints_and_json_fields_from_the_error() {
        let refused = Error::Refused {
            session: "s".into(),
            conflicts: Vec::new(),
        };
        let row = Kind::from(refused.kind()).row();
        assert_eq!(
            row.hint.of(&refused).as_deref(),
            Some("--dry-run shows the changes; --force overwrites them")
        );
        assert_eq!(
            row.json.map(|f| f(&refused)),
            Some(json!({ "conflicts": [] }))
        );
        let io = Error::Io {
            op: "read",
            path: "/x/y".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let row = Kind::from(io.kind()).row();
        assert_eq!(row.hint.of(&io).as_deref(), Some("check that /x/y exists"));
        assert!(row.json.is_none());
    }
}
