//! What the screen is in: the panes and their selections, the diff shown,
//! the dialog open; and what each key does to it. Nothing here reads the
//! store: a key that needs it returns an [`Effect`] for the loop to do.

use std::collections::BTreeSet;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Line;
use ratatui::widgets::ListState;
use time::OffsetDateTime;

use super::data::SessionRow;
use super::timeline::{self, Action, Row, RowKind, Target};

/// The panes, in the order `Tab` goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pane {
    Sessions,
    Timeline,
    Diff,
}

/// A box over the panes.
#[derive(Debug, Clone)]
pub(crate) enum Dialog {
    /// The keys.
    Help,
    /// A restore's dry run, waiting for `y` or `n` (`f`: again, forced).
    Confirm {
        action: Action,
        force: bool,
        text: String,
        /// Files the rewind would refuse for (changed since).
        refused: usize,
    },
    /// What a restore did, or why it did nothing; any key closes it.
    Message { title: String, text: String },
}

/// What the loop must do after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    Nothing,
    Quit,
    /// Another session is selected: read its history.
    SessionChanged,
    /// Another turn or entry, or the other scope of diff: read its diff.
    SelectionChanged,
    /// Plan `action` (a dry run) and ask.
    Plan {
        action: Action,
        force: bool,
    },
    /// Do the restore the person confirmed.
    Apply {
        action: Action,
        force: bool,
    },
}

/// The state of the screen.
pub(crate) struct App {
    pub sessions: Vec<SessionRow>,
    pub session_list: ListState,
    /// The selected session's rows, every one.
    pub all_rows: Vec<Row>,
    /// The rows shown: `all_rows` but the entries of closed turns.
    pub rows: Vec<Row>,
    pub timeline: ListState,
    /// The turns closed with `Enter` (their entries hidden).
    pub closed: BTreeSet<u32>,
    /// The search being typed after `/`, if it is.
    pub typing: Option<String>,
    /// The last search (lower case), for `n`.
    pub search: Option<String>,
    pub pane: Pane,
    /// The diff is of the selected entry's whole turn (`d`).
    pub whole_turn: bool,
    pub diff: Vec<Line<'static>>,
    pub diff_scroll: u16,
    pub dialog: Option<Dialog>,
    /// The last thing worth saying in the footer (an error reading the store).
    pub status: Option<String>,
    /// Colour on (`--color`, `NO_COLOR`).
    pub color: bool,
    /// The time the screen is drawn at, for how long ago things were (fixed
    /// in the rendering tests).
    pub now: OffsetDateTime,
}

impl App {
    pub(crate) fn new(color: bool) -> App {
        App {
            sessions: Vec::new(),
            session_list: ListState::default(),
            all_rows: Vec::new(),
            rows: Vec::new(),
            timeline: ListState::default(),
            closed: BTreeSet::new(),
            typing: None,
            search: None,
            pane: Pane::Timeline,
            whole_turn: false,
            diff: Vec::new(),
            diff_scroll: 0,
            dialog: None,
            status: None,
            color,
            now: turnback::when::now(),
        }
    }

    /// The selected session's id.
    pub(crate) fn session(&self) -> Option<&str> {
        let i = self.session_list.selected()?;
        Some(self.sessions.get(i)?.id.as_str())
    }

    /// The selected turn or entry.
    pub(crate) fn target(&self) -> Option<Target> {
        self.rows.get(self.timeline.selected()?)?.target()
    }

    /// A new list of sessions: the selected one stays selected (wherever it
    /// now is), else the newest is. Files counts already known are kept.
    pub(crate) fn set_sessions(&mut self, mut list: Vec<SessionRow>) {
        let keep = self.session().map(str::to_owned);
        for s in list.iter_mut().filter(|s| s.files.is_none()) {
            let known = self
                .sessions
                .iter()
                .find(|o| o.id == s.id && o.entries == s.entries && o.last_change == s.last_change);
            if let Some(o) = known {
                (s.files, s.prompt) = (o.files, o.prompt.clone());
            }
        }
        self.sessions = list;
        let at = keep
            .and_then(|id| self.sessions.iter().position(|s| s.id == id))
            .or((!self.sessions.is_empty()).then_some(0));
        self.session_list.select(at);
    }

    /// The selected session's rows anew: `keep` stays selected if it is
    /// still there (or its turn, closed), else the newest entry is.
    pub(crate) fn set_rows(&mut self, rows: Vec<Row>, keep: Option<Target>) {
        self.all_rows = rows;
        self.show_rows(keep);
    }

    /// The rows shown made again from `all_rows` and the closed turns.
    fn show_rows(&mut self, keep: Option<Target>) {
        let closed = &self.closed;
        let rows: Vec<Row> = self
            .all_rows
            .iter()
            .filter(|r| matches!(r.kind, RowKind::Turn(_)) || !closed.contains(&r.turn))
            .cloned()
            .collect();
        let at = keep
            .and_then(|t| {
                timeline::find(&rows, t).or(match t {
                    Target::Entry(_, turn) if closed.contains(&turn) => {
                        timeline::find(&rows, Target::Turn(turn))
                    }
                    _ => None,
                })
            })
            .or_else(|| timeline::newest(&rows));
        self.rows = rows;
        self.timeline.select(at);
    }

    /// The diff pane's lines; `fresh`: another selection's, shown from its top.
    pub(crate) fn set_diff(&mut self, lines: Vec<Line<'static>>, fresh: bool) {
        self.diff = lines;
        if fresh {
            self.diff_scroll = 0;
        }
    }

    /// What `key` does.
    pub(crate) fn key(&mut self, key: KeyEvent) -> Effect {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Effect::Quit;
        }
        self.status = None;
        if let Some(typed) = self.typing.take() {
            return self.search_key(typed, key.code);
        }
        match self.dialog.take() {
            Some(d) => self.dialog_key(d, key.code),
            None => self.pane_key(key.code),
        }
    }

    /// A key while a search is typed: a character, a deletion, `Enter` (to
    /// the next match) or `Esc` (no search).
    fn search_key(&mut self, mut typed: String, code: KeyCode) -> Effect {
        match code {
            KeyCode::Esc => Effect::Nothing,
            KeyCode::Enter => {
                if typed.is_empty() {
                    return Effect::Nothing;
                }
                self.search = Some(typed.to_lowercase());
                self.next_match()
            }
            KeyCode::Backspace => {
                typed.pop();
                self.typing = Some(typed);
                Effect::Nothing
            }
            KeyCode::Char(c) => {
                typed.push(c);
                self.typing = Some(typed);
                Effect::Nothing
            }
            _ => {
                self.typing = Some(typed);
                Effect::Nothing
            }
        }
    }

    /// Selects the next turn or entry (after the selected one, from the top
    /// again at the end) whose prompt or file name holds the last search,
    /// opening its turn if it is closed.
    fn next_match(&mut self) -> Effect {
        let Some(q) = self.search.clone() else {
            return Effect::Nothing;
        };
        let all = &self.all_rows;
        let from = self
            .target()
            .and_then(|t| timeline::find(all, t))
            .map_or(0, |i| i + 1);
        let hit = (0..all.len())
            .map(|i| (from + i) % all.len())
            .find(|&i| all[i].target().is_some() && all[i].find.contains(&q));
        let Some(i) = hit else {
            self.status = Some(format!("no prompt or file name holds {q:?}"));
            return Effect::Nothing;
        };
        let target = all[i].target();
        self.closed.remove(&all[i].turn);
        self.show_rows(target);
        self.pane = Pane::Timeline;
        Effect::SelectionChanged
    }

    /// `Enter` on a turn: its entries hidden, or shown again.
    fn toggle_turn(&mut self) -> Effect {
        let Some(Target::Turn(n)) = self.target() else {
            return Effect::Nothing;
        };
        if !self.closed.remove(&n) {
            self.closed.insert(n);
        }
        self.show_rows(Some(Target::Turn(n)));
        Effect::Nothing
    }

    fn dialog_key(&mut self, dialog: Dialog, code: KeyCode) -> Effect {
        match dialog {
            Dialog::Confirm {
                action,
                force,
                text,
                refused,
            } => match code {
                KeyCode::Char('y') | KeyCode::Char('Y') => Effect::Apply { action, force },
                KeyCode::Char('f') if refused > 0 && !force => Effect::Plan {
                    action,
                    force: true,
                },
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Char('q') => {
                    self.status = Some("nothing restored".into());
                    Effect::Nothing
                }
                _ => {
                    self.dialog = Some(Dialog::Confirm {
                        action,
                        force,
                        text,
                        refused,
                    });
                    Effect::Nothing
                }
            },
            Dialog::Help | Dialog::Message { .. } => Effect::Nothing,
        }
    }

    fn pane_key(&mut self, code: KeyCode) -> Effect {
        match code {
            KeyCode::Char('q') | KeyCode::Esc => Effect::Quit,
            KeyCode::Char('?') => {
                self.dialog = Some(Dialog::Help);
                Effect::Nothing
            }
            KeyCode::Tab => {
                self.pane = match self.pane {
                    Pane::Sessions => Pane::Timeline,
                    Pane::Timeline => Pane::Diff,
                    Pane::Diff => Pane::Sessions,
                };
                Effect::Nothing
            }
            KeyCode::BackTab => {
                self.pane = match self.pane {
                    Pane::Sessions => Pane::Diff,
                    Pane::Timeline => Pane::Sessions,
                    Pane::Diff => Pane::Timeline,
                };
                Effect::Nothing
            }
            KeyCode::Enter if self.pane == Pane::Timeline => self.toggle_turn(),
            KeyCode::Char('/') => {
                self.typing = Some(String::new());
                Effect::Nothing
            }
            KeyCode::Char('n') => self.next_match(),
            KeyCode::Char('d') => {
                self.whole_turn = !self.whole_turn;
                Effect::SelectionChanged
            }
            KeyCode::Char('u') => match self.target() {
                Some(target) => Effect::Plan {
                    action: Action::Rewind(target),
                    force: false,
                },
                None => Effect::Nothing,
            },
            KeyCode::Char('R') => Effect::Plan {
                action: Action::Redo,
                force: false,
            },
            KeyCode::Char('r') => match self.target() {
                Some(Target::Entry(seq, _)) => Effect::Plan {
                    action: Action::Revert(seq),
                    force: false,
                },
                Some(Target::Turn(_)) => {
                    self.status = Some("r reverts an entry's file: select an entry".into());
                    Effect::Nothing
                }
                None => Effect::Nothing,
            },
            KeyCode::Up | KeyCode::Char('k') => self.move_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_by(1),
            KeyCode::PageUp => self.move_by(-10),
            KeyCode::PageDown => self.move_by(10),
            KeyCode::Home | KeyCode::Char('g') => self.move_by(-100_000),
            KeyCode::End | KeyCode::Char('G') => self.move_by(100_000),
            _ => Effect::Nothing,
        }
    }

    fn move_by(&mut self, by: isize) -> Effect {
        match self.pane {
            Pane::Sessions => {
                let Some(i) = self.session_list.selected() else {
                    return Effect::Nothing;
                };
                let last = self.sessions.len().saturating_sub(1) as isize;
                let to = (i as isize + by).clamp(0, last) as usize;
                if to == i {
                    return Effect::Nothing;
                }
                self.session_list.select(Some(to));
                self.closed.clear();
                Effect::SessionChanged
            }
            Pane::Timeline => {
                let Some(i) = self.timeline.selected() else {
                    return Effect::Nothing;
                };
                let to = timeline::step(&self.rows, i, by);
                if to == i {
                    return Effect::Nothing;
                }
                self.timeline.select(Some(to));
                Effect::SelectionChanged
            }
            Pane::Diff => {
                let last = self.diff.len().saturating_sub(1) as isize;
                self.diff_scroll = (self.diff_scroll as isize + by).clamp(0, last) as u16;
                Effect::Nothing
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent};

    use super::*;

    fn row(kind: RowKind, turn: u32) -> Row {
        Row {
            kind,
            turn,
            text: String::new(),
            find: match kind {
                RowKind::Turn(n) => format!("prompt {n}"),
                RowKind::Entry(n) => format!("file{n}.txt"),
                _ => String::new(),
            },
        }
    }

    /// Turn 1 with #1, turn 2 with #2 and #3, a message line before each run.
    fn rows() -> Vec<Row> {
        vec![
            row(RowKind::Gap, 0),
            row(RowKind::Turn(1), 1),
            row(RowKind::Message, 1),
            row(RowKind::Entry(1), 1),
            row(RowKind::Turn(2), 2),
            row(RowKind::Message, 2),
            row(RowKind::Entry(2), 2),
            row(RowKind::Entry(3), 2),
        ]
    }

    fn press(app: &mut App, c: char) -> Effect {
        app.key(KeyEvent::from(KeyCode::Char(c)))
    }

    #[test]
    fn it_opens_on_the_newest_entry_and_moves_over_turns_and_entries_only() {
        let mut app = App::new(false);
        app.set_rows(rows(), None);
        assert_eq!(app.target(), Some(Target::Entry(3, 2)));
        assert_eq!(press(&mut app, 'k'), Effect::SelectionChanged);
        assert_eq!(press(&mut app, 'k'), Effect::SelectionChanged);
        assert_eq!(app.target(), Some(Target::Turn(2)));
        press(&mut app, 'k');
        assert_eq!(app.target(), Some(Target::Entry(1, 1)));
        press(&mut app, 'k');
        press(&mut app, 'k');
        assert_eq!(
            app.target(),
            Some(Target::Turn(1)),
            "the gap is not selectable"
        );
        assert_eq!(press(&mut app, 'j'), Effect::SelectionChanged);
        assert_eq!(app.target(), Some(Target::Entry(1, 1)));
    }

    #[test]
    fn new_rows_keep_the_selection_where_it_was() {
        let mut app = App::new(false);
        app.set_rows(rows(), None);
        press(&mut app, 'k');
        assert_eq!(app.target(), Some(Target::Entry(2, 2)));
        let mut more = rows();
        more.push(row(RowKind::Entry(4), 2));
        app.set_rows(more, app.target());
        assert_eq!(app.target(), Some(Target::Entry(2, 2)));
    }

    #[test]
    fn u_asks_first_and_only_y_restores() {
        let mut app = App::new(false);
        app.set_rows(rows(), None);
        let target = Action::Rewind(Target::Entry(3, 2));
        assert_eq!(
            press(&mut app, 'u'),
            Effect::Plan {
                action: target,
                force: false
            }
        );
        let confirm = |refused| Dialog::Confirm {
            action: target,
            force: false,
            text: String::new(),
            refused,
        };
        app.dialog = Some(confirm(0));
        assert_eq!(press(&mut app, 'f'), Effect::Nothing, "nothing to force");
        assert_eq!(press(&mut app, 'x'), Effect::Nothing);
        assert!(app.dialog.is_some(), "another key leaves the question open");
        assert_eq!(press(&mut app, 'n'), Effect::Nothing);
        assert!(app.dialog.is_none());
        app.dialog = Some(confirm(1));
        assert_eq!(
            press(&mut app, 'f'),
            Effect::Plan {
                action: target,
                force: true
            },
            "f plans again, forced: still to be confirmed"
        );
        app.dialog = Some(confirm(0));
        assert_eq!(
            press(&mut app, 'y'),
            Effect::Apply {
                action: target,
                force: false
            }
        );
    }

    #[test]
    fn r_reverts_the_selected_entrys_file_and_needs_an_entry() {
        let mut app = App::new(false);
        app.set_rows(rows(), None);
        assert_eq!(
            press(&mut app, 'r'),
            Effect::Plan {
                action: Action::Revert(3),
                force: false
            }
        );
        press(&mut app, 'k');
        press(&mut app, 'k');
        assert_eq!(app.target(), Some(Target::Turn(2)));
        assert_eq!(press(&mut app, 'r'), Effect::Nothing);
        assert!(app.status.as_deref().unwrap().contains("select an entry"));
        assert_eq!(
            press(&mut app, 'R'),
            Effect::Plan {
                action: Action::Redo,
                force: false
            },
            "R asks first too, wherever the selection is"
        );
    }

    #[test]
    fn enter_closes_and_opens_a_turn() {
        let mut app = App::new(false);
        app.set_rows(rows(), None);
        app.key(KeyEvent::from(KeyCode::Enter));
        assert_eq!(app.rows.len(), 8, "Enter on an entry does nothing");
        press(&mut app, 'k');
        press(&mut app, 'k');
        assert_eq!(app.target(), Some(Target::Turn(2)));
        app.key(KeyEvent::from(KeyCode::Enter));
        assert_eq!(app.rows.len(), 5, "turn 2's message and entries hidden");
        assert_eq!(app.target(), Some(Target::Turn(2)));
        assert_eq!(press(&mut app, 'j'), Effect::Nothing, "nothing below");
        // New rows (the store changed) keep the turn closed.
        app.set_rows(rows(), app.target());
        assert_eq!(app.rows.len(), 5);
        app.key(KeyEvent::from(KeyCode::Enter));
        assert_eq!(app.rows.len(), 8);
    }

    #[test]
    fn slash_searches_prompts_and_file_names_and_n_goes_on() {
        let mut app = App::new(false);
        app.set_rows(rows(), None);
        // Turn 2 closed: a match in it opens it.
        press(&mut app, 'k');
        press(&mut app, 'k');
        app.key(KeyEvent::from(KeyCode::Enter));
        press(&mut app, '/');
        for c in "FILE".chars() {
            assert_eq!(press(&mut app, c), Effect::Nothing, "typed, not a key");
        }
        assert_eq!(app.typing.as_deref(), Some("FILE"));
        assert_eq!(
            app.key(KeyEvent::from(KeyCode::Enter)),
            Effect::SelectionChanged
        );
        assert!(app.typing.is_none());
        assert_eq!(app.target(), Some(Target::Entry(2, 2)), "case ignored");
        assert_eq!(app.rows.len(), 8, "its turn opened");
        press(&mut app, 'n');
        assert_eq!(app.target(), Some(Target::Entry(3, 2)));
        press(&mut app, 'n');
        assert_eq!(
            app.target(),
            Some(Target::Entry(1, 1)),
            "from the top again"
        );
        press(&mut app, '/');
        press(&mut app, 'p');
        app.key(KeyEvent::from(KeyCode::Backspace));
        press(&mut app, 'z');
        app.key(KeyEvent::from(KeyCode::Enter));
        assert_eq!(app.target(), Some(Target::Entry(1, 1)));
        assert!(app.status.as_deref().unwrap().contains("no prompt or file"));
        press(&mut app, '/');
        press(&mut app, 'q');
        assert_eq!(app.key(KeyEvent::from(KeyCode::Esc)), Effect::Nothing);
        assert!(app.typing.is_none(), "Esc cancels");
        assert_eq!(press(&mut app, 'q'), Effect::Quit);
    }

    #[test]
    fn q_quits_but_closes_a_dialog_first() {
        let mut app = App::new(false);
        app.dialog = Some(Dialog::Help);
        assert_eq!(press(&mut app, 'q'), Effect::Nothing);
        assert!(app.dialog.is_none());
        assert_eq!(press(&mut app, 'q'), Effect::Quit);
    }
}
