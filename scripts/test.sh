#!/usr/bin/env bash
# The whole test suite (the README's test command; .ci/run execs this).
# Default nox sessions: lint, types, tests. Extra args go to nox, e.g.
#   bash scripts/test.sh -s tests -- -k sqlite
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check nox
exec python3 -m nox "$@"
