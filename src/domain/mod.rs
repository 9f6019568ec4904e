//! Plain Rust: the rules of the product, free of the actor runtime and of the database layer
//! (their types are stored through impls in `db::types`).

/// Text naming none of an enum's values: a stored value this build does not know, or a
/// client's typo. Never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {text:?}")]
pub struct UnknownValue {
    /// What the text was meant to be: `session status`, `closed reason`, ...
    pub what: &'static str,
    pub text: String,
}

/// The text forms of a fieldless enum stored as TEXT: `ALL`, `as_str`, `FromStr` (an
/// [`UnknownValue`] for anything else) and `Display`. The enum's serde attributes must spell
/// the same texts (each enum's tests check every variant both ways).
macro_rules! text_enum {
    ($name:ident, $what:literal, { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The text stored and sent for this value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::domain::UnknownValue;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err($crate::domain::UnknownValue { what: $what, text: other.to_string() }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// Checks that an enum's `as_str`, `FromStr` and serde agree on every variant, and that
/// unknown text is an error.
#[cfg(test)]
pub(crate) fn check_text_enum<T>(all: &[T], expected: &[&str])
where
    T: Copy
        + std::fmt::Debug
        + PartialEq
        + std::fmt::Display
        + std::str::FromStr<Err = UnknownValue>
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let texts: Vec<String> = all.iter().map(|v| v.to_string()).collect();
    assert_eq!(texts, expected, "every variant, in order");
    for (value, text) in all.iter().zip(expected) {
        assert_eq!(text.parse::<T>().ok(), Some(*value), "{text} parses back");
        assert_eq!(serde_json::to_string(value).unwrap(), format!("\"{text}\""), "serde writes {text}");
        assert_eq!(serde_json::from_str::<T>(&format!("\"{text}\"")).unwrap(), *value, "serde reads {text}");
    }
    for unknown in ["", "bogus", "IDLE_", " idle"] {
        let e = unknown.parse::<T>().expect_err("unknown text");
        assert_eq!(e.text, unknown);
    }
}

pub mod access;
pub mod agent;
pub mod agent_events;
pub mod agent_kind;
pub mod audit;
pub mod budget;
pub mod cluster;
pub mod credentials;
pub mod cron;
pub mod decision;
pub mod environment;
pub mod events;
pub mod folders;
pub mod idleness;
pub mod ids;
pub mod launch;
pub mod names;
pub mod offers;
pub mod prices;
pub mod process;
pub mod resources;
pub mod rules;
pub mod sandbox;
pub mod session;
pub mod terminal;
pub mod time;
pub mod usage;
pub mod validate;
pub mod workspace;
