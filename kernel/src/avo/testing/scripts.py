"""Scripted :class:`~avo.providers.fake.FakeProvider` builders for plugin tests.

::

    from avo.testing import tool_then_answer

    provider = tool_then_answer("shout", {"text": "hi"}, "done")
    runtime = AgentRuntime(provider=provider, tools=[my_tool])
    result = await runtime.run("shout hi")
    assert result.output == "done"
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from avo.models import ModelResponse, TokenUsage, ToolCall
from avo.providers.fake import FakeProvider, ScriptItem

if TYPE_CHECKING:
    from avo.events import AgentEvent


def _usage(usage: TokenUsage | tuple[int, int] | None) -> TokenUsage | None:
    if usage is None or isinstance(usage, TokenUsage):
        return usage
    return TokenUsage(input_tokens=usage[0], output_tokens=usage[1])


def answer(text: str, *, usage: TokenUsage | tuple[int, int] | None = None) -> ModelResponse:
    """A final answer (``content``) response."""
    return ModelResponse(content=text, usage=_usage(usage))


def tool_call(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    call_id: str | None = None,
    usage: TokenUsage | tuple[int, int] | None = None,
) -> ModelResponse:
    """A response asking for one tool call."""
    call = (
        ToolCall(name=name, arguments=dict(arguments or {}), tool_call_id=call_id)
        if call_id
        else ToolCall(name=name, arguments=dict(arguments or {}))
    )
    return ModelResponse(tool_call=call, usage=_usage(usage))


def parallel_calls(
    *calls: tuple[str, Mapping[str, Any] | None] | ToolCall,
    usage: TokenUsage | tuple[int, int] | None = None,
) -> ModelResponse:
    """A response asking for several tool calls in one turn: ``(name, arguments)`` or ToolCalls."""
    built = [
        call
        if isinstance(call, ToolCall)
        else ToolCall(name=call[0], arguments=dict(call[1] or {}))
        for call in calls
    ]
    return ModelResponse(tool_calls=built, usage=_usage(usage))


def minted_ids(events: Iterable[AgentEvent]) -> dict[str, list[str]]:
    """Each scripted (vendor) call id -> the ids the runtime minted for it, in order.

    The runtime gives every call its own id and keeps the script's as
    ``vendor_id``; a test that scripted ``call_id="c1"`` finds the call's
    events under ``minted_ids(events)["c1"][0]``.
    """
    found: dict[str, list[str]] = {}
    for event in events:
        if event.event_type.value != "model_responded":
            continue
        response = event.payload.get("response")
        calls = response.get("tool_calls") if isinstance(response, dict) else None
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict) and isinstance(call.get("vendor_id"), str):
                minted = str(call["tool_call_id"])
                ids = found.setdefault(str(call["vendor_id"]), [])
                if minted not in ids:
                    ids.append(minted)
    return found


def scripted(*items: ScriptItem, repeat_last: bool = False) -> FakeProvider:
    """A FakeProvider replaying ``items`` (responses, mappings or exceptions) in order."""
    return FakeProvider(list(items), repeat_last=repeat_last)


def tool_then_answer(
    name: str,
    arguments: Mapping[str, Any] | None,
    final: str,
    *,
    usage: TokenUsage | tuple[int, int] | None = None,
) -> FakeProvider:
    """Call tool ``name`` once with ``arguments``, then answer ``final``."""
    return scripted(tool_call(name, arguments, usage=usage), answer(final, usage=usage))


def tool_calls_then_answer(
    calls: Iterable[tuple[str, Mapping[str, Any] | None]],
    final: str,
    *,
    usage: TokenUsage | tuple[int, int] | None = None,
) -> FakeProvider:
    """Call each ``(name, arguments)`` in turn, then answer ``final``."""
    items: list[ScriptItem] = [tool_call(name, args, usage=usage) for name, args in calls]
    items.append(answer(final, usage=usage))
    return scripted(*items)


def always_calling(name: str, arguments: Mapping[str, Any] | None = None) -> FakeProvider:
    """Ask for the same tool call forever (drives loop detectors and step caps)."""
    return scripted(tool_call(name, arguments), repeat_last=True)


def failing_then_answer(error: Exception, final: str, *, failures: int = 1) -> FakeProvider:
    """Raise ``error`` ``failures`` times (e.g. a retryable ProviderError), then answer."""
    return scripted(*([error] * failures), answer(final))


__all__ = [
    "always_calling",
    "answer",
    "failing_then_answer",
    "minted_ids",
    "parallel_calls",
    "scripted",
    "tool_call",
    "tool_calls_then_answer",
    "tool_then_answer",
]
