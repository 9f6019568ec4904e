#!/usr/bin/env bash
# Installs what the tests need, idempotently, into a cache folder outside the checkout:
#   - schemathesis (PyPI, pinned) in a Python virtualenv, for the OpenAPI fuzz test;
#   - the real Claude Code CLI (npm, pinned: the current one, and an older one for the
#     WebSocket bridge) for the end-to-end session tests;
#   - Debian's chromium (apt, only if missing) and the dashboard's npm packages (ui/, from its
#     lock file) for the dashboard's component and browser tests;
#   - Debian's bubblewrap (apt, only if missing): the OS sandbox the sessions run in;
#   - Debian's passt (apt, only if missing): pasta, the network of each sandbox;
#   - Debian's postgresql (apt, only if missing): the server the suite's second run uses.
# Re-running it is cheap: each step checks for the pinned version first.
# The cache folder is $CONDUIT_TEST_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/conduit-test.
set -euo pipefail

SCHEMATHESIS_VERSION="4.32.5"
CLAUDE_CODE_VERSION="2.1.330"
# The newest version verified to accept a local `--sdk-url` (the WebSocket bridge transport);
# a JavaScript build, so it needs `node` on PATH.
CLAUDE_CODE_BRIDGE_VERSION="2.1.39"
# The other agent CLIs the agent-kind tests drive (codex app-server, gemini --acp).
CODEX_VERSION="0.169.0"
GEMINI_CLI_VERSION="0.61.0"

cache="${CONDUIT_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conduit-test}"
mkdir -p "$cache"

venv="$cache/venv"
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '$SCHEMATHESIS_VERSION')" 2>/dev/null; then
    echo "test-setup: installing schemathesis $SCHEMATHESIS_VERSION into $venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
echo "test-setup: schemathesis $SCHEMATHESIS_VERSION ready ($venv/bin/schemathesis)"

# Each CLI version in its own prefix; the tests find them by path, never on PATH.
install_cli() {
    local version="$1"
    local dir="$cache/claude-code-$version"
    local cli="$dir/node_modules/.bin/claude"
    if ! "$cli" --version 2>/dev/null | grep -q "^$version "; then
        echo "test-setup: installing @anthropic-ai/claude-code@$version into $dir"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$version"
    fi
    echo "test-setup: Claude Code CLI $("$cli" --version) ready ($cli)"
}
install_cli "$CLAUDE_CODE_VERSION"
install_cli "$CLAUDE_CODE_BRIDGE_VERSION"

# Codex and Gemini CLI, each pinned in its own prefix. The version is read from the installed
# package.json: starting either CLI just to ask its version is slow and may write to HOME.
install_npm_cli() {
    local package="$1" version="$2" dir="$3"
    local manifest="$dir/node_modules/$package/package.json"
    if [ "$(node -p "require('$manifest').version" 2>/dev/null)" != "$version" ]; then
        echo "test-setup: installing $package@$version into $dir"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$package@$version"
    fi
    echo "test-setup: $package $version ready ($dir)"
}
install_npm_cli "@openai/codex" "$CODEX_VERSION" "$cache/codex-$CODEX_VERSION"
install_npm_cli "@google/gemini-cli" "$GEMINI_CLI_VERSION" "$cache/gemini-cli-$GEMINI_CLI_VERSION"

# Debian packages, installed with apt-get only when missing (root, or sudo).
apt_install() {
    local sudo_cmd=""
    if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# The OS sandbox every session runs in by default (and the sandbox tests).
if ! command -v bwrap >/dev/null; then
    echo "test-setup: installing bubblewrap (apt)"
    apt_install bubblewrap
fi
echo "test-setup: $(bwrap --version) ready ($(command -v bwrap))"

# pasta: each sandbox's own network namespace is connected through it (the sandbox tests use
# it; a sandboxed launch is refused without it).
if ! command -v pasta >/dev/null; then
    echo "test-setup: installing passt (apt)"
    apt_install passt
fi
echo "test-setup: pasta ready ($(command -v pasta))"

# PostgreSQL: the integration suite runs a second time against a real server
# (scripts/with-postgres.sh starts one in a temporary folder; no system service is used).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "test-setup: installing PostgreSQL (apt)"
    apt_install postgresql
fi
echo "test-setup: $(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/initdb ready"

# The dashboard's end-to-end test drives Debian's Chromium with playwright-core (browser
# downloads do not work everywhere; the distribution's package does).
if [ ! -x /usr/bin/chromium ]; then
    echo "test-setup: installing chromium (apt)"
    apt_install chromium
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
