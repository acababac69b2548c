"""The runtime's plugins, and the RUN_CREATED record of what a run was made from.

A run records, in its RUN_CREATED payload, everything needed to compose it
again to resume or replay it: the task, the policy, the plugin set (which
plugin, from which distribution and version, provides each part), the
composition and the engine driving it. On resume the recorded plugin set is
checked against the installed one; a changed set makes the resume unsafe.
Observer plugins hear about a run's start, its stored events and its end
through :func:`call_plugins`, which reports a plugin that raises instead of
failing the run. The runtime's circuit breaker (a policy option) is made
here too, when the runtime drives its first run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from avo._hook_faults import report_observer_faults
from avo._run_context import _RunContext
from avo.circuit_breaker import CircuitBreaker
from avo.engines import ENGINE_KEY
from avo.events import AgentEvent
from avo.exceptions import UnsafeResumeError

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime

logger = logging.getLogger("avo.runtime")


def start_breaker(rt: AgentRuntime) -> None:
    """Make the runtime's circuit breaker, once, if its policy asks for one."""
    policy = rt.policy.circuit_breaker
    if policy is not None and rt._breaker is None:
        rt._breaker = CircuitBreaker(policy)


def plugin_set(rt: AgentRuntime) -> list[JsonValue] | None:
    """The plugin set a new run records (None: the runtime was not built from plugins)."""
    plugins = rt._plugins
    if plugins is None or not hasattr(plugins, "plugin_set"):
        return None
    return list(plugins.plugin_set())


def check_plugin_set(rt: AgentRuntime, run_id: str, events: list[AgentEvent]) -> None:
    """Refuse to resume a run whose recorded plugin set differs from the installed one."""
    plugins = rt._plugins
    if plugins is None or not events or not hasattr(plugins, "check_plugin_set"):
        return
    recorded = events[0].payload.get("plugins")
    if not isinstance(recorded, list):
        return
    differences = list(plugins.check_plugin_set(recorded))
    if differences:
        raise UnsafeResumeError(
            f"Cannot safely resume run {run_id!r}: the plugins it was composed from changed: "
            + "; ".join(differences),
            run_id=run_id,
        )


def call_plugins(
    rt: AgentRuntime, hook_name: str, *, ctx: _RunContext | None, **kwargs: Any
) -> None:
    """Call a run-lifecycle hook on every plugin; report (not raise) what raised."""
    plugins = rt._plugins
    call_observers = getattr(plugins, "call_observers", None)
    try:
        if call_observers is None:  # a manager of another make: its relay isolates
            getattr(plugins.hook, hook_name)(**kwargs)  # type: ignore[union-attr]
            return
        faults = call_observers(hook_name, **kwargs)
    except Exception:
        logger.exception("a plugin's %s hook raised; the run goes on", hook_name)
        return
    if faults:
        run_id = ctx.run_id if ctx is not None else str(kwargs.get("run_id", "?"))
        report_observer_faults(rt, ctx, hook_name, faults, run_id)


def run_created_payload(
    rt: AgentRuntime,
    task: str,
    *,
    system_prompt: str | None,
    schema: dict[str, JsonValue] | None,
    attached: list[dict[str, JsonValue]],
    plugins: list[JsonValue] | None,
    setup: Mapping[str, JsonValue],
) -> dict[str, JsonValue]:
    """A new run's RUN_CREATED payload: its task, policy and what it was composed from.

    Text a person wrote (the task, the system prompt) and the composition are
    redacted; ``setup`` holds what the run's set-up adds (its session, bundles).
    """
    redactor = rt.redactor
    payload: dict[str, JsonValue] = {
        "task": redactor.text(task),
        "policy": rt.policy.model_dump(mode="json"),
    }
    if attached:
        payload["attachments"] = list(attached)
    if system_prompt:
        payload["system_prompt"] = redactor.text(system_prompt)
    if schema is not None:
        payload["output_schema"] = schema
    if plugins is not None:
        payload["plugins"] = plugins
    if rt.composition is not None:
        payload["composition"] = redactor.value(rt.composition)
    if rt.engine is not None:
        payload[ENGINE_KEY] = redactor.value(rt.engine)
    payload.update(setup)
    return payload


__all__ = [
    "call_plugins",
    "check_plugin_set",
    "plugin_set",
    "run_created_payload",
    "start_breaker",
]
