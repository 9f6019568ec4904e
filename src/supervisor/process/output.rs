//! What a CLI process says and how it ends: its output streams, read line by line, and its
//! exit, after which its output is drained for at most [`DRAIN`].

use actix::prelude::*;

use super::{CliProcess, Exited, Life, DRAIN, STDERR_TAIL_BYTES};
use crate::keeper::wire::Stream;
use crate::protocol::framing::Frame;
use crate::supervisor::conversation::{Conversation, Ctx};
use crate::transport::{stdio, CliOutput};

impl<C: Conversation> StreamHandler<CliOutput> for CliProcess<C> {
    fn handle(&mut self, item: CliOutput, ctx: &mut Ctx<C>) {
        if self.cli.life == Life::Detached {
            // Left to the keeper: the next service hears it.
            return;
        }
        match item {
            CliOutput::Stdout(Frame::Line(line)) => self.on_stdout(line, None, ctx),
            CliOutput::Numbered { seq, stream: Stream::Stdout, frame: Frame::Line(line) } => {
                self.on_stdout(line, Some(seq), ctx)
            }
            CliOutput::Numbered { seq, stream: Stream::Stdout, frame: Frame::Oversized { len } } => {
                tracing::warn!(id = %self.cli.id, len, "the CLI wrote a line over the cap; it was dropped");
                self.numbered(seq, |act| C::on_oversized(act, len));
            }
            CliOutput::Numbered { seq, stream: Stream::Stderr, frame } => {
                self.numbered(seq, |act| act.on_stderr(frame));
            }
            CliOutput::Seen { seq, frame: Frame::Line(line) } => self.recheck(seq, line, ctx),
            CliOutput::Seen { .. } => {}
            CliOutput::KeeperLost => {
                self.cli.keeper_lost = true;
                if !matches!(self.cli.life, Life::Draining(_)) {
                    self.fail("its keeper ended without the CLI (it was killed)".to_string(), ctx);
                }
                // Nothing more can come: the keeper held the CLI's streams.
                self.cli.outputs_open = 0;
                self.maybe_finish(ctx);
            }
            CliOutput::Stdout(Frame::Oversized { len }) => {
                tracing::warn!(id = %self.cli.id, len, "the CLI wrote a line over the cap; it was dropped");
                C::on_oversized(self, len);
            }
            CliOutput::Stderr(frame) => self.on_stderr(frame),
            CliOutput::StdoutEnd | CliOutput::StderrEnd => {
                self.cli.outputs_open = self.cli.outputs_open.saturating_sub(1);
                self.maybe_finish(ctx);
            }
            // After the process exited, its exit status and stderr tell the story better.
            CliOutput::Failed(reason) if !matches!(self.cli.life, Life::Draining(_)) => self.fail(reason, ctx),
            CliOutput::Failed(_) => {}
        }
    }

    /// Streams end on their own schedule; the actor ends when the process does.
    fn finished(&mut self, _ctx: &mut Ctx<C>) {}
}

impl<C: Conversation> CliProcess<C> {
    fn on_stderr(&mut self, frame: Frame) {
        self.cli.touch();
        let line = match frame {
            Frame::Line(line) => line,
            Frame::Oversized { len } => format!("[{len} bytes of stderr dropped]"),
        };
        stdio::keep_tail(&mut self.cli.stderr_tail, &line, STDERR_TAIL_BYTES);
        C::on_stderr(self, line);
    }

    /// Handles a numbered line that asks nothing, then tells the keeper it was stored.
    fn numbered(&mut self, seq: u64, handle: impl FnOnce(&mut Self)) {
        self.cli.line_seq = Some(seq);
        handle(self);
        self.cli.line_seq = None;
        if let Some(keeper) = &self.cli.keeper {
            keeper.recorded(seq);
        }
    }
}

impl<C: Conversation> Handler<Exited> for CliProcess<C> {
    type Result = ();

    fn handle(&mut self, msg: Exited, ctx: &mut Ctx<C>) {
        if self.cli.life == Life::Detached {
            return;
        }
        tracing::info!(id = %self.cli.id, pid = self.cli.pid, how = %msg.0.how, "CLI process ended");
        self.cli.life = Life::Draining(msg.0);
        self.cli.stdin = None;
        if let Some(bridge) = &self.cli.bridge {
            bridge.cli_exited();
        }
        ctx.run_later(DRAIN, |act, ctx| {
            act.cli.outputs_open = 0;
            act.maybe_finish(ctx);
        });
        self.maybe_finish(ctx);
    }
}
