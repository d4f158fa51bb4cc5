//! The loop: draw, wait for a key or a resize (at most [`live::EVERY`]), do
//! what the key asks, look whether the store changed and read it again if
//! so, keeping the selection; fill in the sessions' file counts while idle.

use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyEventKind};

use crate::cli_error::CliError;
use crate::context::Context;
use turnback::when::now;

use super::data::{self, History};
use super::diff_lines;
use super::draw;
use super::live::{self, Stamp};
use super::state::{App, Dialog, Effect};
use super::terminal::Screen;
use super::timeline::Action;
use super::timeline::{self, Target};

/// How often the timeline's "how long ago" is brought up to date.
const AGES: Duration = Duration::from_secs(1);

/// Runs the view until the person quits (or a SIGTERM comes); whether a
/// key restored files (the session it restored in is then the context's
/// session in use, which the daily prune spares).
pub(crate) fn run(ctx: &Context) -> Result<bool, CliError> {
    let mut view = View {
        ctx,
        app: App::new(ctx.render.style().color),
        history: None,
        stamp: Stamp::default(),
        shown: None,
        restored: None,
    };
    view.reload(true);
    let mut screen = Screen::enter().map_err(io_error)?;
    view.run(&mut screen).map_err(io_error)?;
    drop(screen);
    Ok(match view.restored {
        Some(id) => {
            let _ = ctx.open_session(&id);
            true
        }
        None => false,
    })
}

/// In a debug build only (the tests'), with `TURNBACK_TEST_UI_PANIC` set,
/// `!` panics: how tests/ui.rs shows that a panic puts the terminal back.
fn test_panic(code: event::KeyCode) {
    if cfg!(debug_assertions)
        && code == event::KeyCode::Char('!')
        && std::env::var_os("TURNBACK_TEST_UI_PANIC").is_some()
    {
        panic!("TURNBACK_TEST_UI_PANIC: a panic asked for by a test");
    }
}

fn io_error(e: std::io::Error) -> CliError {
    CliError::new(format!("could not talk to the terminal: {e}"), None)
}

struct View<'a> {
    ctx: &'a Context,
    app: App,
    /// The selected session's history.
    history: Option<History>,
    /// The store as last read.
    stamp: Stamp,
    /// The selection and scope the diff pane shows.
    shown: Option<(String, Target, bool)>,
    /// The session a key last restored files in, if one did.
    restored: Option<String>,
}

impl View<'_> {
    fn run(&mut self, screen: &mut Screen) -> std::io::Result<()> {
        let mut looked = Instant::now();
        let mut aged = Instant::now();
        loop {
            if crate::sys::terminated() {
                return Ok(());
            }
            self.app.now = now();
            screen.term.draw(|f| draw::draw(f, &mut self.app))?;
            let idle = self
                .app
                .sessions
                .iter()
                .any(|s| s.files.is_none() && s.problem.is_none());
            let wait = if idle {
                Duration::from_millis(5)
            } else {
                live::EVERY.saturating_sub(looked.elapsed())
            };
            if event::poll(wait)? {
                match event::read()? {
                    Event::Key(k) if k.kind != KeyEventKind::Release => {
                        test_panic(k.code);
                        let effect = self.app.key(k);
                        if effect == Effect::Quit {
                            return Ok(());
                        }
                        self.apply(effect);
                    }
                    // The next draw fits the new size.
                    _ => {}
                }
                continue;
            }
            if looked.elapsed() >= live::EVERY {
                looked = Instant::now();
                if !self.reload(false) && aged.elapsed() >= AGES {
                    self.refresh_rows();
                    aged = Instant::now();
                }
            } else if idle {
                self.count_files();
            }
        }
    }

    /// Reads the store again if it changed (or `always`), keeping what is
    /// selected; true if it did.
    fn reload(&mut self, always: bool) -> bool {
        let home = self.ctx.store.home();
        let stamp = live::stamp(home, self.app.sessions.iter().map(|s| s.id.as_str()));
        if !always && stamp == self.stamp {
            return false;
        }
        // The stamp taken before reading: a change made while the store is
        // read is seen at the next look, not lost. (A session new in the
        // list makes the next stamp differ once: one read more.)
        self.stamp = stamp;
        match data::sessions(self.ctx) {
            Ok(list) => self.app.set_sessions(list),
            Err(e) => self.app.status = Some(e.message().to_owned()),
        }
        let keep = self.app.target();
        let same = self.history.as_ref().map(|h| h.session.id()) == self.app.session();
        self.load_session(if same { keep } else { None });
        true
    }

    /// The timeline's rows made again from the history read, so that how
    /// long ago each thing happened stays true; the selection kept.
    fn refresh_rows(&mut self) {
        if let Some(h) = &self.history {
            let rows = timeline::rows(&h.entries, &h.turns, h.gap.as_ref(), now());
            let keep = self.app.target();
            self.app.set_rows(rows, keep);
        }
    }

    /// Reads the selected session's history and shows it, selecting `keep`
    /// if it is still there.
    fn load_session(&mut self, keep: Option<Target>) {
        self.history = None;
        let rows = match self.app.session().map(|id| data::history(self.ctx, id)) {
            Some(Ok(h)) => {
                let rows = timeline::rows(&h.entries, &h.turns, h.gap.as_ref(), now());
                if let Some(s) = self
                    .app
                    .sessions
                    .iter_mut()
                    .find(|s| s.id == h.session.id())
                {
                    data::fill(s, &h);
                }
                self.history = Some(h);
                rows
            }
            Some(Err(e)) => {
                self.app.status = Some(e.message().to_owned());
                Vec::new()
            }
            None => Vec::new(),
        };
        self.app.set_rows(rows, keep);
        self.show_diff(true);
    }

    /// Reads the diff of the selection (again, with `again`: the store
    /// changed), unless it is the one shown.
    fn show_diff(&mut self, again: bool) {
        let Some(h) = &self.history else {
            self.app.set_diff(Vec::new(), true);
            self.shown = None;
            return;
        };
        let Some(target) = self.app.target() else {
            self.app.set_diff(Vec::new(), true);
            self.shown = None;
            return;
        };
        let key = (h.session.id().to_owned(), target, self.app.whole_turn);
        let fresh = self.shown.as_ref() != Some(&key);
        if !fresh && !again {
            return;
        }
        let lines = match data::diff(h, target, self.app.whole_turn) {
            Ok((files, not_kept)) => diff_lines::lines(&files, &not_kept, self.app.color),
            Err(e) => vec![ratatui::text::Line::raw(e.message().to_owned())],
        };
        self.app.set_diff(lines, fresh);
        self.shown = Some(key);
    }

    /// Reads one session's history, whose files the sessions pane does not
    /// count yet.
    fn count_files(&mut self) {
        let Some(s) = self
            .app
            .sessions
            .iter_mut()
            .find(|s| s.files.is_none() && s.problem.is_none())
        else {
            return;
        };
        match data::history(self.ctx, &s.id) {
            Ok(h) => data::fill(s, &h),
            Err(e) => s.problem = Some(e.message().to_owned()),
        }
    }

    fn apply(&mut self, effect: Effect) {
        match effect {
            Effect::Nothing | Effect::Quit => {}
            Effect::SessionChanged => self.load_session(None),
            Effect::SelectionChanged => self.show_diff(false),
            Effect::Plan { action, force } => self.plan(action, force),
            Effect::Apply { action, force } => {
                self.restore(action, force);
                self.reload(true);
            }
        }
    }

    /// A restore's dry run, in the dialog that asks.
    fn plan(&mut self, action: Action, force: bool) {
        let Some(h) = &self.history else {
            return;
        };
        let what = data::action_name(action, &h.entries);
        self.app.dialog = Some(match data::restore(&h.session, action, force, true) {
            Ok(r) if r.files.is_empty() => Dialog::Message {
                title: what,
                text: "nothing to restore: the files are as they were then".into(),
            },
            Ok(r) => Dialog::Confirm {
                action,
                force,
                refused: r.files.iter().filter(|f| f.status.is_conflict()).count(),
                text: data::report_text(&what, &r),
            },
            Err(e) => Dialog::Message {
                title: what,
                text: e.text(),
            },
        });
    }

    /// The restore the person confirmed, and what it did.
    fn restore(&mut self, action: Action, force: bool) {
        let Some(h) = &self.history else {
            return;
        };
        let what = data::action_name(action, &h.entries);
        let text = match data::restore(&h.session, action, force, false) {
            Ok(r) => {
                if !r.files.is_empty() {
                    self.restored = Some(h.session.id().to_owned());
                }
                data::report_text(&what, &r)
            }
            Err(e) => e.text(),
        };
        self.app.dialog = Some(Dialog::Message { title: what, text });
    }
}
