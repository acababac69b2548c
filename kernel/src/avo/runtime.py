"""AgentRuntime.run() / resume() / inspect()."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from avo._hook_faults import report_hook_faults
from avo._run_context import _RunContext
from avo._steering import SteeringQueue
from avo.approval import Answer, Answerer
from avo.circuit_breaker import CircuitBreaker
from avo.events import AgentEvent, EventType, RunLogState, validate_event_append
from avo.exceptions import (
    StorageError,
    UnsafeResumeError,
)
from avo.hooks import HookContext, HookEvent, HookRegistry
from avo.models import (
    ModelRequest,
    ModelResponse,
    RunRecord,
    RunResult,
    ToolCall,
    event_id,
    new_id,
    replaced,
    utc_now,
)
from avo.policies import LoopPolicy
from avo.providers.base import ModelProvider
from avo.redaction import Redactor, StreamRedactor
from avo.runtime_answers import output_json_schema, schema_instruction
from avo.runtime_handlers import HANDLERS
from avo.runtime_persistence import (
    flush,
    notify_appended,
    result_of,
    terminate,
)
from avo.runtime_plugins import (
    call_plugins,
    plugin_set,
    run_created_payload,
    start_breaker,
)
from avo.runtime_recovery import (
    has_media,
    resumed_context,
)
from avo.runtime_tools import always_approve
from avo.state import RunState, StopReason, is_terminal
from avo.storage.base import EventStore
from avo.storage.memory import InMemoryEventStore
from avo.tools import Tool, ToolRegistry

if TYPE_CHECKING:
    from avo.context_window import ContextWindow
    from avo.tracing import RunTrace

Clock = Callable[[], datetime]
ApprovalCallback = Callable[[ToolCall], bool | Awaitable[bool]]
Sleep = Callable[[float], Awaitable[object]]

logger = logging.getLogger("avo.runtime")


_utc_now_fast: Clock = functools.partial(datetime.now, UTC)


class AgentRuntime:
    """Drives runs through the state machine, one event and checkpoint at a time."""

    def __init__(
        self,
        *,
        provider: ModelProvider,
        tools: Iterable[Tool] | ToolRegistry = (),
        policy: LoopPolicy | None = None,
        event_store: EventStore | None = None,
        clock: Clock = utc_now,
        approval_callback: ApprovalCallback | None = None,
        memory: Any | None = None,
        hooks: HookRegistry | None = None,
        stream_callback: Callable[[str], None] | None = None,
        stream_interrupt_callback: Callable[[], None] | None = None,
        plugins: Any | None = None,
        rate_limiter: Any | None = None,
        budget: Any | None = None,
        prompt_cache: bool = False,
        environ: Mapping[str, str] | None = None,
        composition: Mapping[str, Any] | None = None,
        shapers: Iterable[Any] = (),
        bundles: Iterable[Any] = (),
        context_window: int | ContextWindow | None = None,
        workspace: str | None = None,
        sleep: Sleep = asyncio.sleep,
        answerer: Answerer | None = None,
        media_fallback: str = "refuse",
        blob_store: Any | None = None,
    ) -> None:
        # What this runtime was built from, so ``derive`` can build a sibling.
        self._arguments: dict[str, Any] = {k: v for k, v in locals().items() if k != "self"}
        self.provider = provider
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.policy = policy or LoopPolicy()
        self.event_store: EventStore = event_store or InMemoryEventStore()
        # The default clock as a C-level callable: the loop reads it ~20 times a step.
        self.clock: Clock = _utc_now_fast if clock is utc_now else clock
        self._approval_callback: ApprovalCallback = approval_callback or always_approve
        # Who is asked right away when a run pauses for a person (a terminal prompt,
        # a chat UI); None: the run stays paused until answered (avo.ops.approval).
        self.answerer: Answerer | None = answerer
        self.memory = memory
        self.hooks = hooks
        self.stream_callback = stream_callback
        self.stream_interrupt_callback = stream_interrupt_callback
        self._plugins = plugins
        self._rate_limiter = rate_limiter
        self._budget = budget
        self.prompt_cache = prompt_cache
        self._lock = asyncio.Lock()
        self._can_stream = callable(getattr(provider, "stream", None))
        self._provider_name = _text_attr(provider, "name")
        self._provider_model = _text_attr(provider, "model")
        self._breaker: CircuitBreaker | None = None
        # How the loop waits before retrying a provider call (injectable for tests).
        self.sleep: Sleep = sleep
        # Mints the id of every tool call a model asks for (the vendor's id is kept
        # as vendor_id); avo.ops.replay swaps in the ids a recording holds.
        self.call_ids: Callable[[], str] = event_id
        # The jitter source of the retry backoff (a float in [0, 1)).
        self.random: Callable[[], float] = random.random
        # Mints the id of every event and checkpoint, and reads monotonic seconds for
        # durations. With the clock, ``sleep``, ``call_ids`` and the jitter source these
        # are everything the loop reads that varies from one execution to the next, so
        # an engine that replays a run's decisions (a workflow, see docs/temporal.md)
        # swaps in deterministic ones and the same effects give the same log.
        self.event_ids: Callable[[], str] = event_id
        self.timer: Callable[[], float] = time.perf_counter
        # Providers that declare JSON-schema output get run(output_schema=) as a
        # request field; the others get an instruction in the transcript.
        self._schema_mode = getattr(provider, "supports_output_schema", False) is True
        # Masks secrets (secret-named env values, bearer tokens, API-key shapes) in
        # everything the runtime persists or reports: event payloads, the run head's
        # task/output/error. ``environ`` (default os.environ) gives the secret-named
        # variables; ``runtime.redactor.add(value)`` teaches it more values.
        self.redactor = Redactor(environ=environ)
        # What the runtime was composed from (avo.compose), recorded in RUN_CREATED
        # so a run can be composed again to resume or replay it.
        self.composition = dict(composition) if composition is not None else None
        # The engine driving this runtime's runs when it is not this process (avo.engines):
        # ``{"name", "settings"}``, recorded in RUN_CREATED so operations reach the driver.
        self.engine: dict[str, JsonValue] | None = None
        self._driving: asyncio.Task[Any] | None = None
        self._interrupted: str | None = None
        self._cancelled: str | None = None
        self._environ: Mapping[str, str] = environ if environ is not None else os.environ
        # The request seam (avo.shaping): shapers for every run, bundles set up per run
        # (avo.bundles), the model's context window, where bundles find workspace files.
        # (imported only when used: a plain runtime never loads the seam's modules)
        self._shapers: list[Any] = []
        self._bundles: list[Any] = []
        self._context_window: ContextWindow | None = None
        if memory is not None:  # recall and write-back are a bundle on the request seam
            from avo.memory_bundle import memory_bundle

            bundles = [*bundles, memory_bundle(memory)]
        if shapers or bundles or context_window is not None:
            self._configure_seam(shapers, bundles, context_window)
        self.workspace = workspace
        self._steering = SteeringQueue()
        # Images and documents (avo._media): what happens to an attachment the model
        # cannot take ("refuse": run() raises ContentNotSupportedError; "placeholder":
        # a text line stands in for it), where media bytes are kept (None: the event
        # store's blob store, see avo.blobs), and recently read bytes.
        if media_fallback not in ("refuse", "placeholder"):
            raise ValueError(
                f"media_fallback must be 'refuse' or 'placeholder', got {media_fallback!r}"
            )
        self.media_fallback = media_fallback
        self._blob_store = blob_store
        self._blob_cache: Any = None

    def derive(self, **overrides: Any) -> AgentRuntime:
        """A new runtime built from this one's constructor arguments, ``overrides`` replacing some.

        For a driver that runs the same configuration through other parts: an
        engine's workflow keeps the policy, permissions, hooks and plugins and
        swaps in a provider, tools and store that reach the real ones remotely.
        ``composition`` and ``engine`` carry over; the seams (``clock``,
        ``sleep``, ``call_ids``, ``event_ids``, ``timer``, ``random``) do not
        unless given as constructor arguments (``clock``, ``sleep``).
        """
        unknown = sorted(set(overrides) - set(self._arguments))
        if unknown:
            known = ", ".join(sorted(self._arguments))
            raise TypeError(f"derive() got unknown arguments {unknown}; it takes: {known}")
        made = type(self)(**{**self._arguments, **overrides})
        if "composition" not in overrides:
            made.composition = self.composition
        made.engine = self.engine
        return made

    def _configure_seam(
        self, shapers: Iterable[Any], bundles: Iterable[Any], window: int | ContextWindow | None
    ) -> None:
        from avo.bundles import check_bundle
        from avo.context_window import ContextWindow
        from avo.shaping import bind_shaper, ordered

        self._shapers = ordered(bind_shaper(shaper) for shaper in shapers)
        self._bundles = [check_bundle(bundle) for bundle in bundles]
        if isinstance(window, int):
            window = ContextWindow(window, "config", self._provider_model)
        self._context_window = window

    @property
    def context_window(self) -> ContextWindow:
        """The model's context window: as given, else resolved (see avo.context_window)."""
        if self._context_window is None:
            from avo.context_window import resolve_context_window

            self._context_window = resolve_context_window(
                model=self._provider_model, provider=self.provider, environ=self._environ
            )
        return self._context_window

    @property
    def approval_callback(self) -> ApprovalCallback:
        """The approval seam this runtime uses (the default approves everything)."""
        return self._approval_callback

    @property
    def bundles(self) -> tuple[Any, ...]:
        """The bundles this runtime sets up for each run and resume (see avo.bundles), in order.

        An engine that drives runs elsewhere reads it to see what its runs
        would set up (the ``[memory]`` bundle included).
        """
        return tuple(self._bundles)

    # ------------------------------------------------------------------ public API

    async def run(
        self,
        task: str,
        *,
        system_prompt: str | None = None,
        user_state: dict[str, JsonValue] | None = None,
        run_id: str | None = None,
        session_id: str | None = None,
        output_schema: type[Any] | None = None,
        attachments: Sequence[Any] = (),
    ) -> RunResult:
        """Start a run for ``task`` and drive it to a terminal state.

        With ``session_id`` the run continues that session (see :mod:`avo.sessions`):
        it starts from the transcript the session's previous run ended with.
        ``output_schema`` (a pydantic model class): the final answer must be JSON
        matching it; the parsed object is ``RunResult.parsed``.
        ``attachments``: files (paths) or content blocks (:mod:`avo.content_blocks`)
        sent with the task; one the model cannot take raises
        :class:`~avo.exceptions.ContentNotSupportedError` before anything is
        recorded (unless ``media_fallback="placeholder"``).
        """
        schema = output_json_schema(output_schema) if output_schema is not None else None
        from avo._run_setup import RunScope

        content: list[dict[str, JsonValue]] | None = None
        attached: list[dict[str, JsonValue]] = []
        if attachments:
            from avo._media import attachments_content

            content, attached = await attachments_content(self, task, list(attachments))
        async with self._lock, RunScope(self) as scope:
            run_id = run_id or new_id()
            setup = await scope.prepare(run_id, task, session_id, resumed=False)
            now = self.clock()
            run = RunRecord(
                run_id=run_id,
                task=self.redactor.text(task),
                user_state=dict(user_state or {}),
                created_at=now,
                updated_at=now,
            )
            messages: list[dict[str, JsonValue]] = []
            if system_prompt:
                messages.append({"role": "system", "content": system_prompt})
            messages.extend(setup.carried)
            if schema is not None and not self._schema_mode:
                messages.append({"role": "system", "content": schema_instruction(schema)})
            user: dict[str, JsonValue] = {"role": "user", "content": task}
            if content is not None:
                user["content"] = list[JsonValue](content)
            messages.append(user)
            plugins = plugin_set(self)
            payload = run_created_payload(
                self,
                task,
                system_prompt=system_prompt,
                schema=schema,
                attached=attached,
                plugins=plugins,
                setup=setup.payload(),
            )
            event = AgentEvent(
                event_id=self.event_ids(),
                run_id=run.run_id,
                event_type=EventType.RUN_CREATED,
                created_at=now,
                payload=payload,
            )
            ctx = _RunContext(
                run=run,
                log=RunLogState(run_id=run.run_id),
                policy=self.policy,
                messages=messages,
                started_at=now,
                batch=getattr(self.event_store, "append_batch", None),
                output_model=output_schema,
                output_schema=schema,
            )
            scope.attach(ctx)
            if content is not None or (setup.carried and has_media(setup.carried)):
                ctx.media = True
            validate_event_append(ctx.log, event)
            ctx.run = await self.event_store.create_run(run, event)
            await scope.created(ctx)
            stored = replaced(event, sequence=1)
            ctx.log.apply(stored)
            start_breaker(self)
            if self._plugins is not None:
                call_plugins(
                    self,
                    "avo_run_started",
                    ctx=ctx,
                    run_id=run.run_id,
                    task=task,
                    plugins=plugins or [],
                )
            notify_appended(self, stored, ctx)
            return await self._drive(ctx)

    async def resume(
        self,
        run_id: str,
        *,
        output_schema: type[Any] | None = None,
        lease: bool = True,
        lease_owner: str | None = None,
        answers: Mapping[str, Answer | bool | str] | None = None,
    ) -> RunResult:
        """Continue a non-terminal run from its latest checkpoint, or refuse if unsafe.

        A run started with ``output_schema`` is resumed with the same one.

        The run's lease is taken first (``lease=True``, the default, on a store
        that offers leases) and held, renewed in the background, while the run
        is driven; every write goes through the lease's fenced view. So two
        resumes of one run cannot both drive it: the second is refused with
        :class:`~avo.exceptions.RunBusyError` naming the holder, before it
        reads or writes anything. ``lease_owner`` names this driver (default
        ``avo-resume:host:pid``). A store that is already a fenced view (its
        caller holds the lease) is used as is; ``lease=False`` skips the lease
        for a caller that fences the store itself.

        ``answers`` answers a run paused for a person: by call id (or a unique
        prefix), ``True`` / ``Answer.approve()`` approves, ``False`` /
        ``Answer.deny(reason)`` denies (the model reads the reason), a string
        (or ``Answer.reply``) answers a question. They are recorded before the
        run continues; requests still unanswered pause it again.
        """
        async with self._lock:
            if not lease:
                return await self._resume(run_id, output_schema, answers)
            from avo.ops.leases import holding_lease, owner_name

            store = self.event_store
            owner = lease_owner or owner_name("avo-resume")
            async with holding_lease(store, run_id, owner=owner, doing="resume") as writer:
                self.event_store = writer
                try:
                    return await self._resume(run_id, output_schema, answers)
                finally:
                    self.event_store = store

    async def _resume(
        self,
        run_id: str,
        output_schema: type[Any] | None,
        answers: Mapping[str, Answer | bool | str] | None = None,
    ) -> RunResult:
        from avo._run_setup import RunScope

        async with RunScope(self) as scope:
            ctx = await resumed_context(self, scope, run_id, output_schema, answers)
            return await self._drive(ctx)

    async def inspect(self, run_id: str) -> RunTrace:
        """The run's trace, built from its events."""
        from avo.tracing import TraceInspector

        return await TraceInspector(self.event_store).inspect(run_id)

    # ------------------------------------------------------------------ the loop

    def interrupt(self, reason: str = "interrupted by the user") -> bool:
        """Stop the run being driven now, leaving it resumable (PAUSED, not CANCELLED).

        A tool call cut short gets a failed result saying so (its effect may be
        partial); ``run()``/``resume()`` then return with status ``paused``.
        Returns False when no run is being driven. Cancelling the driving task
        instead ends the run CANCELLED.
        """
        task = self._driving
        if task is None or task.done():
            return False
        self._interrupted = reason
        task.cancel()
        return True

    def cancel(self, reason: str = "cancelled by the user") -> bool:
        """End the run being driven now for good: CANCELLED / user_cancelled, ``reason`` recorded.

        A tool call cut short gets a failed result saying so. Returns False when
        no run is being driven (cancel a stored run with :func:`avo.ops.cancel`).
        """
        task = self._driving
        if task is None or task.done():
            return False
        self._cancelled = reason
        task.cancel()
        return True

    async def _drive(self, ctx: _RunContext) -> RunResult:
        self._driving, self._interrupted = asyncio.current_task(), None
        self._cancelled = None
        try:
            return await self._drive_loop(ctx)
        finally:
            self._driving = None

    async def _drive_loop(self, ctx: _RunContext) -> RunResult:
        try:
            while not is_terminal(ctx.run.state):
                if ctx.run.state is RunState.PAUSED:  # waits for a person: durable, resumable
                    await flush(self, ctx)
                    return result_of(ctx)
                await HANDLERS[ctx.run.state](self, ctx)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await self._resync_log(ctx)
            if self._interrupted is not None:
                from avo.ops.interrupt import pause_interrupted

                await pause_interrupted(self, ctx, self._interrupted)
                return result_of(ctx)
            if self._cancelled is not None:
                from avo.ops.cancel import end_cancelled

                await end_cancelled(self, ctx, self._cancelled)
            else:
                await self._end_on_error(
                    ctx,
                    RunState.CANCELLED,
                    StopReason.USER_CANCELLED,
                    "Run cancelled by the caller.",
                )
        except (StorageError, UnsafeResumeError):
            raise
        except Exception as exc:
            logger.exception("run %s failed with an internal error", ctx.run_id)
            await self._end_on_error(
                ctx,
                RunState.FAILED,
                StopReason.INTERNAL_ERROR,
                f"Internal error: {type(exc).__name__}: {exc}",
            )
        result = result_of(ctx)
        if self.hooks is not None:
            decision = await self.hooks.fire(
                HookEvent.STOP, HookContext(HookEvent.STOP, ctx.run_id, run=ctx.run)
            )
            if decision.faults:  # the log is closed: reported as warnings only
                report_hook_faults(
                    self, ctx, "stop", decision.faults, outcome="ignored", run_id=ctx.run_id
                )
        if self._plugins is not None:
            call_plugins(self, "avo_run_finished", ctx=ctx, run_id=ctx.run_id, result=result)
        return result

    async def _resync_log(self, ctx: _RunContext) -> None:
        """Re-read the log after a cancellation: a store write it interrupted may have landed."""
        ctx.pending = []
        ctx.pending_checkpoint = None
        ctx.unsynced = False
        events = await self.event_store.get_events(ctx.run_id)
        log = RunLogState.from_events(ctx.run_id, events)
        if log.last_sequence != ctx.log.last_sequence:
            ctx.log = log
            ctx.run = replaced(ctx.run, state=log.state)

    async def _end_on_error(
        self, ctx: _RunContext, state: RunState, reason: StopReason, error: str
    ) -> None:
        if ctx.unsynced:  # a write failed midway: start again from what the store holds
            await self._resync_log(ctx)
        if is_terminal(ctx.run.state):
            return
        await terminate(self, ctx, state, reason, error=error)

    async def _stream_with_callback(self, request: ModelRequest) -> ModelResponse:
        from avo.providers.streaming import StreamAssembler

        callback = self.stream_callback
        assert callback is not None
        # A known secret the model spells out is masked before it is shown, even
        # when it arrives split across chunks (see avo.redaction.StreamRedactor).
        shown = StreamRedactor(self.redactor, callback)
        assembler = StreamAssembler()
        emitted = False
        try:
            async for chunk in self.provider.stream(request):  # type: ignore[attr-defined]
                if chunk.text:
                    shown.feed(chunk.text)
                    emitted = True
                assembler.feed(chunk)
        except BaseException:
            shown.close()
            if emitted and self.stream_interrupt_callback is not None:
                self.stream_interrupt_callback()
            raise
        shown.close()
        return assembler.build()


def _text_attr(obj: object, name: str) -> str | None:
    value = getattr(obj, name, None)
    return value if isinstance(value, str) else None


__all__ = ["AgentRuntime", "ApprovalCallback", "Clock", "_RunContext"]
