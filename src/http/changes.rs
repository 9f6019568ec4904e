//! Changes to what people configure (projects, rules, scheduled agents, webhooks), told on the
//! global event stream as they happen, so every open dashboard page follows without polling.
//! `data` is the row as the API answers it, or `{"id"}` for a deletion.

use serde::{Deserialize, Serialize};

use super::AppState;
use crate::actors::bus::{Event, Publish};
use crate::domain::ids::ProjectId;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entity {
    Project,
    Rule,
    Agent,
    Webhook,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Created,
    Updated,
    Deleted,
}

/// The event type, `<entity>.<change>`.
pub fn kind(entity: Entity, change: Change) -> &'static str {
    use Change::*;
    use Entity::*;
    match (entity, change) {
        (Project, Created) => "project.created",
        (Project, Updated) => "project.updated",
        (Project, Deleted) => "project.deleted",
        (Rule, Created) => "rule.created",
        (Rule, Updated) => "rule.updated",
        (Rule, Deleted) => "rule.deleted",
        (Agent, Created) => "agent.created",
        (Agent, Updated) => "agent.updated",
        (Agent, Deleted) => "agent.deleted",
        (Webhook, Created) => "webhook.created",
        (Webhook, Updated) => "webhook.updated",
        (Webhook, Deleted) => "webhook.deleted",
    }
}

/// Publishes the change with `row` (created, updated) as its data.
pub fn announce<T: Serialize>(state: &AppState, entity: Entity, change: Change, row: &T) {
    match serde_json::to_string(row) {
        Ok(data) => {
            let project = project_of(entity, &data);
            publish(state, kind(entity, change), data, project)
        }
        Err(e) => tracing::warn!(error = %e, "a changed row could not be rendered for the event stream"),
    }
}

/// Publishes a deletion: `{"id": ...}`.
/// A deleted project is told as its own; another deleted row's project is gone with it, so
/// a project-bound stream does not see that deletion.
pub fn announce_deleted(state: &AppState, entity: Entity, id: &str) {
    let project = (entity == Entity::Project).then(|| id.parse().ok()).flatten();
    publish(state, kind(entity, Change::Deleted), serde_json::json!({ "id": id }).to_string(), project);
}

fn publish(state: &AppState, kind: &'static str, data: String, project: Option<ProjectId>) {
    state.bus.do_send(Publish(Event::new(kind, kind.replace('.', "_"), None, data).in_project(project)));
}

/// The project a changed row (as the API renders it) belongs to: a project is its own, a
/// rule or an agent names its own (none for a global rule, a webhook, an agent of a folder).
fn project_of(entity: Entity, rendered: &str) -> Option<ProjectId> {
    #[derive(Deserialize)]
    struct Owner {
        id: Option<String>,
        project_id: Option<String>,
    }
    let owner: Owner = serde_json::from_str(rendered).ok()?;
    let named = match entity {
        Entity::Project => owner.id,
        Entity::Rule | Entity::Agent => owner.project_id,
        Entity::Webhook => None,
    };
    named?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_entity_dot_change() {
        for entity in [Entity::Project, Entity::Rule, Entity::Agent, Entity::Webhook] {
            for change in [Change::Created, Change::Updated, Change::Deleted] {
                let k = kind(entity, change);
                let (e, c) = k.split_once('.').expect("a dot");
                assert_eq!(e, format!("{entity:?}").to_lowercase());
                assert_eq!(c, format!("{change:?}").to_lowercase());
            }
        }
    }
}
