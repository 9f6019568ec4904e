//! Conduit: an orchestration service for coding-agent CLIs.
//!
//! `main.rs` is thin; everything lives here so integration tests can build the real
//! application on port 0 ([`startup::Application`]).

pub mod accounts;
pub mod actors;
pub mod cli;
pub mod config;
pub mod db;
pub mod domain;
pub mod error;
pub mod http;
pub mod keeper;
pub mod peer_tls;
pub mod process;
pub mod protocol;
pub mod redact;
pub mod sandbox;
pub mod secrets;
pub mod startup;
pub mod supervisor;
pub mod telemetry;
pub mod terminal;
pub mod transport;
pub mod workspace;
