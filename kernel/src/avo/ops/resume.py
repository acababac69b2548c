"""``resume``: continue a stopped run with the runtime it was composed from.

The run's first event records its composition (:mod:`avo.compose._record`):
provider, tools, hooks, notifiers, permission mode, policy and their settings,
and the workspace its tools were bound to. :func:`resume` composes that same
runtime again from the installed plugins (any provider, any tool plugin),
with secrets read from the environment again, takes the run's lease (a run a
live process is driving is refused, naming the holder) and continues from the
latest checkpoint through :meth:`AgentRuntime.resume`, which refuses anything
unsafe (e.g. a tool call that started without a recorded result).

``fail_open_tool_calls=True`` first closes such calls with a failed result
saying their effect is unknown, so the model can check and decide, instead of
refusing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avo.compose._record import recorded_composition
from avo.engines import engine_record
from avo.events import RunLogState
from avo.exceptions import (
    AvoError,
    ConfigError,
    RunAlreadyTerminalError,
    RunNotFoundError,
    UnsafeResumeError,
)
from avo.models import RunResult
from avo.ops._abandon import abandon_open_calls
from avo.ops._context import run_context
from avo.ops.leases import holding_lease
from avo.runtime_persistence import flush
from avo.runtime_recovery import unsafe_open_calls
from avo.state import is_terminal

if TYPE_CHECKING:
    from avo.compose import Composition
    from avo.compose.resolve import ResolvedConfig
    from avo.runtime import AgentRuntime

NO_RECORD = (
    "run {run_id} has no recorded composition (it was built in Python, or by an older avo): "
    "pass --config FILE describing the runtime it ran with, or resume it from Python with "
    "AgentRuntime(provider=..., tools=[...], event_store=...).resume({run_id!r})"
)


async def recorded_config(
    store: Any,
    run_id: str,
    *,
    environ: Mapping[str, str] | None = None,
    config: str | Path | None = None,
) -> tuple[ResolvedConfig, str | None]:
    """The configuration ``run_id`` was composed from, and its workspace directory.

    ``config`` (a file) is used instead for runs without a record.
    """
    from avo.compose.resolve import resolve_config, resolve_recorded

    events = await store.get_events(run_id)
    if not events:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    record = recorded_composition(events[0].payload)
    if record is None:
        if config is None:
            raise AvoError(NO_RECORD.format(run_id=run_id))
        return resolve_config(config, environ=environ), None
    label = f"(composition recorded by run {run_id})"
    resolved = resolve_recorded(record["config"], environ=environ, label=label)
    workspace = record.get("workspace")
    return resolved, str(workspace) if isinstance(workspace, str) else None


def _workspace(recorded: str | None, override: str | Path | None) -> str | None:
    if override is not None:
        return str(override)
    if recorded is not None and not Path(recorded).is_dir():
        raise ConfigError(
            f"the run's workspace {recorded} no longer exists; pass --workspace DIR to bind "
            "its tools to another directory",
            key="workspace",
        )
    return recorded


CUT_OFF = "the process running it stopped before recording its result"
"""Why :func:`close_open_calls` says a call did not finish (the model reads it)."""


async def close_open_calls(rt: AgentRuntime, run_id: str, *, why: str = CUT_OFF) -> list[str]:
    """Close ``run_id``'s open tool calls with a failed result; returns their ids.

    Each call that started without a recorded result gets a failed result
    saying its effect is unknown, so :meth:`AgentRuntime.resume` continues
    instead of refusing and the model can check before calling again. Written through ``rt`` (its
    store, clock and ids) while nobody drives the run: what ``resume
    --fail-open-tools`` does first, and what an engine's driver (a workflow)
    calls with its own runtime when the resume it is sent carries the flag.
    """
    store = rt.event_store
    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    events = await store.get_events(run_id)
    log = RunLogState.from_events(run_id, events)
    if not log.open_tool_calls:
        return []
    ctx = run_context(rt, run, log, await store.get_latest_checkpoint(run_id))
    closed = await abandon_open_calls(rt, ctx, events, why)
    await flush(rt, ctx)
    return closed


async def resume(
    store: Any,
    run_id: str,
    *,
    environ: Mapping[str, str] | None = None,
    config: str | Path | None = None,
    workspace: str | Path | None = None,
    stream_callback: Callable[[str], None] | None = None,
    approval_callback: Any | None = None,
    answerer: Any | None = None,
    answers: Mapping[str, Any] | None = None,
    fail_open_tool_calls: bool = False,
    owner: str | None = None,
    on_composed: Callable[[Composition], None] | None = None,
    on_event: Callable[[Any], None] | None = None,
) -> RunResult:
    """Resume ``run_id`` with the runtime recorded in its first event.

    :param config: a config file for runs without a recorded composition.
    :param workspace: bind workspace tools here instead of the recorded directory.
    :param fail_open_tool_calls: close calls that started without a result
        (a crash mid-tool) with a failed result instead of refusing.
    :param on_composed: called with the composition before driving (a front
        end keeps its runtime to interrupt it).
    :param answerer: asks a person right away when the run pauses for one (a
        terminal prompt); :param answers: answers to record first (by call id),
        as :meth:`AgentRuntime.resume` takes them.

    A run an engine drives (:mod:`avo.engines`) is resumed by that engine: the
    resume (or the answers) is relayed to it as a signal, and this follows the
    run in the store (``on_event`` sees each new event) until it ends or pauses.
    """
    from avo.compose import compose

    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    if is_terminal(run.state) or await store.is_terminal_run(run_id):
        raise RunAlreadyTerminalError(
            f"run {run_id} already finished ({run.state.value}); there is nothing to resume",
            run_id=run_id,
        )
    events = await store.get_events(run_id)
    record = engine_record(events)
    if record is not None:
        return await _resume_through_engine(
            store, run_id, record, events, environ, answers, fail_open_tool_calls, on_event
        )
    async with holding_lease(store, run_id, owner=owner, doing="resume") as writer:
        resolved, recorded_workspace = await recorded_config(
            store, run_id, environ=environ, config=config
        )
        directory = _workspace(recorded_workspace, workspace)
        composition = compose(
            resolved=resolved,
            event_store=writer,
            workspace=directory,
            stream_callback=stream_callback,
            approval_callback=approval_callback,
            answerer=answerer,
        )
        if on_composed is not None:
            on_composed(composition)
        runtime = composition.runtime
        if fail_open_tool_calls:
            await close_open_calls(runtime, run_id)
        try:
            return await runtime.resume(run_id, answers=answers)
        except UnsafeResumeError as exc:
            if exc.tool_call_ids and not fail_open_tool_calls:
                raise UnsafeResumeError(
                    f"{exc}. Their effect is unknown; resume with --fail-open-tools to tell the "
                    "model so and continue, or cancel the run (avo runs cancel)",
                    run_id=run_id,
                    tool_call_ids=exc.tool_call_ids,
                ) from None
            raise


async def _resume_through_engine(
    store: Any,
    run_id: str,
    record: dict[str, Any],
    events: list[Any],
    environ: Mapping[str, str] | None,
    answers: Mapping[str, Any] | None,
    fail_open_tool_calls: bool,
    on_event: Callable[[Any], None] | None,
) -> RunResult:
    from avo.approval import Answer
    from avo.ops._engine import follow, relay
    from avo.ops.approval import answer_requests

    driver = None  # (after answers, the driver was signalled by answer_requests)
    if answers:
        given = {key: Answer.coerce(value) for key, value in answers.items()}
        await answer_requests(store, run_id, given, environ=environ)
    else:
        if not fail_open_tool_calls:
            _refuse_open_calls(run_id, events)
        payload = {"fail_open_tool_calls": fail_open_tool_calls}
        driver = await relay(record, run_id, "resume", payload, environ=environ)
    after = events[-1].sequence if events else 0
    return await follow(store, run_id, after=after, on_event=on_event, driver=driver)


def _refuse_open_calls(run_id: str, events: list[Any]) -> None:
    """Refuse here what the engine's driver would refuse (it has no one to tell)."""
    open_calls = unsafe_open_calls(RunLogState.from_events(run_id, events), events)
    if open_calls:
        raise UnsafeResumeError(
            f"run {run_id} has tool calls that started without a recorded result: "
            f"{', '.join(open_calls)}. If its engine's worker is still running them, wait; "
            "if they were cut off, their effect is unknown: resume with --fail-open-tools "
            "to tell the model so and continue, or cancel the run (avo runs cancel)",
            run_id=run_id,
            tool_call_ids=tuple(open_calls),
        )


__all__ = ["CUT_OFF", "NO_RECORD", "close_open_calls", "recorded_config", "resume"]
