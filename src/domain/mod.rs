//! Plain Rust: the rules of the product, with no actix and no diesel.

pub mod cron;
pub mod decision;
pub mod events;
pub mod folders;
pub mod idleness;
pub mod launch;
pub mod names;
pub mod rules;
pub mod time;
pub mod validate;
