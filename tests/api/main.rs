//! The integration test binary: every test starts the real application on a random loopback
//! port with a fresh SQLite file and project root of its own, so tests run in parallel.

mod helpers;

mod agents_api;
mod agents_other;
mod agents_real;
mod backpressure;
mod bodies;
mod bridge_real;
mod changes;
mod cli;
mod containment;
mod dashboard;
mod dashboard_pages;
mod exec;
mod folders;
mod health;
mod hostile;
mod janitor_agents;
mod janitor_fake;
mod janitor_real;
mod memory;
mod migrations;
mod openapi;
mod permissions_real;
mod processes;
mod projects;
mod readme;
mod rebuild;
mod rules;
mod sandbox_real;
mod schemathesis;
mod security;
mod sessions_api;
mod sessions_fake;
mod sessions_real;
mod streams;
mod streams_catchup;
mod support;
mod terminals;
mod terminals_end;
mod transcript;
mod webhooks;
mod workspaces_api;
mod workspaces_real;
mod writer;
