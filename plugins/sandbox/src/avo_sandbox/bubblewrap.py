"""The bubblewrap sandbox: the sandbox executor contract on ``bwrap``, no Docker needed.

Isolation, per command:

- fresh namespaces (``--unshare-all`` plus an explicit ``--unshare-net``): no
  network at all (only a down ``lo``), own PID/IPC/UTS namespace;
- the system (``/usr``, ``/bin``, ``/lib*``, a few ``/etc`` files, the host
  Python's prefix so ``python3 -m pytest`` works) bound **read-only**;
- the workspace bound read-write at ``/workspace`` — the only writable mount
  besides a private tmpfs ``/tmp``;
- a cleared environment (``--clearenv``) plus what the caller passes;
- memory: ``ulimit -v`` in the sandboxed shell (address-space limit, applied
  before the command runs); core dumps off;
- time: the whole process group is SIGKILLed at the timeout (bwrap runs in its
  own session, ``--die-with-parent`` and the PID namespace take the rest down);
- output: at most ``max_output_bytes`` of each stream is kept (head + tail).

Needs unprivileged user namespaces, or root (as in CI containers): with
neither, ``bwrap`` reports "No permissions to creating new namespace" and this
executor raises SandboxError with that text.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from avo.exceptions import SandboxError
from avo_sandbox.result import SandboxResult, SandboxTimeoutError, parse_memory

_IN_SANDBOX_WORKDIR = "/workspace"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
)
_MISSING_BWRAP = (
    "BubblewrapExecutor requires the `bwrap` binary; install it with "
    "`apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap`."
)


def _python_prefixes() -> list[str]:
    """The host Python's install prefixes that live outside /usr (pyenv, venvs)."""
    found: list[str] = []
    for prefix in {sys.prefix, sys.base_prefix}:
        real = os.path.realpath(prefix)
        if not real.startswith("/usr/") and real != "/usr" and os.path.isdir(real):
            found.append(real)
    return sorted(found)


class _Capture:
    """Keep the head and tail of a stream, count what was dropped in between."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        half = self.limit // 2
        room = half - len(self.head)
        if room > 0:
            self.head.extend(chunk[:room])
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.extend(chunk)
        keep = self.limit - half
        if len(self.tail) > keep:
            self.dropped += len(self.tail) - keep
            del self.tail[: len(self.tail) - keep]

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n[... avo cut {self.dropped} bytes of output here ...]\n{tail}"


async def _pump(stream: asyncio.StreamReader | None, capture: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        capture.feed(chunk)


class BubblewrapExecutor:
    """Run shell commands under ``bwrap`` with the workspace as the only writable mount."""

    network_mode = "none"

    def __init__(
        self,
        *,
        bwrap: str = "bwrap",
        mem_limit: str = "256m",
        timeout_seconds: float = 30.0,
        extra_ro_binds: Sequence[str] = (),
        max_output_bytes: int = 1_000_000,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        self.bwrap = bwrap
        self.mem_limit = mem_limit
        self._mem_bytes = parse_memory(mem_limit)
        self.timeout_seconds = timeout_seconds
        self.extra_ro_binds = tuple(extra_ro_binds)
        self.max_output_bytes = max_output_bytes
        self.environment = dict(environment or {})
        self.image = "bubblewrap:host-readonly"

    def _binary(self) -> str:
        found = shutil.which(self.bwrap)
        if found is None:
            raise SandboxError(_MISSING_BWRAP)
        return found

    def build_argv(
        self, command: str, *, workspace_dir: Path, env: Mapping[str, str] | None = None
    ) -> list[str]:
        """The full ``bwrap`` argv for ``command`` (public so it can be inspected)."""
        argv = [
            self._binary(),
            "--die-with-parent",
            "--new-session",
            "--unshare-all",
            "--unshare-net",
            "--hostname",
            "avo-sandbox",
            "--clearenv",
        ]
        for path in _SYSTEM_DIRS:
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                argv += ["--ro-bind", path, path]
        for path in _ETC_FILES:
            argv += ["--ro-bind-try", path, path]
        prefixes = _python_prefixes()
        for path in (*prefixes, *self.extra_ro_binds):
            argv += ["--ro-bind", path, path]
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        argv += ["--bind", str(Path(workspace_dir).resolve(strict=True)), _IN_SANDBOX_WORKDIR]
        argv += ["--remount-ro", "/"]  # the root itself: only /workspace and /tmp are writable
        argv += ["--chdir", _IN_SANDBOX_WORKDIR]
        path_var = ":".join([*(f"{p}/bin" for p in prefixes), "/usr/local/bin", "/usr/bin", "/bin"])
        base_env = {
            "PATH": path_var,
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        for key, value in {**base_env, **self.environment, **dict(env or {})}.items():
            argv += ["--setenv", key, value]
        kilobytes = max(1, self._mem_bytes // 1024)
        script = f'ulimit -v {kilobytes} && ulimit -c 0 && exec sh -c "$1"'
        argv += ["--", "sh", "-c", script, "avo-sandbox", command]
        return argv

    async def run(
        self,
        command: str,
        *,
        workspace_dir: Path,
        env: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
    ) -> SandboxResult:
        """Run ``command`` with ``sh -c`` in the sandbox; the workspace is ``/workspace``."""
        timeout = timeout_seconds or self.timeout_seconds
        argv = self.build_argv(command, workspace_dir=Path(workspace_dir), env=env)
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        out, err = _Capture(self.max_output_bytes), _Capture(self.max_output_bytes)
        pumps = asyncio.gather(_pump(process.stdout, out), _pump(process.stderr, err))
        try:
            await asyncio.wait_for(asyncio.shield(pumps), timeout)
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            _kill_group(process.pid)
            await process.wait()
            await pumps
            raise SandboxTimeoutError(
                f"sandboxed command exceeded the timeout of {timeout} seconds and was killed",
                timeout_seconds=timeout,
            ) from None
        except BaseException:
            _kill_group(process.pid)
            await process.wait()
            raise
        stderr = err.text()
        if process.returncode and "bwrap:" in stderr and "namespace" in stderr:
            raise SandboxError(f"bubblewrap could not create the sandbox: {stderr.strip()}")
        return SandboxResult(
            exit_code=process.returncode if process.returncode is not None else -1,
            stdout=out.text(),
            stderr=stderr,
            duration_ms=(time.perf_counter() - started) * 1000,
            image=self.image,
            network_mode=self.network_mode,
            mem_limit=self.mem_limit,
        )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


__all__ = ["BubblewrapExecutor"]
