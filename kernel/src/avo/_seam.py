"""The request seam at work in one run (internal; see :mod:`avo.shaping`).

:class:`RunSeam` holds a run's shapers, their checkpointed state, their last
results and the token gauge. ``handle_model_pending`` calls :meth:`RunSeam.shape`
with the request it built; with no seam (no shapers, no context policy) the
handler never comes here, so a plain run pays nothing for the seam.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from avo._deadline import within
from avo.context_window import ContextWindow, TokenGauge, message_tokens, tools_tokens
from avo.events import EventType
from avo.exceptions import ContextWindowError, ProviderError, ShapingError
from avo.models import ModelRequest, ModelResponse, TokenUsage, replaced
from avo.runtime_persistence import (
    append,
    append_with_run,
    checkpoint,
    flush,
    terminate,
    trigger_policy,
)
from avo.shaping import (
    BoundShaper,
    Shaping,
    ShapingContext,
    Summary,
    apply_splices,
    apply_tools,
    resolve,
)
from avo.state import RunState, StopReason

if TYPE_CHECKING:
    from avo._run_context import _RunContext
    from avo.runtime import AgentRuntime

logger = logging.getLogger("avo.runtime")

_EMPTY = Shaping()
_NO_STATE: Mapping[str, JsonValue] = MappingProxyType({})
_RECORDABLE = frozenset({EventType.CONTEXT_COMPACTED})
# Never below 1: a provider that reports fewer tokens than estimated (a test double, a
# frugal tokenizer) must not make the guard bolder than its own estimate.
_MIN_SCALE, _MAX_SCALE = 1.0, 4.0
_SUMMARY_INPUT_CHARS = 4_000
"""How much of one message a summary request quotes."""


def render_for_summary(messages: Sequence[Mapping[str, Any]]) -> str:
    """Messages as plain text lines for a summary request (long contents cut)."""
    lines: list[str] = []
    for message in messages:
        role = str(message.get("role", "?"))
        content = message.get("content")
        text = content if isinstance(content, str) else ("" if content is None else str(content))
        calls = message.get("tool_calls")
        if calls and isinstance(calls, list):
            for call in calls:
                function = call.get("function", {}) if isinstance(call, dict) else {}
                name = function.get("name", "?") if isinstance(function, dict) else "?"
                arguments = function.get("arguments", "") if isinstance(function, dict) else ""
                text += f"[called {name}({str(arguments)[:400]})]"
        if role == "tool":
            role = f"tool {message.get('name', '')} result".replace("  ", " ")
        if len(text) > _SUMMARY_INPUT_CHARS:
            text = text[:_SUMMARY_INPUT_CHARS] + f" [... {len(text) - _SUMMARY_INPUT_CHARS} more]"
        lines.append(f"{role}: {text}")
    return "\n".join(lines)


class RunSeam:
    """One run's shapers and everything the seam keeps between its model calls."""

    def __init__(
        self,
        shapers: Sequence[BoundShaper],
        *,
        window: ContextWindow | None,
        session_id: str | None = None,
        states: Mapping[str, JsonValue] | None = None,
    ) -> None:
        self.shapers = list(shapers)
        self.window = window
        self.session_id = session_id
        self.states: dict[str, JsonValue] = dict(states or {})
        self._states_json: dict[str, JsonValue] | None = None
        count = len(self.shapers)
        self.results: list[Shaping | None] = [None] * count
        self.recorded: list[Shaping | None] = [None] * count
        self._ever_recorded = False
        self._deltas: list[int] = [0] * count
        self._delta_keys: list[tuple[Any, int] | None] = [None] * count
        self.gauge = TokenGauge()
        self._tools_key: tuple[int, int, int] | None = None
        self._tools_tokens = 0
        self.estimate = 0
        # raw gauge estimates times ``scale`` = the provider's tokens: learned from the
        # input tokens it reports for the requests the seam estimated (1.0 until then)
        self.scale = 1.0
        self._raw = 0
        self._reported = 0
        self._unbilled = TokenUsage()
        self._dirty = False
        self._rt: AgentRuntime | None = None
        self._ctx: _RunContext | None = None

    # ------------------------------------------------------------ state

    def set_state(self, name: str, state: Mapping[str, JsonValue]) -> None:
        """Keep ``state`` (copied) as shaper ``name``'s checkpointed state."""
        import copy

        self.states[name] = copy.deepcopy(dict(state))
        self._states_json = None
        self._dirty = True

    def state_json(self) -> dict[str, JsonValue]:
        """Every shaper's state, for a checkpoint (one shared copy while unchanged)."""
        snapshot = self._states_json
        if snapshot is None:
            snapshot = self._states_json = dict(self.states)
        return snapshot

    def carry(self, messages: list[Any]) -> list[Any]:
        """``messages`` as the carry-over shapers (a context policy) last showed them.

        What the next run of a session starts from; shapers that only add to one
        call (instructions, reminders) are left out.
        """
        out = list(messages)
        for index, bound in enumerate(self.shapers):
            if not bound.carry_over:
                break
            shaping = self.results[index]
            if shaping is not None and shaping.splices:
                out = apply_splices(out, shaping.splices, bound.name)
        return out

    # ------------------------------------------------------------ the call

    async def shape(
        self, rt: AgentRuntime, ctx: _RunContext, request: ModelRequest
    ) -> ModelRequest | None:
        """The request after every shaper, or None when a shaper failed the run closed."""
        self._rt, self._ctx = rt, ctx
        fields = request.__dict__
        transcript: list[Any] = fields["messages"]
        self.gauge.update(transcript)
        self._calibrate(ctx.last_input_tokens)
        messages = transcript
        tools = fields["tools"]
        deltas = self._deltas
        changed = False
        for index, bound in enumerate(self.shapers):
            reserved = sum(deltas[index + 1 :]) + self._tools_tokens
            context = ShapingContext(
                self,
                name=bound.name,
                run_id=ctx.run_id,
                step=ctx.next_step,
                transcript=transcript,
                state=self.states.get(bound.name) or _NO_STATE,  # type: ignore[arg-type]
                window=self.window,
                gauge=self.gauge,
                reserved_tokens=reserved,
                scale=self.scale,
                session_id=self.session_id,
                model=rt._provider_model,
                provider=rt._provider_name,
            )
            shaped_request = (
                request
                if messages is transcript and tools is fields["tools"]
                else replaced(request, messages=messages, tools=tools)
            )
            try:
                result = bound.call(shaped_request, context)
                if inspect.isawaitable(result):
                    result = await result
                if result is not None and not isinstance(result, Shaping):
                    raise ShapingError(
                        f"request shaper {bound.name!r} returned {type(result).__name__}; "
                        "return a Shaping or None",
                        shaper=bound.name,
                    )
                shaping = result or _EMPTY
                size = len(messages)
                delta = self._delta(index, shaping, messages, size, transcript)
                messages = apply_splices(messages, shaping.splices, bound.name)
                tools = apply_tools(tools, shaping, bound.name)
            except ContextWindowError as exc:
                await self._stop_for_window(rt, ctx, exc)
                return None
            except Exception as exc:  # fail closed: the request is never sent unshaped
                await self._fail_closed(rt, ctx, bound.name, exc)
                return None
            deltas[index] = delta
            self.results[index] = shaping
            if shaping is not self.recorded[index] and shaping != self.recorded[index]:
                changed = True
        self._raw = self.gauge.total + sum(deltas) + self._measure_tools(tools)
        self.estimate = round(self._raw * self.scale)
        if changed or not self._ever_recorded:
            self._record(rt, ctx, len(transcript), len(messages))
        if self._dirty:  # a shaper's new state is durable before the call it shaped
            self._dirty = False
            await checkpoint(rt, ctx)
        if messages is transcript and tools is fields["tools"]:
            return request
        return replaced(request, messages=messages, tools=tools)

    def _calibrate(self, reported: int) -> None:
        """Learn how the provider counts from the input tokens it reported last."""
        if reported > 0 and reported != self._reported and self._raw > 0:
            self._reported = reported
            self.scale = min(_MAX_SCALE, max(_MIN_SCALE, reported / self._raw))

    def _delta(
        self, index: int, shaping: Shaping, given: list[Any], size: int, transcript: list[Any]
    ) -> int:
        """Tokens ``shaping`` adds to (or, negative, removes from) the list it was given."""
        splices = shaping.splices
        if not splices:
            return 0
        negative = any(s.start < 0 or s.stop < 0 for s in splices)
        key = (shaping, size if negative else -1)
        cached = self._delta_keys[index]
        if cached is not None and cached[0] is shaping and cached[1] == key[1]:
            return self._deltas[index]
        delta = 0
        on_transcript = given is transcript
        for start, stop, splice in resolve(splices, size, self.shapers[index].name):
            delta += sum(message_tokens(m) for m in splice.messages)
            if stop > start:
                if on_transcript:
                    delta -= self.gauge.between(start, stop)
                else:
                    delta -= sum(message_tokens(m) for m in given[start:stop])
        self._delta_keys[index] = key
        self._deltas[index] = delta
        return delta

    def _measure_tools(self, tools: list[Any]) -> int:
        key = (len(tools), id(tools[0]) if tools else 0, id(tools[-1]) if tools else 0)
        if key != self._tools_key:
            self._tools_key = key
            self._tools_tokens = tools_tokens(tools)
        return self._tools_tokens

    # ------------------------------------------------------------ records

    def _record(self, rt: AgentRuntime, ctx: _RunContext, size_in: int, size_out: int) -> None:
        entries: list[JsonValue] = []
        for index, bound in enumerate(self.shapers):
            shaping = self.results[index] or _EMPTY
            previous = self.recorded[index]
            entry: dict[str, JsonValue] = {"name": bound.name}
            if previous is not None and (shaping is previous or shaping == previous):
                entry["changed"] = False
            else:
                data = shaping.as_json()
                if previous is not None:
                    kept = 0
                    for old, new in zip(previous.splices, shaping.splices, strict=False):
                        if old is not new and old != new:
                            break
                        kept += 1
                    if kept:
                        data["kept_splices"] = kept
                        data["splices"] = [s.as_json() for s in shaping.splices[kept:]]
                entry["changed"] = True
                entry["shaping"] = data
            entries.append(entry)
            self.recorded[index] = shaping
        self._ever_recorded = True
        payload: dict[str, Any] = {
            "step": ctx.next_step,
            "shapers": entries,
            "messages_in": size_in,
            "messages_out": size_out,
            "estimated_tokens": self.estimate,
            "estimate_scale": round(self.scale, 3),
        }
        if self.window is not None:
            payload["window"] = self.window.as_json()
        self._append(rt, ctx, EventType.REQUEST_SHAPED, payload)

    def record(self, name: str, kind: EventType | str, payload: Mapping[str, JsonValue]) -> None:
        """A shaper's own event (``context_compacted``), appended to the run's log."""
        rt, ctx = self._rt, self._ctx
        if rt is None or ctx is None:
            raise ShapingError(f"request shaper {name!r} recorded an event outside a call")
        event_type: EventType | None
        try:
            event_type = EventType(kind)
        except ValueError:
            event_type = None
        if event_type is None or event_type not in _RECORDABLE:
            allowed = ", ".join(sorted(k.value for k in _RECORDABLE))
            raise ShapingError(
                f"request shaper {name!r} tried to record {kind!r}; shapers may record: {allowed}",
                shaper=name,
            )
        data: dict[str, Any] = {"shaper": name, "step": ctx.next_step, **dict(payload)}
        self._append(rt, ctx, event_type, data)

    def _append(
        self, rt: AgentRuntime, ctx: _RunContext, kind: EventType, payload: dict[str, Any]
    ) -> None:
        usage = self._unbilled
        if usage.input_tokens or usage.output_tokens:
            self._unbilled = TokenUsage()
            payload["usage"] = usage.model_dump(mode="json")
            total = ctx.run.token_usage.plus(usage)
            append_with_run(rt, ctx, kind, payload, token_usage=total)
            return
        append(rt, ctx, kind, payload)

    # ------------------------------------------------------------ summaries

    async def summarize(self, messages: Sequence[Mapping[str, Any]], instructions: str) -> Summary:
        """One model call outside the run's steps (see ShapingContext.summarize)."""
        rt, ctx = self._rt, self._ctx
        if rt is None or ctx is None:
            raise ShapingError("summarize() was called outside a model call")
        request = ModelRequest(
            run_id=ctx.run_id,
            step=ctx.next_step,
            request_id=f"{ctx.run_id}:{ctx.next_step}:summary",
            messages=[
                {"role": "system", "content": instructions},
                {"role": "user", "content": render_for_summary(messages)},
            ],
        )
        await flush(rt, ctx)  # everything before an outside call is durable first
        try:
            response = await within(
                ctx.policy.provider_timeout_seconds, rt.provider.generate(request)
            )
        except TimeoutError:
            raise ProviderError(
                "the summary call exceeded the configured provider timeout of "
                f"{ctx.policy.provider_timeout_seconds:g} seconds"
            ) from None
        if not isinstance(response, ModelResponse) or response.content is None:
            raise ProviderError("the model answered the summary request without text")
        usage = response.usage
        if usage is not None:
            self._unbilled = self._unbilled.plus(usage)
        return Summary(
            text=response.content,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
        )

    # ------------------------------------------------------------ failing closed

    async def _fail_closed(
        self, rt: AgentRuntime, ctx: _RunContext, name: str, exc: BaseException
    ) -> None:
        if isinstance(exc, ShapingError):
            message = f"Request shaping failed: {exc}; the request was not sent."
        else:
            message = (
                f"Request shaper {name!r} failed: {type(exc).__name__}: {exc}; "
                "the request was not sent."
            )
        logger.error("run %s: %s", ctx.run_id, message)
        await terminate(rt, ctx, RunState.FAILED, StopReason.INTERNAL_ERROR, error=message)

    async def _stop_for_window(
        self, rt: AgentRuntime, ctx: _RunContext, exc: ContextWindowError
    ) -> None:
        await trigger_policy(
            rt,
            ctx,
            StopReason.TOKEN_BUDGET_EXCEEDED,
            f"Run stopped: {exc}",
            policy="context_window",
        )


__all__ = ["RunSeam", "render_for_summary"]
