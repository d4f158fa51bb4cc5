//! Crash points: with the `failpoints` feature (tests only), a process can be
//! made to abort right after any step that writes to disk, so that tests can
//! check what a crash there leaves. `FAILPOINTS="index-renamed=return"` aborts at
//! the first pass through that point; `"index-renamed=1*off->return"` at the
//! second. A `sleep` action does not abort: `"prune-listed=sleep(800)"` holds
//! the process there for 800 ms, `"journal-synced=sleep(30000)"` for 30 s
//! (`fail::eval` sleeps and returns nothing), so that a test can act on a
//! process held right after that step (run another process in the window,
//! kill it, watch what it wrote: `tests/processes.rs`). Without the feature
//! every point compiles to nothing.

/// Every crash point, in the order a protected write passes them.
pub const CRASH_POINTS: &[&str] = &[
    "blob-written",
    // The blob's name has been handed to the writer, which may now record its
    // entry while the blob is synced.
    "blob-hashed",
    "blob-synced",
    "blob-renamed",
    "blob-dir-synced",
    // A write knows its backup's name and has not recorded its entry yet (the
    // backup goes on being stored meanwhile).
    "backup-known",
    "ws-mkdir",
    "ws-mkdir-synced",
    "ws-tmp-written",
    "ws-tmp-synced",
    "journal-written",
    "journal-synced",
    // Writing the snapshot: a session's first change, a compaction, and the
    // revert marker (`reverting.json`) go through the same durable replace.
    "index-tmp-written",
    "index-tmp-synced",
    "index-renamed",
    "index-dir-synced",
    "ws-tmp-linked",
    "ws-renamed",
    "ws-dir-synced",
    "ws-removed",
    "ws-removed-synced",
    // A directory a scan saw made is removed (an undo), not yet synced.
    "ws-rmdir",
    // Prune has decided which sessions to remove and removed none yet.
    "prune-listed",
    // A scan bracket's record is durable (`scan/`): the command may run.
    "scan-begun",
    // A scan's commit has every before-contents in the session's blobs and has
    // recorded nothing yet.
    "scan-backed-up",
    // A scan's commit has recorded its entries and not yet closed its record.
    "scan-recorded",
];

/// Aborts the process here if the environment says so.
#[cfg(feature = "failpoints")]
pub(crate) fn point(name: &'static str) {
    debug_assert!(CRASH_POINTS.contains(&name), "unlisted crash point {name}");
    static SETUP: std::sync::Once = std::sync::Once::new();
    SETUP.call_once(|| std::mem::forget(fail::FailScenario::setup()));
    if fail::eval(name, |_| ()).is_some() {
        // No unwinding, no destructors: as close to a power cut as a process
        // can get without taking the kernel's page cache with it.
        std::process::abort();
    }
}

/// Without the `failpoints` feature, nothing.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn point(_name: &'static str) {}
