//! The OS sandbox every CLI runs in, under the permission rules (defense in depth): bubblewrap
//! for the file system and the process tree, plus Landlock for the network in `strict` mode.
//!
//! - [`support`]: what this machine offers, probed once at startup (health reports it).
//! - [`fence`]: what one CLI may touch, and the command line that fences it in.
//! - [`enclosure`]: a process's cgroup and sandbox, prepared before it starts.
//! - [`netlock`]: `conduit sandbox-exec`, the network limit applied inside a `strict` sandbox.
//!
//! bubblewrap was chosen over Landlock alone for the file system because Landlock can only
//! grant access to whole trees: it cannot hide `~/.ssh` inside a readable home, which a mount
//! namespace does with one empty folder on top. It is also what Claude Code's own sandbox uses
//! on Linux, and Debian packages it.

pub mod enclosure;
pub mod fence;
pub mod netlock;
pub mod support;

pub use fence::{Fence, FenceError};
pub use support::SandboxSupport;
