//! The OS sandbox everything a project starts runs in, under the permission rules (defense in
//! depth): a session is a guest, not a member of the household. bubblewrap for the file system
//! and the process tree, a network namespace with pasta for the network, Landlock for the port
//! limit of `strict` mode, and an environment built from an allow-list whatever the mode.
//!
//! - [`support`]: what this machine offers, probed once at startup (health reports it).
//! - [`fence`]: what one process may touch, and the command line that fences it in; [`view`]
//!   decides its file system from what it needs.
//! - [`network`]: its network namespace, and `conduit sandbox-net`, which attaches pasta to it.
//! - [`environment`]: the variables every child gets (sandboxed or not).
//! - [`channel`]: the session channel, the one way a sandboxed session talks to Conduit.
//! - [`enclosure`]: a process's cgroup, sandbox and environment, prepared before it starts.
//! - [`netlock`]: `conduit sandbox-exec`, the port limit applied inside a `strict` sandbox.
//!
//! bubblewrap was chosen over Landlock alone for the file system because Landlock can only
//! grant access to whole trees: it cannot hide `~/.ssh` inside a readable home, which a mount
//! namespace does with one empty folder on top. It is also what Claude Code's own sandbox uses
//! on Linux, and Debian packages it.

pub mod channel;
mod disk;
pub mod enclosure;
pub mod environment;
pub mod fence;
pub mod netlock;
pub mod network;
pub mod support;
pub mod view;

pub use fence::{Fence, FenceError};
pub use support::SandboxSupport;
