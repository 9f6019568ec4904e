//! What a token bound to one project sees of the global event stream (`/api/events/stream`):
//! - the events of its project's sessions, agent runs and processes;
//! - the events their publisher told as its project's: changes to the project, its rules and
//!   agents, its terminals, its budget, its decisions outside a session, its sessions'
//!   worktree reviews (see `Event::in_project`).
//!
//! Everything else is left out: another project's events, and those of no project (global
//! rules, webhooks, agents of a folder of their own, the service's own notices), as well as
//! the deletion of a rule or an agent, whose project went with the row.
//!
//! A session, run or process is looked up once (one read by primary key, on the store's
//! gateway) and remembered for the stream's life: a row never moves to another project.

use std::collections::HashMap;

use crate::actors::bus::EventMeta;
use crate::db::ownership::{self, Owned};
use crate::db::writer::Writer;
use crate::db::{Store, StoreError};
use crate::domain::events::Scope;
use crate::domain::ids::ProjectId;

/// Rows remembered per stream before the memory starts again (a long-lived stream may see
/// many sessions come and go).
const REMEMBERED: usize = 4096;

pub struct ProjectFilter {
    project: ProjectId,
    store: Store,
    writer: Writer,
    /// Whether each session, run or process seen so far is the project's.
    known: HashMap<Scope, bool>,
}

impl ProjectFilter {
    pub fn new(project: ProjectId, store: Store, writer: Writer) -> ProjectFilter {
        ProjectFilter { project, store, writer, known: HashMap::new() }
    }

    /// Whether the bound token may see the event `meta` describes; `Err` when the store
    /// cannot say whose it is.
    pub async fn keeps(&mut self, meta: &EventMeta) -> Result<bool, StoreError> {
        if let Some(project) = &meta.project {
            return Ok(*project == self.project);
        }
        if let Some(keep) = self.known.get(&meta.scope) {
            return Ok(*keep);
        }
        let Some(row) = row_of(&meta.scope) else { return Ok(false) };
        let owner = match self.owner(row.clone()).await? {
            Some(owner) => owner,
            // Rows are stored before their events are told, but some through the write-behind
            // writer: once what it holds is committed, the row is there if it ever will be.
            None => {
                if let Err(e) = self.writer.flush().await {
                    tracing::debug!(error = %e, "the writer could not flush for a project-bound stream");
                }
                self.owner(row).await?.flatten()
            }
        };
        let keep = owner.is_some_and(|owner| owner == self.project);
        if self.known.len() >= REMEMBERED {
            self.known.clear();
        }
        self.known.insert(meta.scope.clone(), keep);
        Ok(keep)
    }

    /// `None` when there is no such row; `Some(None)` when it belongs to no project.
    async fn owner(&self, row: Owned) -> Result<Option<Option<ProjectId>>, StoreError> {
        self.store.run(move |conn| ownership::project_of(conn, &row)).await
    }
}

/// The stored row an event is about; `None` for an event about no row (or a malformed id,
/// which no row has).
fn row_of(scope: &Scope) -> Option<Owned> {
    match scope {
        Scope::Global => None,
        Scope::Session(id) => id.parse().ok().map(Owned::Session),
        Scope::Execution(id) => id.parse().ok().map(Owned::Execution),
        Scope::Process(id) => id.parse().ok().map(Owned::Process),
    }
}
