"""A runtime and run context for operations that write to a run without driving it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from avo._run_context import _RunContext
from avo.events import RunLogState
from avo.models import Checkpoint, ModelRequest, ModelResponse, RunRecord, replaced
from avo.policies import LoopPolicy
from avo.runtime_recovery import context_from_checkpoint

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime


class _NoProvider:
    """Stands in for the model provider of an operation that never calls one."""

    name = "none"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        raise RuntimeError("this operation does not call a model provider")


def offline_runtime(store: Any, *, environ: Mapping[str, str] | None = None) -> AgentRuntime:
    """A runtime over ``store`` that can record events but calls no provider or tool."""
    from avo.runtime import AgentRuntime

    return AgentRuntime(provider=_NoProvider(), event_store=store, environ=environ)


def run_context(
    rt: AgentRuntime, run: RunRecord, log: RunLogState, checkpoint: Checkpoint | None
) -> _RunContext:
    """The loop state of a stored run: from its checkpoint, else from its head alone."""
    if checkpoint is not None:
        ctx = context_from_checkpoint(rt, run, log, checkpoint)
    else:
        ctx = _RunContext(
            batch=getattr(rt.event_store, "append_batch", None),
            run=run,
            log=log,
            policy=LoopPolicy(),
            messages=[],
            started_at=rt.clock(),
        )
    ctx.run = replaced(ctx.run, state=log.state)
    return ctx


__all__ = ["offline_runtime", "run_context"]
