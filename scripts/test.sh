#!/usr/bin/env bash
# Runs every test: installs what the tests need (idempotent, cached outside the checkout),
# then the unit and integration tests in the release profile, so the binary the tests
# exercise is the one `cargo run --release` runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/test-setup.sh
# The dashboard's component tests (Vitest); its end-to-end run in Chromium is a Rust
# integration test (tests/api/dashboard.rs), below.
npm --prefix ui test -- --run
# The session tests drive examples/fake_cli as a plain binary (cargo test alone builds it
# only under a hashed name).
cargo build --release --examples
# A failing test's message is the last thing it prints: a backtrace (the CI's environment may
# ask for one) would push it out of the tail a CI log shows.
export RUST_BACKTRACE=0
cargo test --release --all-targets
# The integration suite again, on PostgreSQL: a throwaway server, a database per test.
scripts/with-postgres.sh cargo test --release --test api
