//! `turnback status`, as `git status` and `jj st`: the session a person's
//! command would use here and why, its open checkpoints, the files changed
//! since the session wrote them (and by whom, where a session did), its open
//! scans, which agents have turnback's hooks here, and the store's size.

use std::path::PathBuf;

use serde_json::{Value, json};
use time::OffsetDateTime;
use turnback::json::rfc3339;
use turnback::output::{Out, Role};
use turnback::text::{escape, escape_path};
use turnback::when::when;
use turnback_store::{BaselineUsage, ChoiceReason, Entry, OpenScan, SessionChoice};

use crate::hooks::event::Agent;

use crate::cli_error::CliError;
use crate::context::Context;
use crate::render::Report;

/// Show the session used here and why, open checkpoints, files changed since, the store's size
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  turnback status\n  turnback status --json")]
pub(crate) struct StatusArgs {}

/// The session `status` found.
struct Used {
    id: String,
    /// "named", "changed-under" or "reverted-under" (docs/JSON.md).
    reason: &'static str,
    entries: usize,
    turns: usize,
    last_change: Option<OffsetDateTime>,
    open: Vec<Entry>,
    /// Scan brackets begun and not yet committed or rolled back.
    scans: Vec<OpenScan>,
    changed: Vec<Changed>,
}

/// A file changed since the session wrote it.
struct Changed {
    entry: Entry,
    /// The session and entry that left it as it is, where one did.
    by: Option<(String, Entry)>,
}

/// What `status` says.
pub(crate) struct Status {
    workspace: PathBuf,
    session: Option<Used>,
    /// The agents' settings files here that hold turnback's hooks, with
    /// how many.
    hooks: Vec<(Agent, PathBuf, usize)>,
    home: PathBuf,
    sessions: usize,
    bytes: u64,
    /// The workspaces' scan baselines, and the cap on each.
    baselines: BaselineUsage,
    max_baseline_bytes: u64,
}

impl Report for Status {
    fn json(&self) -> Option<Value> {
        let session = self.session.as_ref().map(|u| {
            json!({
                "id": u.id,
                "reason": u.reason,
                "entries": u.entries,
                "turns": u.turns,
                "last_change": u.last_change.map(rfc3339),
                "open_checkpoints": u.open.iter().map(|e| json!({
                    "seq": e.seq,
                    "message_id": e.message_id,
                    "workspace": e.workspace.path,
                    "path": e.path,
                    "since": rfc3339(e.time),
                })).collect::<Vec<_>>(),
                "open_scans": u.scans.iter().map(|o| json!({
                    "scan": o.id,
                    "message_id": o.message_id,
                    "command": o.command,
                    "workspace": o.workspace,
                    "since": rfc3339(o.began),
                })).collect::<Vec<_>>(),
                "changed_since": u.changed.iter().map(|c| json!({
                    "seq": c.entry.seq,
                    "workspace": c.entry.workspace.path,
                    "path": c.entry.path,
                    "changed_by": c.by.as_ref().map(|(s, e)| json!({
                        "session": s, "message_id": e.message_id, "seq": e.seq,
                    })),
                })).collect::<Vec<_>>(),
            })
        });
        Some(json!({
            "workspace": self.workspace,
            "session": session,
            "hooks": self.hooks.iter().map(|(agent, file, n)| json!({
                "agent": agent.name(), "file": file, "hooks": n,
            })).collect::<Vec<_>>(),
            "store": {
                "home": self.home,
                "sessions": self.sessions,
                "bytes": self.bytes,
                "baselines": {
                    "count": self.baselines.baselines,
                    "bytes": self.baselines.bytes,
                    "max_bytes": self.max_baseline_bytes,
                },
            },
        }))
    }

    fn text(&self, out: &Out) -> String {
        let mut s = String::new();
        let ws = escape_path(&self.workspace);
        match &self.session {
            None => s.push_str(&format!(
                "no session has changes in {ws}: an agent's first `turnback write` here makes one\n"
            )),
            Some(u) => {
                let why = match u.reason {
                    "named" => "named by --session or TURNBACK_SESSION".to_owned(),
                    "reverted-under" => format!("the last to undo, revert or rewind in {ws}"),
                    _ => format!("the newest with changes in {ws}"),
                };
                s.push_str(&format!(
                    "{} ({why})\n",
                    out.paint(Role::Header, &format!("session {}", u.id))
                ));
                s.push_str(&format!(
                    "  {} {}, {} {}, last {}\n",
                    u.entries,
                    if u.entries == 1 { "change" } else { "changes" },
                    u.turns,
                    if u.turns == 1 { "turn" } else { "turns" },
                    u.last_change.map(when).unwrap_or_else(|| "never".into())
                ));
                if u.open.is_empty() {
                    s.push_str("open checkpoints: none\n");
                } else {
                    s.push_str(&format!("open checkpoints: {}\n", u.open.len()));
                    for e in &u.open {
                        s.push_str(&format!(
                            "  #{:<4} {}  since {}\n",
                            e.seq,
                            out.paint(Role::Path, &escape(&e.path)),
                            when(e.time)
                        ));
                    }
                }
                if !u.scans.is_empty() {
                    s.push_str(&format!("open scans: {}\n", u.scans.len()));
                    for o in &u.scans {
                        let what = o.command.as_deref().unwrap_or(&o.message_id);
                        s.push_str(&format!(
                            "  {}  `{}`  since {}\n",
                            o.id,
                            escape(what),
                            when(o.began)
                        ));
                    }
                }
                if u.changed.is_empty() {
                    s.push_str("changed since the session wrote them: none\n");
                } else {
                    s.push_str(&format!(
                        "changed since the session wrote them: {} (undo, revert and rewind refuse them without --force)\n",
                        u.changed.len()
                    ));
                    for c in &u.changed {
                        let who = match &c.by {
                            Some((id, e)) => {
                                format!("by session {id}, message {}", escape(&e.message_id))
                            }
                            None => "not by a session (an editor, a formatter, a person)".into(),
                        };
                        s.push_str(&format!(
                            "  {}  {}\n",
                            out.paint(Role::Warn, &escape(&c.entry.path)),
                            who
                        ));
                    }
                }
            }
        }
        if self.hooks.is_empty() {
            s.push_str(
                "hooks: no agent has turnback's hooks here (`turnback install claude-code`)\n",
            );
        }
        for (agent, file, n) in &self.hooks {
            s.push_str(&format!(
                "hooks: {} ({n} in {}; `turnback doctor` checks them)\n",
                agent.name(),
                escape_path(file)
            ));
        }
        s.push_str(&format!(
            "store: {}, {} {}, {} bytes of backups, {}\n",
            escape_path(&self.home),
            self.sessions,
            if self.sessions == 1 {
                "session"
            } else {
                "sessions"
            },
            self.bytes,
            turnback::text::baselines(&self.baselines, Some(self.max_baseline_bytes)),
        ));
        s
    }
}

pub(crate) fn run(ctx: &Context, _: &StatusArgs) -> Result<Status, CliError> {
    let ws = ctx.workspace()?;
    let summaries = ctx.store.sessions()?;
    let chosen = ctx
        .store
        .choose_session(ctx.named_session(), SessionChoice::ChangedUnder(ws.root()))?;
    let session = match chosen {
        None => None,
        Some(c) => Some(used(ctx, &c.id, c.reason)?),
    };
    Ok(Status {
        workspace: ws.root().to_owned(),
        session,
        hooks: crate::commands::doctor::installed(ws.root()),
        home: ctx.store.home().to_owned(),
        sessions: summaries.len(),
        bytes: summaries.iter().map(|s| s.bytes).sum(),
        baselines: ctx.store.baseline_usage()?,
        max_baseline_bytes: ctx.store.settings().max_baseline_bytes.value,
    })
}

/// What `status` says of session `id`.
fn used(ctx: &Context, id: &str, reason: ChoiceReason) -> Result<Used, CliError> {
    let session = ctx.store.open_session(id)?;
    let entries = session.entries()?;
    let open: Vec<Entry> = entries
        .iter()
        .filter(|e| e.after.is_none())
        .cloned()
        .collect();
    // The newest entry of each file, compared with the file now.
    let mut newest: Vec<&Entry> = Vec::new();
    for e in entries.iter().rev() {
        if !newest
            .iter()
            .any(|n| n.absolute_path() == e.absolute_path())
        {
            newest.push(e);
        }
    }
    newest.sort_by_key(|e| (e.workspace.path.clone(), e.path.clone()));
    let mut others: Option<Vec<(String, Vec<Entry>)>> = None;
    let mut changed = Vec::new();
    for e in newest {
        let Some(after) = &e.after else { continue };
        let now = session.current_state(e)?;
        if now.same_contents(after) {
            continue;
        }
        // Who left it so: the newest entry of any session whose "after" is
        // the file as it is now.
        let all = match &mut others {
            Some(a) => a,
            None => others.insert(every_sessions_entries(ctx)?),
        };
        let by = all
            .iter()
            .flat_map(|(s, es)| es.iter().map(move |x| (s, x)))
            .filter(|(_, x)| {
                x.absolute_path() == e.absolute_path()
                    && x.after.as_ref().is_some_and(|a| a.same_contents(&now))
            })
            .max_by_key(|(_, x)| x.time)
            .map(|(s, x)| (s.clone(), x.clone()));
        changed.push(Changed {
            entry: e.clone(),
            by,
        });
    }
    Ok(Used {
        id: id.to_owned(),
        reason: match reason {
            ChoiceReason::Named => "named",
            ChoiceReason::RevertedUnder => "reverted-under",
            _ => "changed-under",
        },
        entries: entries.len(),
        turns: session.turn_bounds()?.len(),
        last_change: entries.iter().map(|e| e.time).max(),
        open,
        scans: session.open_scans()?,
        changed,
    })
}

/// Every readable session's entries (an unreadable one is skipped: status
/// reports on the others).
fn every_sessions_entries(ctx: &Context) -> Result<Vec<(String, Vec<Entry>)>, CliError> {
    let mut out = Vec::new();
    for id in ctx.store.session_ids()? {
        if let Ok(s) = ctx.store.open_session(&id)
            && let Ok(es) = s.entries()
        {
            out.push((id, es));
        }
    }
    Ok(out)
}
