#!/usr/bin/env bash
# The project's main job: a real `avo run` on the embedded default store (the
# SQLite file avo.db), driven by examples/avo.toml (a scripted provider calling
# real tools: no API key needed), then `avo runs inspect` of that run and
# `avo cost` of the token ledger the run's ledger hook wrote.
# Needs `avo` with the default plugins installed (scripts/demo.sh does that).
set -euo pipefail
cd "$(dirname "$0")/.."
DB="${AVO_DEMO_DATABASE:-avo.db}"
TASK="${1:-Find where the plugin manager is defined and summarise what it does.}"

echo "== avo run (config examples/avo.toml, store $DB)"
# The answer is on stdout; the run id, progress and the summary on stderr.
summary="$(mktemp)"
trap 'rm -f "$summary"' EXIT
set +e
avo run "$TASK" --config examples/avo.toml -d "$DB" 2> >(tee "$summary" >&2)
status=$?
set -e
wait
if [ "$status" -ne 0 ]; then
    echo "main job: avo run exited with $status" >&2
    exit "$status"
fi
run_id="$(sed -n 's/^run id: *//p' "$summary" | tail -n 1)"
if [ -z "$run_id" ]; then
    echo "main job: no run id in the output of avo run" >&2
    exit 1
fi

echo
echo "== avo runs inspect $run_id"
avo runs inspect "$run_id" -d "$DB"

echo
echo "== avo cost"
avo cost -d "$DB"
