//! Pruning by itself: at most once a day, after a change, in the process that
//! made it, never waiting for anyone.
//!
//! `<home>/pruned-at`'s modification time says when the store last pruned by
//! itself. [`Store::prune_if_due`], which a caller runs once its change is
//! done and its locks released (the command line does after every command
//! that changes a session, `turnback serve` after every request that does,
//! and an agent's hook after a tool's change), checks it (one `stat`); when
//! it is a day old, the process *tries* `<home>/prune.lock`
//! (another prune running: skip), looks at the stamp again under it, prunes
//! with the settings in force (never the session in use), and stamps. A home
//! without a stamp gets one and is not pruned: the clock starts with the first
//! change a build that prunes by itself makes, so an upgrade never deletes at
//! its first command.

use std::time::{Duration, SystemTime};

use crate::layout::{PRUNE_LOCK, PRUNE_STAMP};
use crate::lock;
use crate::retention::Retention;
use crate::store::Store;

/// How often a store prunes by itself, at most.
pub const AUTO_PRUNE_INTERVAL: Duration = Duration::from_secs(24 * 3600);

impl Store {
    /// After a change to session `in_use`, with no lock of the store held:
    /// prunes with the store's settings if the last prune by itself is
    /// [`AUTO_PRUNE_INTERVAL`] old and no prune is running (it never waits);
    /// what it did, or `None`. One `stat` when it is not due, so a long-lived
    /// caller may call it after every change. An error is ignored (the next
    /// day's change tries again), since the change it follows has succeeded. Never removes `in_use`, nor a session a live
    /// process has open.
    pub fn prune_if_due(&self, in_use: Option<&str>) -> Option<crate::PruneReport> {
        let stamp = self.home().join(PRUNE_STAMP);
        if !self.stamp_is_due(&stamp) {
            return None;
        }
        let _guard = lock::try_acquire(&self.home().join(PRUNE_LOCK))
            .ok()
            .flatten()?;
        // Another process may have pruned between the look and the lock.
        if !self.stamp_is_due(&stamp) {
            return None;
        }
        let report = self.prune_unlocked(&Retention::of(self.settings()), in_use, false);
        touch(&stamp);
        report.ok()
    }

    /// True when `stamp` is old enough; a missing one is made (now) instead.
    fn stamp_is_due(&self, stamp: &std::path::Path) -> bool {
        match std::fs::symlink_metadata(stamp) {
            Ok(md) if md.is_file() => md
                .modified()
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age >= AUTO_PRUNE_INTERVAL),
            Ok(_) => false,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                touch(stamp);
                false
            }
            Err(_) => false,
        }
    }
}

/// Sets `stamp`'s modification time to now, making it (0600, not through a
/// link) when missing. Best effort: a stamp that cannot be written means
/// another prune tomorrow, no harm.
fn touch(stamp: &std::path::Path) {
    if let Ok(f) = crate::sys::store_file_options()
        .write(true)
        .create(true)
        .truncate(false)
        .open(stamp)
    {
        let _ = f.set_modified(SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::Workspace;

    fn old(path: &std::path::Path, days: u64) {
        let t = SystemTime::now() - Duration::from_secs(days * 24 * 3600);
        if let Ok(f) = std::fs::File::open(path) {
            f.set_modified(t).unwrap();
        }
    }

    fn age_session(dir: &std::path::Path, days: u64) {
        for name in ["index.json", "journal.jsonl"] {
            old(&dir.join(name), days);
        }
    }

    #[test]
    fn prunes_once_a_day_after_a_change_and_never_the_session_in_use() {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        let settings = crate::Settings {
            keep_sessions: crate::Setting {
                value: 0,
                source: crate::SettingSource::Default,
            },
            ..crate::Settings::default()
        };
        let store = || Store::new(home.path()).with_settings(settings.clone());
        // A change, then the check its caller runs after it.
        let change = |id: &str, contents: &[u8]| {
            let store = store();
            let s = store.session(id).unwrap();
            s.write(&ws, id, contents, "m").unwrap();
            drop(s);
            store.prune_if_due(Some(id))
        };
        for id in ["a", "b"] {
            assert!(change(id, b"x").is_none());
        }
        let stamp = home.path().join(PRUNE_STAMP);
        assert!(stamp.is_file(), "the first change starts the clock");
        for id in ["a", "b"] {
            age_session(&home.path().join("sessions").join(id), 100);
        }
        // Not a day yet: nothing goes.
        assert!(change("a", b"y").is_none());
        age_session(&home.path().join("sessions/a"), 100);
        assert_eq!(store().session_ids().unwrap(), ["a", "b"]);
        // A day later: the next change prunes, but not its own session.
        old(&stamp, 2);
        let pruned = change("a", b"z").expect("due");
        assert_eq!(pruned.removed.len(), 1);
        assert_eq!(store().session_ids().unwrap(), ["a"]);
        let since = SystemTime::now().duration_since(stamp.metadata().unwrap().modified().unwrap());
        assert!(since.unwrap() < Duration::from_secs(60), "stamped");
    }

    #[test]
    fn skips_while_another_prune_holds_the_lock() {
        let home = tempfile::tempdir().unwrap();
        let wsdir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(wsdir.path()).unwrap();
        let store = Store::new(home.path());
        store
            .session("a")
            .unwrap()
            .write(&ws, "a", &b"x"[..], "m")
            .unwrap();
        assert!(store.prune_if_due(Some("a")).is_none(), "starts the clock");
        let stamp = home.path().join(PRUNE_STAMP);
        old(&stamp, 2);
        let held = lock::try_acquire(&home.path().join(PRUNE_LOCK))
            .unwrap()
            .unwrap();
        let fresh = Store::new(home.path());
        assert!(fresh.prune_if_due(Some("a")).is_none(), "busy: skipped");
        drop(held);
        let fresh = Store::new(home.path());
        assert!(fresh.prune_if_due(Some("a")).is_some(), "free: pruned");
        assert!(fresh.prune_if_due(Some("a")).is_none(), "stamped: not due");
        // The same handle a day later (a long-lived server's): due again.
        old(&stamp, 2);
        assert!(fresh.prune_if_due(Some("a")).is_some(), "a day later");
    }
}
