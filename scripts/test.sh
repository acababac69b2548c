#!/usr/bin/env bash
# The whole test suite (the README's test command; .ci/run execs this).
# Default nox sessions: lint, types, tests. Extra args go to nox, e.g.
#   bash scripts/test.sh -s tests -- -k sqlite
set -euo pipefail
exec bash "$(dirname "$0")/_nox.sh" "$@"
