"""Hook and run-observer faults are reported; a raising guard fails closed (issue 13, item 6)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from avo import AgentRuntime, FakeProvider, ModelResponse
from avo.events import EventType
from avo.hooks import HookAction, HookContext, HookDecision, HookEvent, HookRegistry
from avo.hookspecs import hookimpl
from avo.plugins.manager import PluginManager
from avo.state import RunState, StopReason


def _ctx(event: HookEvent = HookEvent.PRE_TOOL_USE) -> HookContext:
    return HookContext(event, "r1")


def _raise(context: HookContext) -> HookDecision:
    raise RuntimeError("down")


async def test_a_raising_guard_blocks_with_its_name_and_stops_the_chain() -> None:
    later: list[str] = []
    hooks = HookRegistry()
    hooks.register(HookEvent.PRE_TOOL_USE, _raise, name="policy-guard")
    hooks.register(HookEvent.PRE_TOOL_USE, lambda c: later.append("ran") or HookDecision.allow())
    decision = await hooks.fire(HookEvent.PRE_TOOL_USE, _ctx())
    assert decision.action is HookAction.BLOCK
    assert "hook 'policy-guard' raised RuntimeError: down" in decision.reason
    assert [f.hook for f in decision.faults] == ["policy-guard"] and later == []


async def test_a_guard_answering_nonsense_fails_closed_and_none_means_no_opinion() -> None:
    hooks = HookRegistry()
    hooks.register(HookEvent.PRE_TOOL_USE, lambda c: None)
    assert not (await hooks.fire(HookEvent.PRE_TOOL_USE, _ctx())).blocked
    hooks.register(HookEvent.PRE_TOOL_USE, lambda c: "yes")
    decision = await hooks.fire(HookEvent.PRE_TOOL_USE, _ctx())
    assert decision.blocked and "TypeError: returned str, not a HookDecision" in decision.reason


@pytest.mark.parametrize("event", [HookEvent.POST_TOOL_USE, HookEvent.STOP, HookEvent.NOTIFICATION])
async def test_other_hooks_faults_are_listed_and_the_rest_still_run(event: HookEvent) -> None:
    ran: list[str] = []
    hooks = HookRegistry()
    hooks.register(event, _raise)
    hooks.register(event, lambda c: ran.append("next") or HookDecision.allow())
    decision = await hooks.fire(event, _ctx(event))
    assert decision.action is HookAction.ALLOW and ran == ["next"]
    assert [(f.hook, f.error_type) for f in decision.faults] == [("_raise", "RuntimeError")]


class _Observer:
    """A run observer that raises on every event (it must not flood the log)."""

    @hookimpl
    def avo_event_appended(self, event: Any) -> None:
        raise KeyError("no index")

    @hookimpl
    def avo_run_finished(self, run_id: str, result: Any) -> None:
        raise ValueError("sink closed")


async def test_observer_faults_are_recorded_once_per_run_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = PluginManager(environ={}, autoload=False)
    manager.register(_Observer(), "watcher")
    hooks = HookRegistry()
    hooks.register(HookEvent.STOP, _raise, name="stop-hook")
    runtime = AgentRuntime(
        provider=FakeProvider([ModelResponse(content="done")]),
        plugins=manager,
        hooks=hooks,
        environ={},
    )
    with caplog.at_level(logging.WARNING, logger="avo.hooks"):
        result = await runtime.run("go")
    assert result.status is RunState.COMPLETED and result.stop_reason is StopReason.COMPLETED
    events = await runtime.event_store.get_events(result.run_id)
    faults = [e.payload for e in events if e.event_type is EventType.HOOK_FAILED]
    assert len(faults) == 1  # once per run, though it raised on every event
    assert faults[0]["hook"] == "avo_event_appended" and "KeyError" in faults[0]["error"]
    warnings = [r.getMessage() for r in caplog.records]
    assert any("avo_event_appended" in w and "no index" in w for w in warnings)
    # After the run ended its log is closed: STOP hooks and avo_run_finished only warn.
    assert any("stop-hook" in w and "down" in w for w in warnings)
    assert any("avo_run_finished" in w and "sink closed" in w for w in warnings)
    assert any("avo_run_finished" in p.reason for p in manager.problems)
