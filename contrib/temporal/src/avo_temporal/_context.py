"""What a worker process hands its workflows: its composed runtime and the engine settings.

Workflows cannot read files or the environment (a replay must decide the same
way), so the worker composes its runtime once at start and registers it here
by task queue; each workflow looks it up and derives its own runtime from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from avo_temporal.settings import TemporalSettings


@dataclass(frozen=True)
class WorkerContext:
    """One serving worker: its runtime (real provider, tools, store) and engine settings."""

    runtime: Any
    settings: TemporalSettings
    plugins: Any = None
    provider_state: dict[str, Any] | None = None
    """The state the worker's provider was composed with, if it keeps one (else None)."""


_BY_QUEUE: dict[str, WorkerContext] = {}


def register(task_queue: str, context: WorkerContext) -> None:
    """Make ``context`` the one workflows on ``task_queue`` in this process use."""
    _BY_QUEUE[task_queue] = context


def unregister(task_queue: str) -> None:
    """Forget ``task_queue``'s context (the worker stopped)."""
    _BY_QUEUE.pop(task_queue, None)


def lookup(task_queue: str) -> WorkerContext:
    """The context of the worker serving ``task_queue`` in this process."""
    try:
        return _BY_QUEUE[task_queue]
    except KeyError:
        raise LookupError(
            f"no avo worker serves task queue {task_queue!r} in this process"
        ) from None


__all__ = ["WorkerContext", "lookup", "register", "unregister"]
