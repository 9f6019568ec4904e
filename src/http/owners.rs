//! For a token bound to one project: does the row a route names belong to that project?
//! Stored rows are looked up once by primary key (see [`db::ownership`]); a terminal, which is
//! not stored, is asked of this node's terminal registry.

use super::scopes::{row_id, RowKind};
use super::AppState;
use crate::actors::terminal::{Describe, FindTerminal};
use crate::db::{self, ownership::Owned};
use crate::domain::ids::{AgentId, ExecutionId, InvalidId, ProjectId, RuleId, SessionId, TerminalId};
use crate::error::AppError;

/// `Ok` when the row named in `path` belongs to `project`; otherwise the 404 a missing row
/// gets, so a bound token cannot even learn that another project's row exists.
pub async fn check(state: &AppState, kind: RowKind, path: &str, project: &ProjectId) -> Result<(), AppError> {
    let raw = row_id(path).unwrap_or_default();
    let missing = || AppError::not_found(format!("No {} with id {raw:?}.", noun(kind)));
    let owner = match owned(kind, raw) {
        Ok(Some(row)) => state.store.run(move |conn| db::ownership::project_of(conn, &row)).await?.flatten(),
        Ok(None) => terminal_project(state, raw).await,
        Err(_) => None,
    };
    match owner {
        Some(owner) if owner == *project => Ok(()),
        _ => Err(missing()),
    }
}

fn noun(kind: RowKind) -> &'static str {
    match kind {
        RowKind::Project => ProjectId::KIND,
        RowKind::Session => SessionId::KIND,
        RowKind::Rule => RuleId::KIND,
        RowKind::Agent => AgentId::KIND,
        RowKind::Execution => ExecutionId::KIND,
        RowKind::Terminal => TerminalId::KIND,
    }
}

/// The stored row `raw` names; `Ok(None)` for a terminal (not stored).
fn owned(kind: RowKind, raw: &str) -> Result<Option<Owned>, InvalidId> {
    Ok(Some(match kind {
        RowKind::Project => Owned::Project(raw.parse()?),
        RowKind::Session => Owned::Session(raw.parse()?),
        RowKind::Rule => Owned::Rule(raw.parse()?),
        RowKind::Agent => Owned::Agent(raw.parse()?),
        RowKind::Execution => Owned::Execution(raw.parse()?),
        RowKind::Terminal => {
            raw.parse::<TerminalId>()?;
            return Ok(None);
        }
    }))
}

/// The project of a terminal running on this node. In cluster mode a terminal on another node
/// is not found here: a bound token reaches the terminals of the node it talks to.
async fn terminal_project(state: &AppState, raw: &str) -> Option<ProjectId> {
    let id: TerminalId = raw.parse().ok()?;
    let terminal = state.terminals.send(FindTerminal(id)).await.ok()??;
    Some(terminal.send(Describe).await.ok()?.project_id)
}
