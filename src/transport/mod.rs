//! How lines travel between a `CliSession` and its CLI. The session sees only a stream of
//! [`CliOutput`] and an outbound line queue, so transports are swappable.

pub mod stdio;

use crate::protocol::framing::Frame;

/// What a transport delivers to its session, in order.
#[derive(Debug)]
pub enum CliOutput {
    Stdout(Frame),
    /// The protocol stream ended (stdout EOF); every line before it has been delivered.
    StdoutEnd,
    Stderr(Frame),
}

impl actix::Message for CliOutput {
    type Result = ();
}
