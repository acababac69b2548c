"""Execution engines: where a run's loop is driven (``avo.engines`` plugins).

The kernel's own engine, ``in-process``, drives a run in the process that
starts it (``AgentRuntime.run``, ``avo run``). Another engine drives runs
somewhere else: ``avo-temporal`` drives each run as a Temporal workflow on a
fleet of workers (see docs/temporal.md). Whatever the engine, the loop's
decisions are the kernel's own handlers and the events go to the avo event
store, so ``avo runs list|inspect|replay``, ``avo cost`` and the web UI read
every run the same way.

An engine plugin registers an :class:`~avo.plugins.EngineSpec`; its factory,
``factory(settings, *, environ)``, returns an :class:`Engine`. A run an engine
drives records it in its first event (``RUN_CREATED`` payload ``engine``:
``{"name", "settings"}``, connection settings without secrets). The kernel's
operations (:mod:`avo.ops`: cancel, approve / deny / answer, resume) then relay
to that engine as *signals* (:data:`OPERATIONS`) instead of writing to the run
themselves, so the run's driver stays the only writer of its log.

An engine may also offer ``async stopped_driving(run_id) -> str | None``:
None while it drives the run (or is about to), else a few words on why it
stopped (its workflow failed or was terminated). Whoever follows the run in
the store (``avo run --engine``, ``avo runs resume|cancel``) asks it now and
then, so a driver that dies before the run ends is reported instead of waited
for forever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import JsonValue

from avo.exceptions import EngineError

if TYPE_CHECKING:
    from avo.compose.resolve import ResolvedConfig
    from avo.events import AgentEvent
    from avo.plugins.manager import PluginManager

ENGINE_KEY = "engine"
"""The RUN_CREATED payload key naming the engine that drives a run (absent: in-process)."""

OPERATIONS = ("cancel", "answer", "resume")
"""What the kernel relays to a run's engine:

- ``cancel`` ``{"reason": str}``: end the run CANCELLED / user_cancelled;
- ``answer`` ``{"answers": {call_id: {"decision", "reason", "text", "by", "via"}}}``:
  record a person's answers to the run's open requests and continue it;
- ``resume`` ``{}``: continue a run that stopped without finishing (an engine
  that no longer drives it starts driving it again).
"""

IN_PROCESS = "in-process"
"""The name of the kernel's own engine."""


@dataclass(frozen=True)
class RunSubmission:
    """A run to start: what ``avo run`` knows before the run exists.

    ``resolved`` is the submitter's configuration (an engine whose workers
    compose their own runtime may ignore all of it but the engine table).
    ``session_id``: the session the run continues (see :mod:`avo.sessions`).
    ``stream``: the submitter shows the model's answers as they arrive (an
    engine that can, offers them through ``stream_text(run_id)``).
    """

    task: str
    run_id: str
    system_prompt: str | None = None
    user_state: dict[str, JsonValue] = field(default_factory=dict)
    resolved: ResolvedConfig | None = None
    workspace: str | None = None
    session_id: str | None = None
    stream: bool = False


@dataclass(frozen=True)
class WorkerOptions:
    """What ``avo worker`` passes an engine: the configuration its runtime is composed from.

    ``stop_seconds``: once asked to stop (``serve`` cancelled), how long calls
    in flight may take to finish before the engine hands them back to other
    workers (``avo worker --stop-seconds``; the engine's default when None).
    """

    resolved: ResolvedConfig
    workspace: str | None = None
    task_queue: str | None = None
    concurrency: int | None = None
    stop_seconds: float | None = None


@runtime_checkable
class Engine(Protocol):
    """Where runs are driven.

    ``remote`` is False for an engine that drives a run in the process that
    submits it (the submitter drives and reports), True for one whose runs
    go on elsewhere (the submitter follows the run in the event store).
    """

    name: str
    remote: bool

    async def submit(self, submission: RunSubmission) -> str:
        """Start ``submission``'s run; return its run id once the engine accepted it."""
        ...

    async def signal(self, run_id: str, operation: str, payload: Mapping[str, JsonValue]) -> None:
        """Relay one of :data:`OPERATIONS` to the driver of ``run_id``.

        Raises :class:`~avo.exceptions.EngineRunGoneError` when the engine no
        longer drives the run (nothing receives the signal; a ``resume`` should
        start driving it again instead).
        """
        ...

    async def serve(self, options: WorkerOptions) -> None:
        """Serve as a worker until cancelled (``avo worker``): drive the runs handed to it.

        Cancelled means stop: take no new work, let calls in flight finish for
        up to ``options.stop_seconds``, hand the rest back, then return.
        """
        ...


def engine_record(events: list[AgentEvent]) -> dict[str, Any] | None:
    """The engine a stored run records in its RUN_CREATED event, or None (in-process)."""
    if not events:
        return None
    record = events[0].payload.get(ENGINE_KEY)
    if isinstance(record, dict) and isinstance(record.get("name"), str):
        return dict(record)
    return None


def open_engine(
    name: str,
    *,
    settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    manager: PluginManager | None = None,
    source: str = "engine",
) -> Engine:
    """Build the engine plugin ``name`` with ``settings`` (validated by its settings model).

    ``source`` names where the name came from in errors (a config file, a run).
    Raises :class:`~avo.exceptions.ConfigError` for an unknown engine or bad settings.
    """
    import os

    from avo.compose._plugins import call_factory, get_spec, validated_settings
    from avo.plugins.manager import PluginManager

    env = os.environ if environ is None else environ
    manager = manager or PluginManager(environ=env)
    spec = get_spec(manager, "engine", name, file=source, key="engine.name")
    table = validated_settings(spec, dict(settings or {}), file=source, key="engine.settings")
    engine = call_factory(spec.factory, table, environ=env)
    if not isinstance(engine, Engine):
        raise EngineError(
            f"the {name!r} engine plugin built {type(engine).__name__}, which is not an engine "
            "(it needs name, remote, submit, signal and serve)",
            engine=name,
        )
    return engine


class InProcessEngine:
    """The kernel's engine: the process that submits a run drives it, start to end."""

    name = IN_PROCESS
    remote = False

    def __init__(self, settings: Mapping[str, Any] | None = None, *, environ: Any = None) -> None:
        self._environ = environ

    async def submit(self, submission: RunSubmission) -> str:
        """Compose the submission's runtime and drive its run here until it ends or pauses."""
        from avo.compose import compose

        if submission.resolved is None:
            raise EngineError(
                "the in-process engine composes the run's runtime from its configuration: "
                "pass RunSubmission(resolved=resolve_config(...))",
                engine=self.name,
            )
        async with compose(resolved=submission.resolved, workspace=submission.workspace) as made:
            await made.runtime.run(
                submission.task,
                system_prompt=submission.system_prompt,
                user_state=dict(submission.user_state),
                run_id=submission.run_id,
                session_id=submission.session_id,
            )
        return submission.run_id

    async def signal(self, run_id: str, operation: str, payload: Mapping[str, JsonValue]) -> None:
        """In-process runs are operated on directly in the store: nothing to relay to."""
        raise EngineError(
            f"run {run_id} is driven in-process: operations reach it through the store "
            "(avo.ops), not as signals",
            engine=self.name,
            run_id=run_id,
        )

    async def serve(self, options: WorkerOptions) -> None:
        """The in-process engine has no workers."""
        raise EngineError(
            "the in-process engine has no workers: each run is driven by the process that "
            "starts it (avo run). Start workers of an engine that has them, e.g. "
            "avo worker --engine temporal (pip install avo-temporal)",
            engine=self.name,
        )


__all__ = [
    "ENGINE_KEY",
    "IN_PROCESS",
    "OPERATIONS",
    "Engine",
    "InProcessEngine",
    "RunSubmission",
    "WorkerOptions",
    "engine_record",
    "open_engine",
]
