"""The end of ``avo run`` / ``avo runs resume``: the summary on stderr (or JSON on stdout).

A run that stopped or failed says why in full, including the underlying tool
or provider error when the stop reason alone ("3 consecutive errors") would
hide it; a completed run whose tool calls failed along the way says that too.
"""

from __future__ import annotations

import sys
from typing import Any

from avo.events import EventType

EXIT_OK, EXIT_STOPPED, EXIT_INTERRUPTED = 0, 1, 130
EXIT_WAITING = 3
"""The run paused for a person (an approval, a question): answer, then resume."""


async def failures_of(store: Any, run_id: str) -> list[str]:
    """Every failed tool call and model call of the run, in order, in full."""
    found = []
    for event in await store.get_events(run_id):
        payload = event.payload
        if event.event_type is EventType.TOOL_FAILED:
            found.append(f"tool {payload.get('name', '?')}: {payload.get('error') or 'failed'}")
        elif event.event_type is EventType.MODEL_FAILED:
            found.append(f"model call: {payload.get('error') or 'failed'}")
    return found


def exit_code(status: str) -> int:
    """0 completed, 130 paused (interrupted: resumable), 1 otherwise."""
    if status == "completed":
        return EXIT_OK
    return EXIT_INTERRUPTED if status == "paused" else EXIT_STOPPED


def summary_lines(
    result: Any, location: str, failures: list[str], waiting: list[Any] | None = None
) -> list[str]:
    """The ``key: value`` summary lines of a finished (or interrupted) run."""
    usage = result.token_usage
    tokens = f"{usage.total_tokens} (input {usage.input_tokens}, output {usage.output_tokens})"
    if not result.token_accounting_available:
        tokens += " (accounting unavailable)"
    status = result.status.value
    lines = [
        f"run id:      {result.run_id}",
        f"status:      {'interrupted (resumable)' if status == 'paused' else status}",
        f"stop reason: {result.stop_reason.value if result.stop_reason else '-'}",
        f"steps:       {result.steps}",
        f"tokens:      {tokens}",
        f"store:       {location}",
    ]
    if result.error:
        lines.append(f"error:       {result.error}")
    if failures and status != "completed":
        lines.append(f"cause:       {failures[-1]}")
    elif failures:
        lines.append(f"warning:     {len(failures)} call(s) failed along the way; the last:")
        lines.append(f"             {failures[-1]}")
    if status == "paused" and waiting:
        lines[1] = "status:      paused (waiting for a person)"
        for request in waiting:
            lines.append(f"waiting:     {request.tool_call_id}: {request.summary()}")
        verbs = {r.kind.value for r in waiting}
        if "approval" in verbs:
            lines.append(f"approve:     avo runs approve {result.run_id} [CALL_ID]")
            lines.append(f"deny:        avo runs deny {result.run_id} [CALL_ID] --reason ...")
        if "question" in verbs:
            lines.append(f"answer:      avo runs answer {result.run_id} [CALL_ID] TEXT")
        lines.append(f"then:        avo runs resume {result.run_id}")
    elif status == "paused":
        lines.append(f"resume with: avo runs resume {result.run_id}")
    return lines


async def report(
    args: Any, result: Any, store: Any, location: str, seen: list[str] | None = None
) -> int:
    """Print the summary (stderr) or the JSON result (stdout); return the exit code."""
    from avo.cli._output import print_json

    failures = await failures_of(store, result.run_id)
    status = result.status.value
    waiting: list[Any] = []
    if status == "paused":
        from avo.ops.approval import pending_requests

        waiting = await pending_requests(store, result.run_id)
    if getattr(args, "json", False):
        data = result.model_dump(mode="json")
        data["store"] = location
        data["failures"] = failures
        data["interrupted"] = status == "paused" and not waiting
        data["waiting"] = [
            {"tool_call_id": r.tool_call_id, "kind": r.kind.value, "summary": r.summary()}
            for r in waiting
        ]
        print_json(data)
    elif not getattr(args, "quiet", False):
        for line in summary_lines(result, location, failures, waiting):
            print(line, file=sys.stderr)
    elif waiting:
        print(
            f"avo: run {result.run_id} waits for a person ({len(waiting)} request(s)): "
            f"avo runs list --pending",
            file=sys.stderr,
        )
    elif status != "completed":
        cause = result.error or (failures[-1] if failures else status)
        print(f"avo: run {result.run_id} {status}: {cause}", file=sys.stderr)
    return EXIT_WAITING if waiting else exit_code(status)


__all__ = ["EXIT_WAITING", "exit_code", "failures_of", "report", "summary_lines"]
