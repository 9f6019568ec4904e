//! Which project a row belongs to, for tokens bound to one project: one lookup by primary key
//! (an execution's through its agent, one join).

use diesel::prelude::*;

use super::schema::{agent_executions, agents, permission_rules, processes, projects, sessions};
use super::{DbConnection, StoreError};
use crate::domain::ids::{AgentId, ExecutionId, ProcessId, ProjectId, RuleId, SessionId};

/// A stored row a route names by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owned {
    Project(ProjectId),
    Session(SessionId),
    Rule(RuleId),
    Agent(AgentId),
    Execution(ExecutionId),
    /// A command or background process started through the exec API.
    Process(ProcessId),
}

/// The project `row` belongs to: `None` when there is no such row, `Some(None)` when it
/// belongs to no project (a global rule, an agent with a folder of its own).
pub fn project_of(conn: &mut DbConnection, row: &Owned) -> Result<Option<Option<ProjectId>>, StoreError> {
    Ok(match row {
        Owned::Project(id) => {
            projects::table.find(id).select(projects::id).first::<ProjectId>(conn).optional()?.map(Some)
        }
        Owned::Session(id) => {
            sessions::table.find(id).select(sessions::project_id).first::<ProjectId>(conn).optional()?.map(Some)
        }
        Owned::Rule(id) => {
            permission_rules::table.find(id).select(permission_rules::project_id).first(conn).optional()?
        }
        Owned::Agent(id) => agents::table.find(id).select(agents::project_id).first(conn).optional()?,
        Owned::Execution(id) => agent_executions::table
            .inner_join(agents::table)
            .filter(agent_executions::id.eq(id))
            .select(agents::project_id)
            .first(conn)
            .optional()?,
        Owned::Process(id) => {
            processes::table.find(id).select(processes::project_id).first::<ProjectId>(conn).optional()?.map(Some)
        }
    })
}
