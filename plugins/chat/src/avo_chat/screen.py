"""What the chat shows, independent of how: the :class:`Screen` a front end implements.

The kernel thread calls a screen's methods while a turn runs (streamed text,
tool calls, notices, the status line) and awaits its questions (approvals).
Two screens ship: the terminal (:mod:`avo_chat.tty`, prompt_toolkit + rich)
and plain text for pipes (:mod:`avo_chat.plain`). Every method is safe to
call from the kernel thread; a screen moves the work to its own thread.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from avo.approval import Answer, HumanRequest
    from avo_chat.approvals import Preview

FOLD_LINES = 4
"""Lines of a tool's output shown under its line; the rest is folded (counted)."""

LINE_CHARS = 160


@dataclass
class ToolView:
    """One tool call as the chat shows it: a line when it starts, a result when it ends."""

    call_id: str
    name: str
    summary: str
    started: float = field(default_factory=time.monotonic)
    duration_ms: float | None = None
    ok: bool | None = None
    error: str | None = None
    output: list[str] = field(default_factory=list)
    more_lines: int = 0

    @property
    def elapsed(self) -> float:
        """Seconds since the call started (its duration once it finished)."""
        if self.duration_ms is not None:
            return self.duration_ms / 1000
        return time.monotonic() - self.started


@dataclass(frozen=True)
class Status:
    """The status line: where the session stands."""

    session: str = ""
    model: str = ""
    tokens: int = 0
    cost: str = ""
    context: str = ""
    busy: str = ""
    attachments: int = 0
    mode: str = ""

    def plain(self) -> str:
        """One line of text (what the terminal shows at the bottom)."""
        parts = [p for p in (self.model, self.mode) if p]
        parts.append(f"{self.tokens:,} tokens")
        if self.cost:
            parts.append(self.cost)
        if self.context:
            parts.append(f"context {self.context}")
        if self.attachments:
            parts.append(f"{self.attachments} attached")
        if self.session:
            parts.append(f"session {self.session}")
        return " · ".join(parts)


class Screen(Protocol):
    """What a chat front end shows (every method callable from the kernel thread)."""

    plain: bool
    width: int

    def stream(self, text: str) -> None:
        """A piece of the agent's answer (Markdown) as it arrives."""

    def end_stream(self) -> None:
        """The answer (or this part of it, before a tool call) is complete."""

    def tool_started(self, view: ToolView) -> None:
        """A tool call began."""

    def tool_finished(self, view: ToolView) -> None:
        """A tool call ended (``view.ok``, ``view.output``)."""

    def tool_paused(self, view: ToolView) -> None:
        """A started tool call stopped to ask a person; it no longer runs (no result yet)."""

    def say(self, text: str, *, style: str = "") -> None:
        """A notice line (``style``: dim, warn, error, ok)."""

    def markdown(self, text: str) -> None:
        """A block of Markdown (command output, recaps)."""

    def show(self, renderable: Any) -> None:
        """A rich renderable on the terminal, its text on a pipe."""

    def set_status(self, status: Status) -> None:
        """Update the status line."""

    async def ask_approval(self, request: HumanRequest, preview: Preview) -> Answer | None:
        """Ask the person about a paused call; None leaves the run paused."""

    async def ask(self, question: str) -> str | None:
        """Ask for one line of text (None: no answer, e.g. Ctrl-C or end of input)."""


def shorten(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


TEXT_FIELDS = ("content", "output", "stdout", "text", "result")


def output_text(value: Any) -> str:
    """A tool result's output as a person reads it.

    Text as it is; a result carrying text (``content``, ``output``, ``stdout``...)
    shows that text after its other fields on one line; anything else is JSON,
    on one line when it is short.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in TEXT_FIELDS:
            text = value.get(key)
            if isinstance(text, str) and text.strip():
                rest = {k: v for k, v in value.items() if k != key and v not in ("", None)}
                if key == "stdout" and isinstance(rest.get("stderr"), str):
                    text += rest.pop("stderr")
                head = json.dumps(rest, ensure_ascii=False, sort_keys=True, default=str)
                return (head + "\n" if rest else "") + text
        listed = [k for k, v in value.items() if isinstance(v, list) and v and _records(v)]
        if len(listed) == 1:  # {"matches": [{path, line, text}, ...], "truncated": false}
            rest = {k: v for k, v in value.items() if k != listed[0] and v not in ("", None)}
            head = json.dumps(rest, ensure_ascii=False, sort_keys=True, default=str)
            rows = "\n".join(_record_line(item) for item in value[listed[0]])
            return (head + "\n" if rest else "") + rows
    compact = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if len(compact) <= 120:
        return compact
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)


def _records(items: list[Any]) -> bool:
    return all(isinstance(item, dict) for item in items)


def _record_line(item: dict[str, Any]) -> str:
    """``path:line: text`` for search hits, else the record as one line of JSON."""
    if "path" in item:
        where = str(item["path"]) + (f":{item['line']}" if "line" in item else "")
        rest = {k: v for k, v in item.items() if k not in ("path", "line")}
        text = rest.pop("text", None)
        if text is None and rest:
            text = " ".join(str(v) for v in rest.values())
        return f"{where}: {text}" if text is not None else where
    return json.dumps(item, ensure_ascii=False, sort_keys=True, default=str)


def fold(text: str, lines: int = FOLD_LINES, width: int = LINE_CHARS) -> tuple[list[str], int]:
    """The first ``lines`` lines of ``text`` (each cut to ``width``) and how many are hidden."""
    every = text.rstrip("\n").splitlines() if text.strip() else []
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in every[:lines]]
    return shown, max(0, len(every) - lines)


def call_summary(arguments: Any, kinds: dict[str, Any] | None = None, limit: int = 90) -> str:
    """The key arguments of a call on one line: paths, commands and URLs first."""
    if not isinstance(arguments, dict) or not arguments:
        return ""
    ordered: list[tuple[str, Any]] = []
    for pointer in kinds or {}:
        key = pointer.split("[", 1)[0].split(".", 1)[0]
        if key in arguments and (key, arguments[key]) not in ordered:
            ordered.append((key, arguments[key]))
    for key, value in arguments.items():
        if (key, value) not in ordered:
            ordered.append((key, value))
    parts: list[str] = []
    for key, value in ordered:
        if isinstance(value, str):
            text = value if "\n" not in value else f"{len(value.splitlines())} lines"
        elif isinstance(value, list) and all(isinstance(v, dict) for v in value):
            text = f"{len(value)} item{'s' if len(value) != 1 else ''}"
        else:
            text = json.dumps(value, ensure_ascii=False, default=str)
        parts.append(text if len(ordered) == 1 else f"{key}={text}")
    return shorten(" ".join(parts), limit)


__all__ = [
    "FOLD_LINES",
    "Screen",
    "Status",
    "ToolView",
    "call_summary",
    "fold",
    "output_text",
    "shorten",
]
