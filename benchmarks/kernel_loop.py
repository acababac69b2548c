"""Kernel loop benchmark: the fake-model tool loop on the in-memory store.

N tool calls with distinct arguments, then a final answer, for N = 20, 200 and
2,000. Prints per-step time, early- vs late-step time and peak memory. Target:
under 300 µs per step and flat as the run grows (2,000 vs 20 within 1.5x).

Run: python benchmarks/kernel_loop.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys

from avo_evals.bench import measure_loop, step_row

# The loop, the timed store and the per-step figures live in avo-evals
# (avo_evals.bench), shared with `avo bench`, store_growth.py and
# langgraph_compare.py; `step_row` stays importable from here for them.


async def _one(n: int, *, trace_memory: bool = False) -> dict[str, float]:
    """One n-step run on the in-memory store with the on-loop echo tool."""
    return await measure_loop(n, trace_memory=trace_memory)


async def main(quick: bool) -> None:
    sizes = [20, 200] if quick else [20, 200, 2000]
    rounds = 5
    await _one(20)  # warm up imports and caches
    # Rounds interleave the sizes, so a slow spell of this shared machine hits
    # every size alike; the best round per size is reported, with the median.
    runs: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            runs[n].append(await _one(n))
    rows = {}
    for n in sizes:
        best = min(runs[n], key=lambda r: r["cpu_us"])
        best["median_cpu_us"] = statistics.median(r["cpu_us"] for r in runs[n])
        best["peak_mb"] = (await _one(n, trace_memory=True))["peak_mb"]
        rows[n] = best
    print("kernel_loop: fake-model tool loop, in-memory store")
    print(
        f"(best of {rounds} interleaved rounds, median alongside; wall = elapsed time, cpu = this"
        f" process's CPU time; load average {os.getloadavg()[0]:.1f})"
    )
    header = f"{'N':>6} {'wall µs/step':>13} {'cpu µs/step':>12} {'median cpu':>11}"
    print(f"{header} {'early µs':>9} {'late µs':>9} {'peak MB':>8}")
    for n, r in rows.items():
        print(
            f"{n:>6} {r['wall_us']:>13.1f} {r['cpu_us']:>12.1f} "
            f"{r['median_cpu_us']:>11.1f} {r['early_us']:>9.1f} {r['late_us']:>9.1f} "
            f"{r['peak_mb']:>8.2f}"
        )
    largest = rows[sizes[-1]]
    print(
        f"ratio cpu per-step N={sizes[-1]} / N=20: "
        f"{largest['cpu_us'] / rows[20]['cpu_us']:.2f}x (target <= 1.5x)"
    )
    print(
        f"ratio late/early step at N={sizes[-1]}: {largest['late_us'] / largest['early_us']:.2f}x"
    )


__all__ = ["step_row"]

if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv))
