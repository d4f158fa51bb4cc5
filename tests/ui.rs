//! `turnback ui` in a real pseudo-terminal (util-linux's `script`, 80x24):
//! the screen read back through a small emulator of the few escape
//! sequences the view writes, keys typed while it runs, files checked on
//! disk. Every test ends the processes it starts.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::{self, Env};

const ROWS: usize = 24;
const COLS: usize = 80;

/// `turnback ui` running under a pseudo-terminal.
struct Ui {
    script: Child,
    keys: ChildStdin,
    out: Arc<Mutex<Vec<u8>>>,
}

impl Ui {
    /// Starts `turnback ui ARGS` in `env`'s workspace on an 80x24 terminal.
    fn start(env: &Env, args: &str) -> Ui {
        Ui::start_with(env, &format!("{args} --color never"), None)
    }

    /// [`Ui::start`] with `args` as given (no `--color never`) and `NO_COLOR`
    /// set to `no_color` if given.
    fn start_with(env: &Env, args: &str, no_color: Option<&str>) -> Ui {
        Ui::start_env(env, args, no_color, &[])
    }

    /// [`Ui::start_with`] with the variables `vars` set too.
    fn start_env(env: &Env, args: &str, no_color: Option<&str>, vars: &[(&str, &str)]) -> Ui {
        let line = format!(
            "stty rows {ROWS} cols {COLS}; exec {} ui {args}",
            util::bin().display()
        );
        let mut cmd = env.command("script", None);
        cmd.env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        cmd.envs(vars.iter().copied());
        let mut script = cmd
            .args(["-qec", &line, "/dev/null"])
            .env("TERM", "xterm-256color")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start script");
        let keys = script.stdin.take().unwrap();
        let mut stdout = script.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Ui { script, keys, out }
    }

    fn bytes(&self) -> Vec<u8> {
        self.out.lock().unwrap().clone()
    }

    /// The screen as the terminal shows it now.
    fn screen(&self) -> String {
        screen(&self.bytes())
    }

    /// Waits (10 s at most) until the screen shows `text`; returns it.
    fn wait_for(&self, text: &str) -> String {
        self.wait_until(text, |s| s.contains(text))
    }

    fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            if ok(&self.screen()) {
                // Read once the frame is written whole: nothing new for 100 ms.
                let s = self.settled();
                if ok(&s) {
                    return s;
                }
            }
            let s = self.screen();
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the screen never showed {what:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The screen once nothing more has come for 100 ms.
    fn settled(&self) -> String {
        let mut seen = self.bytes().len();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = self.bytes().len();
            if now == seen {
                return self.screen();
            }
            seen = now;
        }
    }

    fn press(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).unwrap();
        self.keys.flush().unwrap();
        // One key at a time, as a person types.
        std::thread::sleep(Duration::from_millis(150));
    }

    /// Waits (10 s at most) for the view to end; its exit code.
    fn exit_code(&mut self) -> i32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.script.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the view did not end:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The pid of `turnback ui` (the child of `script`).
    fn view_pid(&self) -> u32 {
        let id = self.script.id();
        let start = Instant::now();
        loop {
            let children = std::fs::read_to_string(format!("/proc/{id}/task/{id}/children"))
                .unwrap_or_default();
            if let Some(pid) = children.split_whitespace().next() {
                return pid.parse().unwrap();
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no view under script"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        if self.script.try_wait().ok().flatten().is_none() {
            if let Ok(children) =
                std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.script.id()))
            {
                for pid in children.split_whitespace() {
                    let _ = std::process::Command::new("kill")
                        .args(["-9", pid])
                        .status();
                }
            }
            let _ = self.script.kill();
        }
        let _ = self.script.wait();
    }
}

/// What a terminal of [`ROWS`] x [`COLS`] shows after `bytes`: printable
/// characters at the cursor, cursor positioning, clearing; every other
/// sequence (colour, modes) ignored.
fn screen(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut grid = vec![vec![' '; COLS]; ROWS];
    let (mut r, mut c) = (0usize, 0usize);
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\x1b' => match chars.next() {
                Some('[') => {
                    let mut params = String::new();
                    let mut end = ' ';
                    for x in chars.by_ref() {
                        if ('@'..='~').contains(&x) {
                            end = x;
                            break;
                        }
                        params.push(x);
                    }
                    let n: Vec<usize> = params.split(';').map(|p| p.parse().unwrap_or(1)).collect();
                    match end {
                        'H' | 'f' => {
                            r = n.first().copied().unwrap_or(1).clamp(1, ROWS) - 1;
                            c = n.get(1).copied().unwrap_or(1).clamp(1, COLS) - 1;
                        }
                        'J' if params == "2" || params == "3" => {
                            grid = vec![vec![' '; COLS]; ROWS];
                        }
                        'J' => {
                            for row in grid.iter_mut().skip(r + 1) {
                                row.fill(' ');
                            }
                            grid[r][c.min(COLS)..].fill(' ');
                        }
                        'K' => grid[r][c.min(COLS)..].fill(' '),
                        'G' => c = n[0].clamp(1, COLS) - 1,
                        _ => {}
                    }
                }
                Some(']') => {
                    for x in chars.by_ref() {
                        if x == '\x07' {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => c = 0,
            '\n' => r = (r + 1).min(ROWS - 1),
            '\x08' => c = c.saturating_sub(1),
            ch if ch >= ' ' => {
                if c < COLS {
                    grid[r][c] = ch;
                }
                c += 1;
            }
            _ => {}
        }
    }
    grid.iter()
        .map(|row| row.iter().collect::<String>().trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Two sessions: `older` wrote `old.txt`; `agent`, in two turns, wrote
/// `a.txt` and then changed it.
fn two_sessions() -> Env {
    let env = Env::new();
    let ws = env.workspace();
    let older = env.session("older");
    older.write(&ws, "old.txt", &b"old\n"[..], "o1").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let s = env.session("agent");
    s.begin_turn("write a", Some(0)).unwrap();
    s.write(&ws, "a.txt", &b"first line\n"[..], "call-1")
        .unwrap();
    s.begin_turn("change a", Some(2)).unwrap();
    s.write(&ws, "a.txt", &b"first line\nsecond line\n"[..], "call-2")
        .unwrap();
    env
}

#[test]
fn the_view_opens_on_the_newest_sessions_newest_entry() {
    let env = two_sessions();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("+second line");
    // The other sessions' files are counted once the view is up.
    let s = ui.wait_for("1 entry, 1 file  older");
    assert!(s.contains("diff of #2"), "{s}");
    assert!(s.contains("sessions (2)"), "{s}");
    assert!(s.contains("agent") && s.contains("older"), "{s}");
    // Its counts, then its first prompt (its id is cut at 80 columns).
    let agent = s
        .find("2 entries, 1 file  \"write a\"")
        .expect("agent listed");
    let older = s.find("1 entry, 1 file  older").expect("older listed");
    assert!(agent < older, "newest first:\n{s}");
    assert!(s.contains("turn 2 \"change a\""), "{s}");
    assert!(s.contains("#2   a.txt  changed, 11 -> 23 bytes"), "{s}");
    assert!(s.contains("q quit"), "the footer lists the keys:\n{s}");
    ui.press("?");
    ui.wait_for("these keys");
    ui.press("x");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn u_then_y_rewinds_and_n_restores_nothing() {
    let env = two_sessions();
    let before = util::tree_digest(env.ws.path());
    let mut ui = Ui::start(&env, "");
    ui.wait_for("+second line");
    ui.press("u");
    let s = ui.wait_for("Restore? y yes, n no");
    assert!(s.contains("rewind to before #2"), "{s}");
    assert!(s.contains("a.txt: restore (11 bytes)"), "{s}");
    ui.press("n");
    ui.wait_until("the dialog closed", |s| !s.contains("Restore?"));
    assert_eq!(
        util::tree_digest(env.ws.path()),
        before,
        "n restores nothing"
    );
    ui.press("u");
    ui.wait_for("Restore? y yes, n no");
    ui.press("y");
    let s = ui.wait_for("a.txt: restored (11 bytes)");
    assert!(
        s.contains("rewind to before #2 in session agent: 1 file"),
        "{s}"
    );
    assert_eq!(util::read(env.path("a.txt")), b"first line\n");
    // Closed, the timeline shows the new state: #2 is gone, #1 selected.
    ui.press("x");
    let s = ui.wait_for("diff of #1");
    assert!(!s.contains("#2   a.txt"), "{s}");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn a_refused_file_is_marked_and_f_forces_it() {
    let env = two_sessions();
    std::fs::write(env.path("a.txt"), "changed by hand\n").unwrap();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    ui.press("u");
    let s = ui.wait_for("f forces them");
    assert!(s.contains("[changed since]"), "{s}");
    ui.press("y");
    ui.wait_for("refused");
    assert_eq!(util::read(env.path("a.txt")), b"changed by hand\n");
    ui.press("x");
    ui.press("u");
    ui.wait_for("f forces them");
    ui.press("f");
    ui.wait_for("overwriting the files changed since? y yes");
    ui.press("y");
    ui.wait_for("[overwrote changes made since]");
    assert_eq!(util::read(env.path("a.txt")), b"first line\n");
    ui.press("x");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn what_another_process_writes_appears_while_it_is_open() {
    let env = two_sessions();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    let out = util::run_ok(
        {
            let mut c = env.cmd(Some("agent"));
            c.args(["write", "later.txt", "--message", "call-3"]);
            c
        },
        b"written later\n",
        "a write from another process",
    );
    assert!(out.status.success());
    let s = ui.wait_for("later.txt  created");
    // The selection stayed where it was.
    assert!(s.contains("diff of #2"), "{s}");
    assert!(s.contains("3 entries, 2 files"), "{s}");
    ui.press("j");
    ui.wait_for("+written later");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn q_and_sigterm_put_the_terminal_back() {
    let env = two_sessions();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    let shown = String::from_utf8_lossy(&ui.bytes()).into_owned();
    assert!(
        shown.contains("\x1b[?1049h"),
        "entered the alternate screen"
    );
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let shown = String::from_utf8_lossy(&ui.bytes()).into_owned();
    let left = shown
        .rfind("\x1b[?1049l")
        .expect("left the alternate screen");
    assert!(left > shown.rfind("\x1b[?1049h").unwrap());
    assert!(
        shown[left..].contains("\x1b[?25h"),
        "the cursor shown again"
    );

    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    let pid = ui.view_pid();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_eq!(ui.exit_code(), 0);
    let shown = String::from_utf8_lossy(&ui.bytes()).into_owned();
    assert!(
        shown.rfind("\x1b[?1049l") > shown.rfind("\x1b[?1049h"),
        "SIGTERM left the alternate screen"
    );
}

/// A view whose terminal went away (the emulator closed: here `script`
/// killed) ends by itself, instead of running on at full speed.
#[test]
fn a_view_whose_terminal_hangs_up_ends() {
    let env = two_sessions();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    let pid = ui.view_pid();
    ui.script.kill().unwrap();
    let _ = ui.script.wait();
    let start = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // A zombie has ended; its parent (init here) reaps it.
        if stat.split_whitespace().nth(2) == Some("Z") {
            break;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
            panic!("the view {pid} ran on for 10 s after its terminal hung up");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn not_on_a_terminal_it_names_turnback_log() {
    let env = two_sessions();
    let out = util::run_with_input(
        {
            let mut c = env.cmd(None);
            c.arg("ui");
            c
        },
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(err.contains("`turnback log`"), "{err}");
}

#[test]
fn a_resize_draws_the_view_at_the_new_size() {
    let env = two_sessions();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    // The terminal made 70x20: the kernel tells the view (SIGWINCH).
    let tty = std::fs::read_link(format!("/proc/{}/fd/0", ui.view_pid())).unwrap();
    let stty = std::process::Command::new("stty")
        .arg("-F")
        .arg(&tty)
        .args(["rows", "20", "cols", "70"])
        .status()
        .unwrap();
    assert!(stty.success());
    let s = ui.wait_until("the view at 70x20", |s| {
        let lines: Vec<&str> = s.lines().collect();
        lines.get(19).is_some_and(|l| l.contains("q quit"))
            && lines[0].chars().count() == 70
            && lines[18].starts_with('└')
    });
    assert!(s.contains("diff of #2"), "the selection kept:\n{s}");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn the_diff_is_coloured_unless_no_color_is_set() {
    let env = two_sessions();
    // crossterm's green and red (`38;5;2`, `38;5;1`) as the view writes them.
    let coloured = |b: &[u8]| {
        let t = String::from_utf8_lossy(b);
        t.contains("\x1b[38;5;2") || t.contains("\x1b[38;5;1")
    };
    let mut ui = Ui::start_with(&env, "", None);
    ui.wait_for("+second line");
    assert!(coloured(&ui.bytes()), "colour on a terminal");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    let mut ui = Ui::start_with(&env, "", Some("1"));
    ui.wait_for("+second line");
    assert!(!coloured(&ui.bytes()), "no colour with NO_COLOR");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

/// `two_sessions`, and then `agent` created `b.txt` (#3).
fn three_entries() -> Env {
    let env = two_sessions();
    let s = env.session("agent");
    s.write(&env.workspace(), "b.txt", &b"bee\n"[..], "call-3")
        .unwrap();
    env
}

#[test]
fn r_reverts_only_the_selected_entrys_file() {
    let env = three_entries();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #3");
    ui.press("k");
    ui.wait_for("diff of #2");
    ui.press("r");
    let s = ui.wait_for("Restore? y yes, n no");
    assert!(s.contains("revert (dry run"), "{s}");
    assert!(s.contains("revert a.txt to before #2"), "{s}");
    assert!(!s.contains("b.txt: "), "b.txt is not in the plan:\n{s}");
    ui.press("y");
    ui.wait_for("a.txt: restored (11 bytes)");
    assert_eq!(util::read(env.path("a.txt")), b"first line\n");
    assert_eq!(util::read(env.path("b.txt")), b"bee\n", "left alone");
    ui.press("x");
    let s = ui.wait_for("#3   b.txt");
    assert!(!s.contains("#2   a.txt"), "{s}");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn capital_r_redoes_what_u_took_back() {
    let env = two_sessions();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("+second line");
    ui.press("u");
    ui.wait_for("Restore? y yes, n no");
    ui.press("y");
    ui.wait_for("a.txt: restored (11 bytes)");
    ui.press("x");
    ui.wait_for("diff of #1");
    ui.press("R");
    let s = ui.wait_for("Restore? y yes, n no");
    assert!(s.contains("redo (dry run"), "{s}");
    assert_eq!(
        util::read(env.path("a.txt")),
        b"first line\n",
        "the dry run touched nothing"
    );
    ui.press("y");
    ui.wait_for("restored (23 bytes)");
    assert_eq!(util::read(env.path("a.txt")), b"first line\nsecond line\n");
    ui.press("x");
    ui.wait_for("#2   a.txt");
    // Nothing left to redo: said, nothing asked.
    ui.press("R");
    ui.wait_for("any key closes");
    ui.press("x");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn enter_closes_a_turn_and_slash_finds_a_file_in_it() {
    let env = three_entries();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #3");
    // Up to turn 2 (over #2), which Enter closes.
    ui.press("k");
    ui.press("k");
    ui.wait_for("diff of turn 2");
    ui.press("\r");
    ui.wait_until("turn 2's entries hidden", |s| {
        !s.contains("#2   a.txt") && !s.contains("#3   b.txt")
    });
    ui.press("/");
    ui.press("B.T");
    let s = ui.wait_for("/B.T  (Enter");
    assert!(!s.contains("#3   b.txt"), "{s}");
    ui.press("\r");
    let s = ui.wait_for("diff of #3");
    assert!(s.contains("#2   a.txt"), "its turn opened:\n{s}");
    assert!(s.contains("+bee"), "{s}");
    ui.press("/");
    ui.press("change");
    ui.press("\r");
    ui.wait_for("diff of turn 2");
    // From turn 2, "a.txt" is #2 next; n goes round to #1.
    ui.press("/");
    ui.press("a.txt");
    ui.press("\r");
    ui.wait_for("diff of #2");
    ui.press("n");
    ui.wait_for("diff of #1");
    ui.press("/");
    ui.press("zz");
    ui.press("\x1b");
    let s = ui.wait_until("the search cancelled", |s| s.contains("q quit"));
    assert!(s.contains("diff of #1"), "{s}");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn a_prompt_that_changed_nothing_appears_while_it_is_open() {
    let env = two_sessions();
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    let out = util::run_ok(
        {
            let mut c = env.cmd(Some("agent"));
            c.args(["turn", "--prompt", "just asking"]);
            c
        },
        b"",
        "a turn from another process",
    );
    assert!(out.status.success());
    let s = ui.wait_for("turn 3 \"just asking\"");
    assert!(s.contains("diff of #2"), "the selection stayed:\n{s}");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
}

#[test]
fn a_restore_runs_the_daily_prune_and_a_look_does_not() {
    let env = two_sessions();
    // A home without a stamp gets one at its first prune by itself.
    let stamp = env.home.path().join("pruned-at");
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    ui.press("u");
    ui.wait_for("Restore? y yes, n no");
    ui.press("n");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    assert!(!stamp.exists(), "nothing restored: no prune");
    let mut ui = Ui::start(&env, "");
    ui.wait_for("diff of #2");
    ui.press("u");
    ui.wait_for("Restore? y yes, n no");
    ui.press("y");
    ui.wait_for("a.txt: restored");
    ui.press("x");
    ui.press("q");
    assert_eq!(ui.exit_code(), 0);
    assert!(
        stamp.exists(),
        "after a restore the daily prune ran, as after undo"
    );
}

/// `TURNBACK_TEST_UI_PANIC` (honoured by debug builds only, as the tests
/// run) makes `!` panic inside the view.
#[test]
fn a_panic_puts_the_terminal_back() {
    let env = two_sessions();
    let mut ui = Ui::start_env(
        &env,
        "--color never",
        None,
        &[("TURNBACK_TEST_UI_PANIC", "1")],
    );
    ui.wait_for("diff of #2");
    ui.press("!");
    assert_eq!(ui.exit_code(), 101, "a panic's exit code");
    let shown = String::from_utf8_lossy(&ui.bytes()).into_owned();
    let entered = shown
        .rfind("\x1b[?1049h")
        .expect("entered the alternate screen");
    // The hook leaves first (unwinding's drop then leaves again, harmlessly).
    let left = entered
        + shown[entered..]
            .find("\x1b[?1049l")
            .expect("the panic left the alternate screen");
    assert!(
        shown[left..].contains("\x1b[?25h"),
        "the cursor shown again"
    );
    let message = shown
        .find("a panic asked for by a test")
        .expect("the panic's message");
    assert!(
        message > left,
        "the message printed on the normal screen, after leaving"
    );
}
