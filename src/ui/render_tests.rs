//! The screen as the person sees it, reviewed as snapshots
//! (`tests/snapshots/turnback__ui__render_tests__*.snap`) at 80x24 and
//! 160x48: a session made through the store's API in a temporary directory
//! (an evicted gap, a binary file, a shell command's entries, a refusal in
//! the rewind's dry run), drawn with ratatui's test backend as of a fixed
//! "now" (a minute after the last change).

use std::fs;
use std::path::Path;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use time::Duration;
use turnback_store::{Session, SettingSource, Settings, Store, Workspace};

use super::data::{self, History};
use super::diff_lines;
use super::draw::draw;
use super::state::{App, Dialog};
use super::timeline::Action;
use super::timeline::{self, Target};

/// The session and what the screen shows of it.
struct Scene {
    _dir: tempfile::TempDir,
    app: App,
    history: History,
}

fn write(s: &Session, ws: &Workspace, path: &str, bytes: &[u8], message: &str) -> u64 {
    s.write(ws, path, bytes, message).unwrap().seq
}

/// A person's session, then an agent's: two turns, a caps eviction, a
/// binary file, a formatter's command, and a file changed since.
fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let (home, wsdir) = (dir.path().join("home"), dir.path().join("ws"));
    fs::create_dir_all(&wsdir).unwrap();
    let mut settings = Settings::default();
    settings.max_entries.set(6, SettingSource::Default);
    let store = Store::new(&home).with_settings(settings);
    let ws = Workspace::open(&wsdir).unwrap();

    let person = store.session("person-ana-ws-0badcafe").unwrap();
    write(&person, &ws, "TODO.md", b"- ship the ui\n", "edit-1");

    let cursor = store.session("cursor-0123456789abcdef01234567").unwrap();
    cursor
        .begin_turn("rename the config key everywhere it is read", None)
        .unwrap();
    write(
        &cursor,
        &ws,
        "config.toml",
        b"[ui]\nkeys = true\n",
        "call-1",
    );

    let agent = store
        .session("8f14e45f-ceea-467f-a0e6-1b2c3d4e5f60")
        .unwrap();
    agent
        .begin_turn("start a notes file and keep it short", None)
        .unwrap();
    for i in 1..=3 {
        let text = format!("notes, take {i}\n");
        write(&agent, &ws, "notes.txt", text.as_bytes(), "toolu_01");
    }
    agent
        .begin_turn("add a logo, then format the code", None)
        .unwrap();
    let logo = write(
        &agent,
        &ws,
        "logo.png",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
        "toolu_02",
    );
    write(
        &agent,
        &ws,
        "src/main.rs",
        b"fn main() { println!(\"hi\") }\n",
        "toolu_03",
    );
    let scan = agent
        .begin_scan(&ws, "toolu_04", Some("cargo fmt"))
        .unwrap();
    fs::write(
        wsdir.join("src/main.rs"),
        "fn main() {\n    println!(\"hi\")\n}\n",
    )
    .unwrap();
    agent.commit_scan(&scan).unwrap();
    write(&agent, &ws, "README.md", b"# demo\n\nA logo.\n", "toolu_05");
    // Changed since: the rewind's dry run refuses it.
    fs::write(wsdir.join("README.md"), "# demo\n\nEdited by hand.\n").unwrap();

    let entries = agent.entries().unwrap();
    let last = entries.iter().map(|e| e.time).max().unwrap();
    let mut app = App::new(false);
    app.now = last + Duration::minutes(1);
    // Every session's history read, as the view does while idle.
    let mut list = data::rows(store.sessions().unwrap());
    for row in &mut list {
        let h = data::history_of(store.open_session(&row.id).unwrap()).unwrap();
        data::fill(row, &h);
    }
    app.set_sessions(list);
    let history = data::history_of(agent).unwrap();
    let rows = timeline::rows(
        &history.entries,
        &history.turns,
        history.gap.as_ref(),
        app.now,
    );
    app.set_rows(rows, Some(Target::Entry(logo, 2)));
    let target = app.target().unwrap();
    let (files, not_kept) = data::diff(&history, target, false).unwrap();
    app.set_diff(diff_lines::lines(&files, &not_kept, false), true);
    Scene {
        _dir: dir,
        app,
        history,
    }
}

/// The screen's text, one line a row.
fn screen(app: &mut App, width: u16, height: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    let buf = term.backend().buffer();
    (0..height)
        .map(|y| {
            let row: String = (0..width).map(|x| buf[(x, y)].symbol()).collect();
            row.trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Snapshot `name` of `text`; the temporary directory's path masked.
fn snap(name: &str, text: &str, dir: &Path) {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../../tests/snapshots");
    s.set_omit_expression(true);
    s.add_filter(&regex_literal(&dir.display().to_string()), "[TMP]");
    s.bind(|| insta::assert_snapshot!(name, text));
}

fn regex_literal(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

#[test]
fn the_timeline_with_a_gap_a_binary_file_and_a_command() {
    let mut sc = scene();
    let dir = sc._dir.path().to_owned();
    for (w, h) in [(80, 24), (160, 48)] {
        let text = screen(&mut sc.app, w, h);
        snap(&format!("timeline_{w}x{h}"), &text, &dir);
    }
}

#[test]
fn a_rewind_dry_run_shows_the_file_changed_since_as_refused() {
    let mut sc = scene();
    let dir = sc._dir.path().to_owned();
    let action = Action::Rewind(Target::Turn(2));
    let what = data::action_name(action, &sc.history.entries);
    let r = data::restore(&sc.history.session, action, false, true).unwrap();
    let refused = r.files.iter().filter(|f| f.status.is_conflict()).count();
    assert_eq!(refused, 1, "README.md was changed since");
    sc.app.dialog = Some(Dialog::Confirm {
        action,
        force: false,
        text: data::report_text(&what, &r),
        refused,
    });
    for (w, h) in [(80, 24), (160, 48)] {
        let text = screen(&mut sc.app, w, h);
        snap(&format!("refusal_{w}x{h}"), &text, &dir);
    }
}

#[test]
fn the_agent_is_named_where_turnback_made_the_session_id() {
    for (id, agent) in [
        ("person-ana-ws-0badcafe", Some("person")),
        ("cursor-0123456789abcdef01234567", Some("cursor")),
        ("copilot-cli-0123456789abcdef01234567", Some("copilot-cli")),
        ("8f14e45f-ceea-467f-a0e6-1b2c3d4e5f60", None),
        ("mine-0123456789abcdef0123456", None),
        ("Work-0123456789abcdef01234567", None),
    ] {
        assert_eq!(data::agent(id), agent, "{id}");
    }
}
