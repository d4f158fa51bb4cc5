//! `turnback blame FILE`: for each line, the session, turn (with its
//! prompt), message and time of the change that last wrote it, across every
//! session that touched the file; lines changed without turnback are shown
//! as such.

use std::path::PathBuf;

use serde_json::Value;
use turnback::blame_view;
use turnback::output::Out;
use turnback_store::{Blame, NoBlame};

use crate::cli_error::CliError;
use crate::context::{Context, never_backed_up};
use crate::render::Report;

/// Show which change (session, turn and prompt, message) last wrote each line of FILE
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback blame src/lib.rs\n  turnback blame src/lib.rs --json")]
pub(crate) struct BlameArgs {
    /// The file
    file: PathBuf,
}

/// The file's lines with their origins.
pub(crate) struct Blamed {
    workspace: PathBuf,
    path: String,
    blame: Blame,
}

impl Report for Blamed {
    fn json(&self) -> Option<Value> {
        Some(blame_view::blame_json(
            &self.workspace,
            &self.path,
            &self.blame,
        ))
    }

    fn text(&self, out: &Out) -> String {
        blame_view::blame(out, &self.path, &self.blame)
    }

    fn paged(&self) -> bool {
        true
    }
}

pub(crate) fn run(ctx: &Context, args: &BlameArgs) -> Result<Blamed, CliError> {
    let ws = ctx.workspace()?;
    let path = ctx.user_path(&args.file);
    let shown = path
        .strip_prefix(ws.root())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| args.file.to_string_lossy().into_owned());
    let blame = match ctx.store.blame(&ws, &path)? {
        Ok(b) => b,
        Err(NoBlame::Untouched) => return Err(never_backed_up(&ws, &path, &ctx.cwd)),
        Err(NoBlame::Binary) => {
            return Err(CliError::new(
                format!("{shown}: a version of it is binary: no lines to blame"),
                Some("`turnback log FILE` lists its changes".into()),
            ));
        }
        Err(NoBlame::TooBig) => {
            return Err(CliError::new(
                format!("{shown}: a version of it is over 4 MiB: too big to blame"),
                Some("`turnback log FILE` lists its changes".into()),
            ));
        }
    };
    Ok(Blamed {
        workspace: ws.root().to_owned(),
        path: shown,
        blame,
    })
}
