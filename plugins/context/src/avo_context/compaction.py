"""The compaction policy: keep every request inside the model's context window.

Before each model call the policy (a request shaper that runs first) compares
the estimated size of the request with the window. Below ``threshold`` it
does nothing — and costs a few additions, because the estimate comes from the
seam's incremental gauge. Above it, it compacts the *view*, in stages, until
the request is under ``target``:

1. **elide**: the oldest tool outputs outside the newest ``keep_recent_turns``
   turns are shown as a one-line stub naming the tool call id; the ``recall``
   tool fetches the output back from the event that holds it.
2. **summary**: if eliding cannot bring the request below half-way between
   ``target`` and ``threshold``, the model summarises everything between the
   task and the recent turns (the previous summary and the stubs included);
   the summary replaces that span.
3. **recent**: if the request still exceeds the whole window, tool outputs in
   the recent turns are elided too. If even that does not fit, the run stops
   with a ContextWindowError naming both sizes.

The transcript is never changed: the policy's state (the summary and the
elided outputs, by transcript index and tool call id) lives in the run's
checkpoints, so a resumed run shows the model the same view, and the view is
what the next run of a session starts from (``carry_over``). Every stage is
recorded as a ``context_compacted`` event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from avo.compact import PLACEHOLDER_NOTE, head_end, note_message
from avo.context_window import message_tokens
from avo.exceptions import ContextWindowError, ShapingError
from avo.shaping import Shaping, ShapingContext, Splice
from avo_context.settings import CompactionSettings

SUMMARY_INSTRUCTIONS = (
    "You compact the history of an AI agent's run so that it fits the model's context "
    "window. Summarise the conversation you are given for the agent itself: the goal, "
    "the decisions taken, the facts learned (names, numbers, paths, identifiers), what "
    "was done and what remains. Keep every recall id an elided output names if the "
    "output may be needed again. Write plain prose or short lists, at most about "
    "{words} words, and nothing else."
)


def stub_message(message: Mapping[str, Any], tokens: int) -> dict[str, JsonValue]:
    """The stub shown instead of an elided tool result."""
    call_id = str(message.get("tool_call_id", ""))
    name = str(message.get("name", "the tool"))
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "name": name,
        "content": (
            f"[Output of {name} elided to save context (about {tokens} tokens). "
            f'To see it again, call recall with id "{call_id}".]'
        ),
    }


def recent_boundary(messages: Sequence[Mapping[str, Any]], turns: int, floor: int) -> int:
    """The index where the newest ``turns`` assistant turns start (never below ``floor``)."""
    seen = 0
    for index in range(len(messages) - 1, floor - 1, -1):
        if messages[index].get("role") == "assistant":
            seen += 1
            if seen == turns:
                return index
    return floor


class CompactionPolicy:
    """The request shaper of the compaction bundle (one per run; see the module docstring)."""

    name = "compaction"
    order = 0
    carry_over = True

    def __init__(self, settings: CompactionSettings | None = None) -> None:
        self.settings = settings or CompactionSettings()
        self._built_from: object = None
        self._shaping = Shaping()
        self._delta = 0

    # ------------------------------------------------------------ the view

    def _build(self, state: Mapping[str, Any], transcript: list[Any], context: Any) -> None:
        """Turn ``state`` into this policy's Shaping and its token delta."""
        splices: list[Splice] = []
        delta = 0
        gauge = context.gauge
        size = len(transcript)
        summary = state.get("summary")
        if summary:
            start, stop = int(summary["start"]), int(summary["stop"])
            if not 0 <= start < stop <= size:
                raise ShapingError(
                    f"the compaction state's summary [{start}:{stop}] does not fit the "
                    f"run's {size} messages",
                    shaper=self.name,
                )
            note = note_message(stop - start, str(summary["text"]))
            splices.append(Splice(start, stop, (note,)))
            delta += message_tokens(note) - gauge.between(start, stop)
        for index, call_id, _name, tokens in state.get("elided", ()):
            message = transcript[index] if 0 <= index < size else None
            if message is None or message.get("tool_call_id") != call_id:
                raise ShapingError(
                    f"the compaction state's elided output {call_id!r} is not at message "
                    f"{index} of the run's transcript",
                    shaper=self.name,
                )
            stub = stub_message(message, int(tokens))
            splices.append(Splice(index, index + 1, (stub,)))
            delta += message_tokens(stub) - gauge.between(index, index + 1)
        self._shaping = Shaping(splices=tuple(splices))
        self._delta = delta
        self._built_from = state

    def view_tokens(self, context: ShapingContext) -> int:
        """The estimated request size with the current view."""
        return context.gauge.total + self._delta + context.reserved_tokens

    async def avo_prepare_request(self, request: Any, context: ShapingContext) -> Shaping:
        """Return the current view, compacting it first when the request is too big."""
        transcript = context.transcript
        if request.messages is not transcript:
            raise ShapingError(
                "the compaction policy must see the transcript itself: make it the only "
                "carry-over shaper of the run (another one ran before it)",
                shaper=self.name,
            )
        if context.state is not self._built_from:
            self._build(context.state, transcript, context)
        window = context.window
        if window is None:
            return self._shaping
        # the window in the gauge's units: the provider may count more (or fewer)
        # tokens than the estimate, as learned from the usage it reports
        limit = int(window.tokens / context.scale)
        if self.view_tokens(context) <= self.settings.threshold * limit:
            return self._shaping
        state = await self._compact(context, transcript, limit, window.tokens)
        context.set_state(state)
        self._build(context.state, transcript, context)
        return self._shaping

    # ------------------------------------------------------------ compacting

    async def _compact(
        self, context: ShapingContext, transcript: list[Any], limit: int, window: int
    ) -> dict[str, JsonValue]:
        settings = self.settings
        state: dict[str, Any] = {
            "summary": context.state.get("summary"),
            "elided": [list(e) for e in context.state.get("elided", ())],  # type: ignore[union-attr]
            "compactions": int(context.state.get("compactions", 0)) + 1,  # type: ignore[arg-type]
        }
        target = settings.target * limit
        head = head_end(transcript)
        boundary = max(head, recent_boundary(transcript, settings.keep_recent_turns, head))
        summary = state["summary"]
        start = int(summary["stop"]) if summary else head
        before = self.view_tokens(context)

        newly = self._elide(context, transcript, state, range(start, boundary), target)
        tokens = self._estimate(state, transcript, context)
        if newly:
            self._record(context, "elide", before, tokens, limit, boundary, elided=newly)

        # Summarise only when eliding cannot get well below the threshold (half-way
        # down to the target); otherwise every compaction would end in a model call.
        enough = (settings.target + settings.threshold) / 2 * limit
        if tokens > enough and settings.summarize and boundary > start:
            before_summary = tokens
            summary_record = await self._summarize(context, transcript, state, head, boundary)
            tokens = self._estimate(state, transcript, context)
            self._record(
                context, "summary", before_summary, tokens, limit, boundary, summary=summary_record
            )

        if tokens > limit:
            before_recent = tokens
            newly = self._elide(
                context, transcript, state, range(boundary, len(transcript)), target, minimum=0
            )
            tokens = self._estimate(state, transcript, context)
            if newly:
                self._record(
                    context, "recent", before_recent, tokens, limit, boundary, elided=newly
                )
        if tokens > limit:
            needed = round(tokens * context.scale)
            raise ContextWindowError(
                f"the request needs about {needed} tokens even after compaction, but the "
                f"context window of {context.model or 'the model'} is {window} tokens; raise "
                "[context] window if the model allows more, lower keep_recent_turns, or make "
                "the task's tool outputs smaller",
                tokens=needed,
                window=window,
            )
        return state

    def _elide(
        self,
        context: ShapingContext,
        transcript: list[Any],
        state: dict[str, Any],
        span: range,
        target: float,
        *,
        minimum: int | None = None,
    ) -> list[dict[str, JsonValue]]:
        """Elide tool outputs in ``span``, oldest first, until the view is under ``target``."""
        floor = self.settings.min_elide_tokens if minimum is None else minimum
        gauge = context.gauge
        taken = {int(e[0]) for e in state["elided"]}
        tokens = self._estimate(state, transcript, context)
        newly: list[dict[str, JsonValue]] = []
        for index in span:
            if tokens <= target:
                break
            message = transcript[index]
            if message.get("role") != "tool" or index in taken:
                continue
            size = gauge.between(index, index + 1)
            saved = size - message_tokens(stub_message(message, size))
            if size < floor or saved <= 0:
                continue
            call_id = str(message.get("tool_call_id", ""))
            name = str(message.get("name", ""))
            state["elided"].append([index, call_id, name, size])
            tokens -= saved
            newly.append({"index": index, "tool_call_id": call_id, "name": name, "tokens": size})
        state["elided"].sort(key=lambda e: e[0])
        return newly

    async def _summarize(
        self,
        context: ShapingContext,
        transcript: list[Any],
        state: dict[str, Any],
        head: int,
        boundary: int,
    ) -> dict[str, JsonValue]:
        """Replace ``[head:boundary]`` by a model-written summary (a placeholder if that fails)."""
        settings = self.settings
        summary = state["summary"]
        elided = {int(e[0]): e for e in state["elided"]}
        shown: list[Any] = []
        start = head
        if summary:
            shown.append(note_message(int(summary["stop"]) - head, str(summary["text"])))
            start = int(summary["stop"])
        for index in range(start, boundary):
            entry = elided.get(index)
            message = transcript[index]
            shown.append(stub_message(message, int(entry[3])) if entry else message)
        instructions = (settings.summary_instructions or SUMMARY_INSTRUCTIONS).format(
            words=settings.summary_words
        )
        record: dict[str, JsonValue] = {"start": head, "stop": boundary, "messages": len(shown)}
        try:
            made = await context.summarize(shown, instructions=instructions)
            text = made.text.strip()[: settings.max_summary_chars]
            if not text:
                raise ValueError("the model returned an empty summary")
        except Exception as exc:  # the run goes on with a placeholder; the reason is recorded
            text = PLACEHOLDER_NOTE.format(count=boundary - head)
            record["fallback"] = f"{type(exc).__name__}: {exc}"
        state["summary"] = {"start": head, "stop": boundary, "text": text}
        state["elided"] = [e for e in state["elided"] if int(e[0]) >= boundary]
        record["text"] = text
        return record

    def _estimate(self, state: Mapping[str, Any], transcript: list[Any], context: Any) -> int:
        gauge = context.gauge
        delta = 0
        summary = state.get("summary")
        if summary:
            start, stop = int(summary["start"]), int(summary["stop"])
            note = note_message(stop - start, str(summary["text"]))
            delta += message_tokens(note) - gauge.between(start, stop)
        for index, _call_id, _name, tokens in state.get("elided", ()):
            stub = stub_message(transcript[index], int(tokens))
            delta += message_tokens(stub) - gauge.between(index, index + 1)
        return int(gauge.total + delta + context.reserved_tokens)

    def _record(
        self,
        context: ShapingContext,
        stage: str,
        before: int,
        after: int,
        limit: int,
        boundary: int,
        **detail: Any,
    ) -> None:
        scale = context.scale  # the records speak the provider's tokens, not the gauge's
        payload: dict[str, JsonValue] = {
            "stage": stage,
            "tokens_before": round(before * scale),
            "tokens_after": round(after * scale),
            "window": round(limit * scale),
            "threshold": self.settings.threshold,
            "target": self.settings.target,
            "recent_from": boundary,
        }
        payload.update(detail)
        context.record("context_compacted", payload)


__all__ = [
    "SUMMARY_INSTRUCTIONS",
    "CompactionPolicy",
    "CompactionSettings",
    "recent_boundary",
    "stub_message",
]
