"""``avo bench``: the figures' shape and ratios from real runs (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from avo.storage.memory import InMemoryEventStore
from avo_evals.bench import TimedStore, measure_loop

pytest.importorskip("avo_sqlite")


def test_bench_reports_bare_store_and_tool_with_ratios(avo: Any, tmp_path: Path) -> None:
    pytest.importorskip("avo_tools")
    (tmp_path / "notes.txt").write_text("hello\n")
    done = avo(
        "bench", "--sizes", "5,12", "--rounds", "1", "--json", "--tool", "read_file",
        "--tool-settings", json.dumps({"workspace": str(tmp_path)}),
        "--tool-args", '{"path": "notes.txt"}',
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["sizes"] == [5, 12] and data["rounds"] == 1
    assert set(data["bare"]) == {"5", "12"}
    assert data["bare"]["12"]["steps"] == 13 and data["bare"]["12"]["cpu_us"] > 0
    assert data["bare"]["12"]["peak_mb"] > 0
    assert data["growth"]["per_step_longest_vs_shortest"] > 0
    store = data["store"]
    assert store["name"] == "sqlite"
    for n in ("5", "12"):
        row = store["rows"][n]
        assert row["bytes_step"] > 0  # a real file was written
        assert row["ratio_to_bare"] == pytest.approx(row["cpu_us"] / data["bare"][n]["cpu_us"])
    tool = data["tool"]
    assert tool["name"] == "read_file" and tool["steps"] == 12
    assert tool["row"]["ratio_to_bare"] == pytest.approx(
        tool["row"]["cpu_us"] / tool["bare"]["cpu_us"]
    )

    text = avo("bench", "--sizes", "5,12", "--rounds", "1", "--store", "memory")
    assert text.returncode == 0, text.stderr
    assert "bare (memory, echo)" in text.stdout and "store memory" in text.stdout
    assert "ratio bare cpu per step, 12 vs 5 steps: " in text.stdout
    assert "ratio store memory / bare per step: " in text.stdout


def test_bench_bad_input_is_one_line_with_the_fix(avo: Any) -> None:
    pytest.importorskip("avo_tools")
    done = avo("bench", "--sizes", "5", "--store", "no_such_store")
    assert done.returncode == 2 and "no_such_store" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = avo("bench", "--sizes", "5", "--tool", "read_file", "--tool-args", '{"path": "nope.md"}')
    assert done.returncode == 2
    assert 'tool \'read_file\' failed with --tool-args {"path": "nope.md"}' in done.stderr
    assert "pass arguments (and --tool-settings) it accepts" in done.stderr
    done = avo("bench", "--sizes", "x")
    assert done.returncode == 2 and "'x' is not a list of step counts like 20,200" in done.stderr
    done = avo("bench", "--rounds", "0")
    assert done.returncode == 2 and "0 rounds: give at least 1" in done.stderr
    done = avo("bench", "--tool-args", "[1]")
    assert done.returncode == 2 and "must be a JSON object" in done.stderr


class _NoBatch:
    """A store with only the single-event methods (the runtime's other write path)."""

    def __init__(self) -> None:
        self._inner = InMemoryEventStore()

    def __getattr__(self, name: str) -> Any:
        if name == "append_batch":
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_timed_store_marks_steps_on_both_write_paths() -> None:
    batched = await measure_loop(10)
    single = await measure_loop(10, store=_NoBatch())
    for row in (batched, single):
        assert row["steps"] == 11 and row["early_us"] > 0 and row["late_us"] > 0
    timed = TimedStore(_NoBatch())
    assert not hasattr(timed, "append_batch")
    assert hasattr(TimedStore(InMemoryEventStore()), "append_batch")
