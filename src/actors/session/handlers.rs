//! One handler per message a session answers.

use actix::prelude::*;

use super::chat::pump;
use super::{
    AwaitEnd, CliSession, Close, CloseIfIdle, Control, GetOffers, QueuedTurn, SendOutcome, SendUser, SessionError,
    Snapshot, MAX_QUEUED_TURNS,
};
use crate::actors::bus::Secrets;
use crate::db::messages::NewMessage;
use crate::db::sessions::{Session, SessionPatch};
use crate::domain::idleness::{self, Activity, Busy};
use crate::domain::session::{ClosedReason, SessionStatus};
use crate::domain::time;
use crate::supervisor::adapter::Command;

impl CliSession {
    /// Live for the API: the CLI is not ending and the row is not final.
    fn is_live(&self) -> bool {
        self.cli.is_live() && self.conv.row.status.is_live()
    }

    fn not_live(&self) -> SessionError {
        SessionError::NotLive(self.conv.status_word(self.cli.is_live()))
    }
}

impl Handler<SendUser> for CliSession {
    type Result = ResponseActFuture<Self, Result<SendOutcome, SessionError>>;

    fn handle(&mut self, msg: SendUser, _ctx: &mut Self::Context) -> Self::Result {
        self.cli.touch();
        if !self.is_live() {
            return Box::pin(actix::fut::ready(Err(self.not_live())));
        }
        let chat = &mut self.conv;
        if let Some(spent) = chat.own_cap_spent() {
            return Box::pin(actix::fut::ready(Err(SessionError::Budget(spent))));
        }
        if chat.queue.len() >= MAX_QUEUED_TURNS {
            return Box::pin(actix::fut::ready(Err(SessionError::QueueFull)));
        }
        // Stored as Conduit's own record of the turn, the same for every agent (Claude Code's
        // user line); the agent's line is built when the turn is sent.
        let line = crate::protocol::outgoing::user_turn(&msg.content);
        chat.next_turn += 1;
        let seq = chat.next_turn;
        let position = chat.queue.len() + usize::from(chat.turn_running);
        let queued = position > 0 || chat.row.status != SessionStatus::Idle;
        // Relayed as it is accepted, so every client sees the turn whoever sent it; the stored
        // line carries the event's number, as the CLI's lines do.
        let (event_seq, timestamp) = chat.publish_numbered("session.message", "user", line.clone(), Secrets::Unchecked);
        chat.queue.push_back(QueuedTurn { seq, event_seq, content: msg.content, message_id: None });
        let row = NewMessage {
            session_id: chat.row.id.to_string(),
            direction: "to_cli",
            message_type: "user".to_string(),
            message_subtype: None,
            content: line,
            timestamp,
            seq: Some(event_seq as i64),
            cli_seq: None,
        };
        let writer = chat.writer.clone();
        let stored = async move { writer.persist_returning_id(row).await };
        Box::pin(stored.into_actor(self).map(move |result, act, _ctx| match result {
            Ok(id) => {
                if let Some(turn) = act.conv.queue.iter_mut().find(|t| t.seq == seq) {
                    turn.message_id = Some(id);
                }
                pump(act);
                Ok(SendOutcome { queued, position })
            }
            Err(e) => {
                act.conv.queue.retain(|t| t.seq != seq);
                Err(SessionError::Storage(e))
            }
        }))
    }
}

impl Handler<Control> for CliSession {
    type Result = ResponseActFuture<Self, Result<Session, SessionError>>;

    fn handle(&mut self, msg: Control, ctx: &mut Self::Context) -> Self::Result {
        if !self.is_live() || !self.cli.is_ready() {
            return Box::pin(actix::fut::ready(Err(self.not_live())));
        }
        let command = match &msg {
            Control::Interrupt => Command::Interrupt,
            Control::SetModel(m) => Command::SetModel(m.clone()),
            Control::SetPermissionMode(m) => Command::SetPermissionMode(m.clone()),
        };
        let answer = self.command(command, ctx);
        let answered = async move {
            answer.await.unwrap_or_else(|_| {
                Err(crate::supervisor::controls::ControlError::Gone("the session ended".to_string()))
            })
        };
        Box::pin(answered.into_actor(self).map(move |outcome, act, _ctx| {
            outcome?;
            let chat = &mut act.conv;
            let mut patch = SessionPatch::default();
            match msg {
                Control::SetModel(m) => {
                    chat.row.model = Some(m.clone());
                    patch.model = Some(m);
                }
                Control::SetPermissionMode(m) => {
                    chat.row.permission_mode = Some(m.clone());
                    patch.permission_mode = Some(m);
                }
                Control::Interrupt => {}
            }
            chat.patch(patch);
            Ok(chat.row.clone())
        }))
    }
}

impl Handler<Close> for CliSession {
    type Result = ResponseFuture<Result<Session, SessionError>>;

    fn handle(&mut self, msg: Close, ctx: &mut Self::Context) -> Self::Result {
        let ended = self.conv.await_end();
        super::pause::thaw_to_end(self);
        self.stop(msg.signal, Some(msg.reason), ctx);
        Box::pin(
            async move { ended.await.map_err(|_| SessionError::Cli("the session ended while closing".to_string())) },
        )
    }
}

impl Handler<GetOffers> for CliSession {
    type Result = MessageResult<GetOffers>;

    fn handle(&mut self, _msg: GetOffers, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.cli.offers())
    }
}

impl Handler<Snapshot> for CliSession {
    type Result = ResponseActFuture<Self, Session>;

    /// The row; while a turn's result is being stored, once it is (the turn counted and the
    /// session at rest together, as the stream tells them), or after at most 2 s.
    fn handle(&mut self, _msg: Snapshot, _ctx: &mut Self::Context) -> Self::Result {
        if self.conv.settling == 0 {
            return Box::pin(actix::fut::ready(self.conv.row.clone()));
        }
        let (settled, heard) = tokio::sync::oneshot::channel();
        self.conv.settled.push(settled);
        // Bounded like the wait for the result itself: results that keep coming (a CLI that
        // writes many) must not hold readers back for long.
        let heard = tokio::time::timeout(super::turn_end::RESULT_STORE_WAIT, heard);
        Box::pin(async move { heard.await.ok() }.into_actor(self).map(|_, act, _ctx| act.conv.row.clone()))
    }
}

impl Handler<CloseIfIdle> for CliSession {
    type Result = Result<(), Busy>;

    fn handle(&mut self, msg: CloseIfIdle, ctx: &mut Self::Context) -> Self::Result {
        // A paused session is idle once paused for the whole timeout, whatever it was doing
        // when it was frozen (messages queued to it and watchers still keep it).
        let paused_for = self.conv.paused_since.map(|at| at.elapsed());
        let activity = Activity {
            live: self.is_live(),
            turn_running: self.conv.turn_running && paused_for.is_none(),
            pending_controls: self.cli.pending_controls(),
            inflight_requests: self.cli.asks_in_flight(),
            queued_turns: self.conv.queue.len(),
            background_tasks: if paused_for.is_some() { 0 } else { self.conv.background_tasks.len() },
            watchers: msg.watchers,
            quiet_for: paused_for.unwrap_or_else(|| self.cli.quiet_for()),
        };
        match idleness::verdict(&activity, msg.timeout) {
            Ok(()) => {
                tracing::info!(session = %self.conv.row.id, quiet_for = ?activity.quiet_for, "closing an idle session");
                super::pause::thaw_to_end(self);
                self.stop(libc::SIGTERM, Some(ClosedReason::IdleTimeout), ctx);
                Ok(())
            }
            Err(busy) => {
                // The stored time moves on to the real last activity, so the janitor's indexed
                // query stops offering this session until it may really be idle.
                let last = time::ago(activity.quiet_for);
                let chat = &mut self.conv;
                if busy != Busy::NotLive && last > chat.row.last_active_at {
                    chat.row.last_active_at = last.clone();
                    chat.patch(SessionPatch { last_active_at: Some(last), ..Default::default() });
                }
                Err(busy)
            }
        }
    }
}

impl Handler<AwaitEnd> for CliSession {
    type Result = ResponseFuture<Result<Session, SessionError>>;

    fn handle(&mut self, _msg: AwaitEnd, _ctx: &mut Self::Context) -> Self::Result {
        if self.is_live() {
            let status = self.conv.row.status;
            return Box::pin(async move { Err(SessionError::Cli(format!("the session is {status}, not ending"))) });
        }
        let ended = self.conv.await_end();
        Box::pin(async move { ended.await.map_err(|_| SessionError::Cli("the session ended".to_string())) })
    }
}
