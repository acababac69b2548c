"""What every wire fake shares: scripted calls and splitting text into stream pieces."""

from __future__ import annotations

from typing import Any

Call = tuple[str, str, dict[str, Any]]
"""A scripted tool call: ``(vendor call id, tool name, arguments)``."""


def _pieces(text: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


__all__ = ["Call"]
