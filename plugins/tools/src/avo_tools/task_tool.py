"""task: run a subagent — a child AgentRuntime — under the parent run.

``agent_type="explore"`` gets the read-only subset (tools whose declared risk
is INSPECT); ``"general"`` gets every tool. The task tool itself is never
handed down. Child run ids are ``{parent_run_id}.task-{n}`` and the child
writes to the parent's event store, so both runs can be inspected together.

The parent run id is learned from a PRE_TOOL_USE hook the task tool installs
on its parent runtime (fired in the run's own task right before the call).
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.exceptions import ToolExecutionError
from avo.hooks import HookContext, HookDecision, HookEvent, HookRegistry
from avo.models import ToolRisk
from avo.tools import FunctionTool, Tool
from avo_tools._build import build_tool


class AgentType(StrEnum):
    """Which tool subset a subagent gets."""

    EXPLORE = "explore"
    GENERAL = "general"


class TaskArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent_type: AgentType = AgentType.EXPLORE
    prompt: str = Field(min_length=1, description="What the subagent should do.")
    max_steps: int | None = Field(default=None, gt=0)


ToolSelector = Callable[[AgentType], list[Tool]]

_parent_run: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "avo_tools_parent_run", default=None
)


def child_run_id(parent: str, child: str) -> str:
    """``f"{parent}.{child}"``."""
    return f"{parent}.{child}"


def _track_run(context: HookContext) -> HookDecision:
    _parent_run.set(context.run_id)
    return HookDecision.allow()


def _default_selector(parent_runtime: Any, tools: list[Tool] | None) -> ToolSelector:
    def select(agent_type: AgentType) -> list[Tool]:
        pool = (
            tools
            if tools is not None
            else [parent_runtime.tools.get(name) for name in parent_runtime.tools.names()]
        )
        pool = [t for t in pool if t.metadata.name != "task"]
        if agent_type is AgentType.EXPLORE:
            return [t for t in pool if t.metadata.effective_risk is ToolRisk.INSPECT]
        return pool

    return select


def track_parent_runs(hooks: HookRegistry) -> HookRegistry:
    """Register the PRE_TOOL_USE hook that lets ``task`` learn its parent run id."""
    if _track_run not in hooks.hooks_for(HookEvent.PRE_TOOL_USE):
        hooks.register(HookEvent.PRE_TOOL_USE, _track_run)
    return hooks


def task_tool(
    *,
    parent_runtime: Any,
    tools: list[Tool] | ToolSelector | None = None,
    policy_overrides: Mapping[str, Any] | None = None,
    provider: Any = None,
    approval_callback: Callable[..., Any] | None = None,
    hooks: HookRegistry | None = None,
) -> FunctionTool[TaskArguments]:
    """A tool that spawns a child AgentRuntime with the explore or general tool subset.

    ``parent_runtime`` is the runtime, or a zero-argument callable returning it
    (so the tool can be passed to the runtime's constructor and advertised to
    the model); with a callable, pass the ``hooks`` registry you give that
    runtime so the parent run id can be tracked.
    """
    from avo.runtime import AgentRuntime

    if hooks is not None:
        track_parent_runs(hooks)
    elif isinstance(parent_runtime, AgentRuntime):
        if parent_runtime.hooks is None:
            parent_runtime.hooks = HookRegistry()
        track_parent_runs(parent_runtime.hooks)
    else:
        raise ToolExecutionError(
            "task_tool(parent_runtime=<callable>) needs hooks=<the HookRegistry passed to "
            "that AgentRuntime> so it can learn the parent run id",
            tool_name="task",
        )
    counter = itertools.count(1)

    def resolve_parent() -> Any:
        if isinstance(parent_runtime, AgentRuntime):
            return parent_runtime
        return parent_runtime()

    async def _run_task(args: TaskArguments) -> dict[str, object]:
        runtime = resolve_parent()
        select: ToolSelector = tools if callable(tools) else _default_selector(runtime, tools)
        approve = approval_callback or runtime.approval_callback
        parent_run = _parent_run.get()
        if parent_run is None:
            raise ToolExecutionError(
                "task was invoked outside a parent run; call it through AgentRuntime.run",
                tool_name="task",
            )
        overrides = dict(policy_overrides or {})
        if args.max_steps is not None:
            overrides["max_steps"] = args.max_steps
        child = AgentRuntime(
            provider=provider or runtime.provider,
            tools=select(args.agent_type),
            policy=runtime.policy.model_copy(update=overrides),
            event_store=runtime.event_store,
            approval_callback=approve,
        )
        run_id = child_run_id(parent_run, f"task-{next(counter)}")
        result = await child.run(args.prompt, run_id=run_id)
        return {
            "agent_type": args.agent_type.value,
            "child_run_id": result.run_id,
            "status": result.status.value,
            "stop_reason": result.stop_reason.value if result.stop_reason else None,
            "output": result.output,
            "error": result.error,
            "steps": result.steps,
        }

    return build_tool(
        name="task",
        argument_kinds={"prompt": "text"},
        description=(
            "Delegate a sub-task to a subagent. agent_type 'explore' is read-only; "
            "'general' can use every tool. Returns the subagent's final answer."
        ),
        arguments_model=TaskArguments,
        function=_run_task,
        risk=ToolRisk.EXECUTE,
    )


__all__ = [
    "AgentType",
    "TaskArguments",
    "ToolSelector",
    "child_run_id",
    "task_tool",
    "track_parent_runs",
]
