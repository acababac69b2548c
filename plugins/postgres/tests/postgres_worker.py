"""One worker process of the PostgreSQL concurrency proof (run by test_postgres_concurrency.py).

    python postgres_worker.py DSN SCHEMA WORKER_INDEX WORKERS RUNS PLAN_JSON

It connects to the shared store and, in phases separated by a barrier held in
the database (so all workers start each phase together):

1. drives RUNS agent runs with the real ``AgentRuntime`` and ``FakeProvider``
   (two tool calls each, checkpoints on), each under its own lease through a
   fenced view, while appending events to the shared *hot* runs in between;
2. races every other worker to finalize each *race* run with its own outcome;
3. races every other worker for the lease of each *lease* run; the winner
   appends through its fenced view, the losers try to append without a lease.

Every event the store acknowledged is reported (event_id, sequence) so the
test can prove none was lost. The report is one JSON document on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from pydantic import BaseModel

from avo.events import AgentEvent, EventType
from avo.exceptions import AvoError, LeaseError
from avo.models import ModelResponse, RunRecord, ToolCall
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.state import RunState, StopReason
from avo.testing.stores import event, moved, terminal
from avo.tools import FunctionTool
from avo_postgres import PostgresEventStore


class _Recording:
    """Wraps an EventStore and records every event the store acknowledged."""

    def __init__(self, inner: Any, acked: list[tuple[str, str, int]]) -> None:
        self._inner = inner
        self._acked = acked

    def _ack(self, *events: AgentEvent) -> None:
        self._acked.extend((e.run_id, e.event_id, e.sequence) for e in events)

    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        stored = await self._inner.create_run(run, event)
        self._ack(event.model_copy(update={"sequence": 1}))
        return stored

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        stored = await self._inner.append_event(event)
        self._ack(stored)
        return stored

    async def append_event_and_update_run(self, event: AgentEvent, run: RunRecord) -> Any:
        stored, record = await self._inner.append_event_and_update_run(event, run)
        self._ack(stored)
        return stored, record

    async def save_checkpoint(self, checkpoint: Any, event: AgentEvent) -> Any:
        saved, stored = await self._inner.save_checkpoint(checkpoint, event)
        self._ack(stored)
        return saved, stored

    async def finalize_run(self, run: RunRecord, state_event: Any, terminal_event: Any) -> Any:
        first, second = await self._inner.finalize_run(run, state_event, terminal_event)
        self._ack(first, second)
        return first, second

    async def append_batch(
        self, run: RunRecord, events: list[AgentEvent], checkpoint: Any = None
    ) -> list[AgentEvent]:
        stored: list[AgentEvent] = await self._inner.append_batch(run, events, checkpoint)
        self._ack(*stored)
        return stored

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _EchoArgs(BaseModel):
    text: str


def _echo(args: _EchoArgs) -> dict[str, str]:
    return {"echo": args.text}


async def _barrier(dsn: str, schema: str, name: str, workers: int, me: int) -> None:
    """Wait until every worker reached ``name`` (a table in the test schema counts them)."""
    import asyncpg

    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        await conn.execute("INSERT INTO test_barrier VALUES ($1, $2)", name, me)
        deadline = time.monotonic() + 60
        while await conn.fetchval("SELECT count(*) FROM test_barrier WHERE name = $1", name) < (
            workers
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"barrier {name} timed out")
            await asyncio.sleep(0.01)
    finally:
        await conn.close()


async def _drive_runs(
    store: PostgresEventStore,
    me: int,
    runs: int,
    acked: list[tuple[str, str, int]],
    finished: asyncio.Queue[int],
) -> list[dict[str, Any]]:
    done = []
    for n in range(runs):
        run_id = f"w{me}-run{n}"
        lease = await store.acquire_lease(run_id, f"worker-{me}", 30)
        provider = FakeProvider(
            [
                ModelResponse(tool_call=ToolCall(name="echo", arguments={"text": f"{run_id}/1"})),
                ModelResponse(tool_call=ToolCall(name="echo", arguments={"text": f"{run_id}/2"})),
                ModelResponse(content=f"done {run_id}"),
            ]
        )
        tool = FunctionTool(
            name="echo", description="Echo text back.", arguments_model=_EchoArgs, function=_echo
        )
        runtime = AgentRuntime(
            provider=provider,
            tools=[tool],
            event_store=_Recording(store.fenced(lease), acked),  # type: ignore[arg-type]
        )
        result = await runtime.run(f"task {run_id}", run_id=run_id)
        await store.release_lease(lease)
        done.append({"run_id": run_id, "status": result.status.value, "output": result.output})
        finished.put_nowait(n)
    return done


async def _hammer_hot_runs(
    store: PostgresEventStore,
    me: int,
    hot: list[str],
    rounds: int,
    acked: list[Any],
    finished: asyncio.Queue[int],
) -> None:
    """One append to every hot run per finished agent run, so appends spread over the phase."""
    for n in range(rounds):
        await finished.get()
        for run_id in hot:
            stored = await store.append_event(
                event(run_id, EventType.MODEL_REQUESTED, worker=me, n=n)
            )
            acked.append((run_id, stored.event_id, stored.sequence))


async def _race_finalize(store: PostgresEventStore, me: int, run_id: str) -> str:
    run = await store.get_run(run_id)
    assert run is not None
    if me % 2 == 0:
        state, reason = RunState.COMPLETED, StopReason.COMPLETED
    else:
        state, reason = RunState.CANCELLED, StopReason.USER_CANCELLED
    final = run.model_copy(update={"state": state, "stop_reason": reason, "output": f"w{me}"})
    end = terminal(run_id, state, reason)
    end = end.model_copy(update={"payload": {**end.payload, "output": f"w{me}"}})
    try:
        await store.finalize_run(final, moved(run_id, RunState.DECISION_RECEIVED, state), end)
    except AvoError as exc:
        return type(exc).__name__
    return "won"


async def _race_lease(store: PostgresEventStore, me: int, run_id: str) -> dict[str, Any]:
    try:
        lease = await store.acquire_lease(run_id, f"worker-{me}", 30)
    except LeaseError:
        try:
            await store.append_event(event(run_id, EventType.MODEL_REQUESTED, worker=me))
        except LeaseError:
            return {"lease": False, "unleased_append": "LeaseError"}
        return {"lease": False, "unleased_append": "accepted"}
    stored = await store.fenced(lease).append_event(
        event(run_id, EventType.MODEL_REQUESTED, worker=me)
    )
    return {"lease": True, "token": lease.token, "event_id": stored.event_id}


async def main(argv: list[str]) -> dict[str, Any]:
    dsn, schema, me_s, workers_s, runs_s, plan_json = argv
    me, workers, runs = int(me_s), int(workers_s), int(runs_s)
    plan = json.loads(plan_json)
    acked: list[tuple[str, str, int]] = []
    async with PostgresEventStore(dsn, schema=schema, pool_max_size=4) as store:
        await _barrier(dsn, schema, "start", workers, me)
        finished: asyncio.Queue[int] = asyncio.Queue()
        done, _ = await asyncio.gather(
            _drive_runs(store, me, runs, acked, finished),
            _hammer_hot_runs(store, me, plan["hot"], plan["hot_rounds"], acked, finished),
        )
        await _barrier(dsn, schema, "finalize", workers, me)
        finals = await asyncio.gather(*(_race_finalize(store, me, r) for r in plan["race"]))
        await _barrier(dsn, schema, "lease", workers, me)
        lease_results = await asyncio.gather(*(_race_lease(store, me, r) for r in plan["lease"]))
    return {
        "worker": me,
        "runs": done,
        "acked": acked,
        "finalize": dict(zip(plan["race"], finals, strict=True)),
        "lease": dict(zip(plan["lease"], lease_results, strict=True)),
    }


if __name__ == "__main__":
    report = asyncio.run(main(sys.argv[1:]))
    json.dump(report, sys.stdout)
