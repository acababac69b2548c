"""The workflow's side of the activities: a provider, a tool registry and a store that look local.

The workflow builds its runtime with :meth:`AgentRuntime.derive` from the
worker's composed runtime, swapping in these three: the kernel's handlers call
``provider.generate``, ``tools.invoke`` and the store methods exactly as they
do in process, and each call becomes an activity (recorded in the workflow
history, so a replay on another worker gets the same answers without calling
anything again). Only workflow code uses this module.

Store writes do not get activities of their own. The store proxy keeps them
(as the JSON the activity applies) and the next model or tool activity
carries them: the worker applies them, in order, before it calls the model or
the tool, so every event that precedes an effect is durable before the effect,
as in process. The workflow applies what is left when the run stops driving
(one ``batch`` store activity), and before a read. A step of the tool loop is
two activities (the model call, the tool call) instead of five or six.

One kind of write goes at once: a running call's progress (``tool_progress``
events the kernel's recorder writes while the call runs alone, see
:mod:`avo_temporal.progress`), in a ``batch`` activity beside the call's, so
readers of the log see it while the call runs. Writes stay in order: a call
that carries writes starts only once such a batch has landed.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from pydantic import JsonValue
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.workflow import ActivityCancellationType

from avo.events import AgentEvent, EventType
from avo.exceptions import (
    AvoError,
    ProviderError,
    StorageError,
    ToolAlreadyCompletedError,
    ToolOutcomeUnknownError,
)
from avo.models import (
    Checkpoint,
    ModelRequest,
    ModelResponse,
    RunRecord,
    ToolCall,
    ToolEffect,
    ToolResult,
)
from avo.sessions import SessionRecord
from avo.tool_progress import ProgressReporter, progress_reporter
from avo.tools import Tool, ToolRegistry, failed_result
from avo_temporal.activities import MODEL, STORE, TOOL
from avo_temporal.codec import UNKNOWN_OUTCOME, WRITES_FAILED, dump, error_from, load

_STORE_OPTIONS: dict[str, Any] = {
    "start_to_close_timeout": timedelta(seconds=60),
    "retry_policy": RetryPolicy(
        initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=5)
    ),
}


_READS = frozenset(
    {
        "get_run",
        "get_events",
        "get_latest_checkpoint",
        "is_terminal_run",
        "list_runs",
        "get_session",
        "list_sessions",
        "ledger_dispatch",
    }
)


def _carrying(options: dict[str, Any], writes: list[dict[str, Any]]) -> dict[str, Any]:
    """Activity options for a call that carries writes: a cancel waits for the activity.

    (So the runtime's re-read after a cancellation sees every write that landed.)
    """
    if not writes:
        return options
    return {**options, "cancellation_type": ActivityCancellationType.WAIT_CANCELLATION_COMPLETED}


def _failure(store: ActivityStore, exc: ActivityError) -> BaseException | None:
    """A cancelled activity as a cancellation, refused writes as the store's error."""
    cause = exc.cause
    if isinstance(cause, CancelledError):
        return asyncio.CancelledError()
    if isinstance(cause, ApplicationError) and cause.type == WRITES_FAILED:
        store.broken = StorageError(cause.message)
        return store.broken
    return None


class ActivityProvider:
    """``generate`` as the ``avo.model`` activity on some worker (carrying the run's writes)."""

    def __init__(
        self,
        real: Any,
        store: ActivityStore,
        *,
        timeout: float,
        heartbeat: float,
        stream: bool = False,
    ) -> None:
        self._store = store
        self._stream = stream  # the worker streams, the text so far on the heartbeats
        self.name = getattr(real, "name", None)
        self.model = getattr(real, "model", None)
        self.supports_output_schema = getattr(real, "supports_output_schema", False) is True
        self._options: dict[str, Any] = {
            "start_to_close_timeout": timedelta(seconds=timeout),
            "heartbeat_timeout": timedelta(seconds=heartbeat),
            "retry_policy": RetryPolicy(
                initial_interval=timedelta(milliseconds=200),
                maximum_interval=timedelta(seconds=10),
                maximum_attempts=10,
            ),
        }

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse.model_validate(await self._call(request, {}))

    async def _call(self, request: ModelRequest, extra: dict[str, Any]) -> Any:
        writes = await self._store.landed()
        job = {"request": dump(request), "writes": writes, "stream": self._stream, **extra}
        try:
            return await workflow.execute_activity(MODEL, job, **_carrying(self._options, writes))
        except ActivityError as exc:
            special = _failure(self._store, exc)
            if special is not None:
                raise special from None
            error = error_from(exc)
            if isinstance(error, AvoError):
                raise error from None
            raise ProviderError(f"the model call activity failed: {exc.cause or exc}") from None


class StatefulActivityProvider(ActivityProvider):
    """The proxy of a provider with resumable state (``snapshot_state`` / ``restore_state``).

    The state is the run's, kept here in the workflow: each model activity
    takes it along, the worker restores it into its provider, calls it and
    returns the state after the call. A run starts from ``initial``, the
    state the worker's provider was composed with. So the runtime's
    checkpoints record it and a resume restores it, as in process, whichever
    worker answers, and runs on one worker do not share it.
    """

    def __init__(
        self, real: Any, store: ActivityStore, *, initial: dict[str, JsonValue], **options: Any
    ) -> None:
        super().__init__(real, store, **options)
        self._state = dict(initial)

    def snapshot_state(self) -> dict[str, JsonValue]:
        """The run's provider state after its last model call."""
        return dict(self._state)

    def restore_state(self, state: dict[str, JsonValue]) -> None:
        """Continue from a checkpoint's state (the worker's provider checks it on the next call)."""
        self._state = dict(state)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        data = await self._call(request, {"provider_state": self._state})
        self._state = data["provider_state"]
        return ModelResponse.model_validate(data["response"])


class ActivityToolRegistry(ToolRegistry):
    """The worker's tools (their metadata here), each call run by the ``avo.tool`` activity."""

    def __init__(
        self,
        real: ToolRegistry,
        store: ActivityStore,
        *,
        run_id: str,
        timeout: float | None,
        heartbeat: float,
        resumed: bool = False,
    ):
        super().__init__(real.get(name) for name in real.names())
        self._store = store
        self._run_id = run_id
        self._resumed = resumed  # an earlier workflow of this run may have dispatched its calls
        self._dispatches: dict[str, int] = {}
        self._reporters: dict[str, tuple[int, ProgressReporter]] = {}  # calls in flight
        self._timeout = timedelta(seconds=(timeout or 3600) + heartbeat)
        self._heartbeat = timedelta(seconds=heartbeat)
        self.bundle_request: dict[str, Any] | None = None  # the run's bundles (run_bundles)

    def with_tools(self, extra: Iterable[Tool]) -> ToolRegistry:
        """This registry with a run's bundle tools: their calls are ``avo.tool`` activities too.

        The copy shares the calls in flight (dispatch numbers, progress
        recorders) with this registry, which the workflow's signals reach.
        """
        made = copy.copy(self)
        made._tools = dict(self._tools)
        made._metadata = None
        made._risks = dict(self._risks)
        for item in extra:
            made.register(item)
        return made

    def _retry(self, effect: ToolEffect) -> RetryPolicy:
        # A retry is always safe: it returns the ledger's result, reruns a call whose
        # effect allows it, or reports an unknown outcome (see effects.py).
        return RetryPolicy(
            initial_interval=timedelta(milliseconds=200),
            maximum_interval=timedelta(seconds=5),
            maximum_attempts=5,
        )

    async def invoke(self, call: ToolCall, *, completed_tool_call_ids: set[str]) -> ToolResult:
        if call.tool_call_id in completed_tool_call_ids:
            raise ToolAlreadyCompletedError(
                f"tool call {call.tool_call_id!r} ({call.name}) already completed; "
                "refusing to run it twice",
                tool_call_id=call.tool_call_id,
            )
        metadata = self.metadata_of(call.name)
        effect = metadata.effective_effect if metadata is not None else ToolEffect.PURE
        if self._resumed and call.tool_call_id not in self._dispatches:
            # number this workflow's dispatches after the earlier workflow's (the ledger's),
            # so a call a person approved running again claims the ledger anew
            done = await self._store.read(
                "ledger_dispatch", run_id=self._run_id, call_id=call.tool_call_id
            )
            self._dispatches[call.tool_call_id] = int(done or 0)
        dispatch = self._dispatches.get(call.tool_call_id, 0) + 1
        self._dispatches[call.tool_call_id] = dispatch
        writes = await self._store.landed()
        job = {"run_id": self._run_id, "call": dump(call), "dispatch": dispatch, "writes": writes}
        if self.bundle_request is not None:  # a worker without the run's bundles sets them up
            job["bundles"] = self.bundle_request
        started_at, started = workflow.now(), workflow.time()
        options = {
            "start_to_close_timeout": self._timeout,
            "heartbeat_timeout": self._heartbeat,
            "retry_policy": self._retry(effect),
        }
        reporter = progress_reporter()  # the kernel's recorder for this call
        if reporter is not None:
            self._reporters[call.tool_call_id] = (dispatch, reporter)
        self._store.calls_running += 1
        try:
            data = await workflow.execute_activity(TOOL, job, **_carrying(options, writes))
        except ActivityError as exc:
            special = _failure(self._store, exc)
            if special is not None:
                raise special from None
            cause = exc.cause
            if isinstance(cause, ApplicationError) and cause.type == UNKNOWN_OUTCOME:
                raise ToolOutcomeUnknownError(
                    cause.message, tool_call_id=call.tool_call_id, tool_name=call.name
                ) from None
            error = error_from(exc)
            if isinstance(error, AvoError):
                raise error from None
            if effect is ToolEffect.NON_IDEMPOTENT:
                raise ToolOutcomeUnknownError(
                    f"the workers running {call.name} kept failing ({cause or exc})",
                    tool_call_id=call.tool_call_id,
                    tool_name=call.name,
                ) from None
            error_text = f"Tool {call.name!r} could not be run by a worker: {cause or exc}"
            return failed_result(
                call, error_text, started_at, started, clock=workflow.now, timer=workflow.time
            )
        finally:
            self._store.calls_running -= 1
            self._reporters.pop(call.tool_call_id, None)
        return ToolResult.model_validate(data)

    def progress(self, update: dict[str, Any]) -> None:
        """One progress update a tool activity sent (the ``progress`` signal).

        Handed to the kernel's recorder of the call, which appends the
        ``tool_progress`` event as in process; an update of a call that is not
        running here (it ended, or another dispatch sent it) is dropped.
        """
        found = self._reporters.get(str(update.get("tool_call_id")))
        if found is None or found[0] != update.get("dispatch"):
            return
        progress, total, message = (update.get(key) for key in ("progress", "total", "message"))
        if isinstance(progress, int | float):
            found[1](
                float(progress),
                float(total) if isinstance(total, int | float) else None,
                message if isinstance(message, str) else None,
            )


class ActivityStore:
    """The avo event store seen from the workflow: writes kept for the next activity, reads local.

    A write returns what the store would (the store keeps the runtime's
    numbering) and is applied by the next model or tool activity, or by
    :meth:`sync`. Those are ordinary activities: one runs only once the
    workflow's history has recorded the decision to run it, so a workflow task
    that Temporal gave to another worker (its first worker slow or gone)
    cannot write what the history never knew, and a retry carries the same
    events (same ids) and finds them stored. Reads are local activities (on
    the worker running the workflow task, no round trip through the server),
    after the pending writes are applied.
    """

    def __init__(self) -> None:
        self._pending: list[dict[str, Any]] = []
        self.broken: StorageError | None = None
        self.calls_running = 0
        """Tool activities in flight: progress written meanwhile goes at once."""
        self._landing = asyncio.Lock()  # held while a ``batch`` activity is in flight

    def take(self) -> list[dict[str, Any]]:
        """The pending writes, in order (the caller's activity applies them first)."""
        if self.broken is not None:
            raise self.broken
        pending, self._pending = self._pending, []
        return pending

    async def landed(self) -> list[dict[str, Any]]:
        """:meth:`take`, once a ``batch`` in flight (a call's progress) has landed."""
        async with self._landing:
            return self.take()

    async def sync(self) -> None:
        """Apply the pending writes now (one ``batch`` store activity, if any are pending)."""
        async with self._landing:
            writes = self.take()
            if writes:
                await self._run("batch", {"ops": writes})

    def _defer(self, method: str, **args: Any) -> None:
        if self.broken is not None:
            raise self.broken
        self._pending.append({"method": method, "args": args})

    async def _call(self, method: str, **args: Any) -> Any:
        await self.sync()
        return await self._run(method, args)

    async def read(self, method: str, **args: Any) -> Any:
        """A read that does not depend on the pending writes (no ``batch`` first)."""
        return await self._run(method, args)

    async def _run(self, method: str, args: dict[str, Any]) -> Any:
        job = {"method": method, "args": args}
        try:
            if method in _READS:  # nothing to undo if a stale task ran it: no server round trip
                return await workflow.execute_local_activity(STORE, job, **_STORE_OPTIONS)
            return await workflow.execute_activity(STORE, job, **_carrying(_STORE_OPTIONS, [job]))
        except ActivityError as exc:
            special = _failure(self, exc)
            if special is not None:
                raise special from None
            error = error_from(exc)
            if isinstance(error, AvoError):
                raise error from None
            raise StorageError(
                f"the event store activity {method} failed: {exc.cause or exc}"
            ) from None

    # Writes: kept (as JSON, so later changes to the objects cannot reach them) and
    # answered as the store answers: it keeps the events the runtime numbered.

    async def create_run(self, run: RunRecord, event: AgentEvent) -> RunRecord:
        self._defer("create_run", run=dump(run), event=dump(event))
        return run

    async def append_batch(
        self, run: RunRecord, events: Any, checkpoint: Checkpoint | None = None
    ) -> list[AgentEvent]:
        events = list(events)
        self._defer("append_batch", run=dump(run), events=dump(events), checkpoint=dump(checkpoint))
        if self.calls_running and all(e.event_type is EventType.TOOL_PROGRESS for e in events):
            # the recorder of a call running alone: readers see the progress while it runs
            await self.sync()
        return events

    async def append_event(self, event: AgentEvent) -> AgentEvent:
        self._defer("append_event", event=dump(event))
        return event

    async def append_event_and_update_run(
        self, event: AgentEvent, run: RunRecord
    ) -> tuple[AgentEvent, RunRecord]:
        self._defer("append_event", event=dump(event), run=dump(run))
        return event, run

    async def save_checkpoint(
        self, checkpoint: Checkpoint, event: AgentEvent
    ) -> tuple[Checkpoint, AgentEvent]:
        self._defer("save_checkpoint", checkpoint=dump(checkpoint), event=dump(event))
        return checkpoint, event

    async def finalize_run(
        self, run: RunRecord, state_event: AgentEvent, terminal_event: AgentEvent
    ) -> tuple[AgentEvent, AgentEvent]:
        self._defer(
            "finalize_run",
            run=dump(run),
            state_event=dump(state_event),
            terminal_event=dump(terminal_event),
        )
        return state_event, terminal_event

    async def get_run(self, run_id: str) -> RunRecord | None:
        return load(RunRecord, await self._call("get_run", run_id=run_id))  # type: ignore[no-any-return]

    async def update_run(self, run: RunRecord) -> RunRecord:
        self._defer("update_run", run=dump(run))
        return run

    async def list_runs(self) -> list[RunRecord]:
        return load(RunRecord, await self._call("list_runs"))  # type: ignore[no-any-return]

    async def get_events(self, run_id: str) -> list[AgentEvent]:
        return load(AgentEvent, await self._call("get_events", run_id=run_id))  # type: ignore[no-any-return]

    async def get_latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        data = await self._call("get_latest_checkpoint", run_id=run_id)
        return load(Checkpoint, data)  # type: ignore[no-any-return]

    async def is_terminal_run(self, run_id: str) -> bool:
        return bool(await self._call("is_terminal_run", run_id=run_id))

    async def close(self) -> None:
        return None


class SessionActivityStore(ActivityStore):
    """The store proxy of a worker whose store keeps sessions (:class:`avo.sessions.SessionStore`).

    Session writes are activities of their own (a run makes three at most:
    create, add the run, save the transcript), after the pending event writes.
    """

    async def create_session(self, session_id: str, *, title: str = "") -> SessionRecord:
        data = await self._call("create_session", session_id=session_id, title=title)
        return SessionRecord.model_validate(data)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return load(SessionRecord, await self._call("get_session", session_id=session_id))  # type: ignore[no-any-return]

    async def list_sessions(self) -> list[SessionRecord]:
        return load(SessionRecord, await self._call("list_sessions"))  # type: ignore[no-any-return]

    async def add_session_run(self, session_id: str, run_id: str) -> SessionRecord:
        data = await self._call("add_session_run", session_id=session_id, run_id=run_id)
        return SessionRecord.model_validate(data)

    async def save_session_transcript(
        self, session_id: str, run_id: str, messages: list[dict[str, JsonValue]]
    ) -> SessionRecord:
        data = await self._call(
            "save_session_transcript", session_id=session_id, run_id=run_id, messages=messages
        )
        return SessionRecord.model_validate(data)


class ReplaySafePlugins:
    """The worker's plugin manager as the workflow's runtime sees it.

    ``avo_event_appended`` is not called here: the store activity calls it on
    the worker, once, right after the write that stored the event (a replay,
    or a write found already done, tells nobody again), so a token ledger
    counts each model call once. The other run-lifecycle observers are called
    when the workflow makes the decision, not when a replay re-executes it.
    """

    def __init__(self, manager: Any) -> None:
        self._manager = manager

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)

    def call_observers(self, hook_name: str, **kwargs: Any) -> Any:
        if hook_name == "avo_event_appended" or workflow.unsafe.is_replaying():
            return []
        return self._manager.call_observers(hook_name, **kwargs)


__all__ = [
    "ActivityProvider",
    "ActivityStore",
    "ActivityToolRegistry",
    "ReplaySafePlugins",
    "SessionActivityStore",
    "StatefulActivityProvider",
]
