#!/usr/bin/env bash
# Start the services the test suite needs; safe to run again and again.
#
# - Installs the Debian packages the tests need when they are missing and we
#   are root: postgresql (the avo-postgres tests) and bubblewrap (the bwrap
#   sandbox tests), chromium (avo-ui's browser tests drive /usr/bin/chromium
#   with Playwright; no browser is downloaded). `apt-get update` runs once,
#   only when something is missing.
# - Initialises a throwaway PostgreSQL cluster under $AVO_TEST_SERVICES_DIR
#   (default /tmp/avo-test-services), listening on 127.0.0.1 only, port
#   $AVO_TEST_POSTGRES_PORT (default 55432), trust auth, fsync off (test data
#   only). PostgreSQL refuses to run as root, so as root it runs as `postgres`.
# - Creates the database `avo_test`, writes the DSN to
#   $AVO_TEST_SERVICES_DIR/postgres.dsn and prints it.
#
# Tests read AVO_TEST_POSTGRES_DSN, else that file; with neither they skip.
# - Installs the pinned npm MCP packages (scripts/ensure-mcp-interop.sh).
# Stop the cluster with: scripts/ensure-services.sh stop
set -euo pipefail

SERVICES_DIR="${AVO_TEST_SERVICES_DIR:-/tmp/avo-test-services}"
PG_PORT="${AVO_TEST_POSTGRES_PORT:-55432}"
PG_DB="avo_test"
PG_DIR="$SERVICES_DIR/postgres"
PG_DATA="$PG_DIR/data"
PG_SOCK="$PG_DIR/socket"
PG_LOG="$PG_DIR/server.log"
DSN_FILE="$SERVICES_DIR/postgres.dsn"

log() { echo "ensure-services: $*" >&2; }
die() { log "error: $*"; exit 1; }

pg_bindir() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
        echo "$dir"
    fi
}

install_packages() {
    local missing=()
    [[ -n "$(pg_bindir)" ]] || missing+=(postgresql)
    command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
    [[ -x /usr/bin/chromium ]] || missing+=(chromium)
    ((${#missing[@]} == 0)) && return 0
    if [[ "$(id -u)" != 0 ]]; then
        die "missing Debian packages: ${missing[*]}; install them (sudo apt-get install -y ${missing[*]}) or run this script as root"
    fi
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # Install both whenever either is missing: one apt run, and the set stays
    # the one the test suite documents.
    apt-get install -y -qq --no-install-recommends postgresql bubblewrap >/dev/null
    if [[ ! -x /usr/bin/chromium ]]; then
        apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
    fi
}

# Run a command as the cluster owner: `postgres` when we are root.
as_owner() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

server_ready() {
    "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -d postgres -U postgres >/dev/null 2>&1
}

stop_cluster() {
    local bin
    bin="$(pg_bindir)"
    if [[ -n "$bin" && -f "$PG_DATA/postmaster.pid" ]]; then
        as_owner "$bin/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null
        log "stopped PostgreSQL in $PG_DATA"
    fi
    rm -f "$DSN_FILE"
}

if [[ "${1:-}" == "stop" ]]; then
    stop_cluster
    exit 0
fi

install_packages
BIN="$(pg_bindir)"
[[ -n "$BIN" ]] || die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin"

mkdir -p "$SERVICES_DIR"
chmod 755 "$SERVICES_DIR"
if [[ "$(id -u)" == 0 ]]; then
    getent passwd postgres >/dev/null || die "user 'postgres' does not exist (the postgresql package creates it)"
fi

if [[ -f "$PG_DATA/postmaster.pid" ]] && server_ready \
    && as_owner "$BIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
    log "PostgreSQL already running in $PG_DATA on 127.0.0.1:$PG_PORT"
else
    if server_ready; then
        die "port $PG_PORT on 127.0.0.1 is taken by another server; set AVO_TEST_POSTGRES_PORT to a free port"
    fi
    # A cluster made by another major version cannot be started by this one;
    # it only ever held test data, so start over.
    major="$(basename "$(dirname "$BIN")")"
    if [[ -f "$PG_DATA/PG_VERSION" && "$(cat "$PG_DATA/PG_VERSION")" != "$major" ]]; then
        log "discarding a PostgreSQL $(cat "$PG_DATA/PG_VERSION") test cluster (server is $major)"
        rm -rf "$PG_DIR"
    fi
    if [[ ! -f "$PG_DATA/PG_VERSION" ]]; then
        rm -rf "$PG_DIR"
        mkdir -p "$PG_DATA" "$PG_SOCK"
        [[ "$(id -u)" == 0 ]] && chown -R postgres: "$PG_DIR"
        chmod 700 "$PG_DATA"
        log "initialising a throwaway cluster in $PG_DATA"
        as_owner "$BIN/initdb" -D "$PG_DATA" -U postgres --auth=trust -E UTF8 --no-locale \
            --no-sync >/dev/null
    fi
    # Nothing answers on our port, so a pid file is left over from a killed
    # server (its pid may even belong to another process by now): drop it,
    # or it would block the start.
    rm -f "$PG_DATA/postmaster.pid"
    log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
    opts="-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_SOCK -c max_connections=200"
    opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    if ! as_owner "$BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -o "$opts" -w -t 60 start >/dev/null; then
        tail -n 20 "$PG_LOG" >&2 || true
        die "PostgreSQL did not start; see $PG_LOG"
    fi
fi

psql_q() { as_owner "$BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc "$1"; }
if [[ "$(psql_q "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")" != 1 ]]; then
    psql_q "CREATE DATABASE $PG_DB" >/dev/null
    log "created database $PG_DB"
fi

# The pinned third-party MCP servers and conformance suite the avo-mcp tests
# run (npm); its test fixture installs them too, and fails loudly there.
bash "$(dirname "$0")/ensure-mcp-interop.sh" >/dev/null \
    || log "MCP interop packages not installed now (exit $?); the avo-mcp tests will retry"

DSN="postgresql://postgres@127.0.0.1:$PG_PORT/$PG_DB"
echo "$DSN" >"$DSN_FILE.tmp"
chmod 644 "$DSN_FILE.tmp"
mv "$DSN_FILE.tmp" "$DSN_FILE"
echo "$DSN"
