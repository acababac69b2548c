"""A run's bundles on Temporal: set up on the workers, seen by the workflow through an activity.

A bundle (:mod:`avo.bundles`) is set up for each run and resume: the ``mcp``
bundle starts MCP servers, ``instructions`` and ``skills`` read files. That is
work with effects, so it happens on a worker, never in the workflow:

- the workflow's runtime holds one :class:`BundleProxy` per bundle of the
  worker's runtime. When the kernel sets them up (each ``run`` and
  ``resume``), the first proxy runs the ``avo.bundles`` activity once for all;
  the worker sets the bundles up for the run and answers with what can cross:
  each bundle's tools (their metadata), instructions and problems. The answer
  is in the workflow's history, so a replay sees the same tools without
  setting anything up, and the run records the bundles as in process;
- the tools join the workflow's activity registry (``with_tools``), so a call
  is an ``avo.tool`` activity under the effect ledger like a worker's own
  tool. The job names the run's bundle set-up: a worker that has no bundles
  open for the run (the call moved to it after a crash) sets them up first;
- when the run stops driving, the last proxy's ``close`` runs the activity
  again to close them on whichever worker it reaches; the other workers close
  a run's bundles once they were idle for :data:`IDLE_SECONDS`, and all of
  them when the worker stops.

Shapers and hooks are objects of the worker's process and cannot cross to the
workflow: a bundle that contributes them fails the set-up (``BundleError``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity

from avo.bundles import BundleParts, BundleRun, bundle_name
from avo.exceptions import BundleError
from avo.models import ToolMetadata
from avo.tools import ToolRegistry

BUNDLES = "avo.bundles"
"""The activity that sets a run's bundles up (or closes them) on a worker."""

IDLE_SECONDS = 600.0
"""A worker closes a run's bundles when none of its calls used them for this long."""

logger = logging.getLogger("avo_temporal")


@dataclass
class _Open:
    bundles: list[Any]
    parts: list[tuple[str, BundleParts]]
    registry: ToolRegistry
    used: float = field(default_factory=time.monotonic)
    busy: int = 0


class WorkerBundles:
    """The bundles a worker has open, per run (each run its own copy of each bundle)."""

    def __init__(self, runtime: Any, environ: Mapping[str, str], workspace: str | None) -> None:
        self.runtime = runtime
        self.environ = environ
        self.workspace = Path(workspace or runtime.workspace or Path.cwd())
        self._open: dict[str, _Open] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def any(self) -> bool:
        """Whether the worker's runtime sets up bundles at all."""
        return bool(self.runtime.bundles)

    async def setup(self, request: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Set the run's bundles up afresh; what each contributes, as JSON for the workflow."""
        run_id = str(request["run_id"])
        async with self._lock(run_id):
            await self._close(run_id)
            opened = await self._setup(request)
        return [
            {
                "name": name,
                "tools": [tool.metadata.model_dump(mode="json") for tool in parts.tools],
                "instructions": [text for text in parts.instructions if text and text.strip()],
                "problems": {str(k): str(v) for k, v in parts.problems.items()},
            }
            for name, parts in opened.parts
        ]

    @contextlib.asynccontextmanager
    async def registry(self, request: Mapping[str, Any]) -> Any:
        """The run's tools (the worker's own, then its bundles'), set up here if need be."""
        run_id = str(request["run_id"])
        async with self._lock(run_id):
            opened = self._open.get(run_id) or await self._setup(request)
            opened.busy += 1
        try:
            yield opened.registry
        finally:
            opened.busy -= 1
            opened.used = time.monotonic()

    async def close(self, run_id: str) -> None:
        """Close the run's bundles on this worker (nothing when it has none open)."""
        async with self._lock(run_id):
            await self._close(run_id)

    async def close_all(self) -> None:
        """Close every run's bundles (the worker stops)."""
        for run_id in list(self._open):
            await self.close(run_id)

    def _lock(self, run_id: str) -> asyncio.Lock:
        return self._locks.setdefault(run_id, asyncio.Lock())

    async def _setup(self, request: Mapping[str, Any]) -> _Open:
        await self._sweep()
        run_id = str(request["run_id"])
        run = BundleRun(
            run_id=run_id,
            resumed=bool(request.get("resumed")),
            session_id=request.get("session_id"),
            event_store=self.runtime.event_store,
            environ=self.environ,
            workspace=self.workspace,
            task=str(request.get("task") or ""),
            redactor=self.runtime.redactor,
            provider=self.runtime.provider,
            approval_callback=self.runtime.approval_callback,
        )
        opened = _Open([], [], self.runtime.tools)
        try:
            for original in self.runtime.bundles:
                name = bundle_name(original)
                bundle = copy.copy(original)  # its per-run state is this run's alone
                try:
                    parts = await bundle.setup(run)
                except Exception as exc:
                    raise BundleError(
                        f"bundle {name!r} could not be set up for run {run_id} on a worker: "
                        f"{type(exc).__name__}: {exc}",
                        plugin=name,
                    ) from exc
                opened.bundles.append(bundle)
                if parts.shapers or parts.hooks:
                    raise BundleError(
                        f"bundle {name!r} contributes request shapers or hooks, which the "
                        "temporal engine cannot take from a worker to the workflow; run "
                        "such runs in process (without --engine temporal)",
                        plugin=name,
                    )
                opened.parts.append((name, parts))
                opened.registry = opened.registry.with_tools(parts.tools)
        except BaseException:
            await _close_all(opened.bundles)
            raise
        self._open[run_id] = opened
        return opened

    async def _close(self, run_id: str) -> None:
        opened = self._open.pop(run_id, None)
        if opened is not None:
            await _close_all(opened.bundles)

    async def _sweep(self) -> None:
        """Close the bundles of runs idle here for IDLE_SECONDS (their calls went elsewhere)."""
        now = time.monotonic()
        for run_id, opened in list(self._open.items()):
            lock = self._lock(run_id)
            if opened.busy or lock.locked() or now - opened.used < IDLE_SECONDS:
                continue
            async with lock:
                if self._open.get(run_id) is opened and not opened.busy:
                    await self._close(run_id)


class BundleActivities:
    """The ``avo.bundles`` activity of one worker."""

    def __init__(self, bundles: WorkerBundles) -> None:
        self.bundles = bundles

    @activity.defn(name=BUNDLES)
    async def bundles_call(self, job: dict[str, Any]) -> list[dict[str, Any]] | None:
        """``{"setup": request}``: set the run's bundles up here; ``{"close": run_id}``."""
        from avo_temporal.activities import handing_back
        from avo_temporal.codec import application_error

        async with handing_back():
            if "close" in job:
                await self.bundles.close(str(job["close"]))
                return None
            try:
                return await self.bundles.setup(dict(job["setup"]))
            except BundleError as exc:
                raise application_error(exc) from None


async def _close_all(bundles: list[Any]) -> None:
    while bundles:
        bundle = bundles.pop()
        try:
            await bundle.close()
        except Exception:
            logger.exception("bundle %r raised while closing", bundle_name(bundle))


class _RemoteTool:
    """A bundle tool seen from the workflow: its metadata; its calls are ``avo.tool`` activities."""

    def __init__(self, metadata: ToolMetadata) -> None:
        self.metadata = metadata

    async def invoke(self, arguments: Mapping[str, Any]) -> Any:
        raise BundleError(
            f"tool {self.metadata.name!r} runs on the workers; the workflow's registry calls it"
        )


class _Shared:
    """What the proxies of one workflow share: the activity's answer for the current set-up."""

    def __init__(self, tools: Any, options: Mapping[str, Any]) -> None:
        self.tools = tools  # the workflow's ActivityToolRegistry
        self.options = dict(options)
        self.answer: list[dict[str, Any]] = []
        self.request: dict[str, Any] | None = None


class BundleProxy:
    """One bundle of the worker's runtime, in the workflow's runtime (see the module docstring)."""

    def __init__(self, name: str, index: int, shared: _Shared) -> None:
        self.name = name
        self._index, self._shared = index, shared

    async def setup(self, run: BundleRun) -> BundleParts:
        """The first proxy asks a worker to set all up; each returns its bundle's part."""
        from temporalio import workflow

        shared = self._shared
        if self._index == 0:
            request = {
                "run_id": run.run_id,
                "resumed": run.resumed,
                "session_id": run.session_id,
                "task": run.task,
            }
            shared.answer = await workflow.execute_activity(
                BUNDLES, {"setup": request}, **shared.options
            )
            shared.request = shared.tools.bundle_request = request
        entry = shared.answer[self._index] if self._index < len(shared.answer) else {}
        tools = [_RemoteTool(ToolMetadata.model_validate(data)) for data in entry.get("tools", [])]
        return BundleParts(
            tools=tools,
            instructions=list(entry.get("instructions", [])),
            problems=dict(entry.get("problems", {})),
        )

    async def close(self) -> None:
        """The first proxy (closed last) asks a worker to close the run's bundles."""
        from temporalio import workflow

        shared = self._shared
        if self._index != 0 or shared.request is None:
            return
        request, shared.request = shared.request, None
        try:
            await workflow.execute_activity(BUNDLES, {"close": request["run_id"]}, **shared.options)
        except Exception as exc:  # the other workers close them once idle
            workflow.logger.warning("run %s: closing its bundles: %s", request["run_id"], exc)


def proxies(worker_bundles: Any, tools: Any) -> list[BundleProxy]:
    """The workflow's stand-ins for the worker runtime's bundles, in their order."""
    options = {
        "start_to_close_timeout": timedelta(seconds=120),
        "retry_policy": _retry(),
    }
    shared = _Shared(tools, options)
    names = [bundle_name(bundle) for bundle in worker_bundles]
    return [BundleProxy(name, index, shared) for index, name in enumerate(names)]


def _retry() -> Any:
    from temporalio.common import RetryPolicy

    return RetryPolicy(
        initial_interval=timedelta(milliseconds=200),
        maximum_interval=timedelta(seconds=5),
        maximum_attempts=5,
        non_retryable_error_types=["BundleError"],
    )


__all__ = ["BUNDLES", "IDLE_SECONDS", "BundleActivities", "BundleProxy", "WorkerBundles", "proxies"]
