//! The CLI supervisor: how Conduit runs an agent CLI, once for every kind of conversation.
//!
//! - [`process`]: the actor that owns one CLI process from handshake to its typed end. Start
//!   reading here.
//! - [`adapter`]: what differs between agent kinds (handshake, line decoding, requests and
//!   answers); [`claude`] is Claude Code's stream-json, [`codex`] Codex's app-server and
//!   [`acp`] the Agent Client Protocol (Gemini CLI, configured agents), both over [`jsonrpc`].
//! - [`catalog`]: what each kind starts with (program, arguments, environment, state, what it
//!   supports) and a fresh adapter per process.
//! - [`conversation`]: the hooks a conversation (a session's chat, an agent's one turn) gets.
//! - [`controls`]: Conduit's requests waiting for the CLI's answers.
//! - [`spawn`]: starting the process in its process group, cgroup and transport.

pub mod acp;
pub mod adapter;
pub mod catalog;
pub mod claude;
pub mod cli;
pub mod codex;
pub mod controls;
pub mod conversation;
pub mod jsonrpc;
pub mod process;
pub mod spawn;
