//! The byte cap bounds the disk (issue 31, item 1): after every change, the
//! bytes on disk of a session's backups are at most its cap plus one backup
//! in flight, with no prune; what an eviction un-names is deleted in the same
//! change, and a writer killed at any point leaves no backup an entry needs
//! missing. Real `turnback write` processes throughout.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::util::{Env, run_with_input, sha256_hex};

/// A byte cap: what `TURNBACK_MAX_BYTES` says, and its bytes.
#[derive(Clone, Copy)]
struct Cap(&'static str, u64);

/// The cap most tests set.
const CAP: Cap = Cap("8M", 8 << 20);
/// The size of each big file written: one backup in flight.
const MIB: usize = 1 << 20;

/// xorshift64*: reproducible bytes that do not compress.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n.div_ceil(8))
            .flat_map(|_| self.next().to_le_bytes())
            .take(n)
            .collect()
    }
}

/// The seed of a randomized test: `TURNBACK_TEST_SEED=0x...` replays the
/// run a failure names.
fn seed() -> u64 {
    std::env::var("TURNBACK_TEST_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

fn blobs_dir(env: &Env, id: &str) -> PathBuf {
    env.home.path().join("sessions").join(id).join("blobs")
}

/// The bytes of every file in session `id`'s `blobs/` (blobs, temporaries,
/// pins, hints, anything), with their names for a failure's message.
fn bytes_on_disk(env: &Env, id: &str) -> (u64, Vec<(String, u64)>) {
    let mut files = Vec::new();
    walk(&blobs_dir(env, id), &mut files);
    (files.iter().map(|(_, n)| n).sum(), files)
}

fn walk(dir: &Path, out: &mut Vec<(String, u64)>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for e in read.flatten() {
        let md = e.metadata().unwrap();
        if md.is_dir() {
            walk(&e.path(), out);
        } else {
            out.push((e.file_name().to_string_lossy().into_owned(), md.len()));
        }
    }
}

/// `turnback write FILE` of `contents` as session `id` under the byte cap
/// `cap`, which must succeed.
fn capped_write(env: &Env, cap: Cap, id: &str, file: &str, msg: &str, contents: &[u8]) {
    let mut c = env.cmd(Some(id));
    c.args(["write", file, "-m", msg])
        .env("TURNBACK_MAX_BYTES", cap.0);
    let out = run_with_input(c, contents);
    assert!(
        out.status.success(),
        "write {file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Session `id`'s backups on disk are within `cap` plus one backup.
fn assert_within(env: &Env, cap: Cap, id: &str, what: &str) {
    let (bytes, files) = bytes_on_disk(env, id);
    let cap = cap.1;
    assert!(
        bytes <= cap + MIB as u64,
        "{what}: {bytes} bytes of backups on disk, over the cap of {cap} plus one backup: {files:?}"
    );
}

/// Every entry of session `id` in effect: its backup verifies and holds the
/// exact old bytes; then each undo, newest first, puts them back, until the
/// gap the caps left (or the beginning).
fn every_entry_undoes(env: &Env, id: &str, seed: u64) {
    let s = env.store().open_session(id).unwrap();
    let entries = s.entries().unwrap();
    assert!(!entries.is_empty(), "seed {seed:#x}: no entry left");
    for e in &entries {
        if let Some(hash) = e.before.sha256.as_deref() {
            let back = s.backup_contents(&e.path, &e.before);
            let bytes = match back {
                Ok(Some(b)) => b,
                other => panic!("seed {seed:#x}: entry {} ({}): {other:?}", e.seq, e.path),
            };
            assert_eq!(sha256_hex(&bytes), hash, "seed {seed:#x}: entry {}", e.seq);
        }
    }
    drop(s);
    for e in entries.iter().rev() {
        let mut c = env.cmd(Some(id));
        c.args(["--json", "undo"]);
        let out = run_with_input(c, b"");
        assert!(
            out.status.success(),
            "seed {seed:#x}: undo of entry {}: {}",
            e.seq,
            String::from_utf8_lossy(&out.stderr)
        );
        let now = std::fs::read(env.path(&e.path)).ok();
        match e.before.sha256.as_deref() {
            Some(h) => assert_eq!(
                now.as_deref().map(sha256_hex).as_deref(),
                Some(h),
                "seed {seed:#x}: undo of entry {}",
                e.seq
            ),
            None => assert!(now.is_none(), "seed {seed:#x}: entry {}", e.seq),
        }
    }
    let mut c = env.cmd(Some(id));
    c.args(["--json", "undo"]);
    let out = run_with_input(c, b"");
    let err: Value = serde_json::from_slice(&out.stderr).expect("one JSON error object");
    let kind = &err["error"]["kind"];
    assert!(
        kind == "evicted" || kind == "nothing-to-undo",
        "seed {seed:#x}: {err}"
    );
}

#[test]
fn a_byte_cap_bounds_the_backups_on_disk_after_every_write_with_no_prune() {
    let env = Env::new();
    let mut rng = Rng(0x5eed_0031);
    std::fs::write(env.path("f.bin"), rng.bytes(MIB)).unwrap();
    for i in 0..40 {
        capped_write(&env, CAP, "s", "f.bin", &format!("m{i}"), &rng.bytes(MIB));
        assert_within(&env, CAP, "s", &format!("after write {i}"));
    }
    // The cap evicted, and what it kept undoes.
    let log = env.cmd(Some("s")).args(["--json", "log"]).output().unwrap();
    let v: Value = serde_json::from_slice(&log.stdout).unwrap();
    assert!(v["evicted"]["entries"].as_u64().unwrap() >= 30, "{v}");
    every_entry_undoes(&env, "s", 0x5eed_0031);
}

#[test]
fn shared_backups_and_the_bases_of_differences_survive_the_collection_an_eviction_makes() {
    // Backups of the same bytes are one blob (a file written back and forth),
    // and a source file's backups are differences from a base: the eviction
    // deletes a blob only when no entry left needs it, directly or as a base.
    let env = Env::new();
    let mut rng = Rng(0x5eed_0032);
    let big: Vec<Vec<u8>> = (0..3).map(|_| rng.bytes(MIB)).collect();
    let text = |v: usize| -> String {
        (0..2000)
            .map(|i| {
                let edit = if i % 97 == 0 { v * 13 } else { 0 };
                format!("    let v{i} = f({});\n", (i * 31 + edit) % 1000)
            })
            .collect()
    };
    std::fs::write(env.path("a.bin"), &big[0]).unwrap();
    std::fs::write(env.path("t.rs"), text(0)).unwrap();
    // Below the three big contents: every write of one evicts.
    let cap = Cap("2M", 2 << 20);
    for i in 0..30 {
        capped_write(&env, cap, "s", "a.bin", &format!("a{i}"), &big[(i + 1) % 3]);
        assert_within(&env, cap, "s", &format!("after write {i} of a.bin"));
        let t = text(i + 1);
        capped_write(&env, cap, "s", "t.rs", &format!("t{i}"), t.as_bytes());
        assert_within(&env, cap, "s", &format!("after write {i} of t.rs"));
    }
    let log = env.cmd(Some("s")).args(["--json", "log"]).output().unwrap();
    let v: Value = serde_json::from_slice(&log.stdout).unwrap();
    assert!(v["evicted"]["entries"].as_u64().unwrap() >= 20, "{v}");
    let (_, files) = bytes_on_disk(&env, "s");
    assert!(
        files.iter().any(|(n, _)| n.starts_with(".base-")),
        "no backup was stored as a difference: {files:?}"
    );
    every_entry_undoes(&env, "s", 0x5eed_0032);
}

#[test]
fn writers_killed_at_random_points_under_the_cap_leave_every_entry_undoable_and_the_disk_bound() {
    let env = Env::new();
    let seed = seed();
    eprintln!("disk cap kills: seed {seed:#x}");
    let mut rng = Rng(seed);
    let inputs = tempfile::tempdir().unwrap();
    // Four big contents (so the same bytes come back: one blob for several
    // entries) and source text edited a little (differences from a base).
    for i in 0..4 {
        std::fs::write(inputs.path().join(format!("big-{i}")), rng.bytes(MIB)).unwrap();
    }
    let text = |v: u64| -> String {
        (0..2000)
            .map(|i| {
                let edit = if i % 97 == 0 { v * 13 } else { 0 };
                format!("    let v{i} = f({});\n", (i * 31 + edit) % 1000)
            })
            .collect()
    };
    for v in 0..3 {
        std::fs::write(inputs.path().join(format!("text-{v}")), text(v + 1)).unwrap();
    }
    std::fs::write(env.path("f.bin"), rng.bytes(MIB)).unwrap();
    std::fs::write(env.path("t.rs"), text(0)).unwrap();
    // At the cap before the kills begin.
    for i in 0..10 {
        capped_write(
            &env,
            CAP,
            "k",
            "f.bin",
            &format!("fill{i}"),
            &rng.bytes(MIB),
        );
    }
    assert_within(&env, CAP, "k", "at the cap");
    // TURNBACK_TEST_KILL_US=N kills at most N µs after the start (60 ms
    // unless told).
    let kill_us = std::env::var("TURNBACK_TEST_KILL_US")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60_000);
    let mut killed = 0;
    for round in 0..30 {
        let (file, input) = match rng.below(4) {
            0 => ("t.rs", format!("text-{}", rng.below(3))),
            _ => ("f.bin", format!("big-{}", rng.below(4))),
        };
        let mut c = env.cmd(Some("k"));
        c.args(["write", file, "-m", &format!("k{round}")])
            .env("TURNBACK_MAX_BYTES", CAP.0)
            .stdin(std::fs::File::open(inputs.path().join(input)).unwrap())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(kill_us)));
        let done = child.try_wait().unwrap();
        if done.is_none() {
            child.kill().unwrap();
            killed += 1;
        }
        let status = child.wait().unwrap();
        if done.is_some() {
            assert!(status.success(), "seed {seed:#x}: round {round}: {status}");
            assert_within(
                &env,
                CAP,
                "k",
                &format!("seed {seed:#x}: after write {round}"),
            );
        }
    }
    eprintln!("disk cap kills: {killed} of 30 killed");
    // The next write settles what the dead left, and the disk is within the
    // bound again.
    capped_write(&env, CAP, "k", "f.bin", "next", &rng.bytes(MIB));
    assert_within(
        &env,
        CAP,
        "k",
        &format!("seed {seed:#x}: after the next write"),
    );
    every_entry_undoes(&env, "k", seed);
}
