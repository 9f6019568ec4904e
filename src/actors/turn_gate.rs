//! `TurnGate`: the work-in-progress limit. A project may cap how many turns run at once across
//! its sessions (`max_running_turns`); beyond it, turns wait first come, first served, across
//! the project's sessions, and `GET /api/projects/{id}/turns` shows who runs and who waits
//! where.
//!
//! Every session asks the gate before it starts a turn and gives the slot back when the turn
//! ends (or the session parks, or ends), whether or not its project has a cap: the gate alone
//! knows the caps, so a change applies at once to everything waiting. A project without a cap
//! is answered at once.

use std::collections::{HashMap, VecDeque};

use actix::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::time;

/// The gate's answer to a session that asked for a slot.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
#[rtype(result = "()")]
pub enum SlotAnswer {
    /// It may start its next turn now.
    Granted,
    /// Its project is at its cap: it waits, `position` in line (1 for the next).
    Waiting { position: usize },
}

/// A session's dealings with the gate.
#[derive(Message)]
#[rtype(result = "()")]
pub enum Slot {
    /// It has a turn to start: it is told [`SlotAnswer::Granted`] when it may (at once, or
    /// after [`SlotAnswer::Waiting`]); it asks once and waits.
    Ask { project: ProjectId, session: SessionId, granted: Recipient<SlotAnswer> },
    /// Its turn ended, it parked or it ended: the slot, or its place in line, goes to the next.
    Give { project: ProjectId, session: SessionId },
}

/// A project's cap changed (`None`: no cap; also sent when a project is deleted).
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct SetTurnCap {
    pub project: ProjectId,
    pub max: Option<u32>,
}

impl SetTurnCap {
    /// A project's cap as stored (`None` also for a deleted project's).
    pub fn of(project: &crate::db::projects::Project) -> SetTurnCap {
        SetTurnCap { project: project.id.clone(), max: project.max_running_turns.and_then(|n| u32::try_from(n).ok()) }
    }
}

/// Who runs and who waits in a project.
#[derive(Message)]
#[rtype(result = "TurnQueue")]
pub struct ReadTurnQueue(pub ProjectId);

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TurnQueue {
    /// The project's cap on turns running at once; `null`: none.
    pub max_running_turns: Option<u32>,
    /// The sessions running a turn, in the order they started it.
    pub running: Vec<TurnSlot>,
    /// The sessions waiting to start one, first in line first (`position` 1).
    pub waiting: Vec<TurnSlot>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TurnSlot {
    pub session_id: String,
    /// Among the waiting: 1 for the next to run. Among the running: the order they started.
    pub position: usize,
    /// When it started running, or began waiting (RFC 3339).
    pub since: String,
}

struct Waiter {
    session: SessionId,
    since: String,
    granted: Recipient<SlotAnswer>,
}

#[derive(Default)]
struct Line {
    running: Vec<(SessionId, String)>,
    waiting: VecDeque<Waiter>,
}

#[derive(Default)]
pub struct TurnGate {
    caps: HashMap<ProjectId, u32>,
    lines: HashMap<ProjectId, Line>,
}

impl TurnGate {
    /// Starts with the caps stored on the projects.
    pub fn new(caps: impl IntoIterator<Item = (ProjectId, u32)>) -> TurnGate {
        TurnGate { caps: caps.into_iter().collect(), lines: HashMap::new() }
    }

    /// Lets the first in line run while the project is under its cap.
    fn admit(&mut self, project: &ProjectId) {
        let cap = self.caps.get(project).copied();
        let Some(line) = self.lines.get_mut(project) else { return };
        while cap.is_none_or(|cap| line.running.len() < cap as usize) {
            let Some(next) = line.waiting.pop_front() else { break };
            // A session that ended while waiting is skipped (it also gives its place back).
            if next.granted.connected() {
                line.running.push((next.session, time::now()));
                next.granted.do_send(SlotAnswer::Granted);
            }
        }
        if line.running.is_empty() && line.waiting.is_empty() {
            self.lines.remove(project);
        }
    }
}

impl Actor for TurnGate {
    type Context = Context<Self>;
}

impl Handler<Slot> for TurnGate {
    type Result = ();

    fn handle(&mut self, msg: Slot, _ctx: &mut Context<Self>) {
        match msg {
            Slot::Ask { project, session, granted } => {
                let line = self.lines.entry(project.clone()).or_default();
                // Asking twice keeps the first place (and a running session keeps its slot).
                let known = line.running.iter().any(|(s, _)| *s == session)
                    || line.waiting.iter().any(|w| w.session == session);
                if !known {
                    line.waiting.push_back(Waiter { session: session.clone(), since: time::now(), granted });
                }
                self.admit(&project);
                let place = self.lines.get(&project).and_then(|l| l.waiting.iter().position(|w| w.session == session));
                if let (Some(i), Some(line)) = (place, self.lines.get(&project)) {
                    line.waiting[i].granted.do_send(SlotAnswer::Waiting { position: i + 1 });
                }
            }
            Slot::Give { project, session } => {
                if let Some(line) = self.lines.get_mut(&project) {
                    line.running.retain(|(s, _)| *s != session);
                    line.waiting.retain(|w| w.session != session);
                }
                self.admit(&project);
            }
        }
    }
}

impl Handler<SetTurnCap> for TurnGate {
    type Result = ();

    fn handle(&mut self, msg: SetTurnCap, _ctx: &mut Context<Self>) {
        match msg.max {
            Some(max) => self.caps.insert(msg.project.clone(), max),
            None => self.caps.remove(&msg.project),
        };
        // A raise (or a removed cap) lets waiting turns run now; a cut stops no running turn.
        self.admit(&msg.project);
    }
}

impl Handler<ReadTurnQueue> for TurnGate {
    type Result = MessageResult<ReadTurnQueue>;

    fn handle(&mut self, msg: ReadTurnQueue, _ctx: &mut Context<Self>) -> Self::Result {
        let slot = |(i, (session, since)): (usize, (&SessionId, &String))| TurnSlot {
            session_id: session.to_string(),
            position: i + 1,
            since: since.clone(),
        };
        let line = self.lines.get(&msg.0);
        MessageResult(TurnQueue {
            max_running_turns: self.caps.get(&msg.0).copied(),
            running: line
                .map(|l| l.running.iter().map(|(s, t)| (s, t)).enumerate().map(slot).collect())
                .unwrap_or_default(),
            waiting: line
                .map(|l| l.waiting.iter().map(|w| (&w.session, &w.since)).enumerate().map(slot).collect())
                .unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A session stand-in: keeps what the gate told it.
    struct Heard(Arc<Mutex<Vec<SlotAnswer>>>);

    impl Actor for Heard {
        type Context = Context<Self>;
    }

    impl Handler<SlotAnswer> for Heard {
        type Result = ();
        fn handle(&mut self, msg: SlotAnswer, _ctx: &mut Context<Self>) {
            self.0.lock().expect("heard").push(msg);
        }
    }

    /// The stand-in's session ends.
    #[derive(Message)]
    #[rtype(result = "()")]
    struct Leave;

    impl Handler<Leave> for Heard {
        type Result = ();
        fn handle(&mut self, _msg: Leave, ctx: &mut Context<Self>) {
            ctx.stop();
        }
    }

    fn session() -> (Addr<Heard>, Arc<Mutex<Vec<SlotAnswer>>>, SessionId) {
        let heard = Arc::new(Mutex::new(Vec::new()));
        (Heard(heard.clone()).start(), heard, SessionId::new())
    }

    fn ask(gate: &Addr<TurnGate>, project: &ProjectId, who: &(Addr<Heard>, Arc<Mutex<Vec<SlotAnswer>>>, SessionId)) {
        gate.do_send(Slot::Ask {
            project: project.clone(),
            session: who.2.clone(),
            granted: who.0.clone().recipient(),
        });
    }

    async fn settle(gate: &Addr<TurnGate>, project: &ProjectId) -> TurnQueue {
        // The gate answers in order: once this is answered, every earlier message was handled;
        // a short sleep lets the answers reach the stand-ins.
        let queue = gate.send(ReadTurnQueue(project.clone())).await.expect("gate");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        queue
    }

    fn last(who: &(Addr<Heard>, Arc<Mutex<Vec<SlotAnswer>>>, SessionId)) -> Option<SlotAnswer> {
        who.1.lock().expect("heard").last().copied()
    }

    #[actix::test]
    async fn turns_beyond_the_cap_wait_first_come_first_served() {
        let project = ProjectId::new();
        let gate = TurnGate::new([(project.clone(), 2)]).start();
        let (a, b, c, d) = (session(), session(), session(), session());
        for who in [&a, &b, &c, &d] {
            ask(&gate, &project, who);
        }
        let queue = settle(&gate, &project).await;
        assert_eq!(queue.max_running_turns, Some(2));
        assert_eq!(queue.running.len(), 2);
        assert_eq!((last(&a), last(&b)), (Some(SlotAnswer::Granted), Some(SlotAnswer::Granted)));
        assert_eq!(last(&c), Some(SlotAnswer::Waiting { position: 1 }));
        assert_eq!(last(&d), Some(SlotAnswer::Waiting { position: 2 }));
        let waiting: Vec<_> = queue.waiting.iter().map(|w| (w.session_id.clone(), w.position)).collect();
        assert_eq!(waiting, [(c.2.to_string(), 1), (d.2.to_string(), 2)]);

        // Asking again keeps one's place; giving back lets the first in line run.
        ask(&gate, &project, &c);
        gate.do_send(Slot::Give { project: project.clone(), session: a.2.clone() });
        let queue = settle(&gate, &project).await;
        assert_eq!(last(&c), Some(SlotAnswer::Granted));
        assert_eq!(last(&d), Some(SlotAnswer::Waiting { position: 2 }), "no new word until its turn");
        assert_eq!(queue.waiting.len(), 1);

        // A raise admits at once; no cap admits everyone.
        gate.do_send(SetTurnCap { project: project.clone(), max: Some(3) });
        settle(&gate, &project).await;
        assert_eq!(last(&d), Some(SlotAnswer::Granted));
    }

    #[actix::test]
    async fn a_project_without_a_cap_waits_for_nothing_and_a_gone_waiter_is_skipped() {
        let (free, capped) = (ProjectId::new(), ProjectId::new());
        let gate = TurnGate::new([(capped.clone(), 1)]).start();
        let many: Vec<_> = (0..5).map(|_| session()).collect();
        for who in &many {
            ask(&gate, &free, who);
        }
        let queue = settle(&gate, &free).await;
        assert_eq!((queue.running.len(), queue.waiting.len(), queue.max_running_turns), (5, 0, None));

        let (holder, gone, next) = (session(), session(), session());
        for who in [&holder, &gone, &next] {
            ask(&gate, &capped, who);
        }
        settle(&gate, &capped).await;
        // The second waiter's session ends without giving its place back.
        gone.0.do_send(Leave);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        gate.do_send(Slot::Give { project: capped.clone(), session: holder.2.clone() });
        let queue = settle(&gate, &capped).await;
        assert_eq!(last(&next), Some(SlotAnswer::Granted));
        assert_eq!(queue.running.iter().map(|r| r.session_id.clone()).collect::<Vec<_>>(), [next.2.to_string()]);
    }
}
