//! Terminals, process side: a shell started in a PTY in a workspace, fenced in like a CLI (its
//! own cgroup, the project's sandbox, the marker), the scrollback that repaints a client that
//! connects, and which shell a terminal gets.
//!
//! - [`spawn`] starts the shell on a fresh PTY and hands back the master's halves.
//! - [`scrollback`] is the bounded ring of recent output.
//! - [`shell`] finds the default shell and checks one a client names.
//!
//! The PTY crate is `pty-process` (tozt): it is tokio-native (the master is registered as an
//! `AsyncFd`, so reads and writes are readiness-driven on the runtime that owns the terminal,
//! with no thread per terminal and nothing that blocks the executor), its `Command` makes the
//! child a session leader with the PTY as its controlling terminal, and it is small (rustix
//! underneath). wezterm's `portable-pty` was the alternative: cross-platform, but its reader is
//! a blocking `Read` that needs a thread per terminal, which Linux-only Conduit does not need.

pub mod scrollback;
pub mod shell;
pub mod spawn;
