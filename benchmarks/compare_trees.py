"""Before/after: the step benchmarks of two source trees, interleaved in one session.

Runs ``kernel_loop`` (in-memory store) and ``store_growth``'s SQLite loop for
N tool steps, alternating between a baseline tree (e.g. ``git archive`` of an
earlier commit, unpacked) and this checkout, each run in a fresh subprocess
with that tree's ``kernel/src``, ``plugins/sqlite/src`` and ``plugins/evals/src``
first on the path,
so a slow spell of a shared machine hits both alike. Prints the best and the
median per-step CPU and wall time of each, and the ratios this / baseline.

With ``--instructions`` it also counts the instructions of a step under
valgrind (callgrind): the instructions of a run of N2 steps minus those of N1
steps, over N2 - N1, so start-up cancels out. Unlike times, the count does not
move with the machine's load, so it is the figure to hold a 5% budget to.

Run: python benchmarks/compare_trees.py BASELINE_DIR [--this DIR] [--rounds 7] [--steps 200]
     [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

_PROBE = """
import asyncio, json, sys, tempfile, pathlib
sys.path.insert(0, {bench!r})
import kernel_loop, store_growth

async def main():
    await kernel_loop._one(20)
    memory = await kernel_loop._one({steps})
    with tempfile.TemporaryDirectory() as directory:
        sqlite = await store_growth._sqlite_run(pathlib.Path(directory), {steps})
    print(json.dumps({{"memory": memory, "sqlite": sqlite}}))

asyncio.run(main())
"""


def _measure(tree: Path, steps: int) -> dict[str, dict[str, float]]:
    env = dict(os.environ)
    paths = [tree / "kernel" / "src", tree / "plugins" / "sqlite" / "src"]
    paths.append(tree / "plugins" / "evals" / "src")  # avo_evals.bench: the shared loop
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    code = _PROBE.format(bench=str(tree / "benchmarks"), steps=steps)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, dict[str, float]] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


_ONE_LOOP = """
import asyncio, sys, tempfile, pathlib
sys.path.insert(0, {bench!r})
import kernel_loop, store_growth

async def main():
    if {loop!r} == "memory":
        await kernel_loop._one({steps})
    else:
        with tempfile.TemporaryDirectory() as directory:
            await store_growth._sqlite_run(pathlib.Path(directory), {steps})

asyncio.run(main())
"""


def _instructions(tree: Path, loop: str, steps: int) -> int:
    """Instructions valgrind counts for one process running ``steps`` steps of ``loop``."""
    env = dict(os.environ)
    paths = [tree / "kernel" / "src", tree / "plugins" / "sqlite" / "src"]
    paths.append(tree / "plugins" / "evals" / "src")
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    env["PYTHONHASHSEED"] = "0"
    code = _ONE_LOOP.format(bench=str(tree / "benchmarks"), loop=loop, steps=steps)
    with tempfile.TemporaryDirectory() as directory:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={directory}/callgrind.out",
                sys.executable,
                "-c",
                code,
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"valgrind printed no instruction count:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def _instructions_per_step(trees: dict[str, Path], short: int, long: int) -> None:
    print(f"instructions per step under callgrind ({long} steps minus {short}, one run each)")
    print(f"{'loop':>8} {'baseline':>10} {'this':>10} {'ratio':>7}")
    for loop in ("memory", "sqlite"):
        per_step = {}
        for name, tree in trees.items():
            counts = [_instructions(tree, loop, n) for n in (short, long)]
            per_step[name] = (counts[1] - counts[0]) / (long - short)
        base, this = per_step["baseline"], per_step["this"]
        print(f"{loop:>8} {base / 1e6:>9.3f}M {this / 1e6:>9.3f}M {this / base:>6.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline", type=Path)
    parser.add_argument(
        "--this", type=Path, default=HERE, help="the tree to compare (default: this checkout)"
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per step under valgrind (needs valgrind)",
    )
    args = parser.parse_args()
    trees = {"baseline": args.baseline.resolve(), "this": args.this.resolve()}
    if args.instructions:
        if shutil.which("valgrind") is None:
            parser.error("--instructions needs valgrind on PATH (apt-get install valgrind)")
        _instructions_per_step(trees, 50, 50 + args.steps)
    if args.rounds < 1:
        return
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            runs[name].append(_measure(tree, args.steps))
    print(f"compare_trees: {args.steps} tool steps, {args.rounds} interleaved rounds")
    print(f"baseline {trees['baseline']}, this {trees['this']}; load {os.getloadavg()[0]:.1f}")
    print(
        "(best of the rounds, as the other benchmarks report, and the median: on a shared"
        " machine the best is the steadier estimate of CPU-bound work)"
    )
    header = f"{'loop':>8} {'figure':>8} {'baseline':>9} {'this':>9} {'ratio':>7}"
    print(f"{header} {'median b':>9} {'median t':>9} {'ratio':>7}")
    for loop in ("memory", "sqlite"):
        for figure in ("cpu_us", "wall_us"):
            base = [r[loop][figure] for r in runs["baseline"]]
            this = [r[loop][figure] for r in runs["this"]]
            best_b, best_t = min(base), min(this)
            med_b, med_t = statistics.median(base), statistics.median(this)
            print(
                f"{loop:>8} {figure:>8} {best_b:>9.1f} {best_t:>9.1f} {best_t / best_b:>6.3f}x"
                f" {med_b:>9.1f} {med_t:>9.1f} {med_t / med_b:>6.3f}x"
            )


if __name__ == "__main__":
    main()
