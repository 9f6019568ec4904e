//! Ids: one type per kind of row, so a session's id can never be passed where a project's is
//! meant. Each is a UUID held as its text (hyphenated, lower case), the way it is stored.
//!
//! Where ids come from decides how they are made:
//! - [`new`](SessionId::new) mints a fresh one (UUID v4) for a row being created;
//! - [`parse`](SessionId::parse) checks one a client sent (a path segment, a filter): it must be
//!   a UUID, in any of the spellings `uuid` accepts, and comes out in the stored spelling;
//! - [`from_stored`](SessionId::from_stored) takes one back from storage (or from something
//!   that read it there) as it is: every id the service stores was made by `new`, so reads are
//!   not checked again.
//!
//! On the wire an id is its text (`#[serde(transparent)]`), and `Debug` prints it as a string
//! (`"…"`), so messages that quote an id read as before.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Text that is not a UUID where an id was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} id {raw:?} is not a UUID")]
pub struct InvalidId {
    /// What the id was meant to name: `session`, `project`, ...
    pub kind: &'static str,
    pub raw: String,
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// What this id names, as messages say it.
            pub const KIND: &'static str = $kind;

            /// A fresh id (UUID v4).
            #[allow(clippy::new_without_default)]
            pub fn new() -> Self {
                $name(uuid::Uuid::new_v4().to_string())
            }

            /// An id a client sent: it must be a UUID; it comes back hyphenated, in lower case.
            pub fn parse(raw: &str) -> Result<Self, InvalidId> {
                uuid::Uuid::try_parse(raw)
                    .map(|u| $name(u.hyphenated().to_string()))
                    .map_err(|_| InvalidId { kind: $kind, raw: raw.to_string() })
            }

            /// An id read back from storage, taken as it is (see the module's doc).
            pub fn from_stored(text: impl Into<String>) -> Self {
                $name(text.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;

            fn from_str(raw: &str) -> Result<Self, InvalidId> {
                $name::parse(raw)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self.0.as_str(), f)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        /// Maps keyed by id can be looked up with the id's text.
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

id_type!(
    /// A Conduit session (one supervised CLI process and its record). Not the CLI's own
    /// session id, which is plain text the CLI reports.
    SessionId,
    "session"
);
id_type!(
    /// A project: a folder where sessions run.
    ProjectId,
    "project"
);
id_type!(
    /// A scheduled agent.
    AgentId,
    "agent"
);
id_type!(
    /// One run of a scheduled agent.
    ExecutionId,
    "execution"
);
id_type!(
    /// A permission rule.
    RuleId,
    "rule"
);
id_type!(
    /// A webhook.
    WebhookId,
    "webhook"
);
id_type!(
    /// A terminal: a shell in a PTY in a workspace (not stored; it lives as long as its shell).
    TerminalId,
    "terminal"
);
id_type!(
    /// A command or background process started in a workspace (not its pid).
    ProcessId,
    "process"
);
id_type!(
    /// A user: a name and password that signs in.
    UserId,
    "user"
);
id_type!(
    /// An API token (its id, never its secret).
    TokenId,
    "token"
);
id_type!(
    /// A dashboard sign-in (a cookie session; its id, never its secret).
    LoginSessionId,
    "login session"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_are_distinct_uuids_that_parse_back_to_themselves() {
        let (a, b) = (SessionId::new(), SessionId::new());
        assert_ne!(a, b);
        assert_eq!(SessionId::parse(a.as_str()), Ok(a.clone()));
        assert_eq!(a.as_str().parse::<SessionId>(), Ok(a));
    }

    #[test]
    fn parsing_accepts_any_uuid_spelling_and_gives_the_stored_one() {
        let id = ProjectId::parse("6F9619FF8B86D011B42D00C04FC964FF").expect("simple form, upper case");
        assert_eq!(id.as_str(), "6f9619ff-8b86-d011-b42d-00c04fc964ff");
        let braced = ProjectId::parse("{6f9619ff-8b86-d011-b42d-00c04fc964ff}").expect("braced");
        assert_eq!(braced, id);
    }

    #[test]
    fn text_that_is_not_a_uuid_is_refused_naming_the_kind() {
        let e = AgentId::parse("../etc").unwrap_err();
        assert_eq!(e, InvalidId { kind: "agent", raw: "../etc".to_string() });
        assert!(RuleId::parse("").is_err());
        assert!(ExecutionId::parse("123").is_err());
        assert!("nope".parse::<WebhookId>().is_err());
    }

    #[test]
    fn an_id_is_its_text_on_the_wire_in_messages_and_in_lookups() {
        let id = SessionId::from_stored("00000000-0000-4000-8000-000000000001");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"00000000-0000-4000-8000-000000000001\"");
        let back: SessionId = serde_json::from_str("\"00000000-0000-4000-8000-000000000001\"").unwrap();
        assert_eq!(back, id);
        assert_eq!(format!("{id}"), "00000000-0000-4000-8000-000000000001");
        assert_eq!(
            format!("No session with id {id:?}."),
            "No session with id \"00000000-0000-4000-8000-000000000001\"."
        );
        let mut map = std::collections::HashMap::new();
        map.insert(id.clone(), 1);
        assert_eq!(map.get("00000000-0000-4000-8000-000000000001"), Some(&1));
        assert_eq!(String::from(id), "00000000-0000-4000-8000-000000000001");
    }
}
