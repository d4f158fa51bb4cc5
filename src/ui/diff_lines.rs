//! A diff as the diff pane draws it: each file's header, its unified diff
//! with added and removed lines coloured (or, without colour, only marked by
//! their `+`/`-`), a binary or too-big file summarised in one line.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use turnback::text::escape;
use turnback_store::{DiffBody, FileDiff};

/// The most lines of one diff the pane holds: a huge diff is cut, with a
/// line saying so (`turnback diff` shows it whole).
const MAX_LINES: usize = 2000;

/// The lines of `files`' diffs (and of the files whose contents after the
/// change are not kept), styled when `color`.
pub(crate) fn lines(files: &[FileDiff], not_kept: &[String], color: bool) -> Vec<Line<'static>> {
    let paint = |c: Color| {
        if color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    };
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut out: Vec<Line<'static>> = Vec::new();
    for d in files {
        let what = match &d.body {
            _ if d.is_created() => "created".to_owned(),
            _ if d.is_deleted() => "deleted".to_owned(),
            DiffBody::Text {
                insertions,
                deletions,
                ..
            } => format!("+{insertions} -{deletions}"),
            DiffBody::Same => "no difference".to_owned(),
            DiffBody::Binary => "binary".to_owned(),
            DiffBody::TooBig => "too big to compare".to_owned(),
        };
        out.push(Line::styled(format!("{}  {what}", escape(&d.path)), bold));
        match &d.body {
            DiffBody::Same => {}
            DiffBody::Text { unified, .. } => {
                for l in unified.lines() {
                    if l.starts_with("+++") || l.starts_with("---") {
                        continue;
                    }
                    let style = if l.starts_with('+') {
                        paint(Color::Green)
                    } else if l.starts_with('-') {
                        paint(Color::Red)
                    } else if l.starts_with("@@") {
                        paint(Color::Cyan)
                    } else {
                        Style::new()
                    };
                    out.push(Line::styled(escape(l).into_owned(), style));
                }
            }
            DiffBody::Binary => out.push(Line::raw(format!(
                "binary file: {} -> {} bytes",
                d.old.size, d.new.size
            ))),
            DiffBody::TooBig => out.push(Line::raw(format!(
                "too big to compare: {} -> {} bytes",
                d.old.size, d.new.size
            ))),
        }
        out.push(Line::raw(""));
    }
    for f in not_kept {
        out.push(Line::styled(
            format!("{}: what the change left is not kept any more", escape(f)),
            paint(Color::Yellow),
        ));
    }
    if files.is_empty() && not_kept.is_empty() {
        out.push(Line::raw("(no change to show)"));
    }
    if out.len() > MAX_LINES {
        let cut = out.len() - MAX_LINES;
        out.truncate(MAX_LINES);
        out.push(Line::styled(
            format!("… {cut} more lines: `turnback diff` shows them all"),
            paint(Color::Yellow),
        ));
    }
    out
}
