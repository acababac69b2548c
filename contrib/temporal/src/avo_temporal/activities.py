"""The activities: everything a workflow does outside itself runs here, on a worker.

``avo.model`` calls the worker's provider, ``avo.tool`` runs one tool call
through the worker's tools with the effect ledger around it, ``avo.store``
reads and writes the avo event store. The worker's runtime (composed from its
avo.toml) owns the real provider, tools and store; the workflow reaches them
only through these three activities (and a run's bundles through a fourth,
``avo.bundles``, in :mod:`avo_temporal.run_bundles`).

The workflow does not write the store with activities of their own: its
store proxy keeps the run's writes until the next activity, and the model or
tool activity (or, at the end, a ``batch`` store call) applies them first, in
order, before it calls anything. So what precedes an effect is durable before
the effect, as in process, with one round trip per step's call instead of one
more per write. A retried write (its worker died after the write and before
the acknowledgement) finds its events already stored, by their ids, and
returns them instead of writing twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from avo.events import AgentEvent
from avo.exceptions import (
    AvoError,
    EventInvariantError,
    SessionError,
    StorageError,
    UnsafeResumeError,
)
from avo.models import Checkpoint, ModelRequest, RunRecord, ToolCall, ToolEffect
from avo.providers.streaming import StreamAssembler
from avo.redaction import StreamRedactor
from avo.sessions import session_store_of
from avo_temporal.codec import UNKNOWN_OUTCOME, WRITES_FAILED, application_error, dump, load
from avo_temporal.effects import EffectLedger
from avo_temporal.progress import relaying_progress

MODEL = "avo.model"
TOOL = "avo.tool"
STORE = "avo.store"


@contextlib.asynccontextmanager
async def heartbeating(every: float, details: Any = None) -> AsyncIterator[None]:
    """Heartbeat while the body runs, so a dead worker is noticed within the heartbeat timeout.

    ``details()`` (if given) is sent with each heartbeat: the text a model call
    has streamed so far, which ``avo run --engine temporal`` shows as it grows.
    """

    async def beat() -> None:
        while True:
            if details is None:
                activity.heartbeat()
            else:
                activity.heartbeat(details())
            await asyncio.sleep(every)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


WORKER_STOPPED = "avo.worker_stopped"
"""The (retryable) error type of a call its worker handed back when it stopped."""


@contextlib.asynccontextmanager
async def handing_back() -> AsyncIterator[None]:
    """A call cut short because its worker stops becomes a retryable failure.

    Temporal cancels the activities still running when a stopping worker's
    grace time ends. Reported as cancelled, the workflow would take that for
    a cancel of the run; reported as this failure, Temporal retries the call
    on another worker (a non-idempotent tool's retry finds its ledger entry
    and asks a person, as after a crash).
    """
    try:
        yield
    except asyncio.CancelledError:
        details = activity.cancellation_details()
        if not activity.is_worker_shutdown() or (details is not None and details.cancel_requested):
            raise
        raise ApplicationError(
            "the worker stopped before this call finished; another worker takes it",
            type=WORKER_STOPPED,
            category=ApplicationErrorCategory.BENIGN,  # expected: logged quietly
        ) from None


class AvoActivities:
    """The activities of one worker, over its composed runtime, store and effect ledger."""

    def __init__(
        self,
        runtime: Any,
        store: Any,
        ledger: EffectLedger,
        heartbeat: float,
        plugins: Any = None,
    ) -> None:
        self.runtime = runtime
        self.store = store
        self.ledger = ledger
        self.every = max(0.2, heartbeat / 4)
        self.plugins = plugins
        self.bundles: Any = None  # the worker's run_bundles.WorkerBundles, when it has bundles
        provider = runtime.provider
        snapshot = getattr(provider, "snapshot_state", None)
        stateful = callable(snapshot) and callable(getattr(provider, "restore_state", None))
        self.initial_provider_state: dict[str, Any] | None = None
        if stateful:
            state = snapshot()
            self.initial_provider_state = dict(state) if isinstance(state, dict) else {}
        # one call at a time through a provider whose state each call restores first
        self._provider_turn = asyncio.Lock()

    @activity.defn(name=MODEL)
    async def model(self, job: dict[str, Any]) -> dict[str, Any]:
        """The run's pending writes, then one model call: the worker's provider answers.

        With ``stream`` (the submitter shows the answer as it arrives) and a
        provider that streams, the text so far rides on the heartbeats.
        """
        parsed = ModelRequest.model_validate(job["request"])
        provider = self.runtime.provider
        streamed: list[str] = []
        stream = bool(job.get("stream")) and callable(getattr(provider, "stream", None))
        details = (lambda: {"text": "".join(streamed)}) if stream else None
        async with handing_back(), heartbeating(self.every, details):
            await self.apply_writes(job.get("writes") or [])
            if "provider_state" in job:  # the run's state in, the state after the call out
                async with self._provider_turn:
                    self._restore_provider(job["provider_state"])
                    response = await self._generate(parsed, stream, streamed)
                    state = provider.snapshot_state()
                return {"response": dump(response), "provider_state": state}
            response = await self._generate(parsed, stream, streamed)
        return dump(response)  # type: ignore[no-any-return]

    async def _generate(self, request: ModelRequest, stream: bool, streamed: list[str]) -> Any:
        try:
            if stream:
                return await self._streamed(request, streamed)
            return await self.runtime.provider.generate(request)
        except AvoError as exc:
            raise application_error(exc) from None

    def _restore_provider(self, state: Any) -> None:
        """Put the run's provider state (a checkpoint's, or the last call's) into the provider."""
        if not state:
            state = self.initial_provider_state
        try:
            self.runtime.provider.restore_state(dict(state or {}))
        except (ValueError, TypeError, KeyError) as exc:
            refused = UnsafeResumeError(
                f"the run's provider state does not fit this worker's provider ({exc}); run "
                "workers composed with the provider the run started with"
            )
            raise application_error(refused) from None

    async def _streamed(self, request: ModelRequest, shown: list[str]) -> Any:
        """The provider's stream, assembled; its text (known secrets masked) into ``shown``."""
        assembler = StreamAssembler()
        masked = StreamRedactor(self.runtime.redactor, shown.append)
        async for chunk in self.runtime.provider.stream(request):
            if chunk.text:
                before = len(shown)
                masked.feed(chunk.text)
                if len(shown) > before:
                    activity.heartbeat({"text": "".join(shown)})  # (the SDK throttles them)
            assembler.feed(chunk)
        masked.close()
        return assembler.build()

    @activity.defn(name=TOOL)
    async def tool(self, job: dict[str, Any]) -> dict[str, Any]:
        """One tool call, exactly once: a retry returns the recorded result (see effects.py).

        Everything runs heartbeating, the writes and the ledger too: an attempt
        that stops heartbeating is retried elsewhere while it may still be
        running, and only one attempt of a dispatch claims the ledger.
        """
        request = job.get("bundles")
        if request is None or self.bundles is None or job["call"]["name"] in self.runtime.tools:
            return await self._tool(job, self.runtime.tools)
        async with self.bundles.registry(request) as tools:  # the run's bundles, set up here
            return await self._tool(job, tools)

    async def _tool(self, job: dict[str, Any], tools: Any) -> dict[str, Any]:
        call = ToolCall.model_validate(job["call"])
        run_id, dispatch = str(job["run_id"]), int(job["dispatch"])
        metadata = tools.metadata_of(call.name)
        effect = metadata.effective_effect if metadata is not None else ToolEffect.PURE
        async with handing_back(), heartbeating(self.every):
            await self.apply_writes(job.get("writes") or [])  # TOOL_STARTED durable first
            if effect is not ToolEffect.PURE:
                recorded = await self._claim(run_id, call, dispatch, effect)
                if recorded is not None:
                    return recorded
            try:  # the tool's progress goes to the workflow as it comes (progress.py)
                async with relaying_progress(call.tool_call_id, dispatch):
                    result = await tools.invoke(call, completed_tool_call_ids=set())
            except AvoError as exc:
                raise application_error(exc) from None
            data: dict[str, Any] = dump(result)
            if effect is not ToolEffect.PURE:
                await self.ledger.done(run_id, call.tool_call_id, dispatch, data)
        return data

    async def _claim(
        self, run_id: str, call: ToolCall, dispatch: int, effect: ToolEffect
    ) -> dict[str, Any] | None:
        """Claim this dispatch of the call in the ledger; or its recorded result.

        Raises the unknown-outcome error when another attempt of the same
        dispatch began a non-idempotent call and did not finish it.
        """
        entry = await self.ledger.get(run_id, call.tool_call_id)
        mine = entry is None or entry.dispatch < dispatch
        if mine and not await self.ledger.started(run_id, call.tool_call_id, dispatch):
            mine = False  # another attempt of this dispatch claimed it first
            entry = await self.ledger.get(run_id, call.tool_call_id)
        if mine:
            return None
        if entry is not None and entry.state == "done" and entry.result is not None:
            return entry.result  # acknowledged late: the effect happened once
        if effect is ToolEffect.NON_IDEMPOTENT:
            raise ApplicationError(
                f"the worker running {call.name} stopped before reporting; it may or may "
                "not have taken effect",
                type=UNKNOWN_OUTCOME,
                non_retryable=True,
            )
        return None  # idempotent: running it again is safe

    @activity.defn(name=STORE)
    async def store_call(self, job: dict[str, Any]) -> Any:
        """One event store method, by name, with JSON in and out (``batch``: writes in order)."""
        method, args = str(job["method"]), job.get("args") or {}
        async with handing_back():
            if method == "ledger_dispatch":  # the last dispatch of a call the ledger knows
                entry = await self.ledger.get(str(args["run_id"]), str(args["call_id"]))
                return entry.dispatch if entry is not None else 0
            if method == "batch":
                await self.apply_writes(args.get("ops") or [])
                return None
            return await self._one(method, args, writes=False)

    async def apply_writes(self, ops: list[dict[str, Any]]) -> None:
        """Apply the workflow's pending store writes in order (each idempotent by event ids).

        A store that refuses a write for good fails the activity with
        ``WRITES_FAILED`` (the workflow's store proxy then refuses everything
        after it); a busy store fails it retryably, and the retry finds what
        was already written.
        """
        for op in ops:
            await self._one(str(op["method"]), op.get("args") or {}, writes=True)

    async def _one(self, method: str, args: dict[str, Any], *, writes: bool) -> Any:
        # A write may be done again after its worker died between the write and the
        # workflow recording it: each write first looks for its events when the store
        # refuses it (and on a retry, before writing).
        retry = activity.info().attempt > 1
        written: list[AgentEvent] = []
        try:
            result = await _STORE_METHODS[method](self.store, args, retry, written)
        except KeyError:
            raise ApplicationError(f"unknown store method {method!r}", non_retryable=True) from None
        except EventInvariantError as exc:  # the write itself is wrong: no retry helps
            raise _refused(exc, writes) from None
        except StorageError as exc:  # a busy or unreachable database: try again
            raise ApplicationError(str(exc), type=type(exc).__name__) from None
        except AvoError as exc:
            raise _refused(exc, writes) from None
        self._notify(written)
        return result

    def _notify(self, written: list[AgentEvent]) -> None:
        """Tell the observer plugins about events this call stored (not ones found stored)."""
        call = getattr(self.plugins, "call_observers", None)
        if call is None:
            return
        for event in written:
            try:
                problems = call("avo_event_appended", event=event)
            except Exception:  # an observer never fails a write
                activity.logger.exception("an observer of %s raised", event.event_type.value)
                continue
            for problem in problems or ():
                activity.logger.warning("observer problem on run %s: %s", event.run_id, problem)


def _refused(exc: AvoError, writes: bool) -> Any:
    """A store's refusal as a non-retryable failure (marked when it came with a call)."""
    if not writes:
        return application_error(exc)
    return ApplicationError(
        f"the event store refused the run's write ({type(exc).__name__}): {exc}",
        type=WRITES_FAILED,
        non_retryable=True,
    )


async def _stored(store: Any, run_id: str, events: list[AgentEvent]) -> list[AgentEvent] | None:
    """The stored copies of ``events`` when an earlier attempt already wrote them."""
    stored = await store.get_events(run_id)
    by_id = {event.event_id: event for event in stored}
    found = [by_id.get(event.event_id) for event in events]
    if all(
        event is not None and event.event_type is mine.event_type
        for event, mine in zip(found, events, strict=True)
    ):
        return [event for event in found if event is not None]
    if any(event is not None for event in found) or (
        events and events[0].sequence and events[0].sequence <= len(stored)
    ):
        mine = [(e.sequence, e.event_type.value, e.event_id[:8]) for e in events]
        theirs = [
            (e.sequence, e.event_type.value, e.event_id[:8])
            for e in stored
            if e.sequence >= (events[0].sequence or 0)
        ]
        activity.logger.error("run %s: batch %s does not match the stored %s", run_id, mine, theirs)
    return None


async def _create_run(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    run, event = RunRecord.model_validate(args["run"]), AgentEvent.model_validate(args["event"])
    if retry and await _stored(store, run.run_id, [event]):
        return dump(await store.get_run(run.run_id))
    try:
        stored_run = await store.create_run(run, event)
    except StorageError:
        if await _stored(store, run.run_id, [event]):
            return dump(await store.get_run(run.run_id))
        raise
    written.append(event)
    return dump(stored_run)


async def _append_batch(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    run = RunRecord.model_validate(args["run"])
    events = load(AgentEvent, args["events"])
    checkpoint = load(Checkpoint, args.get("checkpoint"))
    if retry:
        done = await _stored(store, run.run_id, events)
        if done:
            return dump(done)
    append_batch = getattr(store, "append_batch", None)
    if append_batch is None:
        raise StorageError("the worker's event store has no append_batch")
    try:
        stored = await append_batch(run, events, checkpoint)
    except StorageError:
        done = await _stored(store, run.run_id, events)
        if done:
            return dump(done)
        raise
    written.extend(stored)
    return dump(stored)


async def _append_event(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    event = AgentEvent.model_validate(args["event"])
    run = load(RunRecord, args.get("run"))
    if retry:
        done = await _stored(store, event.run_id, [event])
        if done:
            return dump(done[0])
    try:
        if run is not None:
            stored = (await store.append_event_and_update_run(event, run))[0]
        else:
            stored = await store.append_event(event)
    except StorageError:
        done = await _stored(store, event.run_id, [event])
        if done:
            return dump(done[0])
        raise
    written.append(stored)
    return dump(stored)


async def _save_checkpoint(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    checkpoint = Checkpoint.model_validate(args["checkpoint"])
    event = AgentEvent.model_validate(args["event"])
    if retry:
        done = await _stored(store, event.run_id, [event])
        if done:
            return [dump(checkpoint), dump(done[0])]
    try:
        stored_checkpoint, stored_event = await store.save_checkpoint(checkpoint, event)
    except StorageError:
        done = await _stored(store, event.run_id, [event])
        if done:
            return [dump(checkpoint), dump(done[0])]
        raise
    written.append(stored_event)
    return [dump(stored_checkpoint), dump(stored_event)]


async def _finalize_run(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    run = RunRecord.model_validate(args["run"])
    state_event = AgentEvent.model_validate(args["state_event"])
    terminal = AgentEvent.model_validate(args["terminal_event"])
    if retry:
        done = await _stored(store, run.run_id, [state_event, terminal])
        if done:
            return dump(done)
    try:
        finished = list(await store.finalize_run(run, state_event, terminal))
    except StorageError:
        done = await _stored(store, run.run_id, [state_event, terminal])
        if done:
            return dump(done)
        raise
    written.extend(finished)
    return dump(finished)


async def _update_run(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    return dump(await store.update_run(RunRecord.model_validate(args["run"])))


async def _get_run(store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]) -> Any:
    return dump(await store.get_run(str(args["run_id"])))


async def _get_events(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    return dump(await store.get_events(str(args["run_id"])))


async def _get_latest_checkpoint(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    return dump(await store.get_latest_checkpoint(str(args["run_id"])))


async def _is_terminal_run(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    return bool(await store.is_terminal_run(str(args["run_id"])))


async def _list_runs(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    return dump(await store.list_runs())


def _sessions(store: Any) -> Any:
    sessions = session_store_of(store)
    if sessions is None:
        raise SessionError(
            f"the worker's event store {type(store).__name__} does not keep sessions; use the "
            "sqlite or postgres store on the workers (or submit the run with --no-session)"
        )
    return sessions


async def _create_session(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    sessions = _sessions(store)
    session_id = str(args["session_id"])
    if retry:  # an earlier attempt may have created it
        found = await sessions.get_session(session_id)
        if found is not None:
            return dump(found)
    return dump(await sessions.create_session(session_id, title=str(args.get("title") or "")))


async def _get_session(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    return dump(await _sessions(store).get_session(str(args["session_id"])))


async def _list_sessions(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:
    return dump(await _sessions(store).list_sessions())


async def _add_session_run(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:  # adding a run twice is a no-op: a retry is safe
    record = await _sessions(store).add_session_run(str(args["session_id"]), str(args["run_id"]))
    return dump(record)


async def _save_session_transcript(
    store: Any, args: dict[str, Any], retry: bool, written: list[AgentEvent]
) -> Any:  # replaces the transcript: a retry is safe
    record = await _sessions(store).save_session_transcript(
        str(args["session_id"]), str(args["run_id"]), list(args["messages"])
    )
    return dump(record)


_STORE_METHODS: dict[str, Any] = {
    "create_session": _create_session,
    "get_session": _get_session,
    "list_sessions": _list_sessions,
    "add_session_run": _add_session_run,
    "save_session_transcript": _save_session_transcript,
    "create_run": _create_run,
    "append_batch": _append_batch,
    "append_event": _append_event,
    "save_checkpoint": _save_checkpoint,
    "finalize_run": _finalize_run,
    "update_run": _update_run,
    "get_run": _get_run,
    "get_events": _get_events,
    "get_latest_checkpoint": _get_latest_checkpoint,
    "is_terminal_run": _is_terminal_run,
    "list_runs": _list_runs,
}

__all__ = [
    "MODEL",
    "STORE",
    "TOOL",
    "WORKER_STOPPED",
    "AvoActivities",
    "handing_back",
    "heartbeating",
]
