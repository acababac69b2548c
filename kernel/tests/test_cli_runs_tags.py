"""``avo runs list --tag KEY=VALUE``: find runs by their user_state (e.g. eval trials)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from avo import AgentRuntime, FakeProvider, ModelResponse
from avo.cli import main

avo_sqlite = pytest.importorskip("avo_sqlite", reason="avo runs tests need the sqlite store")


def _run(db: Path, task: str, user_state: dict[str, Any]) -> str:
    async def go() -> str:
        async with avo_sqlite.SQLiteEventStore(db) as store:
            runtime = AgentRuntime(
                provider=FakeProvider([ModelResponse(content="ok")]), event_store=store
            )
            return (await runtime.run(task, user_state=user_state)).run_id

    return asyncio.run(go())


def test_list_filters_by_dotted_user_state_tags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "avo.db"
    a = _run(db, "case a", {"eval": {"suite": "s", "case": "a", "trial": 1}})
    b = _run(db, "case b", {"eval": {"suite": "s", "case": "b", "trial": 1}})
    plain = _run(db, "plain", {})

    def ids(*argv: str) -> list[str]:
        assert main(["runs", "list", "-d", str(db), *argv], environ={}) == 0
        return [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]

    assert set(ids()) == {a, b, plain}
    assert set(ids("--tag", "eval.suite=s")) == {a, b}
    assert ids("--tag", "eval.suite=s", "--tag", "eval.case=b") == [b]
    assert ids("--tag", "eval.trial=1", "--tag", "eval.case=a") == [a]
    assert main(["runs", "list", "-d", str(db), "--tag", "eval.case=zzz"], environ={}) == 0
    assert capsys.readouterr().out.strip() == f"no runs with eval.case=zzz in {db}"
    assert main(["runs", "list", "-d", str(db), "--tag", "nonsense"], environ={}) == 2
    err = capsys.readouterr().err.strip()
    assert err == "avo: --tag 'nonsense' is not KEY=VALUE; e.g. --tag eval.case=write-notes"
