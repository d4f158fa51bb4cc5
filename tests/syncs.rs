//! The syncs the binary asks the kernel for, seen with `strace`: a promise of
//! durability that no crash test can check (an aborted process loses nothing
//! the kernel has, synced or not), so the calls themselves are counted. Without
//! `strace` the tests say they skipped.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{self, Env, this_test};

/// True when `strace` runs here; else `test` says it skipped.
fn strace_or_skip(test: &str) -> bool {
    let runs = Command::new("strace")
        .args(["-qq", "-o", "/dev/null", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !runs {
        util::skip(test, "strace is not installed here (or cannot trace)");
    }
    runs
}

/// Runs `turnback write file` in `session` under `strace`, `contents` on
/// standard input; returns how many `fsync`/`fdatasync` calls each path got
/// (the path of the descriptor, as `strace -y` shows it).
fn syncs_of_a_write(
    env: &Env,
    session: &str,
    file: &str,
    contents: &[u8],
) -> BTreeMap<PathBuf, usize> {
    let trace = tempfile::NamedTempFile::new().unwrap();
    let mut c = env.command("strace", Some(session));
    c.args([
        "-f",
        "-qq",
        "-y",
        "-e",
        "trace=fsync,fdatasync",
        "-e",
        "signal=none",
    ])
    .arg("-o")
    .arg(trace.path())
    .arg(util::bin())
    .args(["write", file, "--message", "m"])
    .stdin(Stdio::piped())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(contents).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "turnback write {file} under strace: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut counts = BTreeMap::new();
    for line in std::fs::read_to_string(trace.path()).unwrap().lines() {
        // "1234 fsync(5</home/.../sessions>) = 0", or "... <unfinished ...>"
        // while another thread runs (a failed sync fails the command); an
        // unnamed temporary shows as "<dir/#inode>(deleted)".
        let Some(at) = line.find("sync(") else {
            continue;
        };
        let path = line[at..]
            .split_once('<')
            .and_then(|(_, p)| p.split_once('>'))
            .map(|(p, _)| p)
            .unwrap_or_else(|| panic!("a sync of a descriptor without its path: {line}"));
        *counts.entry(PathBuf::from(path)).or_default() += 1;
    }
    counts
}

fn count(syncs: &BTreeMap<PathBuf, usize>, path: &Path) -> usize {
    syncs.get(path).copied().unwrap_or(0)
}

/// RELIABILITY.md: "a session's first change syncs `sessions/` and the home"
/// (so that a crash cannot lose the new session's directory, and with it
/// every backup in it, after the change was acknowledged). The first write of
/// a session syncs both, and the session's own directory; the next write of
/// that session syncs neither (they did not change); the first write of
/// another session syncs both again.
#[test]
fn a_sessions_first_change_syncs_the_sessions_directory_and_the_home() {
    if !strace_or_skip(this_test!()) {
        return;
    }
    let env = Env::new();
    let home = std::fs::canonicalize(env.home.path()).unwrap();
    let sessions = home.join("sessions");
    std::fs::write(env.path("f.txt"), "old\n").unwrap();

    let first = syncs_of_a_write(&env, "one", "f.txt", b"first\n");
    assert!(home.join("sessions/one/index.json").is_file());
    assert!(
        count(&first, &sessions) >= 1,
        "sessions/ not synced: {first:?}"
    );
    assert!(count(&first, &home) >= 1, "the home not synced: {first:?}");
    assert!(
        count(&first, &sessions.join("one")) >= 1,
        "the new session's directory not synced: {first:?}"
    );

    let second = syncs_of_a_write(&env, "one", "f.txt", b"second\n");
    assert_eq!(
        (count(&second, &sessions), count(&second, &home)),
        (0, 0),
        "only a session's first change syncs them: {second:?}"
    );

    let other = syncs_of_a_write(&env, "two", "g.txt", b"new\n");
    assert!(
        count(&other, &sessions) >= 1,
        "sessions/ not synced: {other:?}"
    );
    assert!(count(&other, &home) >= 1, "the home not synced: {other:?}");
}
