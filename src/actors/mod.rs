//! The supervised actors. Each file: its messages first, then its state, then its handlers.

pub mod agent;
pub mod agent_run;
pub mod agents;
mod agents_sync;
pub mod audit;
pub mod bridge;
pub mod budgets;
pub mod bus;
pub mod cluster;
pub mod feed;
pub mod janitor;
pub mod limits;
pub mod locks;
pub mod login_guard;
pub mod network_pool;
pub mod outbox;
pub mod permissions;
pub mod recovery;
pub mod registry;
pub mod request_limits;
pub mod session;
pub mod subscriber;
pub mod terminal;
pub mod turn_gate;
pub mod webhooks;
pub mod workbench;
