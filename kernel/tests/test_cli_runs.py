"""``avo runs``: list, inspect, resume, diff and gc against a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, ModelResponse, ToolCall
from avo.cli import main
from avo.events import AgentEvent, EventType
from avo.exceptions import StorageError
from avo.models import TokenUsage
from avo.testing.stores import finish_run, start_run

avo_sqlite = pytest.importorskip("avo_sqlite", reason="avo runs tests need the sqlite store")


class NArgs(BaseModel):
    n: int = 0


ECHO = FunctionTool(
    name="echo", description="echo n", arguments_model=NArgs, function=lambda a: {"n": a.n}
)


def _call(n: int) -> ModelResponse:
    return ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": n}))


class _BreaksOn:
    """A store proxy that raises StorageError when ``kind`` is appended (a crashed writer)."""

    def __init__(self, store: Any, kind: EventType) -> None:
        self._store, self._kind = store, kind

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        if event.event_type is self._kind:
            raise StorageError("disk unplugged")
        return await self._store.append_event(event)

    async def append_event_and_update_run(self, event: AgentEvent, run: Any) -> Any:
        if event.event_type is self._kind:
            raise StorageError("disk unplugged")
        return await self._store.append_event_and_update_run(event, run)

    async def append_batch(self, run: Any, events: list[AgentEvent], checkpoint: Any) -> Any:
        if any(event.event_type is self._kind for event in events):
            raise StorageError("disk unplugged")
        return await self._store.append_batch(run, events, checkpoint)


def _run(
    db: Path,
    script: list[Any],
    *,
    task: str = "task",
    breaks_on: EventType | None = None,
    provider: Any = None,
) -> str:
    async def go() -> str:
        async with avo_sqlite.SQLiteEventStore(db) as store:
            target: Any = store if breaks_on is None else _BreaksOn(store, breaks_on)
            runtime = AgentRuntime(
                provider=provider or FakeProvider(script), tools=[ECHO], event_store=target
            )
            run_id = "pending"
            try:
                run_id = (await runtime.run(task)).run_id
            except StorageError:
                (run,) = [r for r in await store.list_runs() if r.task == task]
                run_id = run.run_id
            return run_id

    return asyncio.run(go())


def _avo(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), environ={})
    out, err = capsys.readouterr()
    return code, out, err


def test_list_newest_first_and_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "avo.db"
    first = _run(db, [ModelResponse(content="one")], task="first task")
    second = _run(db, [_call(1), ModelResponse(content="two")], task="second task")
    code, out, _ = _avo(capsys, "runs", "list", "-d", str(db))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["RUN", "ID", "STATUS"]
    assert [line.split()[0] for line in lines[1:]] == [second, first]
    assert "second task" in lines[1] and "completed" in lines[1]
    empty = tmp_path / "empty.db"
    asyncio.run(avo_sqlite.SQLiteEventStore(empty).close())  # creates the file
    code, out, _ = _avo(capsys, "-d", str(empty), "runs", "list")
    assert (code, out.strip()) == (0, f"no runs in {empty}")


def test_missing_database_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.db"
    code, out, err = _avo(capsys, "runs", "-d", str(missing), "list")
    assert code == 2 and out == ""
    assert err.startswith(f"avo: no event store at {missing}")
    assert not missing.exists()


def test_inspect_by_prefix_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "avo.db"
    run_id = _run(db, [_call(7), ModelResponse(content="fine")])
    code, out, _ = _avo(capsys, "runs", "inspect", run_id[:8], "-d", str(db))
    assert code == 0
    assert out.startswith(f"Run {run_id}")
    assert "final state: completed" in out and "tool_completed" in out
    code, _, err = _avo(capsys, "runs", "inspect", "zzz", "-d", str(db))
    assert code == 2 and err.strip() == "avo: run 'zzz' was not found in the event store"


def test_ambiguous_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "avo.db"

    async def seed() -> None:
        async with avo_sqlite.SQLiteEventStore(db) as store:
            await start_run(store, "abc-1")
            await start_run(store, "abc-2")

    asyncio.run(seed())
    code, _, err = _avo(capsys, "runs", "inspect", "abc", "-d", str(db))
    assert code == 2 and "ambiguous" in err and "abc-1" in err


def test_resume_of_a_python_built_run_needs_its_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run built in Python records no composition: resume says how to give it one."""
    db = tmp_path / "avo.db"
    run_id = _run(
        db, [ModelResponse(content="resumed answer")], breaks_on=EventType.MODEL_RESPONDED
    )
    code, out, err = _avo(capsys, "runs", "resume", run_id, "-d", str(db))
    assert code == 2 and out == ""
    first = err.splitlines()[-1]
    assert first.startswith(f"avo: run {run_id} has no recorded composition")
    assert "pass --config FILE" in first
    config = tmp_path / "same.toml"
    config.write_text(
        '[provider]\nname = "fake"\n[[provider.settings.script]]\ncontent = "resumed answer"\n',
        encoding="utf-8",
    )
    code, out, err = _avo(capsys, "runs", "resume", run_id, "-d", str(db), "--config", str(config))
    assert code == 0, err
    assert out == "resumed answer\n"
    assert "status:      completed" in err
    code, _, err = _avo(capsys, "runs", "resume", run_id, "-d", str(db))
    assert code == 2 and "already finished" in err


def test_resume_refuses_a_tool_call_cut_off_by_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "avo.db"
    run_id = _run(db, [_call(3), ModelResponse(content="x")], breaks_on=EventType.TOOL_COMPLETED)
    config = tmp_path / "same.toml"
    config.write_text('[provider]\nname = "fake"\n', encoding="utf-8")
    code, _, err = _avo(capsys, "runs", "resume", run_id, "-d", str(db), "-c", str(config))
    assert code == 2
    line = err.splitlines()[-1]
    assert line.startswith("avo: Cannot safely resume because these tool calls started")
    assert "resume with --fail-open-tools" in line


def test_diff_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "avo.db"
    a = _run(db, [_call(1), _call(2), ModelResponse(content="same")])
    b = _run(db, [_call(1), _call(5), ModelResponse(content="other")])
    code, out, _ = _avo(capsys, "runs", "diff", a, b, "-d", str(db))
    assert code == 0
    assert out.startswith(f"runs {a} and {b}: differ in output; tool calls")
    assert '* tool calls: first difference at #2: echo {"n": 2}' in out
    assert "  states: identical" in out
    code, out, _ = _avo(capsys, "runs", "diff", a, b, "--json", "-d", str(db))
    data = json.loads(out)
    assert data["same"] is False
    assert data["fields"]["output"] == {"a": "same", "b": "other", "same": False}
    assert data["fields"]["status"]["same"] is True
    assert data["tool_calls"]["first_difference"] == 1
    assert [c["arguments"] for c in data["tool_calls"]["b"]] == [{"n": 1}, {"n": 5}]
    code, out, _ = _avo(capsys, "runs", "diff", a, a, "-d", str(db))
    assert "identical" in out.splitlines()[0]


def _seed_for_gc(db: Path) -> dict[str, str]:
    now = datetime.now(UTC)

    async def seed() -> dict[str, str]:
        ids: dict[str, str] = {}
        async with avo_sqlite.SQLiteEventStore(db) as store:
            for name, days in (("old1", 60), ("old2", 45), ("recent", 1)):
                at = now - timedelta(days=days)
                ids[name] = await start_run(store, created_at=at, updated_at=at)
                await finish_run(store, ids[name])
            at = now - timedelta(days=90)
            ids["active"] = await start_run(store, created_at=at, updated_at=at)
        with avo_sqlite.TokenLedger(db) as ledger:
            ledger.record(ids["old1"], step=1, usage=TokenUsage(input_tokens=5))
            ledger.record(ids["recent"], step=1, usage=TokenUsage(input_tokens=5))
        return ids

    return asyncio.run(seed())


def _remaining(db: Path) -> set[str]:
    async def go() -> set[str]:
        async with avo_sqlite.SQLiteEventStore(db) as store:
            return {run.run_id for run in await store.list_runs()}

    return asyncio.run(go())


def test_gc_deletes_old_finished_runs_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "avo.db"
    ids = _seed_for_gc(db)
    code, out, _ = _avo(capsys, "runs", "gc", "--dry-run", "-d", str(db))
    assert code == 0
    assert sorted(line.split()[2] for line in out.splitlines()[:-1]) == sorted(
        [ids["old1"], ids["old2"]]
    )
    assert out.splitlines()[-1] == (
        "would delete 2 runs; kept 1 matching finished, 1 unfinished untouched"
    )
    assert _remaining(db) == set(ids.values())
    code, out, _ = _avo(capsys, "runs", "gc", "--older-than", "30d", "-d", str(db))
    assert code == 0 and out.splitlines()[-1].startswith("deleted 2 runs")
    assert _remaining(db) == {ids["recent"], ids["active"]}
    with avo_sqlite.TokenLedger(db) as ledger:
        assert ledger.run_ids() == [ids["recent"]]


def test_gc_keep_last_and_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "avo.db"
    ids = _seed_for_gc(db)
    code, out, _ = _avo(capsys, "runs", "gc", "--status", "failed", "-d", str(db))
    assert code == 0 and out.splitlines()[-1].startswith("deleted 0 runs")
    code, out, _ = _avo(capsys, "runs", "gc", "--keep-last", "1", "-d", str(db))
    assert code == 0
    assert _remaining(db) == {ids["recent"], ids["active"]}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--older-than", "soon"], "avo: --older-than 'soon' is not an age"),
        (["--status", "model_pending"], "avo: --status 'model_pending' is not a terminal state"),
        (["--keep-last", "-1"], "avo: --keep-last must be >= 0"),
    ],
)
def test_gc_bad_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    db = tmp_path / "avo.db"
    _seed_for_gc(db)
    code, _, err = _avo(capsys, "runs", "gc", *flags, "-d", str(db))
    assert code == 2 and err.startswith(message)


def test_missing_sqlite_url_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _avo(capsys, "runs", "list", "-d", "sqlite:///absent.db")
    assert code == 2 and "no event store at sqlite:///absent.db" in err
    assert not (tmp_path / "absent.db").exists()
    _run(tmp_path / "present.db", [ModelResponse(content="x")])
    code, out, _ = _avo(capsys, "runs", "list", "-d", "sqlite:///present.db")
    assert code == 0 and "completed" in out
