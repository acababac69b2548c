"""The JSON a hook executor sends (the event) and reads back (the decision).

The event, one JSON object::

    {"event": "pre_tool_use", "hook": "guard", "run_id": "...",
     "tool": {"name": "run_shell", "tool_call_id": "...", "arguments": {...},
              "risk": "execute", "argument_kinds": {"command": "command"}},
     "result": {...},          # post_tool_use: the tool's result
     "run": {"state": "...", "steps": 3, "stop_reason": null, ...},
     "notification": "...",    # notification
     "again": true}            # pre_tool_use seen before (see avo.hooks): only then

Secrets are masked (``***``) in everything sent: values of secret-named
environment variables, bearer tokens and key-shaped strings, and values under
secret-looking keys.

The reply (stdout of a command, body of an HTTP response), all optional::

    {"decision": "allow" | "deny" | "error", "reason": "...", "arguments": {...}}

``deny`` blocks the call with ``reason``; ``error`` (or any reply that is not
such an object) is a failure of the hook itself, and a failing pre-tool hook
fails closed; ``arguments`` (with ``allow``) replaces the call's arguments.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from avo.exceptions import HookError
from avo.hooks import HookContext, HookDecision
from avo.models import ToolMetadata
from avo.redaction import Redactor

REASON_LIMIT = 500
_DECISIONS = ("allow", "deny", "error")


def _shorten(text: str, limit: int = REASON_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def event_payload(
    context: HookContext,
    *,
    hook: str,
    redactor: Redactor,
    tools: Mapping[str, ToolMetadata] | None = None,
) -> dict[str, Any]:
    """The event as a JSON-ready dict, secrets masked."""
    payload: dict[str, Any] = {
        "event": context.event.value,
        "hook": hook,
        "run_id": context.run_id,
    }
    call = context.tool_call
    if call is not None:
        tool: dict[str, Any] = {
            "name": call.name,
            "tool_call_id": call.tool_call_id,
            "arguments": call.arguments,
        }
        metadata = (tools or {}).get(call.name)
        if metadata is not None:
            tool["risk"] = metadata.effective_risk.value
            tool["argument_kinds"] = {k: v.value for k, v in metadata.argument_kinds.items()}
        payload["tool"] = tool
    if context.extra.get("again"):  # a resumed run asks again about a call it saw before
        payload["again"] = True
    result = context.tool_result
    if result is not None:
        payload["result"] = result.model_dump(mode="json")
    run = context.run
    if run is not None:
        payload["run"] = {
            "state": run.state.value,
            "steps": run.steps,
            "stop_reason": run.stop_reason.value if run.stop_reason else None,
            "task": run.task,
            "output": run.output,
            "error": run.error,
        }
    if context.notification:
        payload["notification"] = context.notification
    return dict(redactor.value(payload))


def encode_event(payload: Mapping[str, Any]) -> bytes:
    """The event as UTF-8 JSON (non-JSON values written as strings)."""
    return json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")


def parse_reply(
    text: str, *, hook: str, redactor: Redactor, default_deny_reason: str = ""
) -> HookDecision | None:
    """The decision in ``text`` (None when it is empty: no opinion).

    ``default_deny_reason`` makes an empty or reason-less reply a denial
    (a command that exited 2). Raises HookError for anything malformed.
    """
    stripped = text.strip()
    if not stripped:
        if default_deny_reason:
            return HookDecision.block(default_deny_reason)
        return None
    try:
        reply = json.loads(stripped)
    except json.JSONDecodeError:
        if default_deny_reason:  # exit 2 with plain text: the text is the reason
            return HookDecision.block(redactor.text(_shorten(stripped)))
        raise HookError(
            f"its reply is not JSON: {redactor.text(_shorten(stripped, 200))!r}",
            hook=hook,
        ) from None
    if not isinstance(reply, dict):
        raise HookError(
            f"its reply is a JSON {type(reply).__name__}, not an object "
            '({"decision": "allow" | "deny", "reason": ...})',
            hook=hook,
        )
    decision = reply.get("decision", "deny" if default_deny_reason else "allow")
    if decision not in _DECISIONS:
        raise HookError(
            f"its reply has decision {decision!r}; use one of: " + ", ".join(_DECISIONS),
            hook=hook,
        )
    reason = reply.get("reason")
    reason_text = redactor.text(_shorten(reason)) if isinstance(reason, str) else ""
    if decision == "error":
        raise HookError(f"it reported an error: {reason_text or 'no reason given'}", hook=hook)
    if decision == "deny":
        return HookDecision.block(reason_text or default_deny_reason or f"denied by hook {hook!r}")
    arguments = reply.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise HookError(
            f"its reply has arguments that are not an object: {arguments!r}",
            hook=hook,
        )
    return HookDecision(reason=reason_text, modified_args=arguments)


def applies(context: HookContext, tools: Iterable[str]) -> bool:
    """True when the hook's ``tools`` globs cover this event's tool (or it has none)."""
    patterns = list(tools)
    if not patterns or context.tool_call is None:
        return True
    return any(fnmatchcase(context.tool_call.name, pattern) for pattern in patterns)


__all__ = ["applies", "encode_event", "event_payload", "parse_reply"]
