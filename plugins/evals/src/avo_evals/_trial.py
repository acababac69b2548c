"""The trial worker: ``python -m avo_evals._trial`` runs the trials it reads on stdin.

The runner keeps one worker process per concurrent trial and hands each a
job at a time: the worker moves into the trial's workspace (so relative paths
in the case's avo.toml, like a tool's ``workspace = "."``, point into it),
takes the job's environment, composes the config and runs the task. The job
names the composed config, the event store, the task and the run's tags; the
result (the run's outcome, its tool calls with errors, its runs-diff facts,
cost and latency) is written to the job's ``result`` path as JSON. A worker
that hangs past the trial's timeout or dies is killed and replaced.
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
            error = payload.get("error") or (
                result.get("error") if isinstance(result, dict) else None
            )
            order[str(call_id)] = str(error or "")
        elif entry.event_type is EventType.TOOL_DENIED:
            reason = payload.get("reason") or payload.get("blocked_by") or ""
            order[str(call_id or len(order))] = str(reason)
    return list(order.values())


def _unattended(request: Any) -> Any:
    """Nobody attends a trial: a call that waits for approval is denied, a question
    gets a reply saying so (the run goes on and the checks judge it)."""
    from avo.approval import Answer, RequestKind

    if request.kind is RequestKind.QUESTION:
        return Answer.reply("(nobody can answer: this is an unattended eval trial)", by="avo eval")
    return Answer.deny("nobody can approve it: this is an unattended eval trial", by="avo eval")


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

    composition = compose(
        job["config"], database=job["database"], environ=os.environ, answerer=_unattended
    )
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


def run_job(job: dict[str, Any]) -> int:
    """Run one job; write its result file; 0 when a run was recorded, 3 when none was."""
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


def serve() -> int:
    """Run the jobs read from stdin (one JSON object a line), one at a time.

    Each job's stdout and stderr go to its own log file, its standard input is
    empty (a trial is unattended: a prompt reads end of input), its working directory
    is its workspace and its environment is the job's; a line
    ``{"id": ..., "code": ...}`` on the original stdout says it is done.
    """
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    jobs = os.fdopen(os.dup(0), "r", encoding="utf-8")
    quiet = os.open(os.devnull, os.O_WRONLY)  # until a job's log: nothing on the pipe
    os.dup2(quiet, 1)
    os.close(quiet)
    # A trial is unattended: whatever asks for input (an approval prompt) reads
    # end of input, never the job pipe.
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the worker
    for line in jobs:
        if not line.strip():
            continue
        job = json.loads(line)
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        code = run_job(job)
        sys.stdout.flush()
        sys.stderr.flush()
        protocol.write(json.dumps({"id": job["id"], "code": code}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(serve())
