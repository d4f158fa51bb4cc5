//! Section 7 of the bench: the scan bracket (`Session::begin_scan` +
//! `commit_scan`) around a command that changes 5 files, against a warm
//! shadow-git snapshot of the same tree (`git --git-dir=SHADOW
//! --work-tree=WS add -A`, `write-tree`, `commit-tree`: what Gemini CLI and
//! Cline do before each tool call), on generated git repositories; the
//! first of each; and the peak RSS of `turnback run` at the largest size.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use turnback_store::{Store, Workspace};

use super::{
    Bench, Row, TB, Verdict, capture, fmt_d, fmt_kib, make_tree, median, secs, sync, thousands,
};

/// `git` on the shadow repository `shadow` of the work tree `ws`.
fn shadow_git(shadow: &Path, ws: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg(format!("--git-dir={}", shadow.display()))
        .arg(format!("--work-tree={}", ws.display()))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.invalid")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.invalid")
        .current_dir(ws)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn ok(c: &mut Command) -> String {
    let out = c.output().expect("git runs");
    assert!(out.status.success(), "{c:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// One shadow snapshot: add -A, write-tree, commit-tree (the parent, if
/// any, is the previous snapshot). Returns the new commit.
fn snapshot(shadow: &Path, ws: &Path, parent: Option<&str>) -> String {
    ok(shadow_git(shadow, ws).args(["add", "-A"]));
    let tree = ok(shadow_git(shadow, ws).arg("write-tree"));
    let mut c = shadow_git(shadow, ws);
    c.args(["commit-tree", &tree, "-m", "snapshot"]);
    if let Some(p) = parent {
        c.args(["-p", p]);
    }
    ok(&mut c)
}

/// The 5 files the command changes, with new contents for round `round`.
fn change_five(ws: &Path, n: usize, round: usize) {
    for k in 0..5 {
        let i = (k * n / 5 + 17) % n;
        let p = ws.join(format!(
            "src/m{:02}/d{:03}/f{i:06}.rs",
            i / 10_000,
            (i / 100) % 100
        ));
        fs::write(p, format!("// changed in round {round}, file {k}\n")).unwrap();
    }
}

pub(super) fn scan_bracket(b: &mut Bench) {
    if capture("git", &["--version"]).is_none() {
        b.note("git not installed: section 7 skipped".into());
        return;
    }
    let dir = b.section_dir(7);
    let (sizes, runs): (&[usize], usize) = if b.quick {
        (&[1_000], 3)
    } else {
        (&[10_000, 50_000], 11)
    };
    for &n in sizes {
        let ws_dir = dir.join(format!("ws-{n}"));
        make_tree(&ws_dir, n);
        // A real repository with every file committed, as a project is.
        let git = |args: &[&str]| {
            ok(Command::new("git")
                .args(args)
                .current_dir(&ws_dir)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_AUTHOR_NAME", "b")
                .env("GIT_AUTHOR_EMAIL", "b@example.invalid")
                .env("GIT_COMMITTER_NAME", "b")
                .env("GIT_COMMITTER_EMAIL", "b@example.invalid")
                .stdin(Stdio::null()))
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-qm", "generated"]);
        let shadow = dir.join(format!("shadow-{n}.git"));
        ok(Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&shadow));
        sync();
        // Past the index's clock tick, so that no file is racily clean.
        std::thread::sleep(Duration::from_millis(1100));
        let t = Instant::now();
        let mut parent = snapshot(&shadow, &ws_dir, None);
        let first_shadow = t.elapsed();
        let home = dir.join(format!("home-{n}"));
        let store = Store::new(&home);
        let s = store.session("bench").unwrap();
        let ws = Workspace::open(&ws_dir).unwrap();
        let mut round = 0;
        let opts = turnback_store::ScanOptions::default();
        // Watched (one process: `turnback run`, a library caller) or not
        // (begun and committed by two processes: the hooks).
        let mut bracket = |s: &turnback_store::Session, watched: bool| -> Duration {
            round += 1;
            let message = format!("round-{round}");
            let t = Instant::now();
            let r = if watched {
                let scan = s
                    .begin_watched_scan(&ws, &message, Some("bench"), &opts)
                    .unwrap();
                assert!(scan.is_watched());
                change_five(&ws_dir, n, round);
                s.commit_watched_scan(scan).unwrap()
            } else {
                let id = s.begin_scan(&ws, &message, Some("bench")).unwrap();
                change_five(&ws_dir, n, round);
                s.commit_scan(&id).unwrap()
            };
            // The command's own time (five writes) is tens of microseconds.
            assert_eq!(r.changes.len(), 5, "{r:?}");
            t.elapsed()
        };
        let first_bracket = bracket(&s, true);
        b.row(super::time_row(
            "first scan bracket in a workspace vs shadow git's first snapshot",
            &format!("{} files (git repo)", thousands(n)),
            first_bracket,
            ("first add -A + write-tree + commit-tree", first_shadow),
            Some(1.0),
        ));
        // Warm: one of each first.
        change_five(&ws_dir, n, 1000);
        parent = snapshot(&shadow, &ws_dir, Some(&parent));
        bracket(&s, true);
        bracket(&s, false);
        let (mut tb, mut tu, mut sg) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..runs {
            tb.push(bracket(&s, true));
            let t = Instant::now();
            parent = snapshot(&shadow, &ws_dir, Some(&parent));
            sg.push(t.elapsed());
            change_five(&ws_dir, n, 2000 + r);
            tu.push(bracket(&s, false));
        }
        let (tb, tu, sg) = (median(tb), median(tu), median(sg));
        b.row(super::time_row(
            "scan bracket (begin + commit, watched) around a command changing 5 files vs a warm shadow-git snapshot",
            &format!("{} files (git repo), {runs} runs", thousands(n)),
            tb,
            ("add -A + write-tree + commit-tree", sg),
            Some(1.0),
        ));
        b.row(super::time_row(
            "the same bracket begun and committed by two processes (hooks: not watched, walked twice)",
            &format!("{} files (git repo), {runs} runs", thousands(n)),
            tu,
            ("add -A + write-tree + commit-tree", sg),
            None,
        ));
        if secs(tb) > 0.5 * secs(sg) {
            b.note(format!(
                "{} files: the bracket is {:.2}x shadow git; the aim is half",
                thousands(n),
                secs(tb) / secs(sg)
            ));
        }
        if n == *sizes.last().unwrap() && Path::new("/usr/bin/time").exists() {
            rss_row(b, &dir, &ws_dir, &home, n);
        }
    }
}

/// Peak RSS of `turnback run` changing 5 files in the workspace of `n`.
fn rss_row(b: &mut Bench, dir: &Path, ws: &Path, home: &PathBuf, n: usize) {
    let out = dir.join("rss.txt");
    let script = (0..5)
        .map(|k| {
            let i = (k * n / 5 + 17) % n;
            format!(
                "echo rss > src/m{:02}/d{:03}/f{i:06}.rs",
                i / 10_000,
                (i / 100) % 100
            )
        })
        .collect::<Vec<_>>()
        .join(" && ");
    let measure = |args: &[&str]| -> u64 {
        let status = Command::new("/usr/bin/time")
            .args(["-f", "%M", "-o"])
            .arg(&out)
            .arg(TB)
            .args(args)
            .current_dir(ws)
            .env("TURNBACK_HOME", home)
            .env("TURNBACK_SESSION", "bench-rss")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        fs::read_to_string(&out)
            .unwrap()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .next_back()
            .expect("a peak RSS")
    };
    let base = measure(&["--version"]);
    let kib = measure(&["run", "--", "sh", "-c", &script]);
    b.row(Row {
        what: "peak RSS: `turnback run` changing 5 files".into(),
        param: format!("{} files (git repo)", thousands(n)),
        tb: fmt_kib(kib),
        reference: format!("`turnback --version`: {}", fmt_kib(base)),
        ratio: format!("{:.2}x", kib as f64 / base as f64),
        goal: "—".into(),
        verdict: Verdict::Info,
    });
    let _ = fmt_d;
}
