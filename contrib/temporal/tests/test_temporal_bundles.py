"""Per-run bundles on Temporal: the ``mcp`` bundle's servers start on the workers.

Before, the workflow set a run's bundles up in its own code: the sandbox
refused the MCP server's subprocess, the bundle recorded "did not start: " and
the run completed with the model's call to the server's tool failing as "not
registered". Now a worker sets them up (``avo.bundles`` activity) and the
workflow offers their tools, whose calls are ``avo.tool`` activities under the
effect ledger. The server here (``avo_temporal_testmcp``) serves the test's
non-idempotent ``append_line`` over stdio as ``lines__append_line``.
Bundles with request shapers or hooks stay refused, at submit and at start.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from temporal_fleet import Fleet, submit
from test_temporal_progress import _replay

from avo.approval import Answer
from avo.compose import open_store
from avo.events import AgentEvent, EventType, RunLogState
from avo.ops import answer_requests

TOOL = "lines__append_line"


def _mcp_config(fleet: Fleet, *, calls: int = 1, delay: float = 0.0) -> Path:
    effects = fleet.root / "mcp-effects.txt"
    server = [sys.executable, "-m", "avo_temporal_testmcp", str(effects), str(delay)]
    fleet.write_config(
        calls=calls,
        provider_settings=f'tool = "{TOOL}"\n',
        extra=(
            '[mcp]\nuser_servers = false\nprogress = "log"\n[mcp.servers.lines]\n'
            f'command = {json.dumps(server)}\nenv = {{PYTHONPATH = "{fleet.plugins}"}}\n'
        ),
    )
    return effects


async def _events(fleet: Fleet, run_id: str) -> list[AgentEvent]:
    store = open_store(fleet.store)
    try:
        return await store.get_events(run_id)
    finally:
        await store.close()


def _wait(fleet: Fleet, run_id: str, done: object, seconds: float = 180) -> list[AgentEvent]:
    deadline = time.monotonic() + seconds
    while True:
        events = asyncio.run(_events(fleet, run_id))
        if done(events):  # type: ignore[operator]
            return events
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.2)


def _servers(effects: Path) -> list[int]:
    """Pids of the test MCP server processes writing ``effects``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"avo_temporal_testmcp" in cmdline and str(effects).encode() in cmdline:
            found.append(int(entry.name))
    return found


def test_a_run_on_temporal_calls_an_mcp_servers_tool_on_a_worker(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    effects = _mcp_config(fleet, calls=2)
    fleet.start_worker()
    done = fleet.avo("run", "--json", "omega", timeout=180)
    result = json.loads(done.stdout)
    assert result["status"] == "completed" and result["output"] == "omega done", done.stdout
    assert effects.read_text() == "omega 0\nomega 1\n"  # each effect once, by the server
    assert not fleet.effects.exists()  # not the worker's own append_line

    events = asyncio.run(_events(fleet, result["run_id"]))
    RunLogState.from_events(result["run_id"], events)
    (bundle,) = events[0].payload["bundles"]
    assert bundle["name"] == "mcp" and bundle["tools"] == [TOOL], bundle
    assert "problems" not in bundle
    completed = [e.payload for e in events if e.event_type is EventType.TOOL_COMPLETED]
    assert [p["name"] for p in completed] == [TOOL, TOOL]
    assert "omega 1" in completed[1]["result"]["output"]

    deadline = time.monotonic() + 30  # the run ended: its server was stopped
    while _servers(effects):
        assert time.monotonic() < deadline, _servers(effects)
        time.sleep(0.2)
    monkeypatch.syspath_prepend(str(fleet.plugins))
    asyncio.run(_replay(fleet, result["run_id"]))  # the same tools, without a server


def test_a_worker_killed_mid_call_leaves_the_mcp_effect_to_a_person(fleet: Fleet) -> None:
    effects = _mcp_config(fleet, delay=4.0)
    first = fleet.start_worker()
    run_id = asyncio.run(submit(fleet, "kappa"))
    deadline = time.monotonic() + 120
    while not (effects.exists() and effects.read_text()):  # the call is under way
        assert time.monotonic() < deadline, fleet.logs()
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    fleet.start_worker()  # sets the run's bundles up itself when the call moves to it

    def asked(events: list[AgentEvent]) -> bool:
        return any(e.event_type is EventType.HUMAN_INPUT_REQUESTED for e in events)

    events = _wait(fleet, run_id, asked)
    (request,) = [e for e in events if e.event_type is EventType.HUMAN_INPUT_REQUESTED]
    assert request.payload["rule"] == "outcome_unknown", request.payload
    call_id = request.payload["tool_call_id"]

    async def deny() -> None:
        store = open_store(fleet.store)
        try:
            answer = Answer.deny("it already happened", by="test")
            await answer_requests(store, run_id, {call_id: answer}, environ={})
        finally:
            await store.close()

    asyncio.run(deny())

    def ended(events: list[AgentEvent]) -> bool:
        return any(e.event_type is EventType.RUN_COMPLETED for e in events)

    events = _wait(fleet, run_id, ended)
    RunLogState.from_events(run_id, events)
    assert events[-1].payload["output"] == "kappa done", events[-1].payload
    time.sleep(4.5)  # the killed worker's server may still finish its write
    assert effects.read_text().strip() == "kappa 0"  # once: the call was never run again
    resumed = [e for e in events if e.event_type is EventType.RUN_RESUMED]
    assert resumed and resumed[-1].payload["bundles"][0]["tools"] == [TOOL]


def test_a_bundle_with_shapers_is_refused_at_submit_and_at_worker_start(fleet: Fleet) -> None:
    fleet.write_config(calls=1, extra="[context]\nwindow = 100000\n")  # the compaction bundle
    done = fleet.avo("run", "omega", check=False, timeout=60)  # no worker: it would wait
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)  # a usage error
    assert "avo run --engine temporal" in done.stderr
    assert "bundle 'compaction' ([context]" in done.stderr, done.stderr
    assert "run such runs in process" in done.stderr, done.stderr

    worker = fleet.start_worker()
    assert worker.wait(timeout=90) == 2, fleet.logs()
    log = fleet.logs()
    assert "avo worker --engine temporal" in log and "bundle 'compaction'" in log, log


def test_a_disabled_bundle_table_is_not_refused(fleet: Fleet) -> None:
    fleet.write_config(calls=1, extra='[context]\npolicy = "none"\n[mcp]\nenabled = false\n')
    fleet.start_worker()
    done = fleet.avo("run", "--json", "delta", timeout=180)
    assert json.loads(done.stdout)["status"] == "completed", done.stdout
    assert fleet.effects.read_text() == "delta 0\n"
