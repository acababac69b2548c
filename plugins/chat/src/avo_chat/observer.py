"""The chat's view of a run: an ``avo_event_appended`` observer on the run's plugin manager.

It sees every stored event of the runs this chat drives (on the kernel
thread, in order) and turns them into what the screen shows: tool calls as
they start, stop to ask a person and end, denials, steering deliveries,
failures, usage for the status line. It also feeds the undo journal right before each tool acts.
It never writes events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from avo.events import AgentEvent, EventType
from avo.hookspecs import hookimpl
from avo_chat.screen import ToolView, call_summary, fold, output_text, shorten

if TYPE_CHECKING:
    from avo_chat.screen import Screen
    from avo_chat.undo import UndoJournal
    from avo_chat.usage import SessionUsage


class ChatObserver:
    """Turns stored events into screen updates (registered once per plugin manager)."""

    def __init__(
        self,
        screen: Screen,
        usage: SessionUsage,
        journal: UndoJournal,
        metadata_of: Callable[[str], Any],
        on_usage: Callable[[], None],
        on_delivered: Callable[[str], None],
    ) -> None:
        self.screen = screen
        self.usage = usage
        self.journal = journal
        self.metadata_of = metadata_of
        self.on_usage = on_usage
        self.on_delivered = on_delivered
        self.calls: dict[str, ToolView] = {}

    @hookimpl
    def avo_event_appended(self, event: AgentEvent) -> None:
        """Show the event, if it is one a person should see."""
        handler = _HANDLERS.get(event.event_type)
        if handler is not None:
            handler(self, event)

    # -- handlers ---------------------------------------------------------------------

    def _started(self, event: AgentEvent) -> None:
        payload = event.payload
        name = str(payload.get("name", "?"))
        call_id = str(payload.get("tool_call_id", ""))
        arguments = payload.get("arguments") or {}
        metadata = self.metadata_of(name)
        kinds = {k: str(v) for k, v in getattr(metadata, "argument_kinds", {}).items()}
        risk = str(metadata.effective_risk) if metadata is not None else "execute"
        self.screen.end_stream()
        try:
            self.journal.before(event.run_id, call_id, name, arguments, kinds, risk)
        except Exception as exc:  # the journal must never stop a run
            self.screen.say(f"undo journal: could not record {name}: {exc}", style="warn")
        view = ToolView(call_id=call_id, name=name, summary=call_summary(arguments, kinds))
        self.calls[call_id] = view
        self.screen.tool_started(view)

    def _finished(self, event: AgentEvent) -> None:
        payload = event.payload
        call_id = str(payload.get("tool_call_id", ""))
        name = str(payload.get("name", "?"))
        view = self.calls.pop(call_id, None) or ToolView(call_id=call_id, name=name, summary="")
        duration = payload.get("duration_ms")
        view.duration_ms = float(duration) if isinstance(duration, int | float) else None
        view.ok = event.event_type is EventType.TOOL_COMPLETED
        result = payload.get("result") if isinstance(payload.get("result"), dict) else {}
        if view.ok:
            text = output_text(result.get("output") if result else None)
        else:
            view.error = str(payload.get("error") or "failed")
            text = view.error
        view.output, view.more_lines = fold(text, width=max(40, self.screen.width - 8))
        try:
            self.journal.after(event.run_id, call_id, name)
        except Exception as exc:
            self.screen.say(f"undo journal: could not finish {name}: {exc}", style="warn")
        self.screen.tool_finished(view)

    def _asked(self, event: AgentEvent) -> None:
        """A started call's tool stopped to ask a person (an MCP server's question):
        it no longer runs; it starts again, and is shown again, once answered."""
        call_id = str(event.payload.get("tool_call_id", ""))
        view = self.calls.pop(call_id, None)
        if view is not None:
            self.screen.tool_paused(view)

    def _denied(self, event: AgentEvent) -> None:
        payload = event.payload
        reason = payload.get("reason") or payload.get("error") or "denied"
        self.screen.end_stream()
        self.screen.say(
            f"✗ {payload.get('name', '?')} denied: {shorten(str(reason))}", style="warn"
        )

    def _responded(self, event: AgentEvent) -> None:
        response = event.payload.get("response")
        if isinstance(response, dict) and (response.get("tool_calls") or response.get("tool_call")):
            self.screen.end_stream()
        if self.usage.add(event):
            self.on_usage()

    def _steered(self, event: AgentEvent) -> None:
        message = str(event.payload.get("message", ""))
        self.screen.say(f"↳ the agent read: {shorten(message, 100)}", style="dim")
        self.on_delivered(str(event.payload.get("message_id", "")))

    def _model_failed(self, event: AgentEvent) -> None:
        payload = event.payload
        retry = "retrying" if payload.get("retryable") else "not retryable"
        self.screen.say(
            f"! model call failed ({retry}): {shorten(str(payload.get('error')))}", style="warn"
        )

    def _policy(self, event: AgentEvent) -> None:
        payload = event.payload
        self.screen.end_stream()
        text = payload.get("message") or payload.get("stop_reason") or "policy stop"
        self.screen.say(f"■ {text}", style="warn")


_HANDLERS: dict[EventType, Callable[[ChatObserver, AgentEvent], None]] = {
    EventType.TOOL_STARTED: ChatObserver._started,
    EventType.TOOL_COMPLETED: ChatObserver._finished,
    EventType.TOOL_FAILED: ChatObserver._finished,
    EventType.TOOL_DENIED: ChatObserver._denied,
    EventType.HUMAN_INPUT_REQUESTED: ChatObserver._asked,
    EventType.MODEL_RESPONDED: ChatObserver._responded,
    EventType.MODEL_FAILED: ChatObserver._model_failed,
    EventType.POLICY_TRIGGERED: ChatObserver._policy,
    EventType.RUN_STEERED: ChatObserver._steered,
}

__all__ = ["ChatObserver"]
