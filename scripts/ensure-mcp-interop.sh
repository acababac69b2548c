#!/usr/bin/env bash
# Install the third-party MCP software the avo-mcp interop and conformance
# tests run against: `npm ci` of plugins/mcp/tests/interop/package-lock.json
# (@modelcontextprotocol/server-everything, @modelcontextprotocol/conformance,
# pinned) into $AVO_TEST_SERVICES_DIR/mcp-interop/<hash of the lock file>.
# Idempotent and safe to run concurrently (flock); prints the install dir.
# (The Python servers, e.g. mcp-server-time, are pinned in avo-mcp's `test`
# extra and installed with the test venv.)
#
# Exit 3 when node or npm is missing: the tests then skip, saying so.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$ROOT/plugins/mcp/tests/interop"
SERVICES_DIR="${AVO_TEST_SERVICES_DIR:-/tmp/avo-test-services}"

log() { echo "ensure-mcp-interop: $*" >&2; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    log "node/npm not found; the MCP interop and conformance tests will skip"
    exit 3
fi

hash="$(cat "$SRC/package.json" "$SRC/package-lock.json" | sha256sum | cut -c1-16)"
DEST="$SERVICES_DIR/mcp-interop/$hash"
mkdir -p "$SERVICES_DIR/mcp-interop"
exec 9>"$SERVICES_DIR/mcp-interop/.lock"
flock 9
if [[ ! -f "$DEST/.installed" ]]; then
    log "installing pinned MCP packages into $DEST"
    rm -rf "$DEST"
    mkdir -p "$DEST"
    cp "$SRC/package.json" "$SRC/package-lock.json" "$DEST/"
    (cd "$DEST" && npm ci --no-audit --no-fund --loglevel=error >&2)
    touch "$DEST/.installed"
fi
echo "$DEST"
