#!/usr/bin/env bash
# The main job from a fresh checkout: nox builds a venv with the kernel and
# every plugin, then runs scripts/main-job.sh inside it.
set -euo pipefail
exec bash "$(dirname "$0")/_nox.sh" -s demo "$@"
