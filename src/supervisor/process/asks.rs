//! What a CLI says on stdout and what it asks: each line decoded once, handed to the
//! conversation, then acted on (answers matched to Conduit's requests, the CLI's requests
//! decided and answered). With a keeper, a request is pinned until its answer goes back, so a
//! service that dies first leaves it to the next ([`CliProcess::recheck`]).

use actix::prelude::*;

use super::{CliProcess, Life};
use crate::actors::permissions::Evaluate;
use crate::domain::decision::{ToolCall, Verdict};
use crate::supervisor::adapter::{Ask, Decoded, Handshake, Read};
use crate::supervisor::controls::{ControlError, Pending};
use crate::supervisor::conversation::{Conversation, Ctx};
use crate::transport::OutLine;

impl<C: Conversation> CliProcess<C> {
    pub(super) fn on_stdout(&mut self, line: String, seq: Option<u64>, ctx: &mut Ctx<C>) {
        self.cli.touch();
        let Read { decoded, msg, events } = self.cli.adapter.decode(&line);
        let subtype = msg.message_subtype.clone();
        self.cli.line_seq = seq;
        C::on_line(self, line, msg, events, ctx);
        self.cli.line_seq = None;
        if let (Some(keeper), Some(seq)) = (&self.cli.keeper, seq) {
            keeper.recorded(seq);
        }
        self.act_on(decoded, seq, subtype, ctx);
    }

    /// A line a keeper sends again to this newly attached service: stored before, and perhaps
    /// a request the service before this one never answered. Only a request is acted on.
    pub(super) fn recheck(&mut self, seq: u64, line: String, ctx: &mut Ctx<C>) {
        let Read { decoded, msg, .. } = self.cli.adapter.decode(&line);
        if matches!(decoded, Decoded::Ask { .. }) {
            tracing::info!(id = %self.cli.id, seq, "answering a request the CLI made while the service was away");
            self.act_on(decoded, Some(seq), msg.message_subtype, ctx);
        }
    }

    fn act_on(&mut self, decoded: Decoded, seq: Option<u64>, subtype: Option<String>, ctx: &mut Ctx<C>) {
        if let (Decoded::Ask { request_id, .. }, Some(seq), Some(keeper)) = (&decoded, seq, &self.cli.keeper) {
            // Kept until answered: a service that dies before answering leaves it to the next.
            keeper.pin(seq);
            self.cli.pinned.insert(request_id.clone(), seq);
        }
        match decoded {
            Decoded::Event => {}
            Decoded::Answer { request_id, outcome } => self.on_answer(&request_id, outcome, ctx),
            Decoded::Ask { request_id, ask: Ask::Answered(answer) } => self.answer(&request_id, answer, subtype),
            Decoded::Ask { request_id, ask: Ask::ToolCalls(calls) } => self.decide(request_id, calls, subtype, ctx),
            Decoded::Withdrawn { request_id } => {
                if let (Some(seq), Some(keeper)) = (self.cli.pinned.remove(&request_id), &self.cli.keeper) {
                    keeper.unpin(seq);
                }
                if self.cli.asks.remove(&request_id) {
                    tracing::debug!(id = %self.cli.id, %request_id, "the CLI withdrew a request; no answer will be sent");
                }
            }
        }
    }

    fn on_answer(&mut self, request_id: &str, outcome: Result<serde_json::Value, String>, ctx: &mut Ctx<C>) {
        match self.cli.controls.take(request_id) {
            Some(Pending::Handshake) if self.cli.life != Life::Handshaking => {}
            Some(Pending::Handshake) => {
                let next_id = self.cli.controls.next_id();
                match self.cli.adapter.handshake_answered(&outcome, &next_id) {
                    Handshake::Ready => {
                        self.cli.life = Life::Ready;
                        C::ready(self, ctx);
                    }
                    Handshake::Next(mut lines) => {
                        let Some(request) = lines.pop() else {
                            return self.fail("the handshake asked for an empty step".to_string(), ctx);
                        };
                        for line in lines {
                            if let Err(e) = self.cli.write(OutLine::new(line.clone())) {
                                return self.fail(format!("could not continue the handshake: {e}"), ctx);
                            }
                            C::sent(self, &line, "control_request", None);
                        }
                        self.request(next_id, request, "handshake", Pending::Handshake, ctx);
                    }
                    Handshake::Failed(reason) => self.fail(reason, ctx),
                }
            }
            Some(Pending::Command { what, reply }) => {
                let _ = reply.send(outcome.map_err(|error| ControlError::Refused { what, error }));
            }
            None => tracing::debug!(id = %self.cli.id, %request_id, "answer to an unknown request"),
        }
    }

    fn answer(&mut self, request_id: &str, answer: String, subtype: Option<String>) {
        let unpin = self.cli.pinned.remove(request_id);
        match self.cli.write(OutLine { line: answer.clone(), written: None, unpin }) {
            Ok(()) => C::sent(self, &answer, "control_response", subtype),
            Err(e) => tracing::warn!(id = %self.cli.id, %request_id, error = %e, "could not answer the CLI"),
        }
    }

    /// Tool calls: the permission engine decides each, then the CLI hears (unless it withdrew)
    /// the first denial, or the allow.
    fn decide(&mut self, request_id: String, calls: Vec<ToolCall>, subtype: Option<String>, ctx: &mut Ctx<C>) {
        let (project_id, session_id) = self.conv.scope();
        let engine = self.cli.peers.engine.clone();
        let asked: Vec<_> = calls
            .iter()
            .map(|call| {
                engine.send(Evaluate {
                    project_id: project_id.clone(),
                    session_id: session_id.clone(),
                    call: call.clone(),
                })
            })
            .collect();
        let decided = futures_util::future::join_all(asked);
        self.cli.asks.insert(request_id.clone());
        ctx.spawn(decided.into_actor(self).map(move |verdicts, act, _ctx| {
            // The first denial decides; an engine that could not answer denies (the adapter
            // hears `None`), and so does a request with no call to decide.
            let mut verdict: Option<Verdict> = None;
            let mut unanswered = false;
            for answered in verdicts {
                match answered {
                    Ok(v) => {
                        C::decided(act, &v);
                        if verdict.as_ref().is_none_or(|kept| kept.allow) {
                            verdict = Some(v);
                        }
                    }
                    Err(_) => unanswered = true,
                }
            }
            if unanswered {
                verdict = None;
            }
            if act.cli.asks.remove(&request_id) {
                let answer = act.cli.adapter.answer(&request_id, &calls, verdict);
                act.answer(&request_id, answer, subtype);
            }
        }));
    }
}
