//! Who is asking, and what they may do: API token scopes and the identity the access guard
//! resolves for every `/api` request (see `http::guard`). Plain data.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ids::{LoginSessionId, ProjectId, SessionId, TokenId, UserId};

/// What an API token may do. Each scope includes the ones before it (`read` < `operate` <
/// `admin`), which is the order of the variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Reads only: every `GET`, never a change (403 `insufficient_scope` otherwise).
    Read,
    /// Runs work: sessions, turns, commands, processes, terminals, agents' runs; no
    /// configuration (projects, rules, webhooks, tokens).
    Operate,
    /// Everything, token administration included.
    Admin,
}

text_enum!(Scope, "token scope", {
    Read => "read",
    Operate => "operate",
    Admin => "admin",
});

impl Scope {
    /// Whether a holder of this scope may do what `needed` is required for.
    pub fn allows(self, needed: Scope) -> bool {
        self >= needed
    }
}

/// Who a request comes from, as the access guard resolved it. Put in the request's
/// extensions, so handlers (and later the audit log) can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// No credential is configured or stored (no `CONDUIT_AUTH_TOKEN`, no user, no live
    /// token): the local-first open mode, reachable on loopback only. Everything is allowed.
    Local,
    /// The configured `CONDUIT_AUTH_TOKEN`: an admin.
    Admin,
    /// A user: by name and password (HTTP Basic; `session: None`) or by the cookie of a
    /// dashboard sign-in (`session`: which one). Every user is an admin for now.
    User { id: UserId, session: Option<LoginSessionId> },
    /// A stored API token.
    Token { id: TokenId, scope: Scope, project: Option<ProjectId> },
    /// Another node of the cluster, forwarding a request it already admitted.
    Peer,
    /// A session's processes, by the token of its session channel (`CONDUIT_SESSION_TOKEN`):
    /// reads of its own session and its project's sessions only (`http::channel`).
    Session { session: SessionId, project: ProjectId },
}

impl Identity {
    /// What this identity may do.
    pub fn scope(&self) -> Scope {
        match self {
            Identity::Token { scope, .. } => *scope,
            Identity::Session { .. } => Scope::Read,
            Identity::Local | Identity::Admin | Identity::User { .. } | Identity::Peer => Scope::Admin,
        }
    }

    /// The one project it is restricted to, if any.
    pub fn project(&self) -> Option<&ProjectId> {
        match self {
            Identity::Token { project, .. } => project.as_ref(),
            Identity::Session { project, .. } => Some(project),
            _ => None,
        }
    }

    /// The dashboard sign-in it came with, if any.
    pub fn login_session(&self) -> Option<&LoginSessionId> {
        match self {
            Identity::User { session, .. } => session.as_ref(),
            _ => None,
        }
    }

    /// Whether it may see `project`'s rows: always, unless it is bound to another project.
    pub fn sees(&self, project: &ProjectId) -> bool {
        self.project().is_none_or(|own| own == project)
    }

    /// The project filter a list spanning every project reads with, for a list asked to show
    /// `asked` (its `project_id` query, if any): `Some(None)` every project, `Some(Some(p))`
    /// only `p`'s rows. A token bound to a project lists its own only; `None` when it asked for
    /// another one: no rows, as for a project that does not exist.
    pub fn project_filter(&self, asked: Option<ProjectId>) -> Option<Option<ProjectId>> {
        match (self.project(), asked) {
            (None, asked) => Some(asked),
            (Some(own), Some(asked)) if asked != *own => None,
            (Some(own), _) => Some(Some(own.clone())),
        }
    }

    /// The user who acts, when a user does.
    pub fn user(&self) -> Option<&UserId> {
        match self {
            Identity::User { id, .. } => Some(id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_texts() {
        crate::domain::check_text_enum(Scope::ALL, &["read", "operate", "admin"]);
    }

    #[test]
    fn each_scope_includes_the_lower_ones() {
        assert!(Scope::Admin.allows(Scope::Operate) && Scope::Admin.allows(Scope::Read));
        assert!(Scope::Operate.allows(Scope::Read) && !Scope::Operate.allows(Scope::Admin));
        assert!(!Scope::Read.allows(Scope::Operate) && Scope::Read.allows(Scope::Read));
    }

    #[test]
    fn a_bound_token_sees_only_its_project() {
        let (mine, other) = (ProjectId::new(), ProjectId::new());
        let bound = Identity::Token { id: TokenId::new(), scope: Scope::Operate, project: Some(mine.clone()) };
        assert!(bound.sees(&mine) && !bound.sees(&other));
        assert_eq!(bound.scope(), Scope::Operate);
        assert!(Identity::Admin.sees(&other) && Identity::Local.sees(&other));
        assert_eq!(Identity::Local.scope(), Scope::Admin);
    }

    #[test]
    fn a_bound_token_lists_its_project_only() {
        let (mine, other) = (ProjectId::new(), ProjectId::new());
        let bound = Identity::Token { id: TokenId::new(), scope: Scope::Read, project: Some(mine.clone()) };
        assert_eq!(bound.project_filter(None), Some(Some(mine.clone())));
        assert_eq!(bound.project_filter(Some(mine.clone())), Some(Some(mine.clone())));
        assert_eq!(bound.project_filter(Some(other.clone())), None, "another project: no rows");
        assert_eq!(Identity::Admin.project_filter(None), Some(None));
        assert_eq!(Identity::Admin.project_filter(Some(other.clone())), Some(Some(other)));
    }
}
