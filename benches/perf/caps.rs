//! Section 7 (issue 16): what the per-session caps cost a change, and the
//! store after a year of daily sessions under retention.

use super::*;

/// A write through a session at its cap of 2,000 entries (each change evicts
/// the oldest) against one through a session of 10; then a year replayed.
pub(crate) fn caps(b: &mut Bench) {
    let dir = b.section_dir(7);
    let home = dir.join("home");
    let wsdir = dir.join("ws");
    fs::create_dir_all(&wsdir).unwrap();
    let store = Store::new(&home);
    let ws = Workspace::open(&wsdir).unwrap();
    let id = WsId::of(&ws);
    let cap = store.settings().max_entries.value;
    synth_index(&home, "at-cap", &id, cap, "src");
    synth_index(&home, "small", &id, 10, "src");
    sync();
    let big = store.session("at-cap").unwrap();
    let small = store.session("small").unwrap();
    let runs = if b.quick { 5 } else { 21 };
    let (mut tb, mut reference) = (Vec::new(), Vec::new());
    for i in 0..=runs {
        let seed = 7_000 + 2 * i as u64;
        let r = checkpoint_commit(&small, &ws, &wsdir, "cap-ref.txt", seed);
        let t = checkpoint_commit(&big, &ws, &wsdir, "cap-big.txt", seed + 1);
        // The first change rewrites the synthesized format 3 snapshot.
        if i > 0 {
            reference.push(r);
            tb.push(t);
        }
    }
    let evicted = big.evicted().unwrap().map_or(0, |g| g.entries);
    b.note(format!(
        "at the cap: {} entries kept, {evicted} evicted by the runs",
        thousands(big.entries().unwrap().len())
    ));
    b.row(time_row(
        "checkpoint+commit at the entry cap (each evicts one)",
        &format!("{} entries, {runs} runs", thousands(cap)),
        median(tb),
        ("10 entries", median(reference)),
        None,
    ));
    drop((big, small));
    year(b, &dir);
}

/// One session a day for a year (a month with `--quick`), each a day older
/// than the next, with the store's daily prune after each: the store holds
/// what retention keeps (the 20 newest sessions, or 30 days), not the year.
fn year(b: &mut Bench, dir: &Path) {
    let home = dir.join("year-home");
    let wsdir = dir.join("year-ws");
    fs::create_dir_all(&wsdir).unwrap();
    let (days, writes) = if b.quick { (31, 4) } else { (365, 12) };
    let files = 40;
    let mut contents: Vec<Vec<u8>> = (0..files)
        .map(|f| {
            let mut v = vec![0u8; 2 * KIB + (f * 1237) % (48 * KIB)];
            fill(&mut v, f as u64);
            v
        })
        .collect();
    for (f, c) in contents.iter().enumerate() {
        fs::write(wsdir.join(format!("f{f:02}.rs")), c).unwrap();
    }
    let ws = Workspace::open(&wsdir).unwrap();
    let mut raw: u64 = 0;
    let t = Instant::now();
    for day in 0..days {
        let store = Store::new(&home);
        let s = store.session(&format!("day-{day:03}")).unwrap();
        for w in 0..writes {
            let f = (day * 7 + w * 3) % files;
            raw += contents[f].len() as u64;
            // A small edit: a few bytes in the middle change.
            let at = contents[f].len() / 2;
            contents[f][at] = contents[f][at].wrapping_add(1);
            s.write(
                &ws,
                format!("f{f:02}.rs"),
                &contents[f][..],
                &format!("m{w}"),
            )
            .unwrap();
        }
        drop(s);
        // The session's last change, `days - day` days ago; the stamp a day old.
        let ago = |d: usize| std::time::SystemTime::now() - Duration::from_secs(d as u64 * 86_400);
        let sdir = home.join(format!("sessions/day-{day:03}"));
        for name in ["index.json", "journal.jsonl"] {
            if let Ok(f) = fs::File::open(sdir.join(name)) {
                f.set_modified(ago(days - day)).unwrap();
            }
        }
        if let Ok(f) = fs::File::open(home.join("pruned-at")) {
            f.set_modified(ago(2)).unwrap();
        }
        store.prune_if_due(None);
    }
    let elapsed = t.elapsed();
    let on_disk = du(&home);
    let sessions = fs::read_dir(home.join("sessions")).map_or(0, |r| r.count());
    b.note(format!(
        "a {days}-day replay ({} writes of 2-50 KiB files, small edits) took {}; {sessions} sessions kept",
        thousands(days * writes),
        fmt_d(elapsed)
    ));
    b.row(Row {
        what: format!("store after {days} days (a session a day, daily prune)"),
        param: format!(
            "{} writes, {sessions} sessions kept",
            thousands(days * writes)
        ),
        tb: format!("{:.1} MB on disk", on_disk as f64 / 1e6),
        reference: format!("backed up: {:.1} MB", raw as f64 / 1e6),
        ratio: format!("{:.2}x", on_disk as f64 / raw as f64),
        goal: "—".into(),
        verdict: Verdict::Info,
    });
}

/// Bytes of the regular files under `dir`.
fn du(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(read) = fs::read_dir(dir) {
        for e in read.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => total += du(&e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}
