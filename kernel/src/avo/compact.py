"""Shrink a long conversation by replacing its middle with a summary.

Compaction keeps the leading system messages, the first user message (the
task, when ``keep_first_user``) and the last ``keep_last`` messages, and puts
one system note where the middle was. With no summarizer the note is a fixed
placeholder; with one, the note carries its summary of the dropped messages.
A kept tail never starts with an orphaned ``tool`` message: the boundary moves
back to include the assistant turn that asked for it.

These functions compact a message list once, on request (the REPL's
``/compact``). Automatic compaction during a run is a context policy working
through the request seam (``avo-context``'s ``compaction``), which uses
:func:`split_points` and :func:`note_message` from here but never rewrites the
transcript. :func:`compact_messages` takes a plain summarizer;
:func:`acompact_messages` takes an async one (``SummarizeCallable``). Both
share one core.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

Message = dict[str, Any]
SummarizeCallable = Callable[[list[Message]], Awaitable[str]]
"""An async callable turning the dropped messages into a summary string."""
SyncSummarizeCallable = Callable[[list[Message]], str]

PLACEHOLDER_NOTE = "[{count} earlier messages were compacted to save context.]"
SUMMARY_NOTE = "Summary of {count} earlier messages:\n{summary}"


def head_end(messages: Sequence[Message], *, keep_first_user: bool = True) -> int:
    """Where the head ends: after the leading system messages and (optionally) the
    first user message (the task), which compaction always keeps."""
    end = 0
    while end < len(messages) and messages[end].get("role") == "system":
        end += 1
    if keep_first_user:
        for index in range(end, len(messages)):
            if messages[index].get("role") == "user":
                return index + 1
    return end


def split_points(
    messages: Sequence[Message], keep_last: int, keep_first_user: bool = True
) -> tuple[int, int] | None:
    """``(middle_start, tail_start)``: the middle ``messages[start:tail]`` to compact.

    The tail keeps the last ``keep_last`` messages, moved back so that it never
    starts with a ``tool`` message whose assistant request would be dropped.
    None when there is no middle.
    """
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    start = head_end(messages, keep_first_user=keep_first_user)
    size = len(messages)
    tail = max(start, size - keep_last)
    while start < tail < size and messages[tail].get("role") == "tool":
        tail -= 1
    if tail <= start:
        return None
    return start, tail


def _split(
    messages: Sequence[Message], keep_last: int, keep_first_user: bool
) -> tuple[list[Message], list[Message], list[Message]] | None:
    """(head, middle, tail) as copies, or None when there is nothing to compact."""
    points = split_points(messages, keep_last, keep_first_user)
    if points is None:
        return None
    start, tail = points
    items = [dict(m) for m in messages]
    return items[:start], items[start:tail], items[tail:]


def note_message(count: int, summary: str | None) -> Message:
    """The system message standing for ``count`` compacted messages (summary or placeholder)."""
    return _note(count, summary)


def _note(count: int, summary: str | None) -> Message:
    if summary is None or not summary.strip():
        return {"role": "system", "content": PLACEHOLDER_NOTE.format(count=count)}
    return {"role": "system", "content": SUMMARY_NOTE.format(count=count, summary=summary.strip())}


def compact_messages(
    messages: Sequence[Message],
    *,
    keep_last: int = 8,
    keep_first_user: bool = True,
    summarize_callable: SyncSummarizeCallable | None = None,
) -> list[Message]:
    """Return a compacted copy of ``messages`` (the input is never mutated)."""
    parts = _split(messages, keep_last, keep_first_user)
    if parts is None:
        return [dict(m) for m in messages]
    head, middle, tail = parts
    summary = summarize_callable(middle) if summarize_callable is not None else None
    if summary is not None and not isinstance(summary, str):
        close = getattr(summary, "close", None)
        if callable(close):
            close()  # an un-awaited coroutine must not leak a warning
        raise TypeError(
            "summarize_callable must return a str; use acompact_messages for an async summarizer"
        )
    return [*head, _note(len(middle), summary), *tail]


async def acompact_messages(
    messages: Sequence[Message],
    *,
    keep_last: int = 8,
    keep_first_user: bool = True,
    summarize_callable: SummarizeCallable | None = None,
) -> list[Message]:
    """Async form of :func:`compact_messages` for an async ``summarize_callable``."""
    parts = _split(messages, keep_last, keep_first_user)
    if parts is None:
        return [dict(m) for m in messages]
    head, middle, tail = parts
    summary = await summarize_callable(middle) if summarize_callable is not None else None
    return [*head, _note(len(middle), summary), *tail]


def estimate_message_count(messages: Sequence[Message]) -> int:
    """How many conversation messages ``messages`` holds (entries with a role)."""
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role"))


__all__ = [
    "PLACEHOLDER_NOTE",
    "SUMMARY_NOTE",
    "SummarizeCallable",
    "SyncSummarizeCallable",
    "acompact_messages",
    "compact_messages",
    "estimate_message_count",
    "head_end",
    "note_message",
    "split_points",
]
