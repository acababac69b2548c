"""Pydantic domain models shared across the runtime."""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from avo.risk import ArgumentKind, ToolEffect, ToolRisk
from avo.state import RunState, StopReason, validate_terminal_outcome

_rng = random.Random(os.urandom(32))
os.register_at_fork(after_in_child=lambda: _rng.seed(os.urandom(32)))
_UUID4_MASK = ~((0xF << 76) | (0x3 << 62)) & ((1 << 128) - 1)
_UUID4_BITS = (0x4 << 76) | (0x2 << 62)


def new_id() -> str:
    """Return a fresh UUID4 string (RFC 4122 version 4, 122 random bits).

    Drawn from a generator seeded from ``os.urandom`` (and re-seeded in forked
    children) because ids are made on the hot path of every event; they are
    unique identifiers, not secrets.
    """
    h = f"{(_rng.getrandbits(128) & _UUID4_MASK) | _UUID4_BITS:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_event_id_suffix = ""
_event_id_counter = itertools.count()


def _reseed_event_ids() -> None:
    global _event_id_suffix, _event_id_counter
    _event_id_suffix = new_id()[8:]  # "-xxxx-4xxx-yxxx-xxxxxxxxxxxx": version, variant, random
    # from 0x10000000: every count up to 0xFFFFFFFF is exactly 8 hex digits
    _event_id_counter = itertools.count(0x10000000 + _rng.getrandbits(31))


def event_id() -> str:
    """A UUID-4-shaped id for the run loop's hot path: a counter and random bits.

    Every id has the version-4 layout. Its last 96 bits (90 random) are drawn
    once per process (again in a forked child, and after 1.8 billion or more ids);
    its first 32 bits count up from a random start, so consecutive ids differ
    in their leading characters (the short form ``avo runs inspect`` shows)
    and are unique without drawing 122 random bits for each of the ~16 ids a
    loop step makes. Public ``new_id()`` stays fully random.
    """
    n = next(_event_id_counter)
    if n > 0xFFFFFFFF:
        _reseed_event_ids()
        n = next(_event_id_counter)
    return hex(n)[2:] + _event_id_suffix  # 8 digits (see _reseed_event_ids), cheaper than :08x


_reseed_event_ids()
os.register_at_fork(after_in_child=_reseed_event_ids)


_M = TypeVar("_M", bound=BaseModel)
_new = object.__new__


def _slot_setter(name: str) -> Callable[[Any, Any], None]:
    """The setter of one of BaseModel's slots, called directly (half the cost of
    ``object.__setattr__(obj, name, value)``, which looks the descriptor up each time)."""
    descriptor = BaseModel.__dict__.get(name)
    setter = getattr(descriptor, "__set__", None)
    if setter is None:  # pragma: no cover - a pydantic without these slots
        return lambda obj, value: object.__setattr__(obj, name, value)
    return cast(Callable[[Any, Any], None], setter)


_set_dict = _slot_setter("__dict__")
_set_fields_set = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}


def trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """Build ``cls`` from values that are already valid, skipping validation.

    Internal fast path for the run loop: every field must be given. Use the
    normal constructor for anything that comes from outside the kernel. (All
    such objects share one fields-set: every field is set, so it never changes.)
    """
    obj = _new(cls)
    _set_dict(obj, values)
    fields = _ALL_FIELDS.get(cls)
    if fields is None:
        fields = _ALL_FIELDS[cls] = set(cls.model_fields)
    _set_fields_set(obj, fields)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def replaced(model: _M, **updates: Any) -> _M:
    """A copy of a trusted model with ``updates`` applied, skipping validation."""
    return trusted(type(model), {**model.__dict__, **updates})


def utc_now() -> datetime:
    """Return the current time, timezone-aware UTC."""
    return datetime.now(UTC)


def _require_aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise ValueError(
            f"datetime {value.isoformat()} is naive; pass a timezone-aware value "
            "(e.g. datetime.now(timezone.utc))"
        )
    return value


class AvoModel(BaseModel):
    """Base of every avo model: unknown keys are refused, assignments validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @field_validator("*", mode="after")
    @classmethod
    def _aware_datetimes(cls, value: Any) -> Any:
        if isinstance(value, datetime):
            return _require_aware(value)
        return value


class TokenUsage(AvoModel):
    """Token counts of one or more model calls.

    ``input_tokens`` counts every input token, including those the vendor read
    from its prompt cache (``cache_read_tokens``) or wrote to it
    (``cache_write_tokens``), which are billed at their own prices;
    ``output_tokens`` counts every output token, including the model's
    reasoning (``reasoning_tokens``). The three breakdowns are 0 when the
    vendor reports none.
    """

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    reasoning_tokens: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """Input tokens billed at the plain input price (no cache read or write)."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)

    def plus(self, other: TokenUsage) -> TokenUsage:
        """Return a new TokenUsage summing both."""
        # Sums of validated non-negative ints: nothing to re-validate.
        mine, theirs = self.__dict__, other.__dict__
        return trusted(
            TokenUsage,
            {
                "input_tokens": mine["input_tokens"] + theirs["input_tokens"],
                "output_tokens": mine["output_tokens"] + theirs["output_tokens"],
                "cache_read_tokens": mine["cache_read_tokens"] + theirs["cache_read_tokens"],
                "cache_write_tokens": mine["cache_write_tokens"] + theirs["cache_write_tokens"],
                "reasoning_tokens": mine["reasoning_tokens"] + theirs["reasoning_tokens"],
            },
        )


class ToolMetadata(AvoModel):
    """What the model is told about a tool.

    ``argument_kinds`` says which arguments are paths, URLs, commands or free
    text (:class:`ArgumentKind`), by pointer: ``path``, ``paths[]`` (each item
    of a list), ``patches[].path`` (a field of each item). Permission rules
    read those arguments. Kinds may also be declared in ``input_schema`` with
    the ``x-avo-kind`` keyword (how MCP and other third-party tools declare
    them); such hints are merged in (an explicit entry wins) and removed from
    the schema the model is shown.
    """

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    input_schema: dict[str, JsonValue]
    risk: ToolRisk | None = None
    argument_kinds: dict[str, ArgumentKind] = Field(default_factory=dict)
    asks_human: bool = False
    """True for a tool that asks a person (``ask_user``): instead of invoking it, the
    run records the question (arguments ``question`` and optional ``choices``),
    pauses, and the person's answer becomes the call's result."""
    effect: ToolEffect | None = None
    """What running the same call again does (``pure``, ``idempotent``,
    ``non_idempotent``); None: derived from ``risk`` (see ``effective_effect``)."""

    @model_validator(mode="before")
    @classmethod
    def _schema_hints(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("input_schema"), dict):
            return data
        from avo._argument_hints import schema_argument_kinds, without_hints

        schema = data["input_schema"]
        hinted = schema_argument_kinds(schema)
        if not hinted:
            return data
        declared = data.get("argument_kinds") or {}
        merged = {**hinted, **declared} if isinstance(declared, dict) else declared
        return {**data, "input_schema": without_hints(schema), "argument_kinds": merged}

    @property
    def effective_risk(self) -> ToolRisk:
        """The declared risk, or EXECUTE when the tool declared none."""
        return self.risk or ToolRisk.EXECUTE

    @property
    def effective_effect(self) -> ToolEffect:
        """The declared effect; else ``pure`` for ``inspect`` tools, else ``non_idempotent``."""
        if self.effect is not None:
            return self.effect
        return ToolEffect.PURE if self.risk is ToolRisk.INSPECT else ToolEffect.NON_IDEMPOTENT


class ToolCall(AvoModel):
    """One tool invocation requested by the model.

    ``tool_call_id`` identifies the call in the run's events and transcript.
    The runtime replaces whatever id a provider put there with one it mints
    itself when it records the response (so a vendor that repeats ids cannot
    confuse two calls), and keeps the vendor's id in ``vendor_id``: adapters
    send ``vendor_id`` back to the vendor that made it. ``signature`` is an
    opaque token a vendor attached to the call (Gemini's ``thoughtSignature``)
    that must travel back with it on later turns.
    """

    tool_call_id: str = Field(default_factory=new_id, min_length=1)
    name: str = Field(min_length=1)
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    vendor_id: str | None = None
    signature: str | None = None


class ToolResult(AvoModel):
    """The outcome of one tool call. Exactly one of success-with-output or error."""

    tool_call_id: str
    tool_name: str
    success: bool
    output: JsonValue | None = None
    error: str | None = None
    started_at: datetime
    finished_at: datetime
    duration_ms: float = Field(default=0, ge=0)

    @model_validator(mode="after")
    def validate_success_payload(self) -> ToolResult:
        """Refuse a result that is both success and error, or a failure without error."""
        if self.success and self.error is not None:
            raise ValueError("a successful tool result cannot contain an error")
        if not self.success and not self.error:
            raise ValueError("a failed tool result must contain an error")
        if self.finished_at < self.started_at:
            raise ValueError("finished_at must not be earlier than started_at")
        return self


class ModelRequest(AvoModel):
    """What the runtime sends to a provider for one step.

    Read-only for a provider: ``messages`` (the list and its message dicts) is
    shared with the run's latest checkpoint, not copied for each request.
    Build a new list to send a changed transcript.

    ``output_schema`` (set only for providers that declare
    ``supports_output_schema``) is the JSON schema the final answer must
    match; its ``title`` names it. A provider asks its vendor for JSON output
    in that shape where the vendor can do so.
    """

    request_id: str = Field(default_factory=new_id)
    run_id: str = Field(min_length=1)
    step: int = Field(ge=1)
    messages: list[dict[str, JsonValue]]
    tools: list[ToolMetadata] = Field(default_factory=list)
    cache: bool = False
    cache_prefix_messages: int | None = Field(default=None, ge=0)
    output_schema: dict[str, JsonValue] | None = None


class FinishReason(StrEnum):
    """Why the model stopped producing a response, in the kernel's words.

    Each provider adapter maps its vendor's spelling (``end_turn``,
    ``max_tokens``, ``MAX_TOKENS``, ``SAFETY``, ...) onto these.
    """

    STOP = "stop"
    """A complete answer (or the end of a turn)."""
    LENGTH = "length"
    """Cut off at the output-token limit: the answer is incomplete."""
    TOOL_CALLS = "tool_calls"
    """The model asked for tool calls."""
    CONTENT_FILTER = "content_filter"
    """The vendor's safety filter withheld or cut the answer."""
    REFUSAL = "refusal"
    """The model declined to answer."""
    UNKNOWN = "unknown"
    """The vendor gave a reason the adapter does not know."""


class ModelResponse(AvoModel):
    """A provider's decision: a final answer (content) or tool calls.

    ``tool_calls`` holds every call of the turn, in the model's order (the
    runtime runs them all). ``ModelResponse(tool_call=call)`` and the
    ``tool_call`` property (the first call) keep single-call code working.
    ``finish_reason`` says why the model stopped (None: not reported).
    ``thinking`` holds the vendor's reasoning blocks (with their signatures)
    that must be sent back on later turns, each tagged with the ``source``
    adapter that made it; the runtime keeps them in the transcript.
    ``provider`` / ``model`` name who answered when that is not the runtime's
    own provider and model (a router's route); the run records them with the
    usage, so the call is priced as what it was.
    """

    response_id: str = Field(default_factory=new_id)
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage | None = None
    finish_reason: FinishReason | None = None
    thinking: list[dict[str, JsonValue]] = Field(default_factory=list)
    provider: str | None = None
    model: str | None = None

    if TYPE_CHECKING:  # the constructor also takes the single-call spelling ``tool_call=``

        def __init__(
            self,
            *,
            response_id: str = ...,
            content: str | None = None,
            tool_call: ToolCall | None = None,
            tool_calls: list[ToolCall] = ...,
            usage: TokenUsage | None = None,
            finish_reason: FinishReason | None = None,
            thinking: list[dict[str, JsonValue]] = ...,
            provider: str | None = None,
            model: str | None = None,
        ) -> None: ...

    @model_validator(mode="before")
    @classmethod
    def _single_call(cls, data: Any) -> Any:
        """Accept the single-call spelling ``tool_call=`` (also in stored responses)."""
        if isinstance(data, dict) and "tool_call" in data:
            data = dict(data)
            call = data.pop("tool_call")
            if call is not None:
                if data.get("tool_calls"):
                    raise ValueError("pass tool_call or tool_calls, not both")
                data["tool_calls"] = [call]
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelResponse:
        if (self.content is None) == (not self.tool_calls):
            raise ValueError("model response must contain exactly one of content or tool_call")
        return self

    @property
    def tool_call(self) -> ToolCall | None:
        """The first tool call, or None for a final answer."""
        calls = self.tool_calls
        return calls[0] if calls else None

    @property
    def is_final(self) -> bool:
        """True for a plain content answer."""
        return self.content is not None


class RunRecord(AvoModel):
    """The stored head of a run: its state and totals."""

    run_id: str = Field(min_length=1)
    task: str = Field(min_length=1)
    state: RunState = RunState.CREATED
    stop_reason: StopReason | None = None
    output: str | None = None
    error: str | None = None
    steps: int = Field(default=0, ge=0)
    token_usage: TokenUsage = Field(default_factory=TokenUsage)
    token_accounting_available: bool = True
    user_state: dict[str, JsonValue] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
    duration_seconds: float | None = None

    @model_validator(mode="after")
    def _outcome_agrees(self) -> RunRecord:
        validate_terminal_outcome(self.state, self.stop_reason)
        return self


class Checkpoint(AvoModel):
    """Everything needed to continue a run from a durable boundary."""

    checkpoint_id: str = Field(default_factory=new_id)
    run_id: str
    created_at: datetime = Field(default_factory=utc_now)
    state: RunState
    messages: list[dict[str, JsonValue]]
    next_step: int = Field(ge=1)
    token_usage: TokenUsage
    token_accounting_available: bool
    consecutive_errors: int
    repeated_action_history: list[str]
    observation_fingerprints: list[str]
    model_response_fingerprints: list[str]
    progress_markers: list[str]
    completed_tool_call_ids: set[str]
    user_state: dict[str, JsonValue]
    policy: dict[str, Any]
    provider_metadata: dict[str, JsonValue]
    pending_response: ModelResponse | None
    last_event_sequence: int = 0
    shaper_state: dict[str, JsonValue] = Field(default_factory=dict)
    """Each request shaper's own state by shaper name (a context policy's compaction
    state, say), so a resumed run shapes its requests exactly as before."""
    partial_output: str | None = None
    """A truncated answer being continued (its parts so far, joined)."""
    continuation_turns: int = 0
    """Continuation turns used for the current answer."""
    output_retries: int = 0
    """Answers refused by the run's output schema so far."""


class RunResult(AvoModel):
    """What run() and resume() return.

    ``parsed`` is the final answer validated against ``run(..., output_schema=)``
    (an instance of that model), or None.
    """

    run_id: str
    status: RunState
    stop_reason: StopReason | None
    output: str | None
    error: str | None
    steps: int
    token_usage: TokenUsage
    token_accounting_available: bool
    parsed: Any = None


__all__ = [
    "ArgumentKind",
    "AvoModel",
    "Checkpoint",
    "FinishReason",
    "ModelRequest",
    "ModelResponse",
    "RunRecord",
    "RunResult",
    "TokenUsage",
    "ToolCall",
    "ToolMetadata",
    "ToolResult",
    "ToolEffect",
    "ToolRisk",
    "new_id",
    "utc_now",
]
