#!/usr/bin/env bash
# The main job from a fresh checkout: installs nox, which builds a venv with the
# kernel and every plugin, then runs scripts/main-job.sh inside it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check nox
exec python3 -m nox -s demo "$@"
