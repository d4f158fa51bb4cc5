//! What a git repository already holds of a workspace: its index, read by
//! `git` itself (`ls-files -s --debug`, with `GIT_OPTIONAL_LOCKS=0`, which
//! takes no lock and never rewrites `.git/index`), and the objects it names
//! (`cat-file --batch --filters`, as the work tree holds them after
//! end-of-line and other filters). A subprocess rather than a git library:
//! `gix` costs minutes of compile time and hundreds of crates for two
//! read-only questions `git` answers in milliseconds, and it is `git`'s own
//! reading of its index (and its filters) that must agree with the work tree.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::blobs::Blobs;
use crate::error::{Error, Result};

pub(crate) use super::git_index::GitIndex;
use super::git_index::{Entries, IndexEntry};

fn git(root: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(root)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    c
}

fn failed(root: &Path, what: &str, why: impl std::fmt::Display) -> Error {
    Error::ScanFailed {
        path: root.to_owned(),
        reason: format!("git {what}: {why}"),
    }
}

/// The index file of the repository `root` is in: `.git` in `root` or a
/// directory above, a directory (its `index`) or, for a worktree or a
/// submodule, a file naming the git directory. Only stat'ed, for git's own
/// racy-entry rule: nothing in `.git` is read but that pointer file.
pub(crate) fn index_file(root: &Path) -> Option<PathBuf> {
    for dir in root.ancestors() {
        let dot = dir.join(".git");
        let Ok(md) = std::fs::symlink_metadata(&dot) else {
            continue;
        };
        if md.is_dir() {
            return Some(dot.join("index"));
        }
        let text = std::fs::read_to_string(&dot).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        return Some(dir.join(target).join("index"));
    }
    None
}

/// True when the work tree `root` is in has a `.gitmodules`: it may have
/// submodules, whose directories a walk must not enter (false outside git).
pub(crate) fn may_have_submodules(root: &Path) -> bool {
    root.ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .is_some_and(|top| std::fs::symlink_metadata(top.join(".gitmodules")).is_ok())
}

/// Reads the index of `root`'s repository (see [`GitIndex`]): one `git`
/// process, which fails outside a work tree.
pub(crate) fn read_index(root: &Path) -> Result<Option<GitIndex>> {
    let Ok(out) = git(root).args(["ls-files", "-s", "--debug", "-z"]).output() else {
        // No git here: the baseline holds everything.
        return Ok(None);
    };
    if !out.status.success() {
        return Ok(None);
    }
    let stamp = match index_file(root).and_then(|f| std::fs::metadata(f).ok()) {
        Some(md) => {
            let st = super::walk::Stat::of(&md);
            [st.times[0], st.times[1]]
        }
        // No index file found: nothing git recorded is trusted as clean.
        None => [i64::MIN, 0],
    };
    let (entries, submodules) =
        parse_ls_files(&out.stdout).map_err(|why| failed(root, "ls-files", why))?;
    Ok(Some(GitIndex::new(entries, submodules, stamp)))
}

type Parsed = (Entries, Vec<String>);

/// The stat fields of `ls-files --debug` that [`IndexEntry`] keeps.
const STAT_FIELDS: [&str; 4] = ["mtime", "ctime", "size", "ino"];

/// `<mode> <oid> <stage>\t<path>\0` then five lines of stat data, per entry.
fn parse_ls_files(out: &[u8]) -> std::result::Result<Parsed, String> {
    // About 150 bytes of output per entry.
    let mut entries = Entries::default();
    let mut submodules = Vec::new();
    let mut rest = out;
    while !rest.is_empty() {
        let nul = rest.iter().position(|b| *b == 0).ok_or("no NUL")?;
        let head = &rest[..nul];
        rest = &rest[nul + 1..];
        // The four fields a stat is compared by, borrowed from the output
        // (no allocation per field: ten thousand entries are read per scan).
        let mut stat: [Option<&str>; 4] = [None; 4];
        for _ in 0..5 {
            let nl = rest.iter().position(|b| *b == b'\n').ok_or("short stat")?;
            let line = std::str::from_utf8(&rest[..nl]).map_err(|e| e.to_string())?;
            rest = &rest[nl + 1..];
            for field in line.split('\t') {
                if let Some((k, v)) = field.trim().split_once(": ")
                    && let Some(at) = STAT_FIELDS.iter().position(|f| *f == k)
                {
                    stat[at] = Some(v);
                }
            }
        }
        let tab = head.iter().position(|b| *b == b'\t').ok_or("no tab")?;
        let meta = std::str::from_utf8(&head[..tab]).map_err(|e| e.to_string())?;
        // A tracked name that is not UTF-8 is left to the walk, which reports
        // it (`walk::Found::unnamed`): it must not fail every scan.
        let Ok(path) = std::str::from_utf8(&head[tab + 1..]) else {
            continue;
        };
        let mut m = meta.split(' ');
        let (Some(mode), Some(oid), Some(stage)) = (m.next(), m.next(), m.next()) else {
            return Err(format!("bad entry {meta:?}"));
        };
        let mode = u32::from_str_radix(mode, 8).map_err(|e| e.to_string())?;
        if mode == 0o160_000 {
            submodules.push(path.to_owned());
            continue;
        }
        if stage != "0" {
            // A conflict being merged: no one blob is the file.
            continue;
        }
        let [mtime, ctime, size, ino] = stat;
        let time = |v: Option<&str>| -> [i64; 2] {
            let v = v.unwrap_or("0:0");
            let (s, ns) = v.split_once(':').unwrap_or((v, "0"));
            [s.parse().unwrap_or(-1), ns.parse().unwrap_or(-1)]
        };
        let num = |v: Option<&str>| v.and_then(|v| v.parse::<u64>().ok()).unwrap_or(u64::MAX);
        let (m, c) = (time(mtime), time(ctime));
        entries.push(
            path,
            &IndexEntry {
                oid,
                mode,
                size: num(size),
                times: [m[0], m[1], c[0], c[1]],
                ino: num(ino),
            },
        );
    }
    Ok((entries, submodules))
}

/// Copies the objects `wanted` (oid, path) into `blobs` as the work tree
/// would hold them; each result is `(sha256, size)`, or `None` for an
/// object git no longer has. The caller syncs the blobs' directory after.
pub(crate) fn copy_objects(
    root: &Path,
    blobs: &Blobs,
    wanted: &[(String, String)],
) -> Result<Vec<Option<(String, u64)>>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = git(root)
        .args(["cat-file", "--batch", "--filters"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| failed(root, "cat-file", e))?;
    let mut input = String::new();
    for (oid, path) in wanted {
        input.push_str(&format!("{oid} {path}\n"));
    }
    let mut stdin = child.stdin.take().expect("piped");
    // Written from a thread: git answers while it reads, and a full pipe
    // each way would stall both.
    let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut results = Vec::with_capacity(wanted.len());
    let source = root.join(".git");
    for _ in wanted {
        let mut header = String::new();
        out.read_line(&mut header)
            .map_err(|e| failed(root, "cat-file", e))?;
        let parts: Vec<&str> = header.split_whitespace().collect();
        match parts.as_slice() {
            [_, "blob", size] => {
                let size: u64 = size
                    .parse()
                    .map_err(|_| failed(root, "cat-file", &header))?;
                let mut body = (&mut out).take(size);
                let got = blobs.store_reader_batched(&mut body, &source)?;
                let mut nl = [0u8; 1];
                out.read_exact(&mut nl)
                    .map_err(|e| failed(root, "cat-file", e))?;
                results.push(Some(got));
            }
            [_, "missing"] | [_, "ambiguous"] => results.push(None),
            _ => return Err(failed(root, "cat-file", header.trim())),
        }
    }
    let _ = feeder.join();
    let _ = child.wait();
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ls_files_debug_output() {
        let out = b"100644 78981922613b2afb6025042ff6bd878ac1994e85 0\ta b\0  ctime: 5:6\n  mtime: 3:4\n  dev: 1\tino: 7\n  uid: 0\tgid: 0\n  size: 2\tflags: 0\n160000 61780798228d17af2d34fce4cfbdf35556832472 0\tsub\0  ctime: 0:0\n  mtime: 0:0\n  dev: 0\tino: 0\n  uid: 0\tgid: 0\n  size: 0\tflags: 0\n";
        let (e, subs) = parse_ls_files(out).unwrap();
        let g = GitIndex::new(e, subs.clone(), [0, 0]);
        let a = g.get("a b").unwrap();
        assert_eq!(a.times, [3, 4, 5, 6]);
        assert_eq!((a.ino, a.size, a.mode), (7, 2, 0o100644));
        assert_eq!(subs, ["sub"]);
    }
}
