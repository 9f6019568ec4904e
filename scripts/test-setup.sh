#!/usr/bin/env bash
# Installs what the tests need, idempotently, into a cache folder outside the checkout:
#   - schemathesis (PyPI, pinned) in a Python virtualenv, for the OpenAPI fuzz test;
#   - the real Claude Code CLI (npm, pinned) for the end-to-end session tests.
# Re-running it is cheap: each step checks for the pinned version first.
# The cache folder is $CONDUIT_TEST_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/conduit-test.
set -euo pipefail

SCHEMATHESIS_VERSION="4.32.5"
CLAUDE_CODE_VERSION="2.1.330"

cache="${CONDUIT_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conduit-test}"
mkdir -p "$cache"

venv="$cache/venv"
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '$SCHEMATHESIS_VERSION')" 2>/dev/null; then
    echo "test-setup: installing schemathesis $SCHEMATHESIS_VERSION into $venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
echo "test-setup: schemathesis $SCHEMATHESIS_VERSION ready ($venv/bin/schemathesis)"

cli_dir="$cache/claude-code-$CLAUDE_CODE_VERSION"
cli="$cli_dir/node_modules/.bin/claude"
if ! "$cli" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION "; then
    echo "test-setup: installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION into $cli_dir"
    npm install --prefix "$cli_dir" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
fi
echo "test-setup: Claude Code CLI $("$cli" --version) ready ($cli)"

# The dashboard's end-to-end test drives Debian's Chromium with playwright-core (browser
# downloads do not work everywhere; the distribution's package does).
if [ ! -x /usr/bin/chromium ]; then
    echo "test-setup: installing chromium (apt)"
    sudo_cmd=""
    if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
echo "test-setup: $(/usr/bin/chromium --version 2>/dev/null || echo 'chromium (version unknown)') ready (/usr/bin/chromium)"

# The dashboard's own packages (Vite, Vitest, playwright-core), from the committed lock file.
# Reinstalled only when package-lock.json changed since the last install.
ui_dir="$(cd "$(dirname "$0")/.." && pwd)/ui"
if [ ! -f "$ui_dir/node_modules/.package-lock.json" ] || [ "$ui_dir/package-lock.json" -nt "$ui_dir/node_modules/.package-lock.json" ]; then
    echo "test-setup: installing the dashboard's npm packages (npm ci in ui/)"
    npm ci --prefix "$ui_dir" --no-audit --no-fund --loglevel=error
fi
echo "test-setup: dashboard packages ready ($ui_dir/node_modules)"
