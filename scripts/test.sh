#!/usr/bin/env bash
# Runs every test: installs what the tests need (idempotent, cached outside the checkout),
# then the unit and integration tests in the release profile, so the binary the tests
# exercise is the one `cargo run --release` runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/test-setup.sh
cargo test --release --all-targets
