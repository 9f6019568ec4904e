#!/usr/bin/env bash
# Runs a benchmark in the release profile: scripts/bench.sh sessions (or permissions, streams,
# terminals, exec, workspaces, agents; agents needs the CLIs scripts/test-setup.sh installs)
# Builds the fake CLI it drives first. Figures are printed as ratios against baselines
# measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --examples
cargo bench --bench "${1:-sessions}"
