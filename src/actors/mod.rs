//! The supervised actors. Each file: its messages first, then its state, then its handlers.

pub mod bridge;
pub mod bus;
pub mod janitor;
pub mod permissions;
pub mod registry;
pub mod session;
pub mod subscriber;
pub mod webhooks;
