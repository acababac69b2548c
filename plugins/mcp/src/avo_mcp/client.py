"""The MCP stdio client: spawn a server process and talk JSON-RPC over its pipes.

Failure handling is the point of this module. Whatever the server does — exits
mid-call, never answers, writes something that is not JSON-RPC on stdout — the
pending calls fail with an :class:`~avo.exceptions.MCPError` that says what
happened, and the process is always waited for (no zombies): on exit the
reader task reaps it, and :meth:`MCPServer.stop` closes stdin, terminates,
waits 2 s, kills and waits again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import os
import signal
from collections.abc import Iterable, Mapping
from pathlib import Path

from avo.exceptions import MCPError
from avo_mcp.features import ClientFeatures
from avo_mcp.framing import (
    MAX_MESSAGE_BYTES,
    FramingError,
    JsonDict,
    encode_message,
    read_message,
)
from avo_mcp.naming import default_server_name
from avo_mcp.session import DEFAULT_TIMEOUT_SECONDS, MCPSession

_STDERR_TAIL_LINES = 20
_STOP_GRACE_SECONDS = 0.5
_TERMINATE_WAIT_SECONDS = 2.0
_POSIX = os.name == "posix"
_EXIT_POLL_SECONDS = 0.1
_NOTIFY_TIMEOUT_SECONDS = 2.0

DEFAULT_INHERITED_ENV_VARS: tuple[str, ...] = (
    ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
    if _POSIX
    else (  # pragma: no cover - Windows
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    )
)
"""What a stdio server inherits from avo's environment (the official SDKs' set)."""


def server_environment(
    env: Mapping[str, str] | None,
    environ: Mapping[str, str] | None = None,
    inherit: Iterable[str] = DEFAULT_INHERITED_ENV_VARS,
) -> dict[str, str]:
    """The environment a stdio server starts with: a few basics plus its own ``env``.

    Only the ``inherit`` names are copied from ``environ`` (default: the process
    environment), skipping exported shell functions; provider API keys and any
    other secret avo holds are not passed on. ``env`` (the entry's own) wins.
    """
    source = os.environ if environ is None else environ
    base = {
        key: value
        for key in inherit
        if (value := source.get(key)) is not None and not value.startswith("()")
    }
    base.update(env or {})
    return base


def describe_exit(code: int | None) -> str:
    """``exited with code 3`` or ``was killed by signal SIGKILL (9)``."""
    if code is not None and code < 0:
        try:
            label = signal.Signals(-code).name
        except ValueError:
            label = "signal"
        return f"was killed by signal {label} ({-code})"
    return f"exited with code {code}"


class MCPServer(MCPSession):
    """An MCP server run as a subprocess speaking the stdio transport.

    The process gets a minimal environment: ``inherit_env`` names copied from
    ``environ`` (the process environment by default; HOME, LOGNAME, PATH,
    SHELL, TERM and USER), then ``env`` on top. ``timeout_seconds`` bounds
    every request after the handshake; ``startup_timeout_seconds`` bounds the
    handshake (see :meth:`start`). ``features`` says which client features
    (roots, sampling, progress) this connection offers.
    """

    def __init__(
        self,
        *,
        command: list[str],
        env: dict[str, str] | None = None,
        cwd: Path | str | None = None,
        name: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        startup_timeout_seconds: float | None = None,
        environ: Mapping[str, str] | None = None,
        features: ClientFeatures | None = None,
        inherit_env: Iterable[str] = DEFAULT_INHERITED_ENV_VARS,
    ) -> None:
        if not command:
            raise MCPError("MCPServer requires a non-empty command")
        super().__init__(
            name=name or default_server_name(command),
            timeout_seconds=timeout_seconds,
            startup_timeout_seconds=startup_timeout_seconds,
            features=features,
        )
        self.command = list(command)
        self.env = dict(env or {})
        self.cwd = cwd
        self.inherit_env = tuple(inherit_env)
        self._environ = environ
        self._process: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future[JsonDict]] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._stderr_reader: asyncio.Task[None] | None = None
        self._exit_watcher: asyncio.Task[None] | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self._write_lock = asyncio.Lock()

    # ------------------------------------------------------------ inspection

    @property
    def pid(self) -> int | None:
        """The server's process id once spawned."""
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> int | None:
        """The exit code once the process has been reaped, else None."""
        return self._process.returncode if self._process else None

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines the server wrote on stderr (kept for error messages)."""
        return list(self._stderr_tail)

    # -------------------------------------------------------------- transport

    async def _open(self) -> None:
        base = server_environment(self.env, self._environ, self.inherit_env)
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=base,
                cwd=str(self.cwd) if self.cwd is not None else None,
                limit=MAX_MESSAGE_BYTES,
                # Its own process group, so stop() also ends what the server spawned
                # (npx -> node, uvx -> python) and a Ctrl-C meant for avo does not hit it.
                start_new_session=_POSIX,
            )
        except OSError as exc:
            raise MCPError(
                f"cannot start MCP server {self.name!r} ({' '.join(self.command)}): {exc}"
            ) from exc
        self._failure = None
        self._reader = asyncio.create_task(self._read_loop(), name=f"mcp-read-{self.name}")
        self._stderr_reader = asyncio.create_task(
            self._drain_stderr(), name=f"mcp-stderr-{self.name}"
        )
        self._exit_watcher = asyncio.create_task(self._watch_exit(), name=f"mcp-exit-{self.name}")

    async def stop(self) -> None:
        """Stop the server: close stdin, terminate, wait 2 s, kill; always reaps.

        Signals go to the server's whole process group, so what it spawned ends too.
        """
        self._started = False
        await self._cancel_background()
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            if process.stdin is not None and not process.stdin.is_closing():
                process.stdin.close()
            for action in (None, self._terminate, self._kill):
                if action is not None:
                    action()
                wait = _STOP_GRACE_SECONDS if action is None else _TERMINATE_WAIT_SECONDS
                if await self._exited_within(wait):
                    break
        # asyncio's child watcher has reaped the server once returncode is set.
        self._kill_group_leftovers()
        await self._close_pipes()
        self._fail_pending(self._failure or MCPError(f"MCP server {self.name!r} was stopped"))
        for task in (self._reader, self._stderr_reader, self._exit_watcher):
            if task is not None and not task.done():
                task.cancel()
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if process.stdin is not None:
            process.stdin.close()
        self._reader = self._stderr_reader = self._exit_watcher = None

    async def _request(self, method: str, params: JsonDict | None, wait_seconds: float) -> JsonDict:
        if self._failure is not None:
            raise self._failure
        process = self._process
        if process is None or process.returncode is not None:
            raise MCPError(f"MCP server {self.name!r} is not running; call start() first")
        request_id = next(self._ids)
        future: asyncio.Future[JsonDict] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            # The write is bounded too: a server that stops reading its stdin
            # fills the pipe, and drain() would otherwise wait forever.
            async with asyncio.timeout(wait_seconds):
                await self._write(message)
                return await future
        except TimeoutError:
            await self._cancel_remote(request_id, "timed out")
            raise MCPError(
                f"MCP server {self.name!r} did not answer {method} within {wait_seconds:g} seconds"
            ) from None
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel_remote(request_id, "cancelled by the client"))
            raise
        finally:
            self._pending.pop(request_id, None)

    async def _notify(self, method: str, params: JsonDict | None) -> None:
        message: JsonDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._write(message)

    async def _cancel_remote(self, request_id: int, reason: str) -> None:
        with contextlib.suppress(MCPError, TimeoutError):
            async with asyncio.timeout(_NOTIFY_TIMEOUT_SECONDS):
                await self._notify(
                    "notifications/cancelled", {"requestId": request_id, "reason": reason}
                )

    async def _write(self, message: JsonDict) -> None:
        process = self._process
        if process is None or process.stdin is None or process.stdin.is_closing():
            raise self._failure or MCPError(f"MCP server {self.name!r} is not running")
        async with self._write_lock:
            try:
                process.stdin.write(encode_message(message))
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise self._failure or MCPError(
                    f"MCP server {self.name!r} closed its stdin: {exc}{self._stderr_note()}"
                ) from exc

    # ------------------------------------------------------------ read side

    async def _read_loop(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        try:
            while True:
                message = await read_message(process.stdout)
                if message is None:
                    break
                await self._dispatch(message)
        except FramingError as exc:
            # stdout is the protocol channel: once it carries garbage nothing on
            # it can be trusted, so the server is stopped and every call fails.
            self._failure = MCPError(
                f"MCP server {self.name!r} wrote invalid output on stdout ({exc}); "
                "the server was stopped"
            )
            self._kill()
        if not await self._exited_within(_TERMINATE_WAIT_SECONDS):
            # stdout closed but the process lives on: it can never answer again.
            if self._failure is None:
                self._failure = MCPError(
                    f"MCP server {self.name!r} closed its stdout but kept running; "
                    "the server was stopped"
                )
            self._kill()
            await self._exited_within(_TERMINATE_WAIT_SECONDS)
        code = process.returncode
        self._kill_group_leftovers()
        if self._stderr_reader is not None:
            # Let the last stderr lines land so the exit message can quote them.
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_reader), 1.0)
        if self._failure is None:
            self._failure = MCPError(
                f"MCP server {self.name!r} {describe_exit(code)}{self._stderr_note()}"
            )
        self._started = False
        self._fail_pending(self._failure)

    async def _exited_within(self, seconds: float) -> bool:
        """Poll the exit status (Process.wait() also waits for the pipes to close)."""
        process = self._process
        assert process is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while process.returncode is None:
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(_EXIT_POLL_SECONDS)
        return True

    async def _close_pipes(self) -> None:
        process = self._process
        assert process is not None
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), _TERMINATE_WAIT_SECONDS)
        except TimeoutError:
            # A descendant that left the process group still holds the pipes.
            transport = getattr(process, "_transport", None)
            if transport is not None:
                transport.close()

    async def _watch_exit(self) -> None:
        # asyncio's Process.wait() only returns once every pipe is closed, and
        # whatever the server spawned may hold stdout open after it exited; so
        # watch the exit status itself and end the rest of the group then, which
        # closes the pipes and lets the reader see end-of-stream.
        await self._exited_within(float("inf"))
        self._kill_group_leftovers()

    async def _dispatch(self, message: JsonDict) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:  # a server -> client request: answered in its own task
                self._spawn(self._answer_server_request(message))
            else:
                self._server_notification(message)
            return
        request_id = message.get("id")
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                MCPError(
                    f"MCP server {self.name!r} returned error {error.get('code')}: "
                    f"{error.get('message')}"
                )
            )
        else:
            result = message.get("result")
            future.set_result(result if isinstance(result, dict) else {})

    async def _answer_server_request(self, message: JsonDict) -> None:
        reply = await self._server_request(message)
        with contextlib.suppress(MCPError, TimeoutError):
            async with asyncio.timeout(_NOTIFY_TIMEOUT_SECONDS):
                await self._write(reply)

    async def _drain_stderr(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        with contextlib.suppress(ValueError, asyncio.LimitOverrunError):
            while line := await process.stderr.readline():
                self._stderr_tail.append(line.decode("utf-8", errors="replace").rstrip())

    def _signal(self, signum: int) -> None:
        # The whole group: the server may have exited and left children behind.
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if _POSIX:
                os.killpg(process.pid, signum)
            elif process.returncode is None:  # pragma: no cover - Windows
                process.send_signal(signum)

    def _terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def _kill(self) -> None:
        self._signal(signal.SIGKILL if _POSIX else signal.SIGTERM)

    def _kill_group_leftovers(self) -> None:
        """After the server exited, end whatever it spawned that is still running."""
        process = self._process
        if _POSIX and process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    def _fail_pending(self, error: MCPError) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)

    def _stderr_note(self) -> str:
        tail = [line for line in self._stderr_tail if line.strip()][-5:]
        return "; stderr: " + " | ".join(tail) if tail else ""

    def __repr__(self) -> str:
        return f"MCPServer(name={self.name!r}, command={self.command!r}, pid={self.pid})"


__all__ = ["DEFAULT_INHERITED_ENV_VARS", "MCPServer", "describe_exit", "server_environment"]
