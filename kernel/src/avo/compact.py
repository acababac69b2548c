"""Shrink a long conversation by replacing its middle with a summary.

Compaction keeps the leading system messages, the first user message (the
task, when ``keep_first_user``) and the last ``keep_last`` messages, and puts
one system note where the middle was. With no summarizer the note is a fixed
placeholder; with one, the note carries its summary of the dropped messages.
A kept tail never starts with an orphaned ``tool`` message: the boundary moves
back to include the assistant turn that asked for it.

Compaction is never automatic in the runtime loop; the REPL's ``/compact``
calls it. :func:`compact_messages` takes a plain summarizer;
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


def _split(
    messages: Sequence[Message], keep_last: int, keep_first_user: bool
) -> tuple[list[Message], list[Message], list[Message]] | None:
    """(head, middle, tail), or None when there is nothing to compact."""
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    items = [dict(m) for m in messages]
    head_end = 0
    while head_end < len(items) and items[head_end].get("role") == "system":
        head_end += 1
    if keep_first_user:
        for index in range(head_end, len(items)):
            if items[index].get("role") == "user":
                head_end = index + 1
                break
    tail_start = max(head_end, len(items) - keep_last)
    # Never keep a tool result whose assistant request would be dropped.
    while head_end < tail_start < len(items) and items[tail_start].get("role") == "tool":
        tail_start -= 1
    middle = items[head_end:tail_start]
    if not middle:
        return None
    return items[:head_end], middle, items[tail_start:]


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
]
