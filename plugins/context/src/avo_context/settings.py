"""The settings of avo-context's bundles (imported by the entry points: pydantic only)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_FILES = ("AGENTS.md",)


class CompactionSettings(BaseModel):
    """The policy's knobs (the ``[context]`` table's keys besides window/default_window/policy)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(default=0.75, gt=0, le=1)
    """Compact when the request is estimated above this fraction of the window."""
    target: float = Field(default=0.5, gt=0, le=1)
    """Compact down to this fraction (below ``threshold``, so it does not compact every call)."""
    keep_recent_turns: int = Field(default=4, ge=1)
    """The newest model turns (with their tool results) that always stay verbatim."""
    min_elide_tokens: int = Field(default=64, ge=0)
    """Tool outputs estimated below this many tokens are never elided."""
    summarize: bool = True
    """Let the model summarise old turns when eliding is not enough."""
    summary_words: int = Field(default=250, ge=20)
    """About how long the summary may be (told to the model)."""
    max_summary_chars: int = Field(default=6_000, ge=200)
    """Summary text beyond this is cut."""
    summary_instructions: str | None = None
    """Replace the summary prompt (``{words}`` is filled in)."""
    recall: bool = True
    """Give the model the ``recall`` tool for elided outputs."""
    recall_max_chars: int = Field(default=20_000, ge=100)
    """The most characters ``recall`` returns of one output."""

    @model_validator(mode="after")
    def _target_below_threshold(self) -> CompactionSettings:
        if self.target >= self.threshold:
            raise ValueError(
                f"target ({self.target}) must be below threshold ({self.threshold}), "
                "e.g. threshold = 0.75 and target = 0.5"
            )
        return self


class InstructionsSettings(BaseModel):
    """``[instructions]``: where to look for AGENTS.md and how much of it to show."""

    model_config = ConfigDict(extra="forbid")

    files: list[str] = Field(default_factory=lambda: list(DEFAULT_FILES), min_length=1)
    """File names to look for in each directory (the first one found there is used)."""
    root: str | None = None
    """Where to start (default: the run's workspace); relative to the workspace."""
    parents: bool = True
    """Also read the files of the parent directories, up to the filesystem root."""
    max_bytes: int = Field(default=32_768, ge=256)
    """The most bytes of instructions shown, in total."""


__all__ = ["DEFAULT_FILES", "CompactionSettings", "InstructionsSettings"]
