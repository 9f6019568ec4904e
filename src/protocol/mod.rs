//! The Claude Code CLI's stream-json protocol: line framing, messages from the CLI (typed where
//! Conduit acts on them, raw otherwise), and the lines Conduit writes to it. No I/O here.
//! `../shared/docs/claude-cli-protocol.md` is the reference for every shape.

pub mod framing;
pub mod incoming;
pub mod outgoing;
pub mod requests;
