//! The workbench's handlers besides `Start`: ends (reported, asked for, and those of whole
//! owners), logs, cleanup and shutdown.

use std::time::Duration;

use actix::prelude::*;

use super::{
    logs, Cleanup, EndProject, Finished, GraceOver, Kill, KillAll, KillError, Life, ShutdownProcesses, WatchLogs,
    Workbench, ENDED_REMEMBERED,
};
use crate::actors::bus::{Event, Publish};
use crate::actors::registry::SessionEnded;
use crate::db::processes::{self, Ending};
use crate::domain::ids::ProcessId;
use crate::domain::process::{EndReason, Owner, ProcessStatus};
use crate::domain::time;

/// How long shutdown waits for the ended processes' rows.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

impl Actor for Workbench {
    type Context = Context<Self>;
}

impl Workbench {
    /// Starts ending process `id` for `reason`: `signal` now, SIGKILL to the whole tree after
    /// `grace` (at once for SIGKILL). False when it is not running here.
    fn end(
        &mut self,
        id: &ProcessId,
        reason: EndReason,
        signal: i32,
        grace: Duration,
        ctx: &mut Context<Self>,
    ) -> bool {
        let Some(proc) = self.procs.get_mut(id) else { return false };
        match &mut proc.life {
            Life::Starting { doomed } => {
                doomed.get_or_insert(reason);
            }
            Life::Running { tree, ending } => {
                ending.get_or_insert(reason);
                let tree = tree.clone();
                if signal == libc::SIGKILL || grace.is_zero() {
                    tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
                } else {
                    tokio::task::spawn_blocking(move || tree.signal(signal));
                    ctx.notify_later(GraceOver(id.clone()), grace);
                }
            }
        }
        true
    }

    /// Ends every process `which` selects; returns how many.
    fn end_where(
        &mut self,
        which: impl Fn(&super::Proc) -> bool,
        reason: EndReason,
        signal: i32,
        grace: Duration,
        ctx: &mut Context<Self>,
    ) -> usize {
        let ids: Vec<ProcessId> = self.procs.iter().filter(|(_, p)| which(p)).map(|(id, _)| id.clone()).collect();
        ids.iter().filter(|id| self.end(id, reason, signal, grace, ctx)).count()
    }

    /// Resolves the waiters whose processes are all gone.
    fn tell_drained(&mut self) {
        let procs = &self.procs;
        let (done, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.drained).into_iter().partition(|(project, _)| match project {
                None => procs.is_empty(),
                Some(p) => !procs.values().any(|proc| &proc.project_id == p),
            });
        self.drained = waiting;
        for (_, tx) in done {
            let _ = tx.send(());
        }
    }

    fn wait_drained(&mut self, project: Option<crate::domain::ids::ProjectId>) -> ResponseFuture<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.drained.push((project, tx));
        self.tell_drained();
        Box::pin(async move {
            let _ = tokio::time::timeout(SHUTDOWN_WAIT, rx).await;
        })
    }
}

impl Handler<Finished> for Workbench {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: Finished, _ctx: &mut Context<Self>) -> Self::Result {
        let Finished { id, ended } = msg;
        let proc = self.release(&id);
        let (tree, ending) = match proc.map(|p| p.life) {
            Some(Life::Running { tree, ending }) => (Some(tree), ending),
            _ => (None, None),
        };
        // Whatever the command left (and its cgroup) goes with it, off the executor.
        if let Some(tree) = tree {
            tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
        }
        let reason = ending.or(ended.timed_out.then_some(EndReason::Timeout));
        let ending = Ending {
            status: Some(if reason.is_some() { ProcessStatus::Killed } else { ProcessStatus::Exited }),
            exit_code: Some(ended.exit_code),
            signal: Some(ended.signal),
            end_reason: Some(reason.map(|r| r.as_str().to_string())),
            ended_at: Some(Some(time::now())),
            stdout_bytes: Some(ended.stdout_bytes as i64),
            stderr_bytes: Some(ended.stderr_bytes as i64),
            stdout_truncated: Some(ended.stdout_truncated),
            stderr_truncated: Some(ended.stderr_truncated),
        };
        self.tell_drained();
        let (store, bus) = (self.deps.store.clone(), self.deps.bus.clone());
        Box::pin(async move {
            let lookup = id.clone();
            let stored = store
                .run(move |conn| {
                    processes::end(conn, &lookup, &ending)?;
                    processes::find(conn, &lookup)
                })
                .await;
            match stored {
                Ok(Some(row)) => {
                    let data = serde_json::to_string(&row).unwrap_or_default();
                    bus.do_send(Publish(Event::for_process("process.exited", "exited", id.as_str(), data)));
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(process = %id, error = %e, "cannot record a process's end"),
            }
        })
    }
}

impl Handler<Kill> for Workbench {
    type Result = Result<(), KillError>;

    fn handle(&mut self, msg: Kill, ctx: &mut Context<Self>) -> Self::Result {
        let theirs = self.procs.get(&msg.id).is_some_and(|p| p.owner == msg.owner);
        if !theirs || !self.end(&msg.id, EndReason::Requested, msg.signal, msg.grace, ctx) {
            return Err(KillError::NotRunning);
        }
        Ok(())
    }
}

impl Handler<GraceOver> for Workbench {
    type Result = ();

    fn handle(&mut self, msg: GraceOver, _ctx: &mut Context<Self>) {
        if let Some(Life::Running { tree, .. }) = self.procs.get(&msg.0).map(|p| &p.life) {
            let tree = tree.clone();
            tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
        }
    }
}

impl Handler<KillAll> for Workbench {
    type Result = usize;

    fn handle(&mut self, msg: KillAll, ctx: &mut Context<Self>) -> usize {
        let owner = msg.owner;
        self.end_where(|p| p.owner == owner, EndReason::Requested, msg.signal, msg.grace, ctx)
    }
}

impl Handler<SessionEnded> for Workbench {
    type Result = ();

    fn handle(&mut self, msg: SessionEnded, ctx: &mut Context<Self>) {
        if self.ended.insert(msg.id.clone()) {
            self.ended_order.push_back(msg.id.clone());
            if self.ended_order.len() > ENDED_REMEMBERED {
                if let Some(old) = self.ended_order.pop_front() {
                    self.ended.remove(&old);
                }
            }
        }
        let owner = Owner::Session(msg.id);
        let n = self.end_where(|p| p.owner == owner, EndReason::OwnerEnded, libc::SIGKILL, Duration::ZERO, ctx);
        if n > 0 {
            tracing::info!(session = %owner.as_str(), processes = n, "ended what the session left running");
        }
        self.drop_contexts(&owner);
    }
}

impl Handler<EndProject> for Workbench {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: EndProject, ctx: &mut Context<Self>) -> Self::Result {
        let project = msg.0;
        self.end_where(|p| p.project_id == project, EndReason::OwnerEnded, libc::SIGKILL, Duration::ZERO, ctx);
        let owners: Vec<Owner> = self.contexts.keys().cloned().collect();
        for owner in owners {
            let of_project = matches!(&owner, Owner::Project(p) if *p == project);
            let of_session = self.procs.values().any(|p| p.owner == owner && p.project_id == project);
            if of_project || of_session {
                self.drop_contexts(&owner);
            }
        }
        self.wait_drained(Some(project))
    }
}

impl Handler<WatchLogs> for Workbench {
    type Result = Option<tokio::sync::watch::Receiver<super::LogMark>>;

    fn handle(&mut self, msg: WatchLogs, _ctx: &mut Context<Self>) -> Self::Result {
        self.procs.get(&msg.0).and_then(|p| p.logs.clone())
    }
}

impl Handler<Cleanup> for Workbench {
    type Result = ResponseFuture<Result<usize, crate::db::StoreError>>;

    fn handle(&mut self, msg: Cleanup, _ctx: &mut Context<Self>) -> Self::Result {
        let (store, root, node) = (self.deps.store.clone(), self.deps.dir.clone(), self.deps.node.clone());
        Box::pin(async move {
            let Cleanup { owner, before } = msg;
            // Only what this node ran: the logs it removes are on its own disk.
            let delete =
                move |conn: &mut _| processes::delete_ended(conn, owner.as_ref(), before.as_deref(), node.as_deref());
            let ids = store.run(delete).await?;
            let n = ids.len();
            if n > 0 {
                let _ = tokio::task::spawn_blocking(move || ids.iter().for_each(|id| logs::remove(&root, id))).await;
            }
            Ok(n)
        })
    }
}

impl Handler<ShutdownProcesses> for Workbench {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: ShutdownProcesses, ctx: &mut Context<Self>) -> Self::Result {
        self.shutting_down = true;
        let n = self.end_where(|_| true, EndReason::Shutdown, libc::SIGKILL, Duration::ZERO, ctx);
        if n > 0 {
            tracing::info!(processes = n, "ending every command and background process");
        }
        self.wait_drained(None)
    }
}
