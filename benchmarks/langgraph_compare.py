"""avo vs LangGraph: the same fake-model tool loop, measured in one run on this machine.

The loop: a scripted model asks, for N steps, for one tool call ``echo(n=i)``
with distinct arguments, then gives a final answer; the tool returns
``{"n": i}``. N = 20 and 200 (and 2,000 with ``--full``).

- avo, in memory: ``kernel_loop._one`` (``InMemoryEventStore``, FakeProvider).
- avo, SQLite: ``store_growth._sqlite_run`` (``SQLiteEventStore`` defaults: WAL,
  ``synchronous=NORMAL``, tool start/result committed before the tool runs or
  the loop goes on, other writes group-committed within 5 ms).
- LangGraph: the idiomatic ReAct graph: ``StateGraph(MessagesState)``, an
  "agent" node returning ``model.invoke(messages)`` where the model is
  ``GenericFakeChatModel`` over scripted ``AIMessage`` objects with one
  ``tool_calls`` entry each, a ``ToolNode`` with an ``@tool`` echo,
  ``tools_condition``, compiled with ``InMemorySaver`` or with ``SqliteSaver``
  on a file (WAL; its default connection keeps SQLite's ``synchronous=FULL``,
  so it is also run with ``synchronous=NORMAL``, avo's setting), run with the
  synchronous ``graph.invoke`` and the default ``durability="async"``.

Per step (N tool steps + the final answer): wall µs and CPU µs (this process,
every thread included), the median step time over the first and last tenth of
the run (growth), and for SQLite the database file's bytes per step after the
run (WAL checkpointed, connection closed). avo and LangGraph run alternately in
this process, best of 3 by CPU time, so machine noise hits both alike; the
printed ratios are avo / LangGraph (below 1 = avo is cheaper).

Needs ``langgraph`` and ``langgraph-checkpoint-sqlite`` (not avo dependencies;
``nox -s bench`` installs them). Without them it prints one line and exits 0.

Run: python benchmarks/langgraph_compare.py [--full]
"""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
except ImportError as exc:  # pragma: no cover - depends on the environment
    print(
        f"langgraph_compare: skipped, LangGraph is not installed ({exc.name}); "
        "pip install langgraph langgraph-checkpoint-sqlite"
    )
    sys.exit(0)

import kernel_loop  # benchmarks/ is on sys.path (above)
import store_growth

Row = dict[str, float]


@tool
def echo(n: int) -> dict[str, int]:
    """Echo n."""
    return {"n": n}


def _script(n: int) -> list[AIMessage]:
    calls = [
        AIMessage(
            content="",
            tool_calls=[
                {"name": "echo", "args": {"n": i}, "id": f"call_{i:06d}", "type": "tool_call"}
            ],
        )
        for i in range(n)
    ]
    return [*calls, AIMessage(content="done")]


def _graph(n: int, checkpointer: Any, marks: list[float], *, chat_model: bool) -> Any:
    script = iter(_script(n))
    model = GenericFakeChatModel(messages=script)

    def agent(state: MessagesState) -> dict[str, Any]:
        marks.append(time.perf_counter())
        return {"messages": [model.invoke(state["messages"])]}

    def bare_agent(state: MessagesState) -> dict[str, Any]:
        marks.append(time.perf_counter())
        return {"messages": [next(script)]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent if chat_model else bare_agent)
    builder.add_node("tools", ToolNode([echo]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def _langgraph_loop(n: int, checkpointer: Any, *, chat_model: bool = True) -> Row:
    marks: list[float] = []
    graph = _graph(n, checkpointer, marks, chat_model=chat_model)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 2 * n + 10}
    gc.collect()
    started, cpu_started = time.perf_counter(), time.process_time()
    result = graph.invoke({"messages": [("user", "benchmark")]}, config)
    cpu, wall = time.process_time() - cpu_started, time.perf_counter() - started
    messages = result["messages"]
    assert len(messages) == 2 * n + 2 and messages[-1].content == "done", messages[-3:]
    assert messages[-2].content == f'{{"n": {n - 1}}}', messages[-2]
    return kernel_loop.step_row(marks, wall, cpu, n + 1)


def _langgraph_memory(n: int, *, chat_model: bool = True) -> Row:
    return _langgraph_loop(n, InMemorySaver(), chat_model=chat_model)


def _langgraph_sqlite(directory: Path, n: int, synchronous: str | None) -> Row:
    path = store_growth._fresh(directory, f"langgraph-{n}-{synchronous}.db")
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        if synchronous is not None:
            conn.execute(f"PRAGMA synchronous = {synchronous}")
        row = _langgraph_loop(n, SqliteSaver(conn))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    row["file_step"] = path.stat().st_size / (n + 1)
    return row


def _avo_memory(n: int) -> Row:
    return asyncio.run(kernel_loop._one(n))


def _avo_sqlite(directory: Path, n: int) -> Row:
    return asyncio.run(store_growth._sqlite_run(directory, n))


def _alternate(sides: list[Callable[[], Row]], repeats: int) -> list[Row]:
    """Run the sides in turn ``repeats`` times; the best run of each side by CPU time."""
    runs: list[list[Row]] = [[] for _ in sides]
    for _ in range(repeats):
        for side, found in zip(sides, runs, strict=True):
            found.append(side())
    return [min(found, key=lambda row: row["cpu_us"]) for found in runs]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def _print_rows(title: str, sizes: list[int], avo: dict[int, Row], lg: dict[int, Row]) -> None:
    print(title)
    has_bytes = "file_step" in avo[sizes[0]]
    head = (
        f"{'N':>6} {'':>9} {'wall µs/step':>13} {'cpu µs/step':>12} "
        f"{'early µs':>9} {'late µs':>9} {'late/early':>10}"
    )
    print(head + (f" {'file B/step':>12}" if has_bytes else ""))
    for n in sizes:
        for name, r in (("avo", avo[n]), ("langgraph", lg[n])):
            line = (
                f"{n:>6} {name:>9} {r['wall_us']:>13.0f} {r['cpu_us']:>12.0f} "
                f"{r['early_us']:>9.0f} {r['late_us']:>9.0f} {r['late_us'] / r['early_us']:>9.2f}x"
            )
            print(line + (f" {r['file_step']:>12.0f}" if has_bytes else ""))
        a, b = avo[n], lg[n]
        ratio = (
            f"{n:>6} {'avo/lg':>9} {a['wall_us'] / b['wall_us']:>12.2f}x "
            f"{a['cpu_us'] / b['cpu_us']:>11.2f}x {a['early_us'] / b['early_us']:>8.2f}x "
            f"{a['late_us'] / b['late_us']:>8.2f}x {'':>10}"
        )
        print(ratio + (f" {a['file_step'] / b['file_step']:>11.3f}x" if has_bytes else ""))


def main(full: bool) -> None:
    sizes = [20, 200, 2000] if full else [20, 200]
    versions = ", ".join(
        f"{name} {_version(name)}"
        for name in (
            "avo-kernel",
            "avo-sqlite",
            "langgraph",
            "langgraph-checkpoint",
            "langgraph-checkpoint-sqlite",
            "langchain-core",
        )
    )
    memory_avo: dict[int, Row] = {}
    memory_lg: dict[int, Row] = {}
    memory_bare: dict[int, Row] = {}
    sqlite_avo: dict[int, Row] = {}
    sqlite_lg: dict[int, Row] = {}
    sqlite_lg_normal: dict[int, Row] = {}
    with tempfile.TemporaryDirectory(prefix="avo-lg-bench-") as tmp:
        directory = Path(tmp)
        _avo_memory(20)  # warm up imports and caches on both sides
        _langgraph_memory(20)
        _avo_sqlite(directory, 20)
        _langgraph_sqlite(directory, 20, None)
        for n in sizes:
            repeats = 3 if n < 2000 else 1
            memory_avo[n], memory_lg[n], memory_bare[n] = _alternate(
                [
                    lambda n=n: _avo_memory(n),
                    lambda n=n: _langgraph_memory(n),
                    lambda n=n: _langgraph_memory(n, chat_model=False),
                ],
                repeats,
            )
            sqlite_avo[n], sqlite_lg[n], sqlite_lg_normal[n] = _alternate(
                [
                    lambda n=n: _avo_sqlite(directory, n),
                    lambda n=n: _langgraph_sqlite(directory, n, None),
                    lambda n=n: _langgraph_sqlite(directory, n, "NORMAL"),
                ],
                repeats,
            )

    print("langgraph_compare: fake-model tool loop, avo vs LangGraph, same process, same run")
    print(f"({versions}; Python {sys.version.split()[0]})")
    print(
        f"(machine load average {os.getloadavg()[0]:.1f}; best of 3 alternating runs by cpu, "
        "1 at N=2000; per step = run time / (N + 1); cpu = this process, all threads)"
    )
    _print_rows(
        "in memory: avo InMemoryEventStore vs LangGraph InMemorySaver",
        sizes,
        memory_avo,
        memory_lg,
    )
    _print_rows(
        "in memory, LangGraph's floor: its agent node returns the AIMessage, no chat model call",
        sizes,
        memory_avo,
        memory_bare,
    )
    _print_rows(
        "SQLite file: avo SQLiteEventStore (NORMAL) vs LangGraph SqliteSaver (default: FULL)",
        sizes,
        sqlite_avo,
        sqlite_lg,
    )
    _print_rows(
        "SQLite file: avo SQLiteEventStore (NORMAL) vs LangGraph SqliteSaver (NORMAL)",
        sizes,
        sqlite_avo,
        sqlite_lg_normal,
    )
    big = sizes[-1]
    print("summary (avo / LangGraph; below 1 = avo cheaper):")
    print(
        "  in memory, cpu per step: "
        + ", ".join(f"N={n} {memory_avo[n]['cpu_us'] / memory_lg[n]['cpu_us']:.2f}x" for n in sizes)
    )
    print(
        "  SQLite (both NORMAL), wall per step: "
        + ", ".join(
            f"N={n} {sqlite_avo[n]['wall_us'] / sqlite_lg_normal[n]['wall_us']:.2f}x" for n in sizes
        )
    )
    print(
        f"  SQLite file bytes per step at N={big}: avo {sqlite_avo[big]['file_step']:.0f} B, "
        f"LangGraph {sqlite_lg[big]['file_step']:.0f} B "
        f"({sqlite_avo[big]['file_step'] / sqlite_lg[big]['file_step']:.3f}x)"
    )


if __name__ == "__main__":
    main("--full" in sys.argv)
