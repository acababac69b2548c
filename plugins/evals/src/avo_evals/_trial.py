"""One trial, in its own process: ``python -m avo_evals._trial JOB.json``.

The runner starts this with the trial's workspace as the working directory,
so relative paths in the case's avo.toml (a tool's ``workspace = "."``) point
into it. The job names the composed config, the event store, the task and
the run's tags; the result (the run's outcome, its tool calls with errors,
its runs-diff facts, cost and latency) is written to the job's ``result``
path as JSON. Exit 0 when a run was recorded, 3 when none could be.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def _tool_errors(trace: Any) -> list[str | None]:
    """Per tool call (in the order runs-diff lists them), the error text of a failed call."""
    from avo.events import EventType

    order: dict[str, str | None] = {}
    for entry in trace.entries:
        payload = entry.payload
        call_id = payload.get("tool_call_id")
        if entry.event_type is EventType.TOOL_STARTED and isinstance(call_id, str):
            order[call_id] = None
        elif entry.event_type is EventType.TOOL_FAILED and call_id in order:
            result = payload.get("result")
            error = payload.get("error") or (result.get("error") if isinstance(result, dict) else None)
            order[str(call_id)] = str(error or "")
        elif entry.event_type is EventType.TOOL_DENIED:
            reason = payload.get("reason") or payload.get("blocked_by") or ""
            order[str(call_id or len(order))] = f"denied: {reason}"
    return list(order.values())


def _cost(composition: Any, result: Any) -> str | None:
    from avo.usage import estimate_cost, resolve_rates

    provider = composition.runtime.provider
    name = composition.config.provider.name if composition.config.provider else None
    pricing: dict[str, Any] = {}
    if name:
        pricing = dict(getattr(composition.manager.get("provider", name), "pricing", {}) or {})
    rates = resolve_rates(getattr(provider, "model", None), pricing=pricing, environ=os.environ)
    cost = estimate_cost(result.token_usage, rates=rates) if rates else None
    return None if cost is None else str(cost)


async def _run(job: dict[str, Any]) -> dict[str, Any]:
    from avo.compose import compose
    from avo.run_diff import run_facts
    from avo.tracing import TraceInspector

    composition = compose(job["config"], database=job["database"], environ=os.environ)
    async with composition:
        prompt = job.get("system_prompt") or composition.config.system_prompt
        started = time.perf_counter()
        result = await composition.runtime.run(
            job["task"], system_prompt=prompt, user_state=job.get("user_state") or {}
        )
        latency = time.perf_counter() - started
        store = composition.event_store
        facts = await run_facts(store, result.run_id)
        errors = _tool_errors(await TraceInspector(store).inspect(result.run_id))
        cost = _cost(composition, result)
    calls = []
    for index, call in enumerate(facts.tool_calls):
        error = errors[index] if index < len(errors) else None
        calls.append({**call.__dict__, "error": error})
    usage = result.token_usage
    return {
        "run_id": result.run_id,
        "status": result.status.value,
        "stop_reason": result.stop_reason.value if result.stop_reason else None,
        "answer": result.output,
        "error": result.error,
        "steps": result.steps,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": cost,
        "latency_seconds": latency,
        "tool_calls": calls,
        "facts": facts.to_dict(),
    }


def main(argv: list[str]) -> int:
    """Run the job in ``argv[0]``; write its result; 0 when a run was recorded."""
    job_path = Path(argv[0])
    job = json.loads(job_path.read_text(encoding="utf-8"))
    try:
        outcome = asyncio.run(_run(job))
        code = 0
    except BaseException as exc:  # report everything, even SystemExit from a plugin
        from avo.exceptions import AvoError

        if isinstance(exc, AvoError):
            crash = f"{type(exc).__name__}: {exc}"
        else:
            last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
            where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
            crash = f"{type(exc).__name__}: {exc}{where}"
        outcome = {"crash": crash}
        code = 3
    Path(job["result"]).write_text(json.dumps(outcome, default=str), encoding="utf-8")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
