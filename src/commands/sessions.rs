//! `turnback sessions` and `turnback prune`: the store as a whole.

use turnback_store::Retention;

use crate::commands::CliError;
use crate::context::Context;
use turnback::output::Out;
use turnback::{json, text};

pub(crate) fn list(ctx: &Context, out: &Out) -> Result<(), CliError> {
    let list = ctx.store.sessions()?;
    if out.json {
        out.json(&json::sessions(&list));
    } else {
        out.print(&text::sessions(out, &list));
    }
    Ok(())
}

pub(crate) fn prune(ctx: &Context, out: &Out, dry_run: bool) -> Result<(), CliError> {
    let r = ctx
        .store
        .prune(&Retention::default(), ctx.named_session(), dry_run)?;
    if out.json {
        out.json(&json::prune(&r));
    } else {
        out.print(&text::prune(&r));
    }
    Ok(())
}
