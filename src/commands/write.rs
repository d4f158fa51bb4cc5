//! `turnback write FILE`: an agent replaces a file with standard input,
//! backed up first.

use std::path::Path;

use serde_json::{Value, json};
use turnback::errors::Kind;
use turnback::output::{Out, Role};
use turnback::text;
use turnback_store::Expected;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;
use crate::reports::{EntryReport, FileArgs};
use crate::sys::{self, StdinProblem};

/// Replace FILE with standard input, backed up first (for agents)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Standard input must be a pipe or a file: a closed one is an error and a\nterminal is refused, so that neither empties FILE. With --expect-size or\n--expect-sha256, contents that are not what was meant (a producer that stopped\nhalf way) are refused and nothing is written.\n\nExample:\n  printf 'fn main() {}\\n' | turnback write src/main.rs --message call-7 --expect-size 13"
)]
pub(crate) struct WriteArgs {
    #[command(flatten)]
    pub file: FileArgs,
    /// Refuse the new contents unless they are exactly N bytes
    #[arg(long, value_name = "N")]
    pub expect_size: Option<u64>,
    /// Refuse the new contents unless their SHA-256 is HASH (hex)
    #[arg(long, value_name = "HASH", value_parser = parse_sha256)]
    pub expect_sha256: Option<String>,
}

/// A SHA-256 in hex, either case; kept in lower case.
fn parse_sha256(s: &str) -> Result<String, String> {
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err("a SHA-256 is 64 hexadecimal digits".into())
    }
}

/// What a write did: the entry it recorded, or nothing, because the file
/// held those bytes already.
pub(crate) enum Written {
    /// A change, recorded.
    Entry(Box<EntryReport>),
    /// The same bytes: the file was not touched and no entry was recorded.
    Same {
        session: String,
        /// The file, relative to its workspace.
        path: String,
    },
}

impl Report for Written {
    fn json(&self) -> Option<Value> {
        match self {
            Written::Entry(r) => r.json(),
            Written::Same { session, path } => {
                Some(json!({ "session": session, "entry": null, "path": path }))
            }
        }
    }

    fn text(&self, out: &Out) -> String {
        match self {
            Written::Entry(r) => r.text(out),
            Written::Same { path, .. } => format!(
                "{}  unchanged (it holds these bytes already): nothing recorded\n",
                out.paint(Role::Path, &text::escape(path))
            ),
        }
    }
}

pub(crate) fn run(ctx: &Context, w: &WriteArgs) -> Result<Written, CliError> {
    // Before anything is opened: a closed or unreadable stdin, or a person's
    // terminal, must not become the file's contents.
    if let Some(problem) = sys::stdin_problem() {
        return Err(stdin_error(problem, &w.file.file));
    }
    write_from(ctx, w, std::io::stdin().lock())
}

/// `write` with its new contents read from `contents` (standard input, or
/// the request's `content` in `turnback serve`).
pub(crate) fn write_from(
    ctx: &Context,
    w: &WriteArgs,
    contents: impl std::io::Read,
) -> Result<Written, CliError> {
    let args = &w.file;
    let session = ctx.agent_session()?;
    let ws = ctx.workspace()?;
    let expected = Expected {
        size: w.expect_size,
        sha256: w.expect_sha256.clone(),
    };
    let file = ctx.user_path(&args.file);
    let written = session.write_unless_same(&ws, &file, contents, &args.message, &expected)?;
    Ok(match written {
        Some(entry) => Written::Entry(Box::new(EntryReport {
            session: session.id().to_owned(),
            entry,
            prefix: "",
        })),
        None => Written::Same {
            session: session.id().to_owned(),
            path: ws.resolve(&file)?,
        },
    })
}

/// The error for a standard input that cannot be `file`'s new contents.
fn stdin_error(problem: StdinProblem, file: &Path) -> CliError {
    let file = file.display();
    let pipe = "turnback write reads the new contents from standard input: pipe them in";
    match problem {
        StdinProblem::Closed => CliError::new(
            format!("standard input is closed: no new contents for {file}; nothing was written"),
            Some(pipe.into()),
        )
        .kind(Kind::NoInput),
        StdinProblem::NotReadable => CliError::new(
            format!(
                "standard input is not open for reading: no new contents for {file}; nothing was written"
            ),
            Some(pipe.into()),
        )
        .kind(Kind::NoInput),
        StdinProblem::Terminal => CliError::usage(
            format!("standard input is a terminal: no new contents for {file}; nothing was written"),
            pipe,
        ),
    }
}
