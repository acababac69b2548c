"""``avo replay`` over every run this suite stored, and a tampered tool result caught.

Named ``zz`` so it runs after the other CLI tests: by then ``STORES`` lists
every SQLite file they wrote (interrupted, killed, resumed, cancelled and
finished runs, with a real HTTP provider and a third-party tool). Replaying
them must report no divergence: today's code does what it did then. It also
makes two runs of its own (tools, then a plain answer), so it checks runs
whichever other tests ran before it, or none.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from cli_kit import CLI, FAKE_ANSWER, STORES, write

TOOL_RUN = """
tools = ["glob", "read_file"]

[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {name = "glob", arguments = {pattern = "*.txt"}}
[[provider.settings.script]]
tool_call = {name = "read_file", arguments = {path = "notes.txt"}}
[[provider.settings.script]]
content = "notes.txt says hello"

[store]
location = "tools.db"
"""


def _own_runs(cli: CLI) -> Path:
    write(cli.cwd / "notes.txt", "hello\n")
    write(cli.cwd / "avo.toml", TOOL_RUN)
    done = cli("run", "read the notes", "--json")
    assert done.code == 0, done.err
    write(cli.cwd / "answer.toml", FAKE_ANSWER)
    assert cli("run", "just answer", "-c", "answer.toml", "-d", "tools.db").code == 0
    return cli.cwd / "tools.db"


def test_every_stored_run_replays_without_divergence(cli: CLI) -> None:
    def replay(store: Path) -> int:
        result = cli("replay", "--all", "--json", "-d", str(store))
        reports = json.loads(result.out) if result.out else []
        diverged = [r for r in reports if not r["ok"]]
        assert result.code == 0 and not diverged, (store, result.err, diverged)
        return len(reports)

    # the other tests' stores first, replayed from a folder without an avo.toml of its own
    for path in dict.fromkeys(STORES):
        if path.is_file():
            replay(path)
    own = replay(_own_runs(cli))
    assert own == 2, f"replayed {own} of this test's own 2 runs"


def _shown(text: str) -> str:
    """How the report quotes the read_file result holding ``text``."""
    return repr(
        json.dumps(
            {"content": text + "\n", "path": "notes.txt", "size": 6, "truncated": False},
            separators=(",", ":"),
            sort_keys=True,
        )
    )


def test_a_changed_tool_result_is_reported_where_it_happened(cli: CLI) -> None:
    store = _own_runs(cli)
    listing = json.loads(cli("runs", "list", "--json", "-d", str(store)).out)
    run_id = next(row["run_id"] for row in listing if row["task"] == "read the notes")
    assert cli("replay", run_id, "-d", str(store)).out.startswith(f"{run_id}  ok  (")

    tampered = cli.cwd.parent / "tampered.db"  # outside the workspace: not replayed as-is
    shutil.copy(store, tampered)
    with sqlite3.connect(tampered) as db:
        changed = db.execute(
            "UPDATE events SET payload = replace(payload, 'hello', 'goodbye') "
            'WHERE payload LIKE \'%"content":"hello%\' AND payload LIKE \'%"success":true%\''
        ).rowcount
    assert changed == 1

    events = json.loads(cli("runs", "inspect", run_id, "--json", "-d", str(tampered)).out)
    sequence = next(
        e["sequence"]
        for e in events["events"]
        if e["event_type"] == "tool_completed" and "goodbye" in json.dumps(e["payload"])
    )
    result = cli("replay", run_id, "-d", str(tampered))
    assert result.code == 1
    assert result.out.splitlines()[0] == (
        f"{run_id}  DIVERGED at event {sequence} (tool_completed): the transcript differs at "
        "message 4 (role tool, tool call "
        f"{events['events'][sequence - 1]['payload']['tool_call_id']}): the recorded run showed "
        f"the model {_shown('hello')}, replaying this result shows {_shown('goodbye')}"
    )
    as_json = json.loads(cli("replay", run_id, "--json", "-d", str(tampered)).out)[0]
    assert as_json["ok"] is False and as_json["divergence"]["sequence"] == sequence
