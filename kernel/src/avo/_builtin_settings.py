"""Settings models of the kernel's built-in plugins (imported on first use: pydantic)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


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

    @field_validator("script")
    @classmethod
    def _responses(cls, script: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Check every item is a ModelResponse now, not when the run reaches it."""
        from avo.models import ModelResponse

        for index, item in enumerate(script):
            try:
                ModelResponse.model_validate(item)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'item'}: {e['msg']}" for e in exc.errors()
                )
                fields = ", ".join(["tool_call", *ModelResponse.model_fields])
                raise ValueError(
                    f"script[{index}] is not a model response ({problems}); an item takes {fields}"
                ) from None
        return script


__all__ = ["FakeProviderSettings"]
