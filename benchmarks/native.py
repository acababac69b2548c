"""The avo_native extension: each accelerated function, and the whole step, with and without it.

Every figure compares the same public kernel function with the extension and
with its Python twin, which is exactly what runs without the wheel (the
kernel binds each native function once, at import; ``None`` there means the
twin runs).

Two measures:

- **time**: the best of several rounds of wall time per call, the native and
  Python rounds alternating in one process so a slow spell hits both. Best-of
  filters out most of a shared machine's noise; the verdicts use it.
- **instructions** (``valgrind --tool=callgrind``, when valgrind is on PATH):
  instructions per call in two processes, one with ``AVO_NATIVE=0``. Repeatable,
  but valgrind hides the CPU's SHA instructions, so OpenSSL and the crate both
  hash in software there and digest-heavy rows overstate the shared work.
  For the whole step the smaller of the two gains is the one reported.

Inputs are the values a fake-model tool loop really produces (captured from a
run: the request messages, the three payloads the redactor scans each step,
tool calls, results and responses), plus a large tool result (a 4 KB file
read) to show how the gain scales with size.

The verdict rule: a function that gains less than 2x stays in Python; if the
whole step gains less than 10%, that is what is printed (no speedup claimed).

Run: python benchmarks/native.py [--quick] [--no-callgrind]
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
STEPS = 200


# ---------------------------------------------------------------- the inputs
def _captured() -> dict[str, Any]:
    """Run a 12-step fake-model loop and keep what the accelerated functions see."""
    from avo import AgentRuntime, FakeProvider
    from avo.redaction import Redactor
    from avo.storage.memory import InMemoryEventStore
    from avo_evals.bench import echo_tool, tool_loop_script

    scanned: list[Any] = []

    class Recording(Redactor):
        def value(self, value: Any) -> Any:
            scanned.append(value)
            return super().value(value)

    provider = FakeProvider(tool_loop_script(12), record_requests=True)
    runtime = AgentRuntime(provider=provider, tools=[echo_tool()], event_store=InMemoryEventStore())
    runtime.redactor = Recording(environ={"AVO_OPENAI_API_KEY": "sk-bench-0123456789abcdef"})
    asyncio.run(runtime.run("benchmark"))
    return {
        "messages": [dict(m) for m in provider.requests[-1].messages],
        "scanned": scanned[-3:],  # one tool step: the response, the call, the result
    }


def _inputs() -> dict[str, list[Any]]:
    from avo.models import ModelResponse, ToolCall, ToolResult

    captured = _captured()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    file_text = "".join(f"line {i}: def handler(request): return 'héllo', {i}\n" for i in range(80))
    big_output = {
        "path": "src/app.py",
        "content": file_text[:4096],
        "lines": 80,
        "truncated": False,
    }
    calls = [ToolCall(tool_call_id=f"call-{i}", name="echo", arguments={"n": i}) for i in range(64)]
    results = [
        ToolResult(
            tool_call_id=f"call-{i}",
            tool_name="echo",
            success=True,
            output={"n": i},
            started_at=now,
            finished_at=now,
        )
        for i in range(64)
    ]
    big_results = [
        ToolResult(
            tool_call_id=f"call-{i}",
            tool_name="read_file",
            success=True,
            output=big_output,
            started_at=now,
            finished_at=now,
        )
        for i in range(8)
    ]
    responses = [ModelResponse(response_id=f"r-{i}", tool_calls=[calls[i]]) for i in range(64)]
    return {
        "messages": [captured["messages"]],
        "scanned": captured["scanned"],
        "arguments": [call.arguments for call in calls],
        "calls": calls,
        "results": results,
        "big_results": big_results,
        "big_payloads": [r.model_dump(mode="json") for r in big_results],
        "responses": responses,
        "texts": [f'{{"arguments":{{"n":{i}}},"name":"echo"}}' for i in range(64)],
    }


def _cases() -> list[tuple[str, str, Callable[[Any], Any]]]:
    """(name, input key, callable): the kernel's public functions the extension serves."""
    from avo.progress import model_response_fingerprint
    from avo.prompt_cache import cache_key_for_request
    from avo.redaction import Redactor
    from avo.tools import (
        canonical_fingerprint,
        canonical_json,
        sha256_hex,
        tool_call_fingerprint,
        tool_result_fingerprint,
    )

    redactor = Redactor(environ={"AVO_OPENAI_API_KEY": "sk-bench-0123456789abcdef"})
    return [
        ("canonical_json (tool arguments)", "arguments", canonical_json),
        ("canonical_json (4 KB tool result)", "big_payloads", canonical_json),
        ("canonical_fingerprint (tool arguments)", "arguments", canonical_fingerprint),
        ("sha256_hex (a call's canonical text)", "texts", sha256_hex),
        ("tool_call_fingerprint (new call)", "calls", tool_call_fingerprint),
        ("tool_result_fingerprint", "results", tool_result_fingerprint),
        ("tool_result_fingerprint (4 KB output)", "big_results", tool_result_fingerprint),
        ("model_response_fingerprint", "responses", model_response_fingerprint),
        ("Redactor.value (a step's 3 payloads)", "scanned", redactor.value),
        ("Redactor.value (4 KB tool result)", "big_payloads", redactor.value),
        (
            "cache_key_for_request (12-step transcript)",
            "messages",
            lambda m: cache_key_for_request(run_id="run-1", step=12, messages=m),
        ),
    ]


# ---------------------------------------------------------------- the worker
def _loop(store_kind: str) -> None:
    from avo_evals.bench import measure_loop

    store = None
    if store_kind == "sqlite":
        from avo_sqlite import SQLiteEventStore

        store = SQLiteEventStore(Path(tempfile.mkdtemp()) / "native-bench.db")
    asyncio.run(measure_loop(STEPS, store=store))


def _region(fn: Callable[[], Any], count: int) -> None:
    """Call ``fn`` ``count`` times inside functools.reduce: callgrind counts only in there."""
    reduce(lambda _acc, _i: fn(), range(count), None)


# The module-level bindings the kernel falls back from (None = the Python twin runs).
_BINDINGS = [
    ("avo.tools", "_native_canonical_json"),
    ("avo.tools", "_native_canonical_fingerprint"),
    ("avo.tools", "_native_sha256_hex"),
    ("avo.tools", "_native_tool_result_fingerprint"),
    ("avo.redaction", "_native_joined_strings"),
    ("avo._native", "_cache_key_hash"),
]


class _Switch:
    """Turn the extension's bindings off and on in this process (off = a process without it)."""

    def __init__(self) -> None:
        import importlib

        self.saved = [
            (module, name, getattr(module, name))
            for module, name in ((importlib.import_module(m), n) for m, n in _BINDINGS)
        ]

    def set(self, native: bool) -> None:
        for module, name, value in self.saved:
            setattr(module, name, value if native else None)


def _worker_callgrind(calls: int) -> None:
    """One callgrind region per measurement, in order; the parent reads one dump per region."""
    inputs = _inputs()
    _region(lambda: None, calls)  # the harness alone
    for _name, key, fn in _cases():
        values = inputs[key]
        cycle = iter(values * (calls // len(values) + 1))
        _region(lambda fn=fn, cycle=cycle: fn(next(cycle)), calls)
    _loop("memory")  # warm-up outside any region
    for store_kind in ("memory", "sqlite"):
        _region(lambda kind=store_kind: _loop(kind), 1)


def _best_times(calls: int, rounds: int, pairs: int) -> dict[str, Any]:
    """Best wall ns per call and CPU µs per step, Python and native alternating in one process."""
    from avo_evals.bench import measure_loop

    switch = _Switch()
    inputs = _inputs()
    functions: dict[str, dict[bool, float]] = {}
    for name, key, fn in _cases():
        values = inputs[key]
        batch = values * (calls // len(values) + 1)
        best = {False: float("inf"), True: float("inf")}
        for _ in range(rounds):
            for native in (False, True):
                switch.set(native)
                for value in values:  # warm caches (and check it runs)
                    fn(value)
                started = time.perf_counter()
                for value in batch:
                    fn(value)
                best[native] = min(best[native], (time.perf_counter() - started) / len(batch))
        functions[name] = {native: ns * 1e9 for native, ns in best.items()}
    asyncio.run(measure_loop(20))
    step: dict[str, dict[bool, float]] = {}
    for store_kind in ("memory", "sqlite"):
        best = {False: float("inf"), True: float("inf")}
        for _ in range(pairs):
            for native in (False, True):
                switch.set(native)
                store = None
                if store_kind == "sqlite":
                    from avo_sqlite import SQLiteEventStore

                    store = SQLiteEventStore(Path(tempfile.mkdtemp()) / "native-bench.db")
                row = asyncio.run(measure_loop(STEPS, store=store))
                best[native] = min(best[native], row["cpu_us"])
        step[store_kind] = best
    switch.set(True)
    return {"functions": functions, "step": step}


# ---------------------------------------------------------------- the parent
def _env(native: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("AVO_NATIVE", None)
    if not native:
        env["AVO_NATIVE"] = "0"
    return env


def _instructions(native: bool, calls: int, expected: int) -> list[int] | None:
    """Instructions per region (harness, each case, memory loop, SQLite loop), or None."""
    with tempfile.TemporaryDirectory() as directory:
        out_file = Path(directory) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--collect-atstart=no",
                "--toggle-collect=functools_reduce",
                "--dump-after=functools_reduce",
                f"--callgrind-out-file={out_file}",
                sys.executable,
                str(HERE),
                "--worker",
                "callgrind",
                str(calls),
                "1",
            ],
            env=_env(native),
            check=True,
            capture_output=True,
        )
        dumps = sorted(
            Path(directory).glob("callgrind.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1])
        )
        totals = []
        for dump in dumps:
            match = re.search(r"^totals:\s*(\d+)", dump.read_text(errors="replace"), re.M)
            totals.append(int(match.group(1)) if match else 0)
    if len(totals) != expected or totals[0] == 0:  # no functools_reduce symbol, or nested use
        return None
    return totals


def _verdict(ratio: float) -> str:
    """Per input: >= 2x earns the function its place; a function < 2x on the inputs a
    step sees would stay in Python (native/README.md says which rows decide)."""
    return ">= 2x" if ratio >= 2.0 else "< 2x on this input"


def main(argv: list[str]) -> None:
    if "--worker" in argv:
        _worker_callgrind(int(argv[argv.index("--worker") + 2]))
        return
    quick = "--quick" in argv
    calls, rounds, pairs = (2_000, 3, 2) if quick else (10_000, 7, 3)
    from avo import _native

    if not _native.is_available():
        reason = _native.import_error()
        print(f"native: the avo_native extension is not loaded here ({reason}); nothing to compare")
        print("build it with `bash scripts/build-native.sh` (needs cargo), then run this again")
        return
    print(f"native: avo_native {_native.version()} vs the same kernel running its Python twins")
    names = [name for name, _key, _fn in _cases()]

    use_callgrind = "--no-callgrind" not in argv and shutil.which("valgrind") is not None
    counts: dict[bool, list[int] | None] = {}
    if use_callgrind:
        for native in (False, True):
            counts[native] = _instructions(native, calls // 5, len(names) + 3)
        if counts[False] is None or counts[True] is None:
            print("callgrind: regions not delimited (no functools_reduce symbol?); counts skipped")
            use_callgrind = False
    timed = _best_times(calls, rounds, pairs)

    per_call = calls // 5
    print()
    print("best wall time per call, Python twin vs native, alternating in one process")
    print("(the verdict uses these: a function gaining < 2x on a step's inputs stays in Python)")
    header = f"{'function':44} {'ns Py':>8} {'ns nat':>8} {'ratio':>6}"
    if use_callgrind:
        header += f" {'instr Py':>9} {'instr nat':>9} {'ratio':>6}"
    print(f"{header}  verdict")
    for index, name in enumerate(names):
        py_ns, nat_ns = timed["functions"][name][False], timed["functions"][name][True]
        ratio = py_ns / nat_ns
        line = f"{name:44} {py_ns:8.0f} {nat_ns:8.0f} {ratio:5.2f}x"
        if use_callgrind:
            assert counts[False] is not None and counts[True] is not None
            harness = (counts[False][0], counts[True][0])
            py_ir = (counts[False][index + 1] - harness[0]) / per_call
            nat_ir = (counts[True][index + 1] - harness[1]) / per_call
            line += f" {py_ir:9.0f} {nat_ir:9.0f} {py_ir / nat_ir:5.2f}x"
        print(f"{line}  {_verdict(ratio)}")
    if use_callgrind:
        print(
            "(instructions: callgrind, AVO_NATIVE=0 vs on; valgrind runs SHA-256 in software, "
            "so digest-heavy rows count far more work than the hardware does)"
        )

    print()
    print(f"the whole fake-model step ({STEPS} tool steps; per step)")
    for offset, store_kind in enumerate(("memory", "sqlite")):
        py_us, nat_us = timed["step"][store_kind][False], timed["step"][store_kind][True]
        gain = 1 - nat_us / py_us
        line = f"  {store_kind:7} cpu µs/step Python {py_us:7.1f}  native {nat_us:7.1f}"
        line += f"  ratio {py_us / nat_us:.3f}x (gain {gain:.1%})"
        if use_callgrind:
            assert counts[False] is not None and counts[True] is not None
            at = len(names) + 1 + offset
            py_ir, nat_ir = counts[False][at] / STEPS, counts[True][at] / STEPS
            ir_gain = 1 - nat_ir / py_ir
            line += f"; instructions/step Python {py_ir:,.0f}  native {nat_ir:,.0f}"
            line += f"  ratio {py_ir / nat_ir:.3f}x ({ir_gain:.1%} fewer)"
            gain = min(gain, ir_gain)
        print(line)
        if not use_callgrind:
            print(
                f"  -> the {store_kind} step: time alone ({gain:.1%}) is too noisy on a shared "
                "machine to claim a gain; run with valgrind on PATH for the verdict"
            )
        elif gain < 0.10:
            print(
                f"  -> the {store_kind} step gains {gain:.1%}: under 10%, so no speedup is "
                "claimed for the step"
            )
        else:
            print(f"  -> the {store_kind} step gains {gain:.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
