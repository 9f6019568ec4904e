#!/usr/bin/env bash
# Runs a benchmark in the release profile: scripts/bench.sh sessions (or permissions, streams,
# terminals, exec, workspaces, agents, usage, cluster, redact, login, keepers; agents needs the CLIs scripts/test-setup.sh
# installs)
# Builds the fake CLI it drives first. BENCH_POSTGRES=1: the service's database is PostgreSQL
# (a throwaway server, scripts/with-postgres.sh) instead of SQLite. Figures are printed as ratios against baselines
# measured in the same run. `cluster` (several nodes on one database) is PostgreSQL only: it always
# runs on a throwaway server, as BENCH_POSTGRES=1 does.
# scripts/bench.sh dashboard: the dashboard in headless Chromium against the old one
# (ui/e2e/bench.mjs; needs node, ui/node_modules and /usr/bin/chromium or CHROMIUM_PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-sessions}" = dashboard ]; then
  # The service (with the dashboard embedded) and the fake CLI.
  cargo build --release --bins --examples
  exec node ui/e2e/bench.mjs
fi
cargo build --release --examples
if [ "${BENCH_POSTGRES:-0}" = 1 ] || [ "${1:-sessions}" = cluster ]; then
  # On a throwaway PostgreSQL server, durable as a real one (fsync on).
  CONDUIT_PG_DURABLE=1 exec scripts/with-postgres.sh cargo bench --bench "${1:-sessions}"
fi
cargo bench --bench "${1:-sessions}"
