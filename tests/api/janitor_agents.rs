//! The janitor's agent chores, against a real SQLite file with probe actors standing in for
//! the registries: executions stuck past their timeout are ended, lock queues are pruned.

use std::time::Duration;

use actix::prelude::*;
use conduit::actors::agents::{AgentError, CancelExecution};
use conduit::actors::bus::WatcherCount;
use conduit::actors::janitor::{Janitor, Sweep, Tidies};
use conduit::actors::locks::Prune;
use conduit::actors::registry::CloseIdle;
use conduit::actors::workbench::Cleanup;
use conduit::db::agents::{self, Agent, Execution};
use conduit::db::Store;
use conduit::domain::agent::{AgentStatus, ExecutionStatus, TriggerKind};
use conduit::domain::idleness::Busy;
use conduit::domain::ids::{AgentId, ExecutionId};

/// Answers as if no run were going and every lock queue had one stale entry.
struct NoRuns;

impl Actor for NoRuns {
    type Context = Context<Self>;
}

impl Handler<CancelExecution> for NoRuns {
    type Result = Result<bool, AgentError>;
    fn handle(&mut self, _m: CancelExecution, _c: &mut Context<Self>) -> Self::Result {
        Ok(false)
    }
}

impl Handler<Prune> for NoRuns {
    type Result = usize;
    fn handle(&mut self, _m: Prune, _c: &mut Context<Self>) -> usize {
        1
    }
}

impl Handler<CloseIdle> for NoRuns {
    type Result = Result<(), Busy>;
    fn handle(&mut self, _m: CloseIdle, _c: &mut Context<Self>) -> Self::Result {
        Err(Busy::NotLive)
    }
}

impl Handler<Cleanup> for NoRuns {
    type Result = Result<usize, conduit::db::StoreError>;
    fn handle(&mut self, _m: Cleanup, _c: &mut Context<Self>) -> Self::Result {
        Ok(0)
    }
}

impl Handler<WatcherCount> for NoRuns {
    type Result = usize;
    fn handle(&mut self, _m: WatcherCount, _c: &mut Context<Self>) -> usize {
        0
    }
}

fn execution(id: &str, agent: &AgentId, started_at: String) -> Execution {
    Execution {
        id: ExecutionId::parse(id).expect("a UUID"),
        agent_id: agent.clone(),
        trigger_kind: TriggerKind::Cron,
        status: ExecutionStatus::Running,
        exit_code: None,
        started_at: Some(started_at.clone()),
        finished_at: None,
        cost_usd: None,
        input_tokens: None,
        output_tokens: None,
        output: String::new(),
        raw_output: String::new(),
        error: None,
        created_at: started_at,
        resumes_at: None,
        owner_node: None,
        fire_at: None,
    }
}

#[actix_web::test]
async fn executions_stuck_past_their_timeout_are_ended_and_locks_pruned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open_blocking(crate::support::database::test_database(&dir.path().join("j.db")), 2, 1000)
        .await
        .expect("store");
    let now = chrono::Utc::now();
    let at = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let agent = Agent {
        id: AgentId::new(),
        project_id: None,
        name: "a".into(),
        objective: "o".into(),
        schedule: "0 0 1 1 *".into(),
        cwd: dir.path().display().to_string(),
        model: None,
        timeout_ms: 60_000,
        status: AgentStatus::Active,
        consecutive_failures: 0,
        next_run_at: None,
        created_at: at(now),
        updated_at: at(now),
        workspace_mode: conduit::domain::workspace::WorkspaceMode::Shared,
        agent: Default::default(),
        max_budget_usd: None,
    };
    let stuck = execution("00000000-0000-4000-8000-000000000001", &agent.id, at(now - chrono::Duration::hours(1)));
    let fresh = execution("00000000-0000-4000-8000-000000000002", &agent.id, at(now - chrono::Duration::seconds(30)));
    let rows = (agent.clone(), stuck.clone(), fresh.clone());
    store
        .run(move |conn| {
            agents::insert(conn, &rows.0)?;
            agents::insert_execution(conn, &rows.1)?;
            agents::insert_execution(conn, &rows.2)
        })
        .await
        .expect("rows");

    let probe = NoRuns.start();
    let janitor = Janitor::new(
        Duration::from_secs(3600),
        Duration::from_secs(3600),
        store.clone(),
        probe.clone().recipient(),
        probe.clone().recipient(),
        Tidies {
            agents: probe.clone().recipient(),
            locks: probe.clone().recipient(),
            grace: Duration::from_secs(5),
            processes: probe.clone().recipient(),
            process_retention: Duration::from_secs(3600),
            workspaces: dir.path().join("workspaces"),
            node: None,
        },
    )
    .start();
    let report = janitor.send(Sweep).await.expect("janitor");
    assert_eq!((report.executions_reaped, report.locks_pruned, report.errors), (1, 1, 0), "{report:?}");

    let (stuck_id, fresh_id) = (stuck.id.clone(), fresh.id.clone());
    let (stuck, fresh) = store
        .run(move |conn| Ok((agents::find_execution(conn, &stuck_id)?, agents::find_execution(conn, &fresh_id)?)))
        .await
        .expect("rows");
    let stuck = stuck.expect("stuck row");
    assert_eq!(stuck.status, ExecutionStatus::Failure);
    assert!(stuck.error.as_deref().is_some_and(|e| e.contains("reaped by the janitor")), "{stuck:?}");
    assert_eq!(fresh.expect("fresh row").status, ExecutionStatus::Running, "within its timeout");
    let again = janitor.send(Sweep).await.expect("janitor");
    assert_eq!(again.executions_reaped, 0, "ended once");
}
