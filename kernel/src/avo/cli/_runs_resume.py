"""``avo runs resume``: the §14 restrictions, then AgentRuntime.resume with a FakeProvider."""

from __future__ import annotations

from typing import Any

from avo.exceptions import (
    AvoError,
    CheckpointNotFoundError,
    RunAlreadyTerminalError,
    RunNotFoundError,
)
from avo.models import RunResult
from avo.state import is_terminal

NOT_FAKE = (
    "CLI resume can reconstruct only the built-in FakeProvider; run {run_id} was checkpointed "
    "with provider {provider!r}. Resume it from Python: "
    "AgentRuntime(provider=..., tools=[...], event_store=...).resume({run_id!r})"
)
PENDING_TOOL_CALL = (
    "CLI resume cannot reconstruct application tool callables; run {run_id} is waiting on the "
    "model's tool call {name!r} ({call_id}). Resume it from Python: "
    "AgentRuntime(provider=..., tools=[...], event_store=...).resume({run_id!r})"
)


async def resume_with_fake_provider(store: Any, run_id: str) -> RunResult:
    """Resume ``run_id`` from its checkpoint with the FakeProvider it was checkpointed with.

    Refuses (AvoError) a finished run, a run without a checkpoint, a run of any
    other provider, and a run whose checkpoint holds a pending tool call (the
    CLI cannot rebuild application tools).
    """
    from avo.providers.fake import FakeProvider
    from avo.runtime import AgentRuntime

    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(f"run {run_id!r} was not found in the event store", run_id=run_id)
    if is_terminal(run.state) or await store.is_terminal_run(run_id):
        raise RunAlreadyTerminalError(
            f"run {run_id} already finished ({run.state.value}); there is nothing to resume",
            run_id=run_id,
        )
    checkpoint = await store.get_latest_checkpoint(run_id)
    if checkpoint is None:
        raise CheckpointNotFoundError(
            f"run {run_id} has no checkpoint; CLI resume needs one to start from", run_id=run_id
        )
    snapshot = checkpoint.provider_metadata
    provider_type = snapshot.get("provider_type")
    if provider_type != "fake":
        raise AvoError(NOT_FAKE.format(run_id=run_id, provider=provider_type))
    pending = checkpoint.pending_response
    if pending is not None and pending.tool_call is not None:
        call = pending.tool_call
        raise AvoError(
            PENDING_TOOL_CALL.format(run_id=run_id, name=call.name, call_id=call.tool_call_id)
        )
    try:
        provider = FakeProvider.from_snapshot(snapshot)
    except (ValueError, TypeError, KeyError) as exc:
        raise AvoError(
            f"run {run_id}: the checkpointed FakeProvider snapshot is unusable: {exc}"
        ) from exc
    runtime = AgentRuntime(provider=provider, event_store=store)
    return await runtime.resume(run_id)


__all__ = ["NOT_FAKE", "PENDING_TOOL_CALL", "resume_with_fake_provider"]
