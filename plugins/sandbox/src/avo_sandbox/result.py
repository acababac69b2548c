"""The result both sandbox backends return, and their shared helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from avo.exceptions import SandboxError


@dataclass(frozen=True)
class SandboxResult:
    """The outcome of one sandboxed command."""

    exit_code: int
    stdout: str
    stderr: str
    duration_ms: float
    image: str
    network_mode: str
    mem_limit: str


class SandboxTimeoutError(SandboxError):
    """The sandboxed command ran past its time limit and was killed."""

    def __init__(self, message: str, *, timeout_seconds: float) -> None:
        super().__init__(message, tool_name="run_shell")
        self.timeout_seconds = timeout_seconds


_MEMORY = re.compile(r"^\s*(\d+)\s*([bkmg]?)b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_memory(text: str) -> int:
    """Docker-style memory size (``256m``, ``1g``, ``512k``) in bytes."""
    match = _MEMORY.match(text)
    if not match:
        raise SandboxError(
            f"invalid memory limit {text!r}; use a number with k, m or g, e.g. '256m'"
        )
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


__all__ = ["SandboxResult", "SandboxTimeoutError", "parse_memory"]
