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
