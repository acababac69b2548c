"""Which sandbox executor run_shell / lint / test_runner use (a context variable)."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from avo_tools.errors import SandboxNotBoundError


class SandboxRunner(Protocol):
    """What run_shell needs from a sandbox executor."""

    async def run(
        self,
        command: str,
        *,
        workspace_dir: Path,
        env: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
    ) -> Any: ...


_current: contextvars.ContextVar[tuple[SandboxRunner, ...]] = contextvars.ContextVar(
    "avo_tools_sandbox", default=()
)


@contextmanager
def bind_sandbox(executor: SandboxRunner) -> Iterator[SandboxRunner]:
    """Bind a sandbox executor for run_shell / lint / test_runner inside this block."""
    token = _current.set((*_current.get(), executor))
    try:
        yield executor
    finally:
        _current.reset(token)


def current_sandbox(tool_name: str = "run_shell") -> SandboxRunner:
    """The innermost bound sandbox, or SandboxNotBoundError."""
    stack = _current.get()
    if not stack:
        raise SandboxNotBoundError(
            f"{tool_name} invoked without a sandbox; it never runs commands on the host. "
            "Wrap the run in avo_tools.bind_sandbox(executor) with a docker or bubblewrap "
            "executor from avo-sandbox"
        )
    return stack[-1]


def has_sandbox() -> bool:
    """True inside ``bind_sandbox(...)``."""
    return bool(_current.get())


__all__ = ["SandboxRunner", "bind_sandbox", "current_sandbox", "has_sandbox"]
