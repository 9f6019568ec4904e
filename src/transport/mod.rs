//! How lines travel between a `CliSession` and its CLI. The session sees only a stream of
//! [`CliOutput`] and an outbound line queue, so transports are swappable: [`stdio`] (the
//! child's pipes, the default) or [`websocket`] (a bridge the CLI connects to with `--sdk-url`).

pub mod stdio;
pub mod websocket;

use crate::keeper::wire::Stream;
use crate::protocol::framing::Frame;

/// A line for the CLI. `written` hears once the transport has written it (to the CLI's stdin
/// or its socket), which is when a user turn counts as delivered.
#[derive(Debug)]
pub struct OutLine {
    pub line: String,
    pub written: Option<tokio::sync::oneshot::Sender<()>>,
    /// The number of the CLI's line whose request this answers (a keeper then forgets it).
    pub unpin: Option<u64>,
}

impl OutLine {
    pub fn new(line: String) -> OutLine {
        OutLine { line, written: None, unpin: None }
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
    /// A line from a keeper, numbered (its `cli_seq` when stored).
    Numbered {
        seq: u64,
        stream: Stream,
        frame: Frame,
    },
    /// A stdout line a keeper sends again to a service that attached: stored already, and its
    /// request (if it is one) perhaps not answered. Read for its request only.
    Seen {
        seq: u64,
        frame: Frame,
    },
    /// The keeper went without telling the CLI's end (killed): its guardian ended the CLI.
    KeeperLost,
}

impl actix::Message for CliOutput {
    type Result = ();
}
