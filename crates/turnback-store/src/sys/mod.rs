//! Platform code, kept apart so the rest of the store reads the same everywhere.
//! Linux is what is tested; other Unixes take the portable fallbacks inside.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;

#[cfg(not(unix))]
compile_error!("turnback-store supports Unix for now; a `windows` module would go here");

mod watch;
pub(crate) use watch::{DirWatch, WatchEvent, try_add as try_watch};

/// Drops `value` on a thread of its own (or here, if none can start): what
/// holds tens of thousands of allocations takes milliseconds to free, which
/// the caller need not wait for.
pub(crate) fn drop_elsewhere<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("turnback-free".into())
        .spawn(move || drop(value));
}
