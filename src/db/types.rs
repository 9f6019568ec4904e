//! The domain's ids and enums as SQL values: each is stored as TEXT, exactly the text it had
//! as a plain string, so no migration was needed to type them. The domain stays free of
//! diesel; the impls live here (the orphan rule allows it: the types are this crate's).
//!
//! For each type: `ToSql`/`FromSql` for `Text` on any backend that has them for `str` and
//! `String` (SQLite, and the [`DbConnection`](super::DbConnection) that wraps it), `Queryable`
//! (a row field of that type), and `AsExpression` for `Text` and `Nullable<Text>`, owned and
//! borrowed (inserts, changesets, filters). Reading text that names no value of an enum is a
//! deserialization error (the query fails), never a panic.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, Queryable};
use diesel::expression::AsExpression;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::{Nullable, Text};

use crate::domain::access::Scope;
use crate::domain::agent::{AgentStatus, ExecutionStatus, TriggerKind};
use crate::domain::agent_kind::AgentKind;
use crate::domain::audit::{ActorKind, AuditEvent};
use crate::domain::cluster::{NodeList, NodeRole, NodeState};
use crate::domain::decision::{Decision, DecisionPoint, DecisionSource};
use crate::domain::environment::ProjectEnv;
use crate::domain::ids::{
    AgentId, ExecutionId, LoginSessionId, ProcessId, ProjectId, RuleId, SessionId, TokenId, UserId, WebhookId,
};
use crate::domain::process::{ProcessKind, ProcessStatus};
use crate::domain::resources::StoredLimits;
use crate::domain::sandbox::SandboxMode;
use crate::domain::session::{ClosedReason, SessionStatus};
use crate::domain::workspace::{CopyList, WorkspaceMode};

/// What every TEXT-backed type shares once it can be written as `&str` and read from a
/// `String`.
macro_rules! text_sql {
    ($name:ty, |$text:ident| $read:expr) => {
        impl<DB> ToSql<Text, DB> for $name
        where
            DB: Backend,
            str: ToSql<Text, DB>,
        {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
                <str as ToSql<Text, DB>>::to_sql(self.as_str(), out)
            }
        }

        impl<DB> FromSql<Text, DB> for $name
        where
            DB: Backend,
            String: FromSql<Text, DB>,
        {
            fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
                let $text = <String as FromSql<Text, DB>>::from_sql(value)?;
                $read
            }
        }

        impl<DB> Queryable<Text, DB> for $name
        where
            DB: Backend,
            Self: FromSql<Text, DB>,
        {
            type Row = Self;

            fn build(row: Self) -> deserialize::Result<Self> {
                Ok(row)
            }
        }

        impl<'a> AsExpression<Text> for &'a $name {
            type Expression = <&'a str as AsExpression<Text>>::Expression;

            fn as_expression(self) -> Self::Expression {
                <&'a str as AsExpression<Text>>::as_expression(self.as_str())
            }
        }

        impl<'a> AsExpression<Nullable<Text>> for &'a $name {
            type Expression = <&'a str as AsExpression<Nullable<Text>>>::Expression;

            fn as_expression(self) -> Self::Expression {
                <&'a str as AsExpression<Nullable<Text>>>::as_expression(self.as_str())
            }
        }
    };
}

/// Ids: stored text is taken as it is ([`SessionId::from_stored`]).
macro_rules! id_sql {
    ($($name:ident),+) => {$(
        text_sql!($name, |text| Ok($name::from_stored(text)));

        impl AsExpression<Text> for $name {
            type Expression = <String as AsExpression<Text>>::Expression;

            fn as_expression(self) -> Self::Expression {
                <String as AsExpression<Text>>::as_expression(String::from(self))
            }
        }

        impl AsExpression<Nullable<Text>> for $name {
            type Expression = <String as AsExpression<Nullable<Text>>>::Expression;

            fn as_expression(self) -> Self::Expression {
                <String as AsExpression<Nullable<Text>>>::as_expression(String::from(self))
            }
        }
    )+};
}

/// Enums: stored text must name a value.
macro_rules! enum_sql {
    ($($name:ident),+) => {$(
        text_sql!($name, |text| Ok(text.parse::<$name>()?));

        impl AsExpression<Text> for $name {
            type Expression = <&'static str as AsExpression<Text>>::Expression;

            fn as_expression(self) -> Self::Expression {
                <&'static str as AsExpression<Text>>::as_expression(self.as_str())
            }
        }

        impl AsExpression<Nullable<Text>> for $name {
            type Expression = <&'static str as AsExpression<Nullable<Text>>>::Expression;

            fn as_expression(self) -> Self::Expression {
                <&'static str as AsExpression<Nullable<Text>>>::as_expression(self.as_str())
            }
        }
    )+};
}

id_sql!(SessionId, ProjectId, AgentId, ExecutionId, RuleId, WebhookId, ProcessId, UserId, TokenId, LoginSessionId);
enum_sql!(
    SessionStatus,
    ClosedReason,
    AgentStatus,
    TriggerKind,
    ExecutionStatus,
    Decision,
    DecisionPoint,
    DecisionSource,
    SandboxMode,
    ProcessKind,
    ProcessStatus,
    WorkspaceMode,
    NodeState,
    NodeRole,
    Scope,
    AuditEvent,
    ActorKind
);

// A copy list is stored as the text it keeps; it was checked before it was stored.
text_sql!(CopyList, |text| Ok(CopyList::from_stored(text)));

impl AsExpression<Text> for CopyList {
    type Expression = <String as AsExpression<Text>>::Expression;

    fn as_expression(self) -> Self::Expression {
        <String as AsExpression<Text>>::as_expression(self.as_str().to_string())
    }
}

// A node list likewise.
text_sql!(NodeList, |text| Ok(NodeList::from_stored(text)));

impl AsExpression<Text> for NodeList {
    type Expression = <String as AsExpression<Text>>::Expression;

    fn as_expression(self) -> Self::Expression {
        <String as AsExpression<Text>>::as_expression(self.as_str().to_string())
    }
}

// A project's environment likewise (a JSON object).
text_sql!(ProjectEnv, |text| Ok(ProjectEnv::from_stored(text)));

impl AsExpression<Text> for ProjectEnv {
    type Expression = <String as AsExpression<Text>>::Expression;

    fn as_expression(self) -> Self::Expression {
        <String as AsExpression<Text>>::as_expression(self.as_str().to_string())
    }
}

// Kernel limits likewise (a JSON object; text this build cannot read is no limit).
text_sql!(StoredLimits, |text| Ok(StoredLimits::from_stored(text)));

impl AsExpression<Nullable<Text>> for StoredLimits {
    type Expression = <String as AsExpression<Nullable<Text>>>::Expression;

    fn as_expression(self) -> Self::Expression {
        <String as AsExpression<Nullable<Text>>>::as_expression(self.as_str().to_string())
    }
}

// An agent kind is stored by its name; a name this build cannot read fails the query.
text_sql!(AgentKind, |text| Ok(AgentKind::parse(&text)?));

impl AsExpression<Text> for AgentKind {
    type Expression = <String as AsExpression<Text>>::Expression;

    fn as_expression(self) -> Self::Expression {
        <String as AsExpression<Text>>::as_expression(self.as_str().to_string())
    }
}

impl AsExpression<Nullable<Text>> for AgentKind {
    type Expression = <String as AsExpression<Nullable<Text>>>::Expression;

    fn as_expression(self) -> Self::Expression {
        <String as AsExpression<Nullable<Text>>>::as_expression(self.as_str().to_string())
    }
}

#[cfg(test)]
mod tests {
    use diesel::connection::SimpleConnection;
    use diesel::prelude::*;

    use crate::db::schema::{projects, sessions};
    use crate::db::{self, DbConnection, StoreError};
    use crate::domain::ids::{ProjectId, SessionId};
    use crate::domain::session::{ClosedReason, SessionStatus};

    fn migrated() -> (tempfile::TempDir, DbConnection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut conn = db::open_sqlite(&dir.path().join("t.db"), 1000).expect("open");
        db::run_migrations(&mut conn).expect("migrate");
        (dir, DbConnection::Sqlite(conn))
    }

    #[test]
    fn typed_values_are_stored_as_the_text_they_had() {
        let (_dir, mut conn) = migrated();
        let project = ProjectId::new();
        let session = SessionId::new();
        conn.batch_execute(&format!(
            "INSERT INTO projects (id, name, folder_path, created_at, updated_at) VALUES ('{project}', 'p', '/p', 't', 't')"
        ))
        .expect("project");
        diesel::insert_into(sessions::table)
            .values((
                sessions::id.eq(&session),
                sessions::project_id.eq(&project),
                sessions::name.eq("n"),
                sessions::status.eq(SessionStatus::Compacting),
                sessions::created_at.eq("t"),
                sessions::last_active_at.eq("t"),
                sessions::closed_reason.eq(Some(ClosedReason::IdleTimeout)),
            ))
            .execute(&mut conn)
            .expect("insert");
        let (status, reason): (String, Option<String>) = sessions::table
            .select((sessions::status, sessions::closed_reason))
            .filter(sessions::id.eq(session.as_str()))
            .first(&mut conn)
            .expect("as text");
        assert_eq!((status.as_str(), reason.as_deref()), ("compacting", Some("idle_timeout")));
        let (id, status, reason): (SessionId, SessionStatus, Option<ClosedReason>) = sessions::table
            .select((sessions::id, sessions::status, sessions::closed_reason))
            .filter(sessions::status.eq_any(SessionStatus::LIVE))
            .first(&mut conn)
            .expect("typed");
        assert_eq!((id, status, reason), (session, SessionStatus::Compacting, Some(ClosedReason::IdleTimeout)));
        let owner: ProjectId = projects::table.select(projects::id).first(&mut conn).expect("project id");
        assert_eq!(owner, project);
    }

    #[test]
    fn unknown_stored_text_is_an_error_not_a_panic() {
        let (_dir, mut conn) = migrated();
        conn.batch_execute(
            "INSERT INTO projects (id, name, folder_path, created_at, updated_at) VALUES ('p', 'p', '/p', 't', 't');
             INSERT INTO sessions (id, project_id, name, status, created_at, last_active_at)
                 VALUES ('s', 'p', 'n', 'hibernating', 't', 't');",
        )
        .expect("seed");
        let read = db::sessions::find(&mut conn, &SessionId::from_stored("s"));
        let e = read.expect_err("an unknown status cannot be read");
        assert!(matches!(&e, StoreError::Other(m) if m.contains("status")), "{e:?}");
    }
}
