"""Notifications a served request sends before its answer (a tool's progress).

The transport says where they can go while it answers a request
(:func:`notifying`): ``avo serve-mcp`` over stdio writes them on the wire; over
HTTP only an answer sent as an event stream can carry them. A ``tools/call``
whose ``_meta`` holds a ``progressToken`` gets :func:`progress_relay` as the
tool's progress reporter (``avo.tool_progress``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token

from avo_mcp.framing import JsonDict

_NOTIFY: ContextVar[Callable[[JsonDict], None] | None] = ContextVar("avo_mcp_notify", default=None)
"""Where a request being answered may send notifications first (set by the transport:
stdio writes them; HTTP only when the answer is an event stream)."""


def notifying(sink: Callable[[JsonDict], None] | None) -> Token[Callable[[JsonDict], None] | None]:
    """Let the request answered in this context send notifications to ``sink``."""
    return _NOTIFY.set(sink)


def progress_relay(params: JsonDict) -> Callable[[float, float | None, str | None], None] | None:
    """A progress reporter sending ``notifications/progress`` for the request's
    ``progressToken`` (None: the client asked for none, or nothing can carry it)."""
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    sink = _NOTIFY.get()
    if sink is None or not isinstance(token, str | int) or isinstance(token, bool):
        return None

    def relay(progress: float, total: float | None, message: str | None) -> None:
        note: JsonDict = {"progressToken": token, "progress": progress}
        if total is not None:
            note["total"] = total
        if message:
            note["message"] = message
        sink({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})

    return relay


__all__ = ["notifying", "progress_relay"]
