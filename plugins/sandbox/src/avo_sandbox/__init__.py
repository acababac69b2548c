"""avo sandboxes: run a command isolated from the host, with the workspace mounted.

Two backends share one contract, ``async run(command, *, workspace_dir, env=None,
timeout_seconds=None) -> SandboxResult``:

- :class:`SandboxExecutor` — an ephemeral Docker container.
- :class:`BubblewrapExecutor` — ``bwrap``: no network, read-only system, the
  workspace the only writable mount, memory and time limits.
"""

from __future__ import annotations

from avo_sandbox.bubblewrap import BubblewrapExecutor
from avo_sandbox.docker_executor import (
    SandboxExecutor,
    language_from_path,
    resolve_image,
)
from avo_sandbox.result import SandboxResult, SandboxTimeoutError, parse_memory

__all__ = [
    "BubblewrapExecutor",
    "SandboxExecutor",
    "SandboxResult",
    "SandboxTimeoutError",
    "language_from_path",
    "parse_memory",
    "resolve_image",
]
