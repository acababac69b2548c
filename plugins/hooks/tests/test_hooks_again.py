"""The event an executor sends says ``"again": true`` only when the run asks about a call again."""

from __future__ import annotations

from avo.hooks import HookContext, HookEvent
from avo.models import ToolCall
from avo.redaction import Redactor
from avo_hooks.payload import event_payload


def _payload(extra: dict[str, object]) -> dict[str, object]:
    call = ToolCall(tool_call_id="c1", name="write_file", arguments={"path": "a.txt"})
    context = HookContext(HookEvent.PRE_TOOL_USE, "r1", tool_call=call, extra=extra)
    return event_payload(context, hook="guard", redactor=Redactor(environ={}))


def test_again_is_sent_only_for_a_call_seen_before() -> None:
    assert "again" not in _payload({})
    assert _payload({"again": True})["again"] is True
