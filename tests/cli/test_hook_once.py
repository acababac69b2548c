"""A pre-tool hook sees each call once, even when the run pauses and resumes elsewhere.

``avo run`` fires a command hook (a real subprocess) that logs each call it sees
and rewrites the call's arguments, then pauses for approval and exits;
``avo runs approve`` and ``avo runs resume`` (two more processes) finish the
run. The hook ran once, and the tool ran with the hook's arguments.

``avo replay`` runs no hooks: it plays back the arguments the hook gave (recorded
with the call's approval), so the run replays without divergence and the hook
is not run again (test_zz_replay replays this store too).
"""

from __future__ import annotations

import json

from cli_kit import CLI, write

HOOK = """
import json, sys
event = json.load(sys.stdin)
tool = event["tool"]
with open("hook-calls.log", "a") as log:
    log.write(tool["tool_call_id"] + " again=" + str(event.get("again", False)) + "\\n")
arguments = dict(tool["arguments"], content=tool["arguments"]["content"] + "checked\\n")
print(json.dumps({"decision": "allow", "arguments": arguments}))
"""

CONFIG = """
tools = [{name = "write_file", settings = {workspace = "."}}]
hooks = [{name = "command", settings = {command = ["python3", "hook.py"], name = "checker"}}]
[store]
location = "runs.db"
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {name = "write_file", arguments = {path = "notes.md", content = "hello\\n"}}
[[provider.settings.script]]
content = "all done"
"""


def test_a_rewriting_hook_runs_once_across_a_pause_and_a_resume(cli: CLI) -> None:
    write(cli.cwd / "hook.py", HOOK)
    write(cli.cwd / "avo.toml", CONFIG)
    first = cli("run", "write notes", "--json")
    assert first.code == 3, first.out + first.err  # paused for approval
    run_id = json.loads(first.out)["run_id"]
    pending = json.loads(cli("runs", "list", "--pending", "--json").out)
    [row] = pending
    assert row["arguments"]["content"] == "hello\nchecked\n"  # the person sees the hook's version
    assert cli("runs", "approve", run_id).code == 0
    resumed = cli("runs", "resume", run_id, "--json")
    assert resumed.code == 0, resumed.out + resumed.err
    assert (cli.cwd / "notes.md").read_text() == "hello\nchecked\n"  # rewritten once
    calls = (cli.cwd / "hook-calls.log").read_text().splitlines()
    assert calls == [f"{row['tool_call_id']} again=False"]  # the hook saw the call once
    replayed = cli("replay", run_id)
    assert replayed.code == 0 and replayed.out.startswith(f"{run_id}  ok  ("), replayed.out
    assert (cli.cwd / "hook-calls.log").read_text().splitlines() == calls  # no hook ran
