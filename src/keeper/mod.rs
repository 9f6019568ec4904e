//! Keepers: each session's CLI runs under a small process of its own (`conduit keeper`, the
//! pattern of containerd's shim and Podman's conmon), so the CLI outlives the service.
//!
//! A keeper starts the CLI (in its cgroup before its program runs), holds its stdin, stdout
//! and stderr, reaps it (and the orphans of its tools: it is their subreaper) and listens on a
//! Unix socket in the data folder (`keepers/<session id>.sock`, the service's user only). The
//! service connects and attaches; everything the CLI writes reaches it numbered, and the keeper
//! keeps each line until the service says it is stored. While no service is attached the
//! keeper goes on reading, up to its bound in bytes, then stops reading, so the CLI waits rather
//! than anything be dropped. A restarted service attaches again, says what it has stored, and
//! gets the rest: every line once, in order.
//!
//! A guardian (a forked child of the keeper) kills the CLI's cgroup if the keeper dies without
//! being released (see [`guardian`]), so a keeper killed with SIGKILL takes its CLI with it.
//!
//! - [`wire`]: the frames both sides speak; [`spec`]: what a keeper is asked to start;
//! - [`start`], [`event_loop`], [`buffer`], [`guardian`]: the keeper process;
//! - [`link`]: the service's side.

pub mod buffer;
pub mod event_loop;
pub mod guardian;
pub mod link;
pub mod spec;
pub mod start;
pub mod wire;
