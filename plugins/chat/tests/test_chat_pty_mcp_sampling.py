"""An MCP server's sampling request that a person must allow, asked in the chat.

The SDK-written test server's ``summarize`` asks the client's model for a summary
(``sampling/createMessage``). A ``[permission]`` rule asks about ``mcp_sampling``:
the run pauses durably with the question, the chat shows the request's text, and
the answer decides whether the run's model answers the server.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from chat_kit import Place
from pty_kit import Terminal

SERVER = Path(__file__).resolve().parents[2] / "mcp" / "tests" / "sdk_server.py"

CONFIG = """
[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {{name = "sdk__summarize", arguments = {{text = "a very long story"}}}}

[[provider.settings.script]]
content = "a short story"

[[provider.settings.script]]
content = "summarized"

[permission]
mode = "bypass_permissions"
[[permission.ask]]
tool = "mcp_sampling"
reason = "servers use the model only when a person allows it"

[store]
location = "chat.db"

[mcp]
user_servers = false
[mcp.servers.sdk]
command = {command}
"""


def _tool_output(place: Place) -> str:
    [run] = place.runs()
    trace = subprocess.run(
        [sys.executable, "-m", "avo.cli", "runs", "inspect", "--json", str(run["run_id"])],
        cwd=place.workspace,
        env=place.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    results = [
        json.dumps(event["payload"])
        for event in json.loads(trace)["events"]
        if event["event_type"] in ("tool_completed", "tool_failed")
    ]
    return "\n".join(results)


RUNNING = re.compile(r"sdk__summarize a very long story +[0-9.]+ s")


def _asked(place: Place, mode: str) -> Terminal:
    config = CONFIG.format(command=json.dumps([sys.executable, str(SERVER)]))
    if mode == "default":  # no rule: the mode asks about the call, then about sampling
        config = config.replace('mode = "bypass_permissions"', 'mode = "default"')
        config = re.sub(r"\[\[permission\.ask\]\]\n.*\n.*\n", "", config)
    place.config(config)
    term = place.terminal("chat")
    term.wait_for("/help lists commands")
    term.enter("summarize the story")
    if mode == "default":
        term.wait_for("approve sdk__summarize?")
        term.wait_for("approve? y / n")
        term.enter("y")
    term.wait_for("sdk asks: may it use the run's model to answer 'a very long story'", timeout=60)
    term.wait_for("user: a very long story")  # what the model would read, in full
    term.wait_for("allow (a boolean, required)")
    term.wait_for("answer (Ctrl-C: later)")
    [run] = place.runs()
    assert run["state"] == "paused"  # durably, before anyone answered
    term.settle(1.5)
    # The call stopped to ask: no line says it is still running while the question waits.
    assert not RUNNING.search(term.display()), term.display()
    return term


def test_yes_lets_the_runs_model_answer_the_server(place: Place) -> None:
    term = _asked(place, "default")
    term.enter("yes")
    term.wait_for("summarized", timeout=60)
    term.wait_for("✓ sdk__summarize")
    term.ctrl("d")
    assert term.wait_exit() == 0
    assert "summary: a short story" in _tool_output(place)
    assert [r["state"] for r in place.runs()] == ["completed"]


def test_no_refuses_the_sampling_and_the_run_goes_on(place: Place) -> None:
    term = _asked(place, "bypass_permissions")
    term.enter("no")
    term.wait_for("✗ sdk__summarize")
    term.wait_for("a short story", timeout=60)  # the model's next turn, after the refusal
    term.ctrl("d")
    assert term.wait_exit() == 0
    output = _tool_output(place)
    assert "was not approved (the person said no)" in output, output
    assert "summary: a short story" not in output
    assert [r["state"] for r in place.runs()] == ["completed"]
