"""Errors raised by the application tools; every one is an ``AvoError``.

::

    AvoError
    ├── WorkspacePathError            a path is refused by workspace containment
    ├── ToolExecutionError
    │   └── EgressDeniedError         web_fetch refused a destination (egress policy)
    ├── NotTextError                  (also ValueError) read_file met bytes that are not text
    ├── EditFileError                 (also RuntimeError) an edit cannot be applied /
    │   │                             a workspace tool ran with no workspace bound
    │   └── WorkspaceNotBoundError
    └── SandboxNotBoundError          (also RuntimeError) run_shell ran with no sandbox bound
"""

from __future__ import annotations

from avo.exceptions import AvoError, ToolExecutionError


class WorkspacePathError(AvoError):
    """A requested path is refused by workspace containment."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class NotTextError(AvoError, ValueError):
    """``read_file`` was asked for a file whose bytes are not text in the given encoding."""


class EditFileError(AvoError, RuntimeError):
    """A file edit cannot be applied (or a workspace tool has no workspace bound)."""


class WorkspaceNotBoundError(EditFileError):
    """A workspace-bound tool was invoked outside ``bind_workspace(...)``."""


class SandboxNotBoundError(AvoError, RuntimeError):
    """``run_shell`` was invoked outside ``bind_sandbox(...)``: it never runs on the host."""


class EgressDeniedError(ToolExecutionError):
    """The egress policy refused an outbound URL (or a redirect hop)."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message, tool_name="web_fetch")
        self.url = url


__all__ = [
    "EditFileError",
    "EgressDeniedError",
    "NotTextError",
    "SandboxNotBoundError",
    "WorkspaceNotBoundError",
    "WorkspacePathError",
]
