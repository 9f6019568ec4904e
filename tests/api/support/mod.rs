//! Test rigs shared by the session tests: the fake Messages API, the real CLI's location and
//! quiet environment, and a `conduit` binary running as its own process.

pub mod agent_clis;
pub mod browser;
pub mod database;
pub mod fake_api;
pub mod fake_models;
pub mod pg_server;
pub mod procs;
pub mod receiver;
pub mod service;
