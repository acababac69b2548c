"""Cap tool output at the source: head and tail kept, a marker says what was cut."""

from __future__ import annotations

from typing import Any

DEFAULT_MAX_CHARS = 32_000
"""The default cap for one text field of a tool result."""

MAX_LIST_ITEMS = 2_000
"""The default cap for one list in a tool result."""


def cap_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Return ``text`` or its head and tail with a marker saying how much was cut."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    cut = len(text) - head - tail
    marker = (
        f"\n[... avo cut {cut} of {len(text)} characters here; "
        f"kept the first {head} and the last {tail} ...]\n"
    )
    return text[:head] + marker + (text[-tail:] if tail else "")


def cap_output(
    value: Any, *, max_chars: int = DEFAULT_MAX_CHARS, max_items: int = MAX_LIST_ITEMS
) -> Any:
    """Cap every string and list in a JSON-like value (dicts are walked)."""
    if isinstance(value, str):
        return cap_text(value, max_chars)
    if isinstance(value, dict):
        return {
            k: cap_output(v, max_chars=max_chars, max_items=max_items) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        items = [cap_output(v, max_chars=max_chars, max_items=max_items) for v in value[:max_items]]
        if len(value) > max_items:
            items.append(f"[... avo cut {len(value) - max_items} of {len(value)} items ...]")
        return items
    return value


__all__ = ["DEFAULT_MAX_CHARS", "MAX_LIST_ITEMS", "cap_output", "cap_text"]
