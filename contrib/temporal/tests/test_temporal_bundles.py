"""A run whose avo.toml enables a per-run bundle ([mcp]) is refused on Temporal, with what to do.

Before this, ``avo run --engine temporal`` submitted such a run and the worker
set the ``mcp`` bundle up inside the workflow: the sandbox refused the server's
subprocess, the bundle recorded "did not start: " and the run completed with
the model's call to the server's tool failed as "not registered". Now the
submit refuses before anything reaches Temporal, and so does a worker whose
own avo.toml enables a bundle, before it takes any run.
"""

from __future__ import annotations

import asyncio
import json
import sys

from temporal_fleet import Fleet

from avo.compose import open_store

MCP = "[mcp]\nuser_servers = false\n[mcp.servers.lines]\ncommand = {command}\n"


def _mcp_config(fleet: Fleet) -> None:
    server = [sys.executable, "-m", "avo_mcp.servers.filesystem", "--root", str(fleet.root)]
    fleet.write_config(calls=1, extra=MCP.format(command=json.dumps(server)))


async def _runs(fleet: Fleet) -> list[object]:
    store = open_store(fleet.store)
    try:
        return list(await store.list_runs())
    finally:
        await store.close()


async def _workflows(fleet: Fleet) -> list[object]:
    from temporalio.client import Client

    client = await Client.connect(fleet.address)
    query = f'TaskQueue = "{fleet.queue}"'
    return [workflow async for workflow in client.list_workflows(query)]


def test_avo_run_refuses_a_bundle_before_submitting(fleet: Fleet) -> None:
    _mcp_config(fleet)
    done = fleet.avo("run", "omega", check=False, timeout=60)  # no worker: it would wait
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)  # a usage error
    error = done.stderr
    assert "avo run --engine temporal" in error and "bundle 'mcp' ([mcp] in avo.toml)" in error
    assert "run such runs in process" in error, error
    assert asyncio.run(_workflows(fleet)) == []  # nothing was submitted
    assert not fleet.effects.exists()


def test_a_worker_whose_runtime_sets_up_a_bundle_refuses_to_serve(fleet: Fleet) -> None:
    _mcp_config(fleet)
    worker = fleet.start_worker()
    assert worker.wait(timeout=90) == 2, fleet.logs()  # it used to poll, and run the bundle
    log = fleet.logs()
    assert "avo worker --engine temporal" in log and "bundle 'mcp' ([mcp] in avo.toml)" in log
    assert "remove [mcp] from the avo.toml of the workers" in log, log


def test_a_disabled_bundle_table_is_not_refused(fleet: Fleet) -> None:
    fleet.write_config(calls=1, extra="[mcp]\nenabled = false\n")
    fleet.start_worker()
    done = fleet.avo("run", "--json", "delta", timeout=180)
    assert json.loads(done.stdout)["status"] == "completed", done.stdout
    assert fleet.effects.read_text() == "delta 0\n"
    assert len(asyncio.run(_runs(fleet))) == 1
