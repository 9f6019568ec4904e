//! Lines from the CLI. Every line is kept raw; the fields Conduit acts on are lifted out.
//! Unknown types and unknown fields are normal (they appear between CLI versions), never errors.

mod header;
mod kinds;
mod limits;
pub mod normalize;
mod parse;

pub use kinds::{Incoming, Kind, LimitInfo, TurnResult};
pub use limits::{limit_of, LimitHit, LimitKind};
pub use parse::parse;

#[cfg(test)]
mod tests;
