"""The ledger accounts every model call in the log exactly once.

A process SIGKILLed between storing a MODEL_RESPONDED event and the ledger hook
hearing of it leaves no row; ``avo cost`` records it from the log first. A
notification delivered twice, and a row both heard of and caught up, count once.
A ledger file from before rows were keyed by event still reads and is not counted
twice when it is caught up.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from avo.events import AgentEvent, EventType
from avo.models import ModelResponse, TokenUsage
from avo.plugins.manager import PluginManager
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo_ledger import LedgerPlugin
from avo_ledger.sync import catch_up, catch_up_file
from avo_sqlite import SQLiteEventStore, TokenLedger

CONFIG = """
hooks = [{name = "ledger"}]

[permission]
mode = "bypass_permissions"

[provider]
name = "fake"

[[provider.settings.script]]
tool_call = {name = "lookup", arguments = {q = "x"}}
usage = {input_tokens = 1200, output_tokens = 80}

[[provider.settings.script]]
content = "the answer"
usage = {input_tokens = 1500, output_tokens = 40}
"""

# `avo run`, SIGKILLed by itself when the ledger hook is about to hear of the second
# model call: the event is stored, its ledger row is never written.
KILLED_RUN = """
import os, signal, sys
from avo_ledger import recorder
original = recorder.LedgerPlugin.avo_event_appended
heard = []
def hear(self, event):
    if event.event_type.value == "model_responded":
        heard.append(event)
        if len(heard) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
    original(self, event)
recorder.LedgerPlugin.avo_event_appended = hear
from avo.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _avo(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "import sys; from avo.cli import main; sys.exit(main())"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_a_call_whose_row_died_with_the_process_is_counted_once_by_avo_cost(
    tmp_path: Path,
) -> None:
    (tmp_path / "avo.toml").write_text(CONFIG)
    db = tmp_path / "runs.db"
    env = {**os.environ, "AVO_DATABASE_PATH": str(db)}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, "run", "--json", "find it"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr

    async def stored() -> tuple[str, list[AgentEvent]]:
        async with SQLiteEventStore(db) as store:
            (run,) = await store.list_runs()
            return run.run_id, await store.get_events(run.run_id)

    run_id, events = asyncio.run(stored())
    responded = [e for e in events if e.event_type is EventType.MODEL_RESPONDED]
    assert len(responded) == 2  # both calls are in the log ...
    with TokenLedger(db) as ledger:
        assert [e.usage.input_tokens for e in ledger.entries()] == [1200]  # ... one in the ledger

    for _ in range(2):  # the second report finds nothing more to record
        proc = _avo("cost", "--json", env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        (run,) = report["runs"]
        assert run["run_id"] == run_id and run["entries"] == 2
        assert (run["usage"]["input_tokens"], run["usage"]["output_tokens"]) == (2700, 120)
    with TokenLedger(db) as ledger:
        entries = ledger.entries()
    assert [(e.event_id, e.sequence) for e in entries] == [
        (e.event_id, e.sequence) for e in responded
    ]


def _usage(n: int) -> TokenUsage:
    return TokenUsage(input_tokens=n * 100, output_tokens=n)


async def _run(db: Path, manager: PluginManager | None = None) -> str:
    """One run of one model call (100 in, 1 out)."""
    script = [ModelResponse(content="counted", usage=_usage(1))]
    async with SQLiteEventStore(db) as store:
        runtime = AgentRuntime(provider=FakeProvider(script), event_store=store, plugins=manager)
        return (await runtime.run("count me")).run_id


def test_a_repeated_notification_and_a_catch_up_do_not_count_twice(tmp_path: Path) -> None:
    db = tmp_path / "avo.db"
    manager = PluginManager(autoload=False, environ={})
    plugin = LedgerPlugin(db, environ={})
    manager.register(plugin, "ledger")
    run_id = asyncio.run(_run(db, manager))
    (event,) = [e for e in _events(db, run_id) if e.event_type is EventType.MODEL_RESPONDED]
    plugin.avo_event_appended(event)  # the same event again (a retried or replayed call)
    plugin.avo_event_appended(event.model_copy())
    assert len(plugin.recorded) == 1
    plugin.close()

    async def sync() -> int:
        with TokenLedger(db) as ledger:
            async with SQLiteEventStore(db) as store:
                return (await catch_up(ledger, store)).rows_added

    assert asyncio.run(sync()) == 0
    with TokenLedger(db) as ledger:
        assert [e.usage for e in ledger.entries()] == [_usage(1)]
        assert ledger.behind() == []  # checked through the last event: nothing to read again


def _events(db: Path, run_id: str) -> list[AgentEvent]:
    async def read() -> list[AgentEvent]:
        async with SQLiteEventStore(db) as store:
            return await store.get_events(run_id)

    return asyncio.run(read())


def test_only_runs_whose_log_moved_on_are_read_again(tmp_path: Path) -> None:
    db = tmp_path / "avo.db"
    first = asyncio.run(_run(db))
    done = catch_up_file(db)
    assert done is not None and (done.runs_checked, done.rows_added) == (1, 1)
    assert catch_up_file(db) == done.__class__()  # nothing behind: no run is read
    second = asyncio.run(_run(db))
    with TokenLedger(db) as ledger:
        assert [run.run_id for run in ledger.behind()] == [second]
        assert ledger.synced_through(first) == len(_events(db, first))
    done = catch_up_file(db)
    assert done is not None and (done.runs_checked, done.rows_added) == (1, 1)


def test_an_old_ledger_file_reads_and_its_rows_are_matched_not_doubled(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    run_id = asyncio.run(_run(db))
    other = asyncio.run(_run(db))
    with sqlite3.connect(db) as conn:  # what an older avo-sqlite wrote: no event key, no sync
        conn.execute("DROP TABLE ledger_entries")
        conn.execute("DROP TABLE ledger_sync")
        conn.execute(
            "CREATE TABLE ledger_entries (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT "
            "NULL, step INTEGER NOT NULL, model TEXT, input_tokens INTEGER NOT NULL, "
            "output_tokens INTEGER NOT NULL, cost_usd TEXT, created_at TEXT NOT NULL)"
        )
        # run_id's call was recorded; other's row was lost with its process
        conn.execute(
            "INSERT INTO ledger_entries (run_id, step, model, input_tokens, output_tokens,"
            " cost_usd, created_at) VALUES (?, 1, 'fake', 100, 1, '0.5', '2026-01-01T00:00:00')",
            (run_id,),
        )
    conn.close()
    with TokenLedger(db) as ledger:  # reads as before, migrated in place
        (old,) = ledger.entries()
        assert (old.run_id, old.usage, old.event_id) == (run_id, _usage(1), None)
    done = catch_up_file(db)
    assert done is not None and done.rows_added == 1  # other's call only
    with TokenLedger(db) as ledger:
        entries = {e.run_id: e for e in ledger.entries()}
        assert len(ledger.entries()) == 2
    kept = entries[run_id]
    assert (kept.id, str(kept.cost_usd), kept.event_id) == (old.id, "0.5", _responded(db, run_id))
    assert entries[other].event_id == _responded(db, other)


def _responded(db: Path, run_id: str) -> str:
    (event,) = [e for e in _events(db, run_id) if e.event_type is EventType.MODEL_RESPONDED]
    return event.event_id
