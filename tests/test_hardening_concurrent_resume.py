"""Two resumes of one run started together: one drives it, the other is refused (issue 13, item 1).

Real processes, a real store (a SQLite file, and PostgreSQL when the test
server is up), real signals. A run is started with ``avo run`` and interrupted
with SIGINT while its tool waits, so it is paused and resumable. Then two
resumes start at the same moment. Both must not drive it: exactly one does
(its tool waits on a gate the test opens only after the other has given up),
the other is refused with an error naming the holder, and the log ends with
one TOOL_STARTED per call and the run completed.

Which part each test covers:

- ``test_two_python_resumes...``: ``AgentRuntime.resume`` takes the run's
  lease by default (the kernel side, this item). Without it both processes
  drive and the loser fails later on a refused write, not on the lease.
- ``test_two_cli_resumes...``: ``avo runs resume`` (``avo.ops.resume``) holds
  the lease while it drives through ``AgentRuntime.resume``.
- Under both, the store refuses a batch numbered from an out-of-date view
  before storing anything (the store side of this item, avo-sqlite and
  avo-postgres), so nothing a loser wrote could corrupt the log either way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

GATE = """
import asyncio
import os
from pathlib import Path

from pydantic import BaseModel
from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides


class Args(BaseModel):
    n: int


async def wait_at_gate(args: Args) -> str:
    gates = Path(os.environ["AVO_TEST_GATES"])
    (gates / f"entered-{args.n}-{os.getpid()}").touch()
    while not (gates / f"open-{args.n}").exists():
        await asyncio.sleep(0.02)
    return f"passed gate {args.n}"


def make(settings):
    from avo.tools import FunctionTool

    return FunctionTool(
        name="gate", description="Wait until the test opens gate n.", arguments_model=Args,
        function=wait_at_gate, risk=ToolRisk.INSPECT,
    )


plugin = provides(ToolSpec(name="gate", factory=make, risk=ToolRisk.INSPECT))
"""

CONFIG = """
tools = ["gate"]
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {{name = "gate", arguments = {{n = 1}}}}
[[provider.settings.script]]
tool_call = {{name = "gate", arguments = {{n = 2}}}}
[[provider.settings.script]]
content = "done"
[store]
location = "{location}"
"""

# Resume from Python, as an application would: the provider comes back from the
# checkpoint, the tool from the installed plugin; the store is opened by location.
PY_RESUME = """
import asyncio, json, sys
from avo import AgentRuntime
from avo.compose import open_store
from avo.exceptions import RunBusyError
from avo.providers.fake import FakeProvider
from avo_gate.plugin import make

async def main(location, run_id):
    store = open_store(location)
    try:
        checkpoint = await store.get_latest_checkpoint(run_id)
        runtime = AgentRuntime(
            provider=FakeProvider.from_snapshot(checkpoint.provider_metadata),
            tools=[make({})],
            event_store=store,
        )
        try:
            result = await runtime.resume(run_id)
        except RunBusyError as exc:
            print(json.dumps({"busy": str(exc), "owner": exc.owner}))
            return 3
        print(json.dumps({"status": result.status.value}))
        return 0
    finally:
        await store.close()

sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
"""

GUARD_SECONDS = 120.0


def _env(venv: Any, gates: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    env.pop("PYTHONPATH", None)
    env.update(
        {
            "AVO_TEST_GATES": str(gates),
            "AVO_PLUGINS_CACHE": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    return env


def _wait_for(predicate: Any, what: str, procs: list[subprocess.Popen[str]] = ()) -> Any:  # type: ignore[assignment]
    deadline = time.monotonic() + GUARD_SECONDS
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    for proc in procs:
        proc.kill()
    raise AssertionError(f"timed out waiting for {what}")


def _interrupted_run(venv: Any, gates: Path, location: str) -> str:
    """``avo run`` until its first tool waits, then SIGINT: a paused, resumable run."""
    (venv.cwd / "avo.toml").write_text(CONFIG.format(location=location))
    env = _env(venv, gates)
    proc = subprocess.Popen(
        [str(venv.python), "-m", "avo.cli", "run", "open the gates"],
        cwd=venv.cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: list(gates.glob("entered-1-*")), "the first tool call", [proc])
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=GUARD_SECONDS)
    (gates / "open-1").touch()
    run_id = next(
        (line.split()[-1] for line in (out + err).splitlines() if line.startswith("run id:")),
        None,
    )
    assert run_id, out + err
    listed = subprocess.run(
        [str(venv.python), "-m", "avo.cli", "runs", "list", "-d", location],
        cwd=venv.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        check=False,
    )
    assert run_id[:8] in listed.stdout and "interrupted" in listed.stdout, listed.stdout + out + err
    return run_id


def _race(
    venv: Any, gates: Path, commands: list[list[str]], location: str, run_id: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], int]:
    """Start both commands together; return (winner, loser, winner pid)."""
    env = _env(venv, gates)
    procs = [
        subprocess.Popen(
            command,
            cwd=venv.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    first = _wait_for(
        lambda: [p for p in procs if p.poll() is not None], "one resume to give up", procs
    )[0]
    loser_out, loser_err = first.communicate()
    winner_proc = next(p for p in procs if p is not first)
    assert winner_proc.poll() is None, "both resumes ended: " + loser_out + loser_err
    _wait_for(
        lambda: list(gates.glob(f"entered-2-{winner_proc.pid}")),
        "the winner to drive the run",
        procs,
    )
    (gates / "open-2").touch()
    winner_out, winner_err = winner_proc.communicate(timeout=GUARD_SECONDS)
    loser = subprocess.CompletedProcess(first.args, first.returncode, loser_out, loser_err)
    winner = subprocess.CompletedProcess(
        winner_proc.args, winner_proc.returncode, winner_out, winner_err
    )
    return winner, loser, winner_proc.pid


def _check_log(venv: Any, location: str, run_id: str) -> None:
    code = f"""
import asyncio, json
from avo.compose import open_store
from avo.events import RunLogState

async def main():
    store = open_store({location!r})
    try:
        events = await store.get_events({run_id!r})
        run = await store.get_run({run_id!r})
    finally:
        await store.close()
    log = RunLogState.from_events({run_id!r}, events)
    started = [e.payload["tool_call_id"] for e in events if e.event_type.value == "tool_started"]
    print(json.dumps({{"state": run.state.value, "open": sorted(log.open_tool_calls),
                      "started": started, "sequences": [e.sequence for e in events]}}))

asyncio.run(main())
"""
    shown = subprocess.run(
        [str(venv.python), "-c", code],
        cwd=venv.cwd,
        env=_env(venv, venv.cwd),
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    facts = json.loads(shown.stdout)
    assert facts["state"] == "completed", facts
    assert facts["open"] == [], facts
    assert len(facts["started"]) == len(set(facts["started"])) == 2, facts  # gate 1, gate 2
    assert facts["sequences"] == list(range(1, len(facts["sequences"]) + 1)), facts


def _install_gate(tmp_path: Path, venv: Any, kit: Any) -> None:
    root = tmp_path / "packages"
    root.mkdir()
    package = kit.write_package(
        root,
        "gate",
        entry_points={"avo.tools": {"gate": "avo_gate.plugin:plugin"}},
        plugin_source=GATE,
    )
    wheel = kit.build_wheel(package, root / "dist")
    venv.pip_install(wheel)


def _postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database on the test server, dropped afterwards."""
    dsn_file = Path(
        os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn"
    )
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip() or (
        dsn_file.read_text().strip() if dsn_file.is_file() else ""
    )
    if not dsn:
        pytest.skip(
            "no PostgreSQL test server: set AVO_TEST_POSTGRES_DSN or run scripts/ensure-services.sh"
        )
    import asyncio

    import asyncpg

    name = f"avo_resume_{uuid.uuid4().hex[:10]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield dsn.rsplit("/", 1)[0] + "/" + name
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "work" / "runs.db")
    else:
        yield from _postgres_database()


def test_two_python_resumes_one_drives_and_the_other_names_the_holder(
    tmp_path: Path, plugin_venv: Any, kit: Any, location: str
) -> None:
    _install_gate(tmp_path, plugin_venv, kit)
    gates = tmp_path / "gates"
    gates.mkdir()
    run_id = _interrupted_run(plugin_venv, gates, location)
    command = [str(plugin_venv.python), "-c", PY_RESUME, location, run_id]
    winner, loser, pid = _race(plugin_venv, gates, [command, command], location, run_id)
    assert loser.returncode == 3, loser.stdout + loser.stderr
    refusal = json.loads(loser.stdout)
    assert refusal["owner"].endswith(f":{pid}"), refusal
    assert f"is being driven by {refusal['owner']}" in refusal["busy"]
    assert winner.returncode == 0, winner.stdout + winner.stderr
    assert json.loads(winner.stdout) == {"status": "completed"}
    _check_log(plugin_venv, location, run_id)


def test_two_cli_resumes_started_together_one_drives_and_the_other_names_the_holder(
    tmp_path: Path, plugin_venv: Any, kit: Any, location: str
) -> None:
    _install_gate(tmp_path, plugin_venv, kit)
    gates = tmp_path / "gates"
    gates.mkdir()
    run_id = _interrupted_run(plugin_venv, gates, location)
    command = [str(plugin_venv.python), "-m", "avo.cli", "runs", "resume", run_id, "-d", location]
    winner, loser, pid = _race(plugin_venv, gates, [command, command], location, run_id)
    assert loser.returncode == 2, loser.stdout + loser.stderr
    assert "is being driven by" in loser.stderr and f":{pid}" in loser.stderr, loser.stderr
    assert winner.returncode == 0, winner.stdout + winner.stderr
    _check_log(plugin_venv, location, run_id)
