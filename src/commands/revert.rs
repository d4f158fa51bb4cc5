//! `turnback revert FILE`: a person reverts the newest change to one file, in
//! the session that made it.

use std::path::PathBuf;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::reports::{RevertFlags, Reverted, reverted};

/// Revert the newest change to FILE (in the session that changed it last)
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback revert src/lib.rs")]
pub(crate) struct RevertArgs {
    /// The file to revert
    file: PathBuf,
    #[command(flatten)]
    flags: RevertFlags,
}

pub(crate) fn run(ctx: &Context, args: &RevertArgs) -> Result<Reverted, CliError> {
    let ws = ctx.workspace()?;
    let path = ctx.user_path(&args.file);
    let session = ctx.session_for_file(&ws, &path)?;
    let r = match session.revert(&ws, &path, args.flags.options()) {
        // The same words as when no session is named: the file as typed,
        // and what can bring it back.
        Err(turnback_store::Error::NoChangeToFile {
            session: id,
            path: file,
        }) => {
            return Err(crate::context::never_backed_up_by(
                &ws,
                &file,
                &ctx.cwd,
                Some(&id),
            ));
        }
        r => r?,
    };
    Ok(reverted(&session, "revert".into(), r)?.forced(args.flags.force))
}
