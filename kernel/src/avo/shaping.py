"""The request seam: request shapers change what one model call sees.

A run's transcript (``messages`` in its checkpoints) is the record of the
conversation; it only grows. Before each model call, the shapers enabled for
the run may change the *request* built from it — insert, hide or rewrite
messages, hide or add tools — for that call only. The transcript, the events
and the checkpoints keep the full conversation.

A shaper is any object with an ``avo_prepare_request(request, context)``
method (the hookspec in :mod:`avo.hookspecs`) returning a :class:`Shaping` or
None. A :class:`Shaping` is data, not a new request: a few :class:`Splice` s
over the message list the shaper received, tool names to hide, tools to add
and a note. The kernel applies it, records it in a ``request_shaped`` event
whenever it differs from the shaper's previous result, and :func:`replay`
rebuilds any request from the transcript and those events. A shaper that
returns the very same object as on its previous call costs nothing more than
the call.

Shapers run in a defined order: those that shape the conversation itself
(``carry_over``: a context policy, whose view is also what the next run of a
session starts from) first, then by ``order`` (lower first), then as
configured. A shaper that raises fails the run closed: it ends FAILED with
an error naming the shaper, and the request is never sent.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from avo.exceptions import ShapingError
from avo.models import ToolMetadata

if TYPE_CHECKING:
    from avo.context_window import ContextWindow, TokenGauge
    from avo.events import EventType

Message = dict[str, JsonValue]
DEFAULT_ORDER = 500
_ARGUMENTS = ("request", "context")


@dataclass(frozen=True, slots=True)
class Splice:
    """Replace ``messages[start:stop]`` of the incoming list with ``messages``.

    Indices refer to the list the shaper received; a negative index counts from
    its end, as in Python slicing (so ``Splice(-1, -1, ...)`` inserts before the
    last message however long the transcript grows). ``start == stop`` inserts,
    an empty ``messages`` hides.
    """

    start: int
    stop: int
    messages: tuple[Message, ...] = ()

    def as_json(self) -> list[JsonValue]:
        """``[start, stop, [message, ...]]``."""
        return [self.start, self.stop, list(self.messages)]


@dataclass(frozen=True)
class Shaping:
    """What one shaper changes in one request (see the module docstring).

    ``splices`` must not overlap once their indices are resolved against the
    incoming list; they are applied together. ``hide_tools`` removes tools by
    name, ``add_tools`` adds tool declarations (the tool itself must be in the
    run's registry for a call to succeed). ``note`` is recorded with the change.
    """

    splices: tuple[Splice, ...] = ()
    hide_tools: frozenset[str] = frozenset()
    add_tools: tuple[ToolMetadata, ...] = ()
    note: Mapping[str, JsonValue] | None = None

    @classmethod
    def insert(cls, at: int, *messages: Message) -> Shaping:
        """Insert ``messages`` before index ``at``."""
        return cls(splices=(Splice(at, at, tuple(messages)),))

    @classmethod
    def replace(cls, start: int, stop: int, *messages: Message) -> Shaping:
        """Show ``messages`` instead of ``[start:stop]``."""
        return cls(splices=(Splice(start, stop, tuple(messages)),))

    @classmethod
    def hide(cls, start: int, stop: int) -> Shaping:
        """Leave ``[start:stop]`` out."""
        return cls(splices=(Splice(start, stop),))

    @classmethod
    def tools(cls, *, hide: Iterable[str] = (), add: Iterable[ToolMetadata] = ()) -> Shaping:
        """Hide tools by name and/or add tool declarations."""
        return cls(hide_tools=frozenset(hide), add_tools=tuple(add))

    def plus(self, other: Shaping) -> Shaping:
        """Both shapings at once (their splices must not overlap)."""
        note = {**(self.note or {}), **(other.note or {})} or None
        return Shaping(
            splices=tuple(sorted((*self.splices, *other.splices), key=_splice_key)),
            hide_tools=self.hide_tools | other.hide_tools,
            add_tools=(*self.add_tools, *other.add_tools),
            note=note,
        )

    def as_json(self) -> dict[str, JsonValue]:
        """The shaping as recorded in a ``request_shaped`` event."""
        data: dict[str, JsonValue] = {"splices": [s.as_json() for s in self.splices]}
        if self.hide_tools:
            data["hide_tools"] = list[JsonValue](sorted(self.hide_tools))
        if self.add_tools:
            data["add_tools"] = [t.model_dump(mode="json") for t in self.add_tools]
        if self.note:
            data["note"] = dict(self.note)
        return data


def _splice_key(splice: Splice) -> tuple[int, int]:
    return (splice.start, splice.stop)


@dataclass(frozen=True)
class Summary:
    """A model-written summary (from :meth:`ShapingContext.summarize`)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class ShapingContext:
    """What a shaper knows about the call it shapes.

    :ivar run_id: the run. :ivar step: the step whose request this is.
    :ivar transcript: the run's full transcript (read-only; shared with its checkpoint).
    :ivar state: this shaper's own state from the last :meth:`set_state` (read-only);
        it is stored in every checkpoint and restored on resume.
    :ivar window: the model's :class:`~avo.context_window.ContextWindow` (None when
        the runtime was given no window and none could be resolved).
    :ivar gauge: token estimates over ``transcript`` (prefix sums, already updated).
    :ivar reserved_tokens: the estimated tokens the shapers after this one and the
        tool declarations added to the previous request (what a context policy
        must leave room for).
    :ivar scale: the gauge's estimates times ``scale`` are the provider's tokens:
        learned from the input tokens the provider reported for the previous
        request (between 1 and 4; 1.0 until a provider reports usage).
    :ivar session_id: the session the run belongs to, or None.
    :ivar model, provider: the provider's model and name, when it declares them.
    """

    __slots__ = (
        "_owner",
        "gauge",
        "model",
        "name",
        "provider",
        "reserved_tokens",
        "run_id",
        "scale",
        "session_id",
        "state",
        "step",
        "transcript",
        "window",
    )

    def __init__(
        self,
        owner: Any,
        *,
        name: str,
        run_id: str,
        step: int,
        transcript: list[Message],
        state: Mapping[str, JsonValue],
        window: ContextWindow | None,
        gauge: TokenGauge,
        reserved_tokens: int,
        session_id: str | None,
        model: str | None,
        provider: str | None,
        scale: float = 1.0,
    ) -> None:
        self._owner = owner
        self.name = name
        self.run_id = run_id
        self.step = step
        self.transcript = transcript
        self.state = state
        self.window = window
        self.gauge = gauge
        self.reserved_tokens = reserved_tokens
        self.scale = scale
        self.session_id = session_id
        self.model = model
        self.provider = provider

    def set_state(self, state: Mapping[str, JsonValue]) -> None:
        """Replace this shaper's state (JSON data); the next checkpoint stores it."""
        self._owner.set_state(self.name, state)
        self.state = self._owner.states[self.name]

    def record(self, kind: EventType | str, payload: Mapping[str, JsonValue]) -> None:
        """Append a ``context_compacted`` event (the only kind a shaper may record)."""
        self._owner.record(self.name, kind, payload)

    async def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, instructions: str
    ) -> Summary:
        """Ask the run's model to summarise ``messages`` following ``instructions``.

        The call is not a step of the run: its tokens are added to the run's usage
        and recorded with the shaper's next event. Provider errors propagate.
        """
        result: Summary = await self._owner.summarize(messages, instructions)
        return result


ShaperFunction = Callable[..., "Shaping | Awaitable[Shaping | None] | None"]


@dataclass(frozen=True)
class BoundShaper:
    """A shaper object with the name, order and flags the seam runs it by."""

    name: str
    shaper: Any
    order: int = DEFAULT_ORDER
    carry_over: bool = False
    function: ShaperFunction = field(repr=False, default=None)  # type: ignore[assignment]
    argnames: tuple[str, ...] = _ARGUMENTS

    def call(self, request: Any, context: ShapingContext) -> Any:
        """Call the shaper's ``avo_prepare_request`` with the arguments it takes."""
        if self.argnames == _ARGUMENTS:
            return self.function(request, context)
        values = {"request": request, "context": context}
        return self.function(**{name: values[name] for name in self.argnames})


def bind_shaper(
    shaper: Any,
    *,
    name: str | None = None,
    order: int | None = None,
    carry_over: bool | None = None,
) -> BoundShaper:
    """Check ``shaper`` implements ``avo_prepare_request`` and bind its name and order.

    The name, order and ``carry_over`` default to the object's attributes of the
    same names (then its class name, :data:`DEFAULT_ORDER`, False).
    """
    if isinstance(shaper, BoundShaper):
        return shaper
    label = name or getattr(shaper, "name", None) or type(shaper).__name__
    function = getattr(shaper, "avo_prepare_request", None)
    if not callable(function):
        raise ShapingError(
            f"request shaper {label!r} ({type(shaper).__name__}) has no avo_prepare_request"
            "(request, context) method; implement it (see avo.hookspecs)",
            shaper=str(label),
        )
    argnames: tuple[str, ...]
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        argnames = _ARGUMENTS
    else:
        argnames = tuple(parameters)
        unknown = [p for p in argnames if p not in _ARGUMENTS]
        if unknown:
            raise ShapingError(
                f"request shaper {label!r}: avo_prepare_request takes unknown arguments "
                f"{', '.join(unknown)}; it may take request and/or context",
                shaper=str(label),
            )
    resolved_order = order if order is not None else getattr(shaper, "order", DEFAULT_ORDER)
    carry = carry_over if carry_over is not None else bool(getattr(shaper, "carry_over", False))
    return BoundShaper(
        name=str(label),
        shaper=shaper,
        order=int(resolved_order),
        carry_over=carry,
        function=function,
        argnames=argnames,
    )


def ordered(shapers: Iterable[BoundShaper]) -> list[BoundShaper]:
    """Shapers in the order the seam runs them; a repeated name is a ShapingError."""
    items = list(shapers)
    seen: set[str] = set()
    for item in items:
        if item.name in seen:
            raise ShapingError(
                f"two request shapers are named {item.name!r}; shaper names must be unique "
                "in a run (their state is kept by name)",
                shaper=item.name,
            )
        seen.add(item.name)
    indexed = sorted(enumerate(items), key=lambda p: (not p[1].carry_over, p[1].order, p[0]))
    return [item for _, item in indexed]


def resolve(splices: Sequence[Splice], size: int, shaper: str) -> list[tuple[int, int, Splice]]:
    """The splices with indices resolved against a list of ``size``; ShapingError if bad."""
    resolved: list[tuple[int, int, Splice]] = []
    last_stop = 0
    for splice in splices:
        start, stop = splice.start, splice.stop
        if start < 0:
            start += size
        if stop < 0:
            stop += size
        if not 0 <= start <= stop <= size:
            raise ShapingError(
                f"request shaper {shaper!r} returned the splice [{splice.start}:{splice.stop}], "
                f"outside the {size} messages it was given (or reversed)",
                shaper=shaper,
            )
        if start < last_stop:
            raise ShapingError(
                f"request shaper {shaper!r} returned overlapping or unsorted splices "
                f"(one at [{splice.start}:{splice.stop}]); sort them and keep them apart",
                shaper=shaper,
            )
        resolved.append((start, stop, splice))
        last_stop = stop
    return resolved


def apply_splices(
    messages: list[Message], splices: Sequence[Splice], shaper: str = "?"
) -> list[Message]:
    """``messages`` with ``splices`` applied (a new list; the input is untouched)."""
    if not splices:
        return messages
    out: list[Message] = []
    position = 0
    for start, stop, splice in resolve(splices, len(messages), shaper):
        out += messages[position:start]
        out += splice.messages
        position = stop
    out += messages[position:]
    return out


def apply_tools(
    tools: list[ToolMetadata], shaping: Shaping, shaper: str = "?"
) -> list[ToolMetadata]:
    """``tools`` without ``shaping.hide_tools`` and with ``shaping.add_tools``."""
    if not shaping.hide_tools and not shaping.add_tools:
        return tools
    kept = [t for t in tools if t.name not in shaping.hide_tools]
    names = {t.name for t in kept}
    for tool in shaping.add_tools:
        if not isinstance(tool, ToolMetadata):
            raise ShapingError(
                f"request shaper {shaper!r} added a tool that is not a ToolMetadata: {tool!r}",
                shaper=shaper,
            )
        if tool.name in names:
            raise ShapingError(
                f"request shaper {shaper!r} added tool {tool.name!r}, which the request "
                "already has; hide it first to replace it",
                shaper=shaper,
            )
        names.add(tool.name)
        kept.append(tool)
    return kept


def replay(transcript: Sequence[Message], records: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Rebuild the messages a model saw from the transcript and ``request_shaped`` payloads.

    ``records`` are the payloads of the run's ``request_shaped`` events up to
    (and including) the step in question, oldest first; ``transcript`` is the
    run's transcript at that step (from the checkpoint before the call).
    """
    current: dict[str, list[Any]] = {}
    order: list[str] = []
    for record in records:
        order = []
        for entry in record.get("shapers", []):
            name = str(entry["name"])
            order.append(name)
            shaping = entry.get("shaping")
            if shaping is None:
                continue
            kept = int(shaping.get("kept_splices", 0))
            current[name] = current.get(name, [])[:kept] + list(shaping.get("splices", []))
    messages = list(transcript)
    for name in order:
        splices = [Splice(int(s[0]), int(s[1]), tuple(s[2])) for s in current.get(name, [])]
        messages = apply_splices(messages, splices, name)
    return messages


__all__ = [
    "DEFAULT_ORDER",
    "BoundShaper",
    "Message",
    "Shaping",
    "ShapingContext",
    "Splice",
    "Summary",
    "apply_splices",
    "apply_tools",
    "bind_shaper",
    "ordered",
    "replay",
    "resolve",
]
