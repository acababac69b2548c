"""``avo bench``: the runtime's own cost on this machine, as ratios against a bare baseline.

Every figure comes from the same deterministic loop (:mod:`avo_evals.bench`),
measured in this process and in this run:

- **bare**: the in-memory store and a trivial tool: the kernel's per-step cost
  at each run length, and how it grows (per step at the longest run vs the
  shortest; the late steps vs the early steps of the longest run);
- **store** (``--store NAME``, default ``sqlite``): the same loop writing to
  that store plugin: per-step cost, its ratio to bare, the write cost per step
  (the difference) and, for a file, bytes stored per step;
- **tool** (``--tool NAME``): the loop calling that tool plugin with
  ``--tool-args`` instead of the trivial tool: ratio to bare and the tool's
  cost per call.

Sizes are interleaved over rounds so a slow spell of a shared machine hits
them alike; the best round (lowest CPU) is reported with the median beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from avo.exceptions import AvoError, ConfigError


def _sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of step counts like 20,200"
        ) from None
    if not sizes or sizes[0] < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give step counts of at least 2, e.g. 20,200")
    return sizes


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of rounds") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} rounds: give at least 1")
    return value


def _table(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f'{text!r} is not JSON ({exc.msg}); e.g. \'{{"path": "README.md"}}\''
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r} must be a JSON object")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo bench``'s arguments."""
    parser.add_argument("--quick", action="store_true", help="sizes 20,200 and 3 rounds")
    parser.add_argument(
        "--sizes", type=_sizes, default=None, metavar="N,N",
        help="run lengths in tool steps (default: 20,200,2000)",
    )  # fmt: skip
    parser.add_argument(
        "--rounds", type=_rounds, default=None, metavar="N",
        help="interleaved rounds per size; the best is reported (default 5, 3 with --quick)",
    )  # fmt: skip
    parser.add_argument(
        "--store", default="sqlite", metavar="NAME",
        help="store plugin to measure (default: sqlite); 'none' skips the store figures",
    )  # fmt: skip
    parser.add_argument(
        "--store-location", default=None, metavar="LOCATION",
        help="where the store writes (default: a temporary file; a URL for server stores)",
    )  # fmt: skip
    parser.add_argument(
        "--store-settings", type=_table, default={}, metavar="JSON",
        help="the store plugin's settings",
    )  # fmt: skip
    parser.add_argument("--tool", default=None, metavar="NAME", help="tool plugin to measure")
    parser.add_argument(
        "--tool-settings", type=_table, default={}, metavar="JSON",
        help="the tool plugin's settings, e.g. '{\"workspace\": \".\"}'",
    )  # fmt: skip
    parser.add_argument(
        "--tool-args", type=_table, default={}, metavar="JSON",
        help="arguments of every call of --tool, e.g. '{\"path\": \"README.md\"}'",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


class _StoreMaker:
    """Fresh store instances of one plugin for each measured run."""

    def __init__(self, args: argparse.Namespace, manager: Any, directory: Path) -> None:
        self.name = args.store
        self.manager = manager
        self.settings = args.store_settings
        spec = manager.get("store", self.name)
        self.spec = spec
        self.location = args.store_location
        self.directory = directory
        self.count = 0
        self.file: Path | None = None
        if self.location is None:
            suffixes = tuple(getattr(spec, "suffixes", ()) or ())
            schemes = tuple(getattr(spec, "schemes", ()) or ())
            if not suffixes and "memory" not in schemes:
                shown = ", ".join(f"{s}://..." for s in schemes) or "a location"
                raise ConfigError(
                    f"store {self.name!r} opens {shown}, not a file; pass --store-location",
                    key="store-location",
                )
            self.suffix = suffixes[0] if suffixes else ""

    async def make(self) -> Any:
        from avo.compose import open_store

        self.count += 1
        location = self.location
        if location is None:
            if not self.suffix:
                location = "memory:"
            else:
                self.file = self.directory / f"bench-{self.count}{self.suffix}"
                location = str(self.file)
        store = open_store(location, manager=self.manager, name=self.name, settings=self.settings)
        if asyncio.iscoroutine(store):
            store = await store
        return store


async def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        await close()


def _file_bytes(path: Path | None) -> int:
    if path is None:
        return 0
    return sum(
        candidate.stat().st_size
        for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
        if candidate.exists()
    )


async def _best(
    rounds: int, sizes: list[int], measure: Callable[[int], Awaitable[dict[str, float]]]
) -> dict[int, dict[str, float]]:
    runs: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            runs[n].append(await measure(n))
    best = {}
    for n in sizes:
        row = dict(min(runs[n], key=lambda r: r["cpu_us"]))
        row["median_cpu_us"] = statistics.median(r["cpu_us"] for r in runs[n])
        best[n] = row
    return best


async def bench(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """Measure bare, store and tool figures; return them as a JSON-ready dict."""
    from avo.plugins.manager import PluginManager
    from avo_evals.bench import loop_policy, measure_loop

    manager = getattr(args, "avo_plugins", None) or PluginManager(environ=environ)
    sizes = args.sizes or ([20, 200] if args.quick else [20, 200, 2000])
    rounds = args.rounds or (3 if args.quick else 5)
    middle = sizes[len(sizes) // 2] if len(sizes) > 2 else sizes[-1]
    tool = None
    if args.tool:
        spec = manager.get("tool", args.tool)
        tool = spec.factory(dict(args.tool_settings))
        tool = tool[0] if isinstance(tool, list | tuple) else tool
        try:
            await tool.invoke(dict(args.tool_args))
        except Exception as exc:
            raise ConfigError(
                f"tool {args.tool!r} failed with --tool-args {json.dumps(args.tool_args)}: "
                f"{type(exc).__name__}: {exc}; pass arguments (and --tool-settings) it accepts",
                key="tool-args",
            ) from None
    await measure_loop(20)  # warm up imports and caches
    result: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "cpus": os.cpu_count(),
            "load_average": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        },
        "sizes": sizes,
        "rounds": rounds,
    }
    bare = await _best(rounds, sizes, lambda n: measure_loop(n))
    bare[sizes[-1]]["peak_mb"] = (await measure_loop(sizes[-1], trace_memory=True))["peak_mb"]
    first, last = bare[sizes[0]], bare[sizes[-1]]
    result["bare"] = {str(n): row for n, row in bare.items()}
    result["growth"] = {
        "per_step_longest_vs_shortest": last["cpu_us"] / first["cpu_us"],
        "late_vs_early_step": last["late_us"] / last["early_us"] if last["early_us"] else None,
    }
    if args.store and args.store.lower() != "none":
        with tempfile.TemporaryDirectory(prefix="avo-bench-") as directory:
            maker = _StoreMaker(args, manager, Path(directory))

            async def on_store(n: int) -> dict[str, float]:
                store = await maker.make()
                try:
                    row = await measure_loop(n, store=store)
                finally:
                    await _close(store)
                row["bytes_step"] = _file_bytes(maker.file) / (n + 1)
                return row

            rows = await _best(rounds, sizes, on_store)
        for n, row in rows.items():
            row["ratio_to_bare"] = row["cpu_us"] / bare[n]["cpu_us"]
            row["write_us"] = row["cpu_us"] - bare[n]["cpu_us"]
        result["store"] = {"name": maker.name, "rows": {str(n): row for n, row in rows.items()}}
        result["store"]["growth"] = rows[sizes[-1]]["cpu_us"] / rows[sizes[0]]["cpu_us"]
    if tool is not None:
        # identical calls: the detectors are relaxed, for the tool and its bare baseline alike
        arguments = dict(args.tool_args)
        relaxed = loop_policy(middle)
        base = await _best(rounds, [middle], lambda n: measure_loop(n, policy=relaxed))
        rows = await _best(
            rounds,
            [middle],
            lambda n: measure_loop(n, tool=tool, arguments=lambda i: arguments, policy=relaxed),
        )
        row, bare_row = rows[middle], base[middle]
        row["ratio_to_bare"] = row["cpu_us"] / bare_row["cpu_us"]
        row["call_us"] = row["cpu_us"] - bare_row["cpu_us"]
        row["wall_call_us"] = row["wall_us"] - bare_row["wall_us"]
        result["tool"] = {"name": args.tool, "steps": middle, "row": row, "bare": bare_row}
    return result


def to_text(data: dict[str, Any]) -> str:
    """The figures as a table, ratios last."""
    machine = data["machine"]
    lines = [
        f"avo bench: fake-model tool loop, best of {data['rounds']} interleaved rounds "
        f"(median beside it); Python {machine['python']}, {machine['cpus']} CPUs, "
        f"load average {machine['load_average']}",
        "",
        f"{'run':<22} {'steps':>6} {'cpu µs/step':>12} {'median':>9} {'wall µs/step':>13} "
        f"{'late/early':>10} {'vs bare':>8}  notes",
    ]

    def line(label: str, n: str, row: dict[str, Any], ratio: float, notes: str = "") -> None:
        # the first and last tenth of a short run are a step or two: too few to compare
        late = (
            f"{row['late_us'] / row['early_us']:.2f}x" if row["early_us"] and int(n) >= 100 else "-"
        )
        lines.append(
            f"{label:<22} {n:>6} {row['cpu_us']:>12.1f} {row['median_cpu_us']:>9.1f} "
            f"{row['wall_us']:>13.1f} {late:>10} {ratio:>7.2f}x  {notes}".rstrip()
        )

    for n, row in data["bare"].items():
        notes = f"peak {row['peak_mb']:.1f} MB" if row.get("peak_mb") else ""
        line("bare (memory, echo)", n, row, 1.0, notes)
    store = data.get("store")
    if store:
        for n, row in store["rows"].items():
            notes = f"write {row['write_us']:.0f} µs/step"
            if row.get("bytes_step"):
                notes += f", {row['bytes_step'] / 1024:.1f} KB/step"
            line(f"store {store['name']}", n, row, row["ratio_to_bare"], notes)
    tool = data.get("tool")
    if tool:
        row = tool["row"]
        notes = f"{row['call_us']:.0f} µs CPU, {row['wall_call_us']:.0f} µs wall a call"
        line(f"tool {tool['name']}", str(tool["steps"]), row, row["ratio_to_bare"], notes)
    growth = data["growth"]
    sizes = data["sizes"]
    lines += [
        "",
        f"ratio bare cpu per step, {sizes[-1]} vs {sizes[0]} steps: "
        f"{growth['per_step_longest_vs_shortest']:.2f}x (flat is 1.00x)",
    ]
    if growth["late_vs_early_step"] is not None:
        lines.append(
            f"ratio late/early step at {sizes[-1]} steps: {growth['late_vs_early_step']:.2f}x"
        )
    if store:
        mid = store["rows"][str(sizes[len(sizes) // 2] if len(sizes) > 2 else sizes[-1])]
        lines.append(f"ratio store {store['name']} / bare per step: {mid['ratio_to_bare']:.2f}x")
        lines.append(
            f"ratio store {store['name']} cpu per step, {sizes[-1]} vs {sizes[0]} steps: "
            f"{store['growth']:.2f}x"
        )
    if tool:
        lines.append(
            f"ratio tool {tool['name']} / bare per step: {tool['row']['ratio_to_bare']:.2f}x"
        )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Run ``avo bench``; avo errors print ``avo: {message}`` and return 2."""
    environ: Mapping[str, str] = getattr(args, "avo_environ", None) or os.environ
    try:
        data = asyncio.run(bench(args, environ))
    except AvoError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"avo: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        sys.stdout.write(to_text(data))
    return 0


__all__ = ["bench", "configure", "run", "to_text"]
