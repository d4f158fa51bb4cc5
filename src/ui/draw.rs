//! Drawing the screen from [`App`]: the sessions pane and the timeline on
//! the left, the diff on the right, the keys in the footer, a dialog over
//! them. Usable from 80x24 up; the selection is shown reversed, so it reads
//! without colour too.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Text};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, Paragraph, Wrap};
use time::OffsetDateTime;
use turnback::history::prompt;
use turnback::when::ago;

use super::data::{self, SessionRow};
use super::state::{App, Dialog, Pane};
use super::timeline::{RowKind, Target};

/// The footer: the keys.
pub(crate) const FOOTER: &str =
    "↑↓ Tab ⏎ open / find d diff u rewind r revert R redo ? keys q quit";

/// What `?` shows.
const HELP: &str = "\
↑ ↓  j k     move (in the diff pane: scroll)
PgUp PgDn    move by ten
g G          first, last
Tab          next pane (sessions, timeline, diff)
Enter        on a turn: hide its entries, or show them again
/            search the session's prompts and file names: type,
             Enter goes to the next match, Esc cancels
n            the next match again
d            diff of the entry, or of its whole turn
u            rewind to just before the selected entry or turn:
             shows what changes first, then y restores, n does not,
             f forces the files changed since (as --force)
r            revert the selected entry's file to before that entry
             (the same dry run, y, n and f)
R            redo what the last u or r took back (the same dry run)
?            these keys
q  Esc       quit (any key closes this box)";

pub(crate) fn draw(f: &mut Frame, app: &mut App) {
    let [body, footer] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(f.area());
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
    let wanted = app.sessions.len().max(1) as u16 + 2;
    let sessions_height = wanted.min((left.height / 3).max(3));
    let [top, bottom] =
        Layout::vertical([Constraint::Length(sessions_height), Constraint::Min(3)]).areas(left);
    sessions(f, app, top);
    timeline(f, app, bottom);
    diff(f, app, right);
    let foot = match (&app.typing, &app.status) {
        (Some(q), _) => format!("/{q}  (Enter: the next match, Esc: no search)"),
        (None, Some(s)) => format!("{s}  |  {FOOTER}"),
        (None, None) => FOOTER.to_owned(),
    };
    f.render_widget(Paragraph::new(foot).style(dim()), footer);
    dialog(f, app, body);
}

fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

fn block(app: &App, pane: Pane, title: String) -> Block<'static> {
    let style = if app.pane == pane {
        let s = Style::new().add_modifier(Modifier::BOLD);
        if app.color { s.fg(Color::Cyan) } else { s }
    } else {
        Style::new()
    };
    Block::new()
        .borders(Borders::ALL)
        .border_style(style)
        .title(title)
}

fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

fn sessions(f: &mut Frame, app: &mut App, area: Rect) {
    let now = app.now;
    let width = usize::from(area.width.saturating_sub(2));
    let items: Vec<ListItem> = app
        .sessions
        .iter()
        .map(|s| ListItem::new(session_line(s, now, width)))
        .collect();
    let title = format!(" sessions ({}) ", app.sessions.len());
    let list = List::new(items)
        .block(block(app, Pane::Sessions, title))
        .highlight_style(selected());
    f.render_stateful_widget(list, area, &mut app.session_list);
}

/// A session's line, for a pane `width` wide: when, the agent (where its
/// id names one), how many entries and files, the first prompt (cut to the
/// room left), the id last (a long one, a UUID, is what gets cut).
fn session_line(s: &SessionRow, now: OffsetDateTime, width: usize) -> String {
    let id = turnback::text::escape(&s.id);
    if let Some(p) = &s.problem {
        return format!("{id}  cannot be read: {}", turnback::text::escape(p));
    }
    // "5 min", not "5 min ago": the room goes to the prompt.
    let when = s.last_change.map(|t| ago(t, now)).unwrap_or_default();
    let when = when.trim_end_matches(" ago");
    let mut head = format!("{when}  ");
    if let Some(a) = data::agent(&s.id) {
        head.push_str(a);
        head.push_str("  ");
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut counts = plural(s.entries, "entry", "entries");
    if let Some(n) = s.files {
        counts.push_str(&format!(", {}", plural(n, "file", "files")));
    }
    let prompt = match &s.prompt {
        Some(Some(p)) => {
            let room = width.saturating_sub(head.chars().count() + counts.chars().count() + 6);
            format!("{}  ", prompt(p, room.clamp(12, 60)))
        }
        _ => String::new(),
    };
    format!("{head}{counts}  {prompt}{id}")
}

fn timeline(f: &mut Frame, app: &mut App, area: Rect) {
    let warn = if app.color {
        Style::new().fg(Color::Yellow)
    } else {
        Style::new()
    };
    let items: Vec<ListItem> = app
        .rows
        .iter()
        .map(|r| {
            let style = match r.kind {
                RowKind::Turn(_) | RowKind::NoTurn => Style::new().add_modifier(Modifier::BOLD),
                RowKind::Message => dim(),
                RowKind::Gap => warn,
                RowKind::Entry(_) => Style::new(),
            };
            ListItem::new(Line::styled(r.text.clone(), style))
        })
        .collect();
    let title = match app.session() {
        Some(id) => format!(" {} ", turnback::text::escape(id)),
        None => " timeline ".to_owned(),
    };
    let list = if items.is_empty() {
        List::new([ListItem::new(
            "nothing yet: changes appear here as agents make them",
        )])
    } else {
        List::new(items)
    };
    let list = list
        .block(block(app, Pane::Timeline, title))
        .highlight_style(selected());
    f.render_stateful_widget(list, area, &mut app.timeline);
}

fn diff(f: &mut Frame, app: &App, area: Rect) {
    let title = match (app.target(), app.whole_turn) {
        (Some(Target::Entry(seq, _)), false) => format!(" diff of #{seq} (d: its turn) "),
        (Some(Target::Entry(_, turn)), true) => format!(" diff of turn {turn} (d: the entry) "),
        (Some(Target::Turn(n)), _) => format!(" diff of turn {n} "),
        (None, _) => " diff ".to_owned(),
    };
    let p = Paragraph::new(Text::from(app.diff.clone()))
        .block(block(app, Pane::Diff, title))
        .scroll((app.diff_scroll, 0));
    f.render_widget(p, area);
}

fn dialog(f: &mut Frame, app: &App, area: Rect) {
    let Some(d) = &app.dialog else {
        return;
    };
    let warn = if app.color {
        Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
    } else {
        Style::new().add_modifier(Modifier::BOLD)
    };
    let (title, body, ask): (String, &str, Option<String>) = match d {
        Dialog::Help => (" keys ".into(), HELP, None),
        Dialog::Confirm {
            action,
            text,
            refused,
            force,
        } => {
            let ask = if *refused > 0 && !*force {
                format!(
                    "{refused} refused (changed since): f forces them, as --force does; n cancels"
                )
            } else if *force {
                "Restore, overwriting the files changed since? y yes, n no".to_owned()
            } else {
                "Restore? y yes, n no".to_owned()
            };
            (
                format!(" {} (dry run, nothing touched yet) ", action.word()),
                text.as_str(),
                Some(ask),
            )
        }
        Dialog::Message { title, text } => (
            format!(" {title} "),
            text.as_str(),
            Some("any key closes".into()),
        ),
    };
    let mut lines: Vec<Line> = body
        .lines()
        .map(|l| {
            if l.contains("  [") {
                Line::styled(l.to_owned(), warn)
            } else {
                Line::raw(l.to_owned())
            }
        })
        .collect();
    if let Some(a) = ask {
        lines.push(Line::raw(""));
        lines.push(Line::styled(a, Style::new().add_modifier(Modifier::BOLD)));
    }
    let w = area.width.saturating_sub(4).min(100);
    let h = (lines.len() as u16 + 4)
        .min(area.height.saturating_sub(2))
        .max(3);
    let r = Rect {
        x: area.x + (area.width.saturating_sub(w)) / 2,
        y: area.y + (area.height.saturating_sub(h)) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::new().borders(Borders::ALL).title(title)),
        r,
    );
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::ui::state::App;
    use crate::ui::timeline::Row;

    fn app() -> App {
        let mut app = App::new(false);
        let row = |kind, turn, text: &str| Row {
            kind,
            turn,
            text: text.into(),
            find: String::new(),
        };
        app.set_rows(
            vec![
                row(RowKind::Gap, 0, "… 4 older changes evicted by the caps"),
                row(RowKind::Turn(1), 1, "turn 1 \"make it binary\"  just now"),
                row(RowKind::Message, 1, " $ cargo build  just now"),
                row(RowKind::Entry(5), 1, "  #5   logo.png  created, 7 bytes"),
            ],
            None,
        );
        app.set_diff(
            vec![
                Line::raw("logo.png  created"),
                Line::raw("binary file: 0 -> 7 bytes"),
            ],
            true,
        );
        app
    }

    fn text(term: &Terminal<TestBackend>) -> String {
        let buf = term.backend().buffer();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_panes_and_the_keys_fit_80x24_and_160x48() {
        for (w, h) in [(80, 24), (160, 48)] {
            let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
            let mut app = app();
            term.draw(|f| draw(f, &mut app)).unwrap();
            let s = text(&term);
            for shown in [
                "4 older changes evicted",
                "$ cargo build",
                "#5   logo.png",
                "diff of #5",
                "binary file: 0 -> 7 bytes",
                FOOTER,
            ] {
                assert!(s.contains(shown), "{w}x{h} shows {shown:?}:\n{s}");
            }
            app.dialog = Some(Dialog::Help);
            term.draw(|f| draw(f, &mut app)).unwrap();
            assert!(text(&term).contains("these keys"));
        }
    }

    #[test]
    fn a_tiny_terminal_draws_without_a_panic() {
        for (w, h) in [(1, 1), (10, 3), (20, 5), (80, 4)] {
            let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
            let mut app = app();
            app.dialog = Some(Dialog::Help);
            term.draw(|f| draw(f, &mut app)).unwrap();
        }
    }
}
