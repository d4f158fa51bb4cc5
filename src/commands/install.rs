//! `turnback install AGENT` / `turnback uninstall AGENT`: turnback's hooks
//! (and, for Claude Code, its slash commands) merged into the agent's
//! settings, or taken out again: exactly turnback's entries, every other
//! setting kept.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use turnback::output::Out;

use crate::cli::Cli;
use crate::cli_error::CliError;
use crate::hooks::event::Agent;
use crate::install::{
    self, Change, Scope, claude, codex_trust, copilot, droid, opencode, settings,
};
use crate::render::Report;

// No doc comment: clap would make it the help line of both commands.
#[derive(Debug, clap::Args)]
pub(crate) struct ScopeArgs {
    /// The workspace's committed settings (Claude Code `.claude/settings.json`, Codex `.codex/hooks.json`, Gemini CLI `.gemini/settings.json`, Cursor `.cursor/hooks.json`, Copilot CLI `.github/hooks/turnback.json`, Qwen Code `.qwen/settings.json`, Droid `.factory/settings.json`, opencode `.opencode/plugins/turnback.ts`)
    #[arg(long, conflicts_with = "user")]
    project: bool,
    /// The user's settings, for every workspace (`~/.claude/settings.json`, `~/.codex/hooks.json`, `~/.gemini/settings.json`, `~/.cursor/hooks.json`, `~/.copilot/hooks/turnback.json`, `~/.qwen/settings.json`, `~/.factory/settings.json`, `~/.config/opencode/plugins/turnback.ts`)
    #[arg(long)]
    user: bool,
}

impl ScopeArgs {
    fn scope(&self) -> Scope {
        match (self.project, self.user) {
            (true, _) => Scope::Project,
            (_, true) => Scope::User,
            _ => Scope::Default,
        }
    }
}

/// Protect an agent with turnback's hooks (claude-code, codex, gemini, cursor, copilot, qwen, droid, opencode)
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  turnback install claude-code          # .claude/settings.local.json of this workspace\n  turnback install codex                # ~/.codex/hooks.json, and Codex's trust in them\n  turnback install gemini --print       # show the settings, write nothing\n  turnback install cursor               # .cursor/hooks.json of this workspace\n  turnback install copilot              # ~/.copilot/hooks/turnback.json\n  turnback install opencode             # ~/.config/opencode/plugins/turnback.ts\n  turnback install                      # every agent found here (on PATH or by its directory)\n\nEvery other setting and hook is kept; running it again changes nothing."
)]
pub(crate) struct InstallArgs {
    /// The agent (none: every agent found on this machine)
    #[arg(value_enum)]
    agent: Option<Agent>,
    #[command(flatten)]
    scope: ScopeArgs,
    /// Print the settings as they would be; write nothing
    #[arg(long, requires = "agent")]
    print: bool,
}

/// Take turnback's hooks out of an agent's settings again
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback uninstall claude-code")]
pub(crate) struct UninstallArgs {
    /// The agent
    #[arg(value_enum)]
    agent: Agent,
    #[command(flatten)]
    scope: ScopeArgs,
}

/// What install or uninstall did.
pub(crate) struct Installed {
    agent: Agent,
    file: PathBuf,
    changes: Vec<Change>,
    /// Slash command files: (path, "added" | "updated" | "removed" | "kept").
    commands: Vec<(PathBuf, &'static str)>,
    /// Codex hooks whose trust was recorded.
    trusted: Vec<String>,
    warnings: Vec<String>,
    /// Where the settings file as it was before this change is kept.
    backup: Option<PathBuf>,
    /// `--print`: the settings as they would be, and the file's text.
    printed: Option<(Value, String)>,
}

impl Report for Installed {
    fn json(&self) -> Option<Value> {
        let changes: Vec<Value> = self
            .changes
            .iter()
            .map(|c| json!({"change": c.what, "event": c.event, "matcher": c.matcher}))
            .collect();
        let commands: Vec<Value> = self
            .commands
            .iter()
            .map(|(p, what)| json!({"change": what, "path": p}))
            .collect();
        let mut v = json!({
            "agent": self.agent.name(),
            "file": self.file,
            "changes": changes,
            "commands": commands,
            "trusted": self.trusted,
            "warnings": self.warnings,
            "backup": self.backup,
        });
        if let Some((s, _)) = &self.printed {
            v["settings"] = s.clone();
        }
        Some(v)
    }

    fn text(&self, _: &Out) -> String {
        if let Some((_, text)) = &self.printed {
            return text.clone();
        }
        let mut t = format!("{}: {}\n", self.agent.name(), self.file.display());
        if self.changes.is_empty() && self.commands.iter().all(|c| c.1 == "kept") {
            t.push_str("  nothing changed\n");
        }
        for c in &self.changes {
            let m = c
                .matcher
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            t.push_str(&format!("  {} {} hook{m}\n", c.what, c.event));
        }
        for (p, what) in &self.commands {
            if *what != "kept" {
                t.push_str(&format!("  {what} slash command {}\n", p.display()));
            }
        }
        for k in &self.trusted {
            t.push_str(&format!("  trusted in Codex: {k}\n"));
        }
        if let Some(b) = &self.backup {
            t.push_str(&format!(
                "  the file as it was is kept in {}\n",
                b.display()
            ));
        }
        for w in &self.warnings {
            t.push_str(&format!("  warning: {w}\n"));
        }
        t
    }
}

fn err(message: String) -> CliError {
    CliError::new(message, Some("nothing was changed".into()))
}

/// The running binary, as the hooks will name it.
fn this_binary() -> Result<PathBuf, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| err(format!("cannot find the turnback binary: {e}")))?;
    Ok(std::fs::canonicalize(&exe).unwrap_or(exe))
}

fn workspace(cli: &Cli) -> Result<PathBuf, CliError> {
    match &cli.workspace {
        Some(w) => Ok(std::path::absolute(w).unwrap_or_else(|_| w.clone())),
        None => std::env::current_dir()
            .map_err(|e| err(format!("cannot read the current directory: {e}"))),
    }
}

/// `turnback install`: the agent named, or every one found here.
pub(crate) fn run(cli: &Cli, args: &InstallArgs) -> Result<Box<dyn Report>, CliError> {
    match args.agent {
        Some(agent) => Ok(Box::new(install(cli, agent, args)?)),
        None => Ok(Box::new(install_found(cli, args))),
    }
}

/// What `turnback install` with no agent did for each agent.
pub(crate) struct EachAgent {
    /// (agent, why it was found, what install did or why it failed).
    agents: Vec<(Agent, Option<String>, Result<Installed, CliError>)>,
}

impl EachAgent {
    fn status(found: &Option<String>, done: &Result<Installed, CliError>) -> &'static str {
        match (found, done) {
            (None, _) => "not found",
            (Some(_), Err(_)) => "refused",
            (Some(_), Ok(i)) if i.changes.is_empty() => "already protected",
            (Some(_), Ok(_)) => "protected",
        }
    }
}

impl Report for EachAgent {
    fn json(&self) -> Option<Value> {
        let agents: Vec<Value> = self
            .agents
            .iter()
            .map(|(agent, found, done)| {
                let mut v = json!({
                    "agent": agent.name(),
                    "status": Self::status(found, done),
                    "found": found,
                });
                match done {
                    Ok(i) if found.is_some() => v["install"] = i.json().unwrap_or(Value::Null),
                    Err(e) if found.is_some() => v["error"] = e.message().into(),
                    _ => {}
                }
                v
            })
            .collect();
        Some(json!({ "agents": agents }))
    }

    fn text(&self, _: &Out) -> String {
        let mut t = String::new();
        for (agent, found, done) in &self.agents {
            let status = Self::status(found, done);
            t.push_str(&match (found, done) {
                (None, _) => format!("{}: not found\n", agent.name()),
                (Some(_), Err(e)) => format!("{}: refused: {}\n", agent.name(), e.message()),
                (Some(_), Ok(i)) => {
                    format!("{}: {status} ({})\n", agent.name(), i.file.display())
                }
            });
            if let Ok(i) = done {
                for w in &i.warnings {
                    t.push_str(&format!("  warning: {w}\n"));
                }
            }
        }
        if self.agents.iter().all(|(_, f, _)| f.is_none()) {
            t.push_str("no agent found: name one (`turnback install claude-code`)\n");
        }
        t
    }
}

/// Installs into every agent found here, each on its own: one refused does
/// not stop the others.
fn install_found(cli: &Cli, args: &InstallArgs) -> EachAgent {
    let agents = install::detect::AGENTS
        .into_iter()
        .map(|agent| {
            let found = install::detect::found(agent);
            let done = match &found {
                Some(_) => install(cli, agent, args),
                None => Err(err(String::new())),
            };
            (agent, found, done)
        })
        .collect();
    EachAgent { agents }
}

fn install(cli: &Cli, agent: Agent, args: &InstallArgs) -> Result<Installed, CliError> {
    let hooks = install::agent_hooks(agent);
    let ws = workspace(cli)?;
    let scope = args.scope.scope();
    let file = hooks.settings_file(scope, &ws).map_err(err)?;
    let exe = this_binary()?;
    if agent == Agent::Opencode {
        return install_plugin(agent, file, &exe, args.print);
    }
    // Where Droid would ignore them, no hooks are written.
    if agent == Agent::Droid
        && let Some(h) = droid::hooks_json_beside(&file)
    {
        return Err(CliError::new(
            format!(
                "{} is there: Droid reads its hooks from that file alone, and ignores those in {}",
                h.display(),
                file.display()
            ),
            Some("nothing was changed: turnback does not write Droid's hooks.json yet".into()),
        ));
    }
    let s = settings::read(&file, hooks.comments()).map_err(err)?;
    refuse_if_not_ours(agent, &file, &s)?;
    let done = install::install_into(&s, hooks, &hooks.wanted(&exe))
        .map_err(|e| err(format!("cannot change {}: {e}", file.display())))?;
    let mut report = Installed {
        agent,
        file: file.clone(),
        changes: done.changes,
        commands: Vec::new(),
        trusted: Vec::new(),
        warnings: Vec::new(),
        backup: None,
        printed: None,
    };
    if args.print {
        let text = done.text.unwrap_or(s.text);
        report.printed = Some((Value::Object(done.settings), text));
        return Ok(report);
    }
    if let Some(text) = &done.text {
        report.backup = settings::write(&file, &s, text).map_err(err)?;
    }
    match agent {
        Agent::ClaudeCode => {
            let dir = claude::commands_dir(scope, &ws).map_err(err)?;
            report.commands = write_commands(&dir, &exe)?;
        }
        Agent::Codex => match codex_trust::codex_binary() {
            Some(codex) => {
                let ours = |c: &str| hooks.is_ours(&json!({ "command": c }));
                match codex_trust::trust_ours(&codex, &ws, &file, &ours) {
                    Ok(keys) => report.trusted = keys,
                    Err(e) => report.warnings.push(format!(
                        "{e}: Codex skips hooks it does not trust; trust them in Codex's /hooks"
                    )),
                }
            }
            None => report.warnings.push(
                "Codex was not found (set TURNBACK_CODEX or put `codex` on PATH), so its trust in these hooks is not recorded: Codex skips them until you trust them in its /hooks, or run this again".into(),
            ),
        },
        Agent::Gemini
        | Agent::Cursor
        | Agent::Copilot
        | Agent::Qwen
        | Agent::Droid
        | Agent::Opencode => {}
    }
    Ok(report)
}

/// Copilot CLI's hooks file is turnback's own: one of that name holding
/// anything else is the user's, and refused untouched.
fn refuse_if_not_ours(agent: Agent, file: &Path, s: &settings::Settings) -> Result<(), CliError> {
    if agent != Agent::Copilot {
        return Ok(());
    }
    match copilot::not_ours(&s.map) {
        None => Ok(()),
        Some(why) => Err(CliError::new(
            format!("{} is not turnback's: {why}", file.display()),
            Some("nothing was changed; move it aside (or rename it) and run this again".into()),
        )),
    }
}

/// Writes the slash commands into `dir`; a file of the same name that is
/// not turnback's is left alone, with a warning in its place.
fn write_commands(dir: &Path, exe: &Path) -> Result<Vec<(PathBuf, &'static str)>, CliError> {
    let mut done = Vec::new();
    for (name, body) in claude::slash_commands(exe) {
        let path = dir.join(name);
        let what = match std::fs::read_to_string(&path) {
            Ok(old) if old == body => "kept",
            Ok(old) if !old.contains(claude::COMMAND_MARK) => {
                return Err(CliError::new(
                    format!("{} exists and is not turnback's", path.display()),
                    Some("move it aside and run this again (the hooks were installed)".into()),
                ));
            }
            Ok(_) => "updated",
            Err(_) => "added",
        };
        if what != "kept" {
            std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&path, &body))
                .map_err(|e| err(format!("cannot write {}: {e}", path.display())))?;
        }
        done.push((path, what));
    }
    Ok(done)
}

pub(crate) fn uninstall(cli: &Cli, args: &UninstallArgs) -> Result<Installed, CliError> {
    let hooks = install::agent_hooks(args.agent);
    let ws = workspace(cli)?;
    let scope = args.scope.scope();
    let file = hooks.settings_file(scope, &ws).map_err(err)?;
    if args.agent == Agent::Opencode {
        return uninstall_plugin(args.agent, file);
    }
    let s = settings::read(&file, hooks.comments()).map_err(err)?;
    refuse_if_not_ours(args.agent, &file, &s)?;
    let done = install::uninstall_from(&s, hooks)
        .map_err(|e| err(format!("cannot change {}: {e}", file.display())))?;
    let backup = match &done.text {
        // turnback's own file, left with nothing in it: it goes, kept as
        // the backup (a link is written through, as ever: the user's).
        Some(_)
            if args.agent == Agent::Copilot
                && copilot::is_empty(&done.settings)
                && !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_symlink()) =>
        {
            let b = settings::backup_path(&file);
            std::fs::rename(&file, &b)
                .map_err(|e| err(format!("cannot remove {}: {e}", file.display())))?;
            Some(b)
        }
        Some(text) => settings::write(&file, &s, text).map_err(err)?,
        None => None,
    };
    let mut commands = Vec::new();
    if args.agent == Agent::ClaudeCode {
        let dir = claude::commands_dir(scope, &ws).map_err(err)?;
        for (name, _) in claude::slash_commands(Path::new("turnback")) {
            let path = dir.join(name);
            if std::fs::read_to_string(&path).is_ok_and(|t| t.contains(claude::COMMAND_MARK)) {
                std::fs::remove_file(&path)
                    .map_err(|e| err(format!("cannot remove {}: {e}", path.display())))?;
                commands.push((path, "removed"));
            }
        }
        // The directory install made, if nothing else is in it.
        if !commands.is_empty() {
            let _ = std::fs::remove_dir(&dir);
        }
    }
    Ok(Installed {
        agent: args.agent,
        file,
        changes: done.changes,
        commands,
        trusted: Vec::new(),
        warnings: Vec::new(),
        backup,
        printed: None,
    })
}

/// The plugin at `file`, turnback's or absent; one of the user's is refused
/// untouched.
fn our_plugin(file: &Path) -> Result<opencode::Plugin, CliError> {
    match opencode::read(file).map_err(err)? {
        opencode::Plugin::Foreign(why) => Err(CliError::new(
            format!("{} is not turnback's: {why}", file.display()),
            Some("nothing was changed; move it aside (or rename it) and run this again".into()),
        )),
        p => Ok(p),
    }
}

/// One change per event the plugin hooks.
fn plugin_changes(what: &'static str) -> Vec<Change> {
    opencode::events()
        .iter()
        .map(|e| Change {
            what,
            event: (*e).to_owned(),
            matcher: None,
        })
        .collect()
}

/// `install opencode`: turnback's plugin written (or rewritten, the flags
/// the user added to its command kept), or with `print` shown.
fn install_plugin(
    agent: Agent,
    file: PathBuf,
    exe: &Path,
    print: bool,
) -> Result<Installed, CliError> {
    let old = our_plugin(&file)?;
    let flags = match &old {
        opencode::Plugin::Ours(h) => install::hook_line::flags(h),
        _ => Vec::new(),
    };
    let wanted = install::agent_hooks(agent).wanted(exe);
    let handler = install::hook_line::with_flags(&wanted[0].handler, &flags);
    let text = opencode::text(&opencode::words_of(&handler));
    let before = std::fs::read_to_string(&file).ok();
    let changes = match (&old, before.as_deref() == Some(text.as_str())) {
        (_, true) => Vec::new(),
        (opencode::Plugin::Ours(_), false) => plugin_changes("updated"),
        _ => plugin_changes("added"),
    };
    let mut report = Installed {
        agent,
        file: file.clone(),
        changes,
        commands: Vec::new(),
        trusted: Vec::new(),
        warnings: Vec::new(),
        backup: None,
        printed: None,
    };
    if print {
        let settings = opencode::as_settings(&opencode::Plugin::Ours(handler));
        report.printed = Some((Value::Object(settings), text));
        return Ok(report);
    }
    if !report.changes.is_empty() {
        write_plugin(&file, &text)?;
    }
    Ok(report)
}

/// Puts `text` at `file` through a temporary renamed over it.
fn write_plugin(file: &Path, text: &str) -> Result<(), CliError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let temp = dir.join(format!(
        ".{}.turnback-{}.tmp",
        opencode::FILE,
        std::process::id()
    ));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&temp, text))
        .and_then(|()| std::fs::rename(&temp, file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            err(format!("cannot write {}: {e}", file.display()))
        })
}

/// `uninstall opencode`: turnback's plugin deleted; anything else at its
/// path is refused untouched.
fn uninstall_plugin(agent: Agent, file: PathBuf) -> Result<Installed, CliError> {
    let changes = match our_plugin(&file)? {
        opencode::Plugin::Ours(_) => {
            std::fs::remove_file(&file)
                .map_err(|e| err(format!("cannot remove {}: {e}", file.display())))?;
            plugin_changes("removed")
        }
        _ => Vec::new(),
    };
    Ok(Installed {
        agent,
        file,
        changes,
        commands: Vec::new(),
        trusted: Vec::new(),
        warnings: Vec::new(),
        backup: None,
        printed: None,
    })
}
