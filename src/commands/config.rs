//! `turnback config`: the settings in force, and where each came from.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::Settings;

use crate::commands::CliError;
use crate::context::Context;
use crate::render::Report;

/// Show the settings in force (retention, caps) and where each came from
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Settings come from ~/.config/turnback/config.toml (or $XDG_CONFIG_HOME/turnback/config.toml),\nthen TURNBACK_KEEP_SESSIONS, TURNBACK_KEEP_DAYS, TURNBACK_MAX_ENTRIES, TURNBACK_MAX_BYTES,\nTURNBACK_COMPRESS_BACKUPS.\n\nExample:\n  turnback config --json"
)]
pub(crate) struct ConfigArgs {}

/// The settings in force.
pub(crate) struct Config(Settings);

impl Report for Config {
    fn json(&self) -> Option<Value> {
        Some(json::settings(&self.0))
    }

    fn text(&self, out: &Out) -> String {
        text::settings(out, &self.0)
    }
}

pub(crate) fn run(ctx: &Context, _: &ConfigArgs) -> Result<Config, CliError> {
    Ok(Config(ctx.store.settings().clone()))
}
