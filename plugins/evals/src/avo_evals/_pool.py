"""A pool of trial worker processes (``python -m avo_evals._trial``), one per concurrent trial.

A worker imports avo and the plugins once and then runs trial after trial,
so a trial costs its run, not a Python start-up. A worker that exceeds a
trial's timeout, or dies, is killed and replaced by a fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Mapping
from typing import Any


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def kill(self) -> None:
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.process.wait()


async def _reply(worker: _Worker, job_id: int) -> int | None:
    """The exit code the worker reports for ``job_id`` (None at end of output)."""
    assert worker.process.stdout is not None
    while True:
        line = await worker.process.stdout.readline()
        if not line:
            return None
        try:
            reply = json.loads(line)
        except ValueError:  # not ours: something wrote to the pipe; keep reading
            continue
        if isinstance(reply, dict) and reply.get("id") == job_id:
            return int(reply["code"])


class WorkerPool:
    """At most ``size`` workers; :meth:`run` hands a job to an idle one."""

    def __init__(self, size: int, environ: Mapping[str, str]) -> None:
        self.size = size
        self.environ = dict(environ)
        self._idle: asyncio.Queue[_Worker | None] = asyncio.Queue()
        for _ in range(size):
            self._idle.put_nowait(None)  # a slot whose worker starts on first use
        self._workers: list[_Worker] = []
        self._counter = 0

    async def _start(self) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "avo_evals._trial",
            env=self.environ,
            # its own session: a Ctrl-C on the terminal reaches this process only,
            # which then stops the workers (a trial must not half-handle it)
            start_new_session=True,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        worker = _Worker(process)
        self._workers.append(worker)
        return worker

    async def run(self, job: dict[str, Any], limit: float) -> int | str:
        """Run ``job``; its exit code, or why it produced none (timeout, a dead worker)."""
        worker = await self._idle.get()
        try:
            if worker is None or not worker.alive:
                worker = await self._start()
            self._counter += 1
            job = {**job, "id": self._counter}
            assert worker.process.stdin is not None
            worker.process.stdin.write((json.dumps(job) + "\n").encode("utf-8"))
            await worker.process.stdin.drain()
            try:
                reply = await asyncio.wait_for(_reply(worker, job["id"]), limit)
            except TimeoutError:
                await worker.kill()
                return f"timed out after {limit:g}s (raise timeout_seconds or --timeout)"
            if reply is None:
                status = await worker.process.wait()
                return f"the trial process exited with code {status}"
            return reply
        except (BrokenPipeError, ConnectionResetError):
            gone = await worker.process.wait() if worker is not None else None
            return f"the trial process exited with code {gone}"
        finally:
            self._idle.put_nowait(worker if worker is not None and worker.alive else None)

    async def kill(self) -> None:
        """Stop every worker now (an interrupted eval): their runs stay as a crash leaves them."""
        for worker in self._workers:
            await worker.kill()

    async def close(self) -> None:
        """Stop every worker (end of input, then kill any that lingers)."""
        for worker in self._workers:
            if worker.alive and worker.process.stdin is not None:
                worker.process.stdin.close()
        for worker in self._workers:
            try:
                await asyncio.wait_for(worker.process.wait(), 5)
            except TimeoutError:
                await worker.kill()


__all__ = ["WorkerPool"]
