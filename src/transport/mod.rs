//! How lines travel between a `CliSession` and its CLI. The session sees only a stream of
//! [`CliOutput`] and an outbound line queue, so transports are swappable: [`stdio`] (the
//! child's pipes, the default) or [`websocket`] (a bridge the CLI connects to with `--sdk-url`).

pub mod stdio;
pub mod websocket;

use crate::protocol::framing::Frame;

/// A line for the CLI. `written` hears once the transport has written it (to the CLI's stdin
/// or its socket), which is when a user turn counts as delivered.
#[derive(Debug)]
pub struct OutLine {
    pub line: String,
    pub written: Option<tokio::sync::oneshot::Sender<()>>,
}

impl OutLine {
    pub fn new(line: String) -> OutLine {
        OutLine { line, written: None }
    }
}

/// What a transport delivers to its session, in order.
#[derive(Debug)]
pub enum CliOutput {
    Stdout(Frame),
    /// The protocol stream ended (stdout EOF); every line before it has been delivered.
    StdoutEnd,
    Stderr(Frame),
    /// stderr ended.
    StderrEnd,
    /// The transport could not reach the CLI (a bridge the CLI never connected to): why.
    Failed(String),
}

impl actix::Message for CliOutput {
    type Result = ();
}
