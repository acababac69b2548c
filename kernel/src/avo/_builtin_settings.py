"""Settings models of the kernel's built-in plugins (imported on first use: pydantic)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class FakeProviderSettings(BaseModel):
    """``[provider.settings]`` of the ``fake`` provider."""

    model_config = ConfigDict(extra="forbid")

    script: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Scripted responses, in order: {content = ...} or "
        "{tool_call = {name = ..., arguments = {...}}} tables (ModelResponse fields).",
    )
    repeat_last: bool = Field(default=False, description="Repeat the last response forever.")
    chunk_chars: int = Field(
        default=0,
        ge=0,
        description="Stream answers in pieces of this many characters (0: all at once).",
    )
    chunk_delay_ms: float = Field(
        default=0.0, ge=0, le=60_000, description="Pause between streamed pieces, in milliseconds."
    )


__all__ = ["FakeProviderSettings"]
