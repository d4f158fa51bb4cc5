//! How a person names what a command acts on, as git and jj users do: an
//! entry as `#N` (or `N`, as `log` prints it), a message by its id or a
//! unique prefix of it (`toolu_01…` ids are long), a turn by its number or
//! counting back from the last (`-1`).

use turnback::errors::Kind;
use turnback_store::{Entry, ErrorKind, Session};

use crate::cli_error::CliError;

/// What a TARGET argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// An entry, by its number.
    Entry(u64),
    /// A message, by its whole id.
    Message(String),
}

/// `#N` or `N` as an entry number (clap's value parser of `--entry`, and of
/// `commit`'s and `rollback`'s ID).
pub(crate) fn entry_number(s: &str) -> Result<u64, String> {
    let digits = s.strip_prefix('#').unwrap_or(s);
    digits.parse::<u64>().map_err(|_| {
        format!("{s:?} is not an entry number (`#N` or `N`, as `turnback log` prints it)")
    })
}

/// What `arg` names among `entries`: `#N` is entry N; a message id is that
/// message; a number that is no message id is that entry; else a prefix of
/// exactly one message id is that message. A prefix of several is a usage
/// error naming them; one of none is left to the command, whose error says
/// the message is not found.
pub(crate) fn target(entries: &[Entry], arg: &str) -> Result<Target, CliError> {
    if let Some(n) = arg.strip_prefix('#') {
        return entry_number(n)
            .map(Target::Entry)
            .map_err(|m| CliError::usage(m, "name an entry as `#N`, as `turnback log` prints it"));
    }
    if entries.iter().any(|e| e.message_id == arg) {
        return Ok(Target::Message(arg.to_owned()));
    }
    if let Ok(n) = arg.parse::<u64>() {
        return Ok(Target::Entry(n));
    }
    let mut matches: Vec<&str> = Vec::new();
    for e in entries {
        if !arg.is_empty()
            && e.message_id.starts_with(arg)
            && !matches.contains(&e.message_id.as_str())
        {
            matches.push(&e.message_id);
        }
    }
    match matches.as_slice() {
        [one] => Ok(Target::Message((*one).to_owned())),
        [] => Ok(Target::Message(arg.to_owned())),
        many => Err(CliError::usage(
            format!(
                "{:?} is the start of {} message ids: {}",
                arg,
                many.len(),
                many.iter()
                    .take(5)
                    .map(|m| format!("{m:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + if many.len() > 5 { ", ..." } else { "" }
            ),
            "give more of the id, or the entry as `#N` (`turnback log` lists both)",
        )),
    }
}

/// The turn `n` means in `session`: `n` itself when positive; counted back
/// from the newest turn in effect when negative (`-1` is the last).
pub(crate) fn turn(session: &Session, n: i64) -> Result<u32, CliError> {
    if n > 0 {
        return u32::try_from(n)
            .map_err(|_| CliError::usage(format!("no turn {n}"), "`turnback turns` lists them"));
    }
    if n == 0 {
        return Err(CliError::usage(
            "turn 0 is no turn (changes before any turn belong to it)",
            "turns count from 1; `--turn -1` is the last one",
        ));
    }
    let turns = session.turn_bounds()?;
    let back = n.unsigned_abs() as usize;
    if back > turns.len() {
        return Err(CliError::new(
            format!(
                "session {} has {} {}: no turn {n}",
                session.id(),
                turns.len(),
                if turns.len() == 1 { "turn" } else { "turns" }
            ),
            Some("`turnback turns` lists them".into()),
        )
        .kind(Kind::from(ErrorKind::TurnNotFound)));
    }
    Ok(turns[turns.len() - back].number)
}
