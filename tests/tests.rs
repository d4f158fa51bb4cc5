//! Integration tests: the store through its public API and the `turnback` binary
//! as real processes. Each module is one concern.

// Shared helpers: temporary homes and workspaces, the built binary, tree digests.
mod util;
