//! `turnback config`: the settings in force, and where each came from.

use serde_json::Value;
use turnback::output::Out;
use turnback::{json, text};
use turnback_store::{BaselineUsage, Settings};

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// Show the settings in force (retention, caps) and where each came from
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Settings come from ~/.config/turnback/config.toml (or $XDG_CONFIG_HOME/turnback/config.toml),\nthen TURNBACK_KEEP_SESSIONS, TURNBACK_KEEP_DAYS, TURNBACK_MAX_ENTRIES, TURNBACK_MAX_BYTES,\nTURNBACK_COMPRESS_BACKUPS, TURNBACK_MAX_BASELINE_BYTES.\n\nExample:\n  turnback config --json"
)]
pub(crate) struct ConfigArgs {}

/// The settings in force, and what the scan baselines take now (what
/// `max_baseline_bytes` caps).
pub(crate) struct Config(Settings, BaselineUsage);

impl Report for Config {
    fn json(&self) -> Option<Value> {
        let mut v = json::settings(&self.0);
        v["baselines"] = json::baselines(&self.1);
        Some(v)
    }

    fn text(&self, out: &Out) -> String {
        let mut s = text::settings(out, &self.0);
        let cap = self.0.max_baseline_bytes.value;
        s.push_str(&format!(
            "in use: {}\n",
            text::baselines(&self.1, Some(cap))
        ));
        s
    }
}

pub(crate) fn run(ctx: &Context, _: &ConfigArgs) -> Result<Config, CliError> {
    Ok(Config(
        ctx.store.settings().clone(),
        ctx.store.baseline_usage()?,
    ))
}
