//! The agent sessions a server keeps open between requests, so that a write
//! does not open its session again, and lets go of once idle: a session
//! some live process has open is never pruned (`docs/FORMAT.md`,
//! "Retention"), and a server that has served hundreds of conversations
//! must not hold every one of them for as long as it runs.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use turnback_store::Session;

/// How long a session a server opened stays open after its last request.
pub(crate) const IDLE: Duration = Duration::from_secs(3600);

/// Open sessions by id, with when each was last asked for.
#[derive(Default)]
pub(crate) struct OpenSessions {
    open: Mutex<HashMap<String, (Session, Instant)>>,
}

impl OpenSessions {
    /// Session `id`, kept open since an earlier request or opened now with
    /// `open`; sessions idle for [`IDLE`] at `now` are let go first (a
    /// checkpoint the server holds keeps its own handle, and its session
    /// open, until it ends).
    pub(crate) fn get_or_open<E>(
        &self,
        id: &str,
        now: Instant,
        open: impl FnOnce() -> Result<Session, E>,
    ) -> Result<Session, E> {
        let mut sessions = self.open.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|k, (_, used)| k == id || now.saturating_duration_since(*used) < IDLE);
        if let Some((session, used)) = sessions.get_mut(id) {
            *used = now;
            return Ok(session.clone());
        }
        let session = open()?;
        sessions.insert(id.to_owned(), (session.clone(), now));
        Ok(session)
    }

    /// The ids of the sessions open now, sorted (for tests).
    #[cfg(test)]
    fn ids(&self) -> Vec<String> {
        let sessions = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let mut ids: Vec<String> = sessions.keys().cloned().collect();
        ids.sort();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_idle_for_an_hour_is_let_go_and_opened_again_when_asked() {
        let home = tempfile::tempdir().unwrap();
        let store = turnback_store::Store::new(home.path());
        let open = OpenSessions::default();
        let t0 = Instant::now();
        let opened = std::cell::Cell::new(0);
        let get = |id: &str, at: Instant| {
            open.get_or_open(id, at, || {
                opened.set(opened.get() + 1);
                store.session(id)
            })
            .unwrap()
        };
        get("a", t0);
        get("b", t0 + Duration::from_secs(60));
        get("a", t0 + IDLE - Duration::from_secs(1));
        assert_eq!(opened.get(), 2, "a kept session was opened again");
        // An hour after b's only request, a request of a lets b go.
        get("a", t0 + Duration::from_secs(60) + IDLE);
        assert_eq!(open.ids(), ["a"]);
        get("b", t0 + Duration::from_secs(61) + IDLE);
        assert_eq!(opened.get(), 3, "b was not opened again");
        assert_eq!(open.ids(), ["a", "b"]);
    }
}
