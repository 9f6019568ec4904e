//! The supervised actors. Each file: its messages first, then its state, then its handlers.

pub mod registry;
pub mod session;
