//! `turnback doctor`: is protection working here? Which agents have
//! turnback's hooks (and whether each agent will read the file: Claude Code
//! silently ignores one that is not valid, Codex skips hooks it does not
//! trust), whether the binary they name is there, whether the store home is
//! writable and its file locks hold, and the last hook error.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use turnback::output::Out;

use crate::cli::Cli;
use crate::cli_error::CliError;
use crate::hooks::event::Agent;
use crate::hooks::last_error;
use crate::install::{self, Scope, codex_trust};
use crate::render::Report;

/// Check that turnback protects the agents here: hooks, binary, store, locks
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback doctor")]
pub(crate) struct DoctorArgs {}

/// One settings file that has turnback's hooks (or cannot be read).
struct Found {
    agent: Agent,
    file: PathBuf,
    hooks: usize,
    binaries: Vec<PathBuf>,
    problems: Vec<String>,
    notes: Vec<String>,
}

/// What doctor found.
pub(crate) struct Diagnosis {
    found: Vec<Found>,
    /// Every host turnback supports: (name, the file whose hooks it runs
    /// here, or `None`: not protected).
    hosts: Vec<(&'static str, Option<PathBuf>)>,
    home: PathBuf,
    store_problems: Vec<String>,
    store_notes: Vec<String>,
    last_error: Option<Value>,
}

impl Diagnosis {
    fn problems(&self) -> usize {
        self.found.iter().map(|f| f.problems.len()).sum::<usize>() + self.store_problems.len()
    }
}

impl Report for Diagnosis {
    fn json(&self) -> Option<Value> {
        let agents: Vec<Value> = self
            .found
            .iter()
            .map(|f| {
                json!({
                    "agent": f.agent.name(), "file": f.file, "hooks": f.hooks,
                    "binaries": f.binaries, "problems": f.problems, "notes": f.notes,
                })
            })
            .collect();
        let hosts: Vec<Value> = self
            .hosts
            .iter()
            .map(|(host, file)| json!({"host": host, "protected": file.is_some(), "file": file}))
            .collect();
        Some(json!({
            "ok": self.problems() == 0 && !self.found.is_empty(),
            "agents": agents,
            "hosts": hosts,
            "store": {"home": self.home, "problems": self.store_problems, "notes": self.store_notes},
            "last_hook_error": self.last_error,
        }))
    }

    fn text(&self, _: &Out) -> String {
        let mut t = String::new();
        if self.found.is_empty() {
            t.push_str(
                "agents: no agent has turnback's hooks here (`turnback install claude-code`)\n",
            );
        }
        for f in &self.found {
            t.push_str(&format!(
                "{}: {}: {} hooks\n",
                f.agent.name(),
                f.file.display(),
                f.hooks
            ));
            for b in &f.binaries {
                t.push_str(&format!("  runs {}\n", b.display()));
            }
            for n in &f.notes {
                t.push_str(&format!("  {n}\n"));
            }
            for p in &f.problems {
                t.push_str(&format!("  PROBLEM: {p}\n"));
            }
        }
        t.push_str("hosts (edits and shell commands):\n");
        for (host, file) in &self.hosts {
            t.push_str(&match file {
                Some(f) => format!("  {host}: protected ({})\n", f.display()),
                None => format!("  {host}: not protected\n"),
            });
        }
        t.push_str(&format!("store: {}\n", self.home.display()));
        for n in &self.store_notes {
            t.push_str(&format!("  {n}\n"));
        }
        for p in &self.store_problems {
            t.push_str(&format!("  PROBLEM: {p}\n"));
        }
        match &self.last_error {
            Some(e) => t.push_str(&format!(
                "last hook error: {} {} {}: {}\n",
                e["time"].as_str().unwrap_or("?"),
                e["agent"].as_str().unwrap_or("?"),
                e["event"].as_str().unwrap_or("?"),
                e["message"].as_str().unwrap_or("?")
            )),
            None => t.push_str("last hook error: none\n"),
        }
        let n = self.problems();
        t.push_str(&match (n, self.found.is_empty()) {
            (0, false) => "protection: working\n".to_owned(),
            (0, true) => "protection: not installed\n".to_owned(),
            (n, _) => format!("protection: {n} problem(s) above\n"),
        });
        t
    }
}

/// Each agent's settings files that apply in `ws` (its workspace's, the
/// project's, the user's), each once.
fn settings_files(ws: &Path) -> Vec<(Agent, PathBuf)> {
    let mut out: Vec<(Agent, PathBuf)> = Vec::new();
    for agent in install::detect::AGENTS {
        for scope in [Scope::Default, Scope::Project, Scope::User] {
            if let Ok(f) = install::agent_hooks(agent).settings_file(scope, ws)
                && !out.iter().any(|(a, g)| *a == agent && *g == f)
            {
                out.push((agent, f));
            }
        }
    }
    out
}

/// The settings files in `ws` that hold turnback's hooks, with how many: what
/// `turnback status` says, without doctor's checks (Codex's trust asks Codex).
pub(crate) fn installed(ws: &Path) -> Vec<(Agent, PathBuf, usize)> {
    settings_files(ws)
        .into_iter()
        .filter_map(|(agent, file)| {
            let hooks = install::agent_hooks(agent);
            let s = install::read_map(agent, &file).ok()?;
            let n = install::ours_in(&s, hooks.layout(), &|h| hooks.is_ours(h)).len();
            (n > 0).then_some((agent, file, n))
        })
        .collect()
}

pub(crate) fn run(cli: &Cli, _: &DoctorArgs) -> Result<Diagnosis, CliError> {
    let ws = match &cli.workspace {
        Some(w) => std::path::absolute(w).unwrap_or_else(|_| w.clone()),
        None => std::env::current_dir()
            .map_err(|e| CliError::new(format!("cannot read the current directory: {e}"), None))?,
    };
    let mut found = Vec::new();
    for (agent, file) in settings_files(&ws) {
        if let Some(f) = check_file(agent, &file, &ws) {
            found.push(f);
        }
    }
    let home = match &cli.home {
        Some(h) => h.clone(),
        None => turnback_store::default_home().unwrap_or_else(|_| PathBuf::from("?")),
    };
    let (store_problems, store_notes) = check_home(&home);
    let hosts = hosts(&found, &ws);
    Ok(Diagnosis {
        hosts,
        found,
        last_error: last_error::read(&home),
        home,
        store_problems,
        store_notes,
    })
}

/// Every host turnback supports, and the file of turnback's hooks it runs
/// here: its own, or for the hosts that read Claude Code's files (VS Code's
/// Copilot agent, Copilot CLI), those.
fn hosts(found: &[Found], ws: &Path) -> Vec<(&'static str, Option<PathBuf>)> {
    let of = |agent: Agent, only_ws: bool| {
        found
            .iter()
            .filter(|f| f.agent == agent && f.hooks > 0 && (!only_ws || f.file.starts_with(ws)))
            .map(|f| f.file.clone())
            .next()
    };
    let mut out: Vec<(&'static str, Option<PathBuf>)> = install::detect::AGENTS
        .into_iter()
        .map(|agent| {
            let own = of(agent, false);
            // Copilot CLI also runs the repository's Claude hooks (Cursor
            // only when its third-party hooks are on: not counted).
            let claude = match agent {
                Agent::Copilot => of(Agent::ClaudeCode, true),
                _ => None,
            };
            (agent.name(), own.or(claude))
        })
        .collect();
    out.push(("vscode (Copilot agent)", of(Agent::ClaudeCode, false)));
    out
}

/// The hooks of turnback's in one settings file, and what is wrong with them.
fn check_file(agent: Agent, file: &Path, ws: &Path) -> Option<Found> {
    if !file.exists() {
        return None;
    }
    let hooks = install::agent_hooks(agent);
    let s = match install::read_map(agent, file) {
        Ok(s) => s,
        Err(e) => {
            return Some(Found {
                agent,
                file: file.to_owned(),
                hooks: 0,
                binaries: Vec::new(),
                problems: vec![format!("{e}: the agent ignores this file, hooks and all")],
                notes: Vec::new(),
            });
        }
    };
    let ours = install::ours_in(&s, hooks.layout(), &|h| hooks.is_ours(h));
    if ours.is_empty() {
        return None;
    }
    let mut f = Found {
        agent,
        file: file.to_owned(),
        hooks: ours.len(),
        binaries: Vec::new(),
        problems: Vec::new(),
        notes: Vec::new(),
    };
    for (_, _, h) in &ours {
        if let Some(p) = hooks.program_of(h)
            && !f.binaries.contains(&p)
        {
            f.binaries.push(p);
        }
    }
    f.problems.extend(switched_off(agent, &s));
    for b in &f.binaries {
        if !is_executable(b) {
            f.problems.push(format!(
                "{} is not an executable file: every hook fails (run `turnback install {}` again)",
                b.display(),
                agent.name()
            ));
        }
    }
    if agent == Agent::Codex {
        match codex_trust::codex_binary() {
            None => f
                .notes
                .push("Codex's trust in these hooks not checked: Codex was not found".into()),
            Some(codex) => match codex_trust::list_hooks(&codex, ws) {
                Err(e) => f.notes.push(format!("Codex's trust not checked: {e}")),
                Ok(listed) => {
                    let canon = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
                    let untrusted: Vec<String> = listed
                        .iter()
                        .filter(|l| Path::new(&l.source_path) == canon)
                        .filter(|l| hooks.is_ours(&json!({ "command": l.command })))
                        .filter(|l| l.trust_status != "trusted")
                        .map(|l| format!("{} ({})", l.key, l.trust_status))
                        .collect();
                    if untrusted.is_empty() {
                        f.notes.push("Codex trusts every one of them".into());
                    } else {
                        f.problems.push(format!(
                            "Codex does not trust {}: it skips them without a word (run `turnback install codex` again)",
                            untrusted.join(", ")
                        ));
                    }
                }
            },
        }
    }
    Some(f)
}

/// A setting in the same file that turns the hooks off, without a word from
/// the agent: Claude Code's `disableAllHooks`, Gemini CLI's
/// `hooksConfig.enabled: false` or `hooksConfig.disabled` naming turnback.
fn switched_off(agent: Agent, s: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    match agent {
        Agent::ClaudeCode if s.get("disableAllHooks") == Some(&Value::Bool(true)) => {
            problems.push("`disableAllHooks` is true here: Claude Code runs no hook".into());
        }
        Agent::Gemini => {
            let config = s.get("hooksConfig");
            if config.and_then(|c| c.get("enabled")) == Some(&Value::Bool(false)) {
                problems
                    .push("`hooksConfig.enabled` is false here: Gemini CLI runs no hook".into());
            }
            let disabled = config
                .and_then(|c| c.get("disabled"))
                .and_then(Value::as_array)
                .is_some_and(|d| d.iter().any(|n| n == "turnback"));
            if disabled {
                problems.push(
                    "`hooksConfig.disabled` names turnback: Gemini CLI skips its hooks".into(),
                );
            }
        }
        _ => {}
    }
    problems
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The store home: writable, locks that hold, not on a network filesystem.
fn check_home(home: &Path) -> (Vec<String>, Vec<String>) {
    let (mut problems, mut notes) = (Vec::new(), Vec::new());
    // Where the store is, or will be made: the nearest directory that exists.
    let mut dir = home.to_owned();
    while !dir.is_dir() {
        match dir.parent() {
            Some(p) => dir = p.to_owned(),
            None => break,
        }
    }
    if dir != home {
        notes.push(format!("not made yet; it will be in {}", dir.display()));
    }
    let probe = format!(".doctor-probe.{}", std::process::id());
    match crate::sys::write_private(&dir, &probe, b"probe") {
        Ok(()) => {
            let _ = std::fs::remove_file(dir.join(&probe));
            notes.push("writable".into());
        }
        Err(e) => problems.push(format!("{} is not writable: {e}", dir.display())),
    }
    match crate::sys::flock_holds(&dir) {
        Ok(true) => notes.push("file locks hold".into()),
        Ok(false) => problems
            .push("file locks do not hold here: two sessions could write one file at once".into()),
        Err(e) => problems.push(format!("file locks could not be tried: {e}")),
    }
    if let Some(fs) = crate::sys::network_filesystem(&dir) {
        problems.push(format!(
            "it is on {fs}, where a lock may not exclude another machine: set TURNBACK_HOME to a local directory"
        ));
    }
    (problems, notes)
}
