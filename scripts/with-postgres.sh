#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server: Debian's binaries, `initdb` into a
# temporary folder, `pg_ctl start` on a free loopback port, as an unprivileged user when run
# as root (initdb refuses root). The command finds the server in CONDUIT_TEST_POSTGRES_URL
# (superuser `postgres`, trust authentication, no database named: tests create their own).
# The server and its folder are removed when the command ends, however it ends.
#
#   scripts/with-postgres.sh cargo test --release --test api
set -euo pipefail

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
    echo "with-postgres: no PostgreSQL server binaries; run scripts/test-setup.sh" >&2
    exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/conduit-pg.XXXXXX")
as_owner=()
if [ "$(id -u)" = 0 ]; then
    chown nobody "$dir"
    as_owner=(runuser -u nobody --)
fi
stop() {
    "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

"${as_owner[@]}" "$pg_bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }

# Durability is not what the tests check: no fsync keeps a suite of many small databases fast
# (CONDUIT_PG_DURABLE=1 keeps PostgreSQL's defaults, for benchmarks). Enough connections for
# every test service's pool at once. The free port is picked before the server binds it, so
# another process may take it first: then another port.
fast="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
[ "${CONDUIT_PG_DURABLE:-0}" = 1 ] && fast=""
started=
for _ in 1 2 3; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    if "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
        "-p $port -c listen_addresses=127.0.0.1 -k $dir -c max_connections=600 $fast -c shared_buffers=256MB" \
        >/dev/null; then
        started=1
        break
    fi
done
[ -n "$started" ] || { cat "$dir/server.log" >&2; exit 1; }

export CONDUIT_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port"
echo "with-postgres: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
"$@"
