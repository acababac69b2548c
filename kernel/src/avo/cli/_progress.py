"""Progress lines on stderr while a run is driven (``-v``), and failures always.

An in-process observer plugin (``avo_event_appended``) registered on the run's
plugin manager: it sees every stored event. Tool starts and finishes are shown
with ``-v`` (or on a terminal), model calls and retries with ``-vv``; failed
tool calls, failed model calls and policy stops are always shown, in full,
because a run that quietly worked around a failure hides its cause otherwise.
A run driven elsewhere (an engine's worker) also shows its tools' progress
notes (``tool_progress``) with the tool lines: a tool's own printing happens on
the worker, out of sight.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from avo.events import AgentEvent, EventType
from avo.hookspecs import hookimpl


def _arguments(value: Any, limit: int = 100) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _amount(payload: Any) -> str:
    done, total, message = payload.get("progress"), payload.get("total"), payload.get("message")
    text = f"{done:g}" if isinstance(done, int | float) else "?"
    text += f"/{total:g}" if isinstance(total, int | float) else ""
    if isinstance(message, str) and message:
        line = " ".join(message.split())
        text += " " + (line if len(line) <= 100 else line[:99] + "…")
    return text


class ProgressPrinter:
    """Prints one line per interesting event to stderr."""

    def __init__(
        self,
        *,
        verbosity: int,
        tools: bool,
        write: Any = None,
        started: str | None = None,
        notes: bool = False,
    ) -> None:
        self.verbosity = verbosity
        self.notes = notes  # tool_progress lines (the run is driven elsewhere)
        # printed once the run's first event is stored, so the id it names exists
        self.started = started
        self.tools = tools or verbosity >= 1
        self._write = write or self._stderr
        self.failures: list[str] = []

    @staticmethod
    def _stderr(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    @hookimpl
    def avo_event_appended(self, event: AgentEvent) -> None:
        """Print the event's progress line, if it has one."""
        line = self.line(event)
        if line is not None:
            self._write(line)

    def line(self, event: AgentEvent) -> str | None:
        """The progress line for ``event`` (None: nothing to show at this verbosity)."""
        kind, payload = event.event_type, event.payload
        if kind is EventType.RUN_CREATED and self.started is not None:
            return self.started.format(run_id=event.run_id)
        name = payload.get("name", "?")
        if kind is EventType.TOOL_STARTED and self.tools:
            return f"  → {name} {_arguments(payload.get('arguments', {}))}"
        if kind is EventType.TOOL_PROGRESS and self.tools and self.notes:
            return f"  … {name} {_amount(payload)}"
        if kind is EventType.TOOL_COMPLETED and self.tools:
            duration = payload.get("duration_ms")
            took = f" ({float(duration):.0f} ms)" if isinstance(duration, int | float) else ""
            return f"  ✓ {name}{took}"
        if kind is EventType.TOOL_FAILED:
            error = str(payload.get("error") or "failed")
            self.failures.append(f"tool {name}: {error}")
            return f"  ✗ {name} failed: {error}"
        if kind is EventType.MODEL_FAILED:
            error = str(payload.get("error") or "failed")
            self.failures.append(f"model call: {error}")
            retry = "will retry" if payload.get("retryable") else "not retryable"
            if "retry_in_seconds" in payload:  # the run loop's own retries (with a wait)
                wait = payload.get("retry_in_seconds")
                if isinstance(wait, int | float):
                    retry = f"retrying in {wait:.2g}s"
                elif payload.get("retryable"):
                    retry = "no more retries"
                attempt, most = payload.get("attempt"), payload.get("max_attempts")
                if isinstance(attempt, int) and isinstance(most, int) and most > 1:
                    retry = f"attempt {attempt}/{most}, {retry}"
            return f"  ! model call failed ({retry}): {error}"
        if kind is EventType.POLICY_TRIGGERED:
            return f"  ■ {payload.get('message') or payload.get('stop_reason')}"
        if kind is EventType.ROUTE_FAILOVER and self.verbosity >= 1:
            return f"  ↪ provider failover: {_arguments(payload, 160)}"
        if kind is EventType.MODEL_RESPONDED and self.verbosity >= 2:
            response = payload.get("response") or {}
            calls: Any = response.get("tool_calls") if isinstance(response, dict) else None
            if not calls and isinstance(response, dict) and response.get("tool_call"):
                calls = [response["tool_call"]]  # a log written before parallel calls
            listed = calls if isinstance(calls, list) else []
            names = [c.get("name") for c in listed if isinstance(c, dict)]
            what = f"tool call {', '.join(map(str, names))}" if names else "answer"
            return f"  · step {payload.get('step')}: model chose {what}"
        if kind is EventType.CHECKPOINT_CREATED and self.verbosity >= 3:
            return f"  · checkpoint at {payload.get('state')}"
        return None


__all__ = ["ProgressPrinter"]
