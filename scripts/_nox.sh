#!/usr/bin/env bash
# Run nox with the given arguments, installing it first if needed: into the
# current interpreter when pip may write there, else into .nox/_bootstrap (for
# a system Python that is "externally managed", PEP 668).
set -euo pipefail
cd "$(dirname "$0")/.."
if python3 -m nox --version >/dev/null 2>&1; then
    exec python3 -m nox "$@"
fi
if python3 -m pip install -q --disable-pip-version-check nox 2>/dev/null; then
    exec python3 -m nox "$@"
fi
if [ ! -x .nox/_bootstrap/bin/nox ]; then
    python3 -m venv .nox/_bootstrap
    .nox/_bootstrap/bin/python -m pip install -q --disable-pip-version-check nox
fi
exec .nox/_bootstrap/bin/nox "$@"
