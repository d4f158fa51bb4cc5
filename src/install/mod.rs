//! `turnback install` / `uninstall`: turnback's hooks merged into an agent's
//! settings file, every other setting and hook kept. Claude Code, Codex and
//! Gemini CLI keep hooks in the same JSON shape, `{"hooks": {EVENT:
//! [{"matcher": M, "hooks": [HANDLER]}]}}`; Cursor without the group,
//! `{"hooks": {EVENT: [HANDLER]}}`, the matcher in the handler ([`Layout`]);
//! Copilot CLI the same, in a file of turnback's own. Each agent's module
//! says which events, which matcher and what a handler looks like
//! (`claude.rs`, `codex.rs`, `gemini.rs`, `cursor.rs`, `copilot.rs`,
//! `qwen.rs`, `droid.rs`); opencode has a plugin of turnback's own instead
//! (`opencode.rs`), read here as the hooks it holds;
//! `hook_line.rs` tells turnback's handlers from anyone else's by their shape.

pub(crate) mod claude;
pub(crate) mod codex;
pub(crate) mod codex_trust;
pub(crate) mod copilot;
pub(crate) mod cursor;
pub(crate) mod detect;
pub(crate) mod droid;
pub(crate) mod edit;
pub(crate) mod gemini;
pub(crate) mod hook_line;
pub(crate) mod jsonc;
pub(crate) mod opencode;
pub(crate) mod qwen;
pub(crate) mod settings;
pub(crate) mod splice;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::hooks::event::Agent;

/// Which settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The agent's own default (Claude Code: the workspace's uncommitted
    /// `.claude/settings.local.json`; Codex and Gemini CLI: the user's).
    Default,
    /// The workspace's committed settings.
    Project,
    /// The user's settings, for every workspace.
    User,
}

/// How an agent's settings hold a hook in an event's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// In a group: `{"matcher": M, "hooks": [HANDLER]}` (Claude Code, Codex,
    /// Gemini CLI).
    Grouped,
    /// The handler itself, its matcher in it (Cursor).
    Flat,
}

/// One hook turnback wants: an event, its matcher, its handler.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Wanted {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub handler: Value,
}

impl Wanted {
    /// `handler` for `event`, on the tools `matcher` names (every call when
    /// `None`).
    pub(crate) fn new(event: &'static str, matcher: Option<&'static str>, handler: &Value) -> Self {
        Wanted {
            event,
            matcher,
            handler: handler.clone(),
        }
    }
}

/// What an agent's module provides.
pub(crate) trait AgentHooks {
    /// The settings file of `scope`, for the workspace `ws`.
    fn settings_file(&self, scope: Scope, ws: &Path) -> Result<PathBuf, String>;
    /// The hooks turnback wants, running `exe`.
    fn wanted(&self, exe: &Path) -> Vec<Wanted>;
    /// True when `handler` is one of turnback's (whatever binary it names).
    fn is_ours(&self, handler: &Value) -> bool;
    /// The program a handler of turnback's runs.
    fn program_of(&self, handler: &Value) -> Option<PathBuf>;
    /// Whether the agent reads comments in its settings file (then install
    /// keeps them; where it does not, a comment is refused as it would be).
    fn comments(&self) -> bool {
        false
    }
    /// How its settings hold a hook.
    fn layout(&self) -> Layout {
        Layout::Grouped
    }
    /// Keys a settings file gets before `hooks` when install adds `hooks`
    /// to it and they are not there (Cursor: `"version": 1`).
    fn preamble(&self) -> Vec<(&'static str, Value)> {
        Vec::new()
    }
}

/// The module of `agent`.
pub(crate) fn agent_hooks(agent: Agent) -> &'static dyn AgentHooks {
    match agent {
        Agent::ClaudeCode => &claude::ClaudeCode,
        Agent::Codex => &codex::Codex,
        Agent::Gemini => &gemini::Gemini,
        Agent::Cursor => &cursor::Cursor,
        Agent::Copilot => &copilot::Copilot,
        Agent::Qwen => &qwen::Qwen,
        Agent::Droid => &droid::Droid,
        Agent::Opencode => &opencode::Opencode,
    }
}

/// The hooks settings in `agent`'s `file` (for opencode, its plugin read
/// as the hooks it holds: none unless it is turnback's).
pub(crate) fn read_map(agent: Agent, file: &Path) -> Result<Map<String, Value>, String> {
    if agent == Agent::Opencode {
        return opencode::read(file).map(|p| opencode::as_settings(&p));
    }
    settings::read(file, agent_hooks(agent).comments()).map(|s| s.map)
}

/// One change made to a settings file, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    /// "added" or "removed".
    pub what: &'static str,
    pub event: String,
    pub matcher: Option<String>,
}

/// Removes every handler `is_ours` says is turnback's; the groups, events
/// and `hooks` that leaves empty go too (ones that were empty already stay:
/// they are not turnback's). Keys keep their order.
pub(crate) fn remove_ours(
    settings: &mut Map<String, Value>,
    layout: Layout,
    is_ours: &dyn Fn(&Value) -> bool,
) -> Vec<Change> {
    let (changes, emptied) = take_out(settings, layout, is_ours);
    prune(settings, &emptied);
    changes
}

/// Takes turnback's handlers out, and the groups that leaves empty; says
/// which events lost a group.
fn take_out(
    settings: &mut Map<String, Value>,
    layout: Layout,
    is_ours: &dyn Fn(&Value) -> bool,
) -> (Vec<Change>, Vec<String>) {
    let mut changes = Vec::new();
    let mut emptied = Vec::new();
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return (changes, emptied);
    };
    for (event, groups) in hooks.iter_mut() {
        let Value::Array(groups) = groups else {
            continue;
        };
        let before = groups.len();
        if layout == Layout::Flat {
            groups.retain(|h| {
                let ours = is_ours(h);
                if ours {
                    changes.push(Change {
                        what: "removed",
                        event: event.clone(),
                        matcher: matcher_of(h),
                    });
                }
                !ours
            });
            if groups.len() < before {
                emptied.push(event.clone());
            }
            continue;
        }
        groups.retain_mut(|group| {
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let Some(Value::Array(handlers)) = group.get_mut("hooks") else {
                return true;
            };
            let had = handlers.len();
            handlers.retain(|h| !is_ours(h));
            for _ in handlers.len()..had {
                changes.push(Change {
                    what: "removed",
                    event: event.clone(),
                    matcher: matcher.clone(),
                });
            }
            !(had > 0 && handlers.is_empty())
        });
        if groups.len() < before {
            emptied.push(event.clone());
        }
    }
    (changes, emptied)
}

/// Takes out the events of `emptied` that are empty now, and `hooks` when
/// that leaves it empty (`shift_remove`: the keys after keep their order).
fn prune(settings: &mut Map<String, Value>, emptied: &[String]) {
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return;
    };
    let mut pruned = false;
    for event in emptied {
        if hooks
            .get(event)
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            hooks.shift_remove(event);
            pruned = true;
        }
    }
    if pruned && hooks.is_empty() {
        settings.shift_remove("hooks");
    }
}

/// The matcher of a group, or of a handler in the flat layout.
fn matcher_of(v: &Value) -> Option<String> {
    v.get("matcher").and_then(Value::as_str).map(str::to_owned)
}

/// The hooks of turnback's now in `settings`: (event, matcher, handler).
pub(crate) fn ours_in(
    settings: &Map<String, Value>,
    layout: Layout,
    is_ours: &dyn Fn(&Value) -> bool,
) -> Vec<(String, Option<String>, Value)> {
    let mut found = Vec::new();
    let Some(Value::Object(hooks)) = settings.get("hooks") else {
        return found;
    };
    for (event, groups) in hooks {
        for group in groups.as_array().into_iter().flatten() {
            if layout == Layout::Flat {
                if is_ours(group) {
                    found.push((event.clone(), matcher_of(group), group.clone()));
                }
                continue;
            }
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .map(str::to_owned);
            for h in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if is_ours(h) {
                    found.push((event.clone(), matcher.clone(), h.clone()));
                }
            }
        }
    }
    found
}

/// Puts exactly `wanted` in as turnback's hooks: nothing changes when they
/// are there already; otherwise turnback's old ones go and these are added,
/// each in a group of its own at the end of its event's list. Flags the user
/// added to turnback's line of an event (`--strict`) are kept on it.
pub(crate) fn merge(
    settings: &mut Map<String, Value>,
    wanted: &[Wanted],
    layout: Layout,
    is_ours: &dyn Fn(&Value) -> bool,
) -> Result<Vec<Change>, String> {
    let mut have = ours_in(settings, layout, is_ours);
    let mut want: Vec<_> = wanted
        .iter()
        .map(|w| {
            (
                w.event.to_owned(),
                w.matcher.map(str::to_owned),
                w.handler.clone(),
            )
        })
        .collect();
    have.sort_by(|a, b| a.0.cmp(&b.0));
    want.sort_by(|a, b| a.0.cmp(&b.0));
    if have == want {
        return Ok(Vec::new());
    }
    // An event emptied here and given a hook again stays where it was.
    let (mut changes, emptied) = take_out(settings, layout, is_ours);
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err("its `hooks` is not an object".into());
    };
    for w in wanted {
        let list = hooks
            .entry(w.event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            return Err(format!("its `hooks.{}` is not a list", w.event));
        };
        list.push(entry(w, layout));
        changes.push(Change {
            what: "added",
            event: w.event.to_owned(),
            matcher: w.matcher.map(str::to_owned),
        });
    }
    prune(settings, &emptied);
    // A hook replaced by the same one (another binary path) reads as one
    // "updated", not a removal and an addition.
    Ok(fold_updates(changes))
}

/// What a wanted hook is in its event's list: its group, or in the flat
/// layout its handler (which holds its matcher).
pub(crate) fn entry(w: &Wanted, layout: Layout) -> Value {
    if layout == Layout::Flat {
        return w.handler.clone();
    }
    let mut group = Map::new();
    if let Some(m) = w.matcher {
        group.insert("matcher".into(), m.into());
    }
    group.insert("hooks".into(), Value::Array(vec![w.handler.clone()]));
    Value::Object(group)
}

/// What install or uninstall makes of a settings file.
pub(crate) struct Outcome {
    pub changes: Vec<Change>,
    /// The settings as they are then.
    pub settings: Map<String, Value>,
    /// The file's new text; `None` when nothing changes.
    pub text: Option<String>,
}

/// turnback's hooks `wanted` put into `s` (flags the user added to
/// turnback's lines kept), its other entries and bytes left as they are.
pub(crate) fn install_into(
    s: &settings::Settings,
    agent: &dyn AgentHooks,
    wanted: &[Wanted],
) -> Result<Outcome, String> {
    let is_ours = |h: &Value| agent.is_ours(h);
    let layout = agent.layout();
    let mut map = s.map.clone();
    let wanted = with_users_flags(wanted, &ours_in(&map, layout, &is_ours));
    // A file without hooks gets the agent's preamble first.
    let preamble: Vec<(&str, Value)> = match map.contains_key("hooks") || wanted.is_empty() {
        true => Vec::new(),
        false => agent
            .preamble()
            .into_iter()
            .filter(|(k, _)| !map.contains_key(*k))
            .collect(),
    };
    for (k, v) in &preamble {
        map.insert((*k).to_owned(), v.clone());
    }
    let changes = merge(&mut map, &wanted, layout, &is_ours)?;
    let text = match changes.is_empty() {
        true => None,
        false => Some(edit::hooks(s, &wanted, layout, &preamble, &is_ours, &map)?),
    };
    Ok(Outcome {
        changes,
        settings: map,
        text,
    })
}

/// turnback's hooks taken out of `s`, its other entries and bytes left as
/// they are.
pub(crate) fn uninstall_from(
    s: &settings::Settings,
    agent: &dyn AgentHooks,
) -> Result<Outcome, String> {
    let is_ours = |h: &Value| agent.is_ours(h);
    let layout = agent.layout();
    let mut map = s.map.clone();
    let changes = remove_ours(&mut map, layout, &is_ours);
    let text = match changes.is_empty() {
        true => None,
        false => Some(edit::hooks(s, &[], layout, &[], &is_ours, &map)?),
    };
    Ok(Outcome {
        changes,
        settings: map,
        text,
    })
}

/// `wanted`, each handler with the flags turnback's handler of its event in
/// `have` carries (the first one's, if there are several).
fn with_users_flags(wanted: &[Wanted], have: &[(String, Option<String>, Value)]) -> Vec<Wanted> {
    wanted
        .iter()
        .map(|w| {
            let flags = have
                .iter()
                .find(|(event, _, _)| event == w.event)
                .map(|(_, _, h)| hook_line::flags(h))
                .unwrap_or_default();
            Wanted {
                handler: hook_line::with_flags(&w.handler, &flags),
                ..w.clone()
            }
        })
        .collect()
}

fn fold_updates(changes: Vec<Change>) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    for c in changes {
        if c.what == "added"
            && let Some(i) = out
                .iter()
                .position(|o| o.what == "removed" && o.event == c.event && o.matcher == c.matcher)
        {
            out[i].what = "updated";
            continue;
        }
        out.push(c);
    }
    out
}

/// `exe` quoted for a POSIX shell, for the agents whose hook command is a
/// shell command line (Codex, Gemini CLI): one word whatever it holds.
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// True when `handler` is turnback's hook for `agent` (see `hook_line.rs`).
pub(crate) fn is_our_hook(handler: &Value, agent: &str) -> bool {
    hook_line::of(handler, agent).is_some()
}

/// The program turnback's hook for `agent` in `handler` runs.
pub(crate) fn our_program(handler: &Value, agent: &str) -> Option<PathBuf> {
    hook_line::of(handler, agent).map(|l| l.program)
}
