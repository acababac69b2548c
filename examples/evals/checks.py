"""Custom checks for suite.toml: plain functions that get the trial's Outcome."""

from __future__ import annotations

from typing import Any


def compiles(outcome: Any, path: str) -> str | None:
    """Fail (with the reason) when the workspace file ``path`` is not valid Python."""
    source = outcome.file(path).read_text(encoding="utf-8")
    try:
        compile(source, path, "exec")
    except SyntaxError as exc:
        return f"{path} does not compile: {exc.msg} (line {exc.lineno})"
    return None
