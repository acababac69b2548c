"""Per-state handler functions (the loop body).

Each handler moves a run out of one state. The dispatcher in
:mod:`avo.runtime` calls ``HANDLERS[state]`` until the run is terminal.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from avo._deadline import within
from avo._dump import response_json
from avo._run_context import _RunContext
from avo._transcript import tool_calls_message
from avo.circuit_breaker import BreakerOpen
from avo.events import EventType
from avo.exceptions import AvoError, FakeProviderExhaustedError, ProviderError, UnsafeResumeError
from avo.models import ModelRequest, ModelResponse, ToolCall, replaced, trusted
from avo.prompt_cache import stable_prefix_size
from avo.retry import retry_after_of
from avo.runtime_answers import finish_answer, handle_answer
from avo.runtime_checks import check_consecutive_errors, stopped_by_runtime_bound
from avo.runtime_persistence import (
    append,
    append_with_run,
    checkpoint,
    elapsed_seconds,
    flush,
    terminate,
    transition,
    trigger_policy,
)
from avo.runtime_tools import (
    call_payload,
    handle_approval_pending,
    handle_tool_executing,
    handle_tool_pending,
)
from avo.state import RunState, StopReason

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime

Handler = Callable[["AgentRuntime", _RunContext], Awaitable[None]]

_PROVIDER_EVENT_TYPES = frozenset({EventType.ROUTE_FAILOVER, EventType.SAVER_APPLIED})


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionError | TimeoutError | OSError)


async def handle_created(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Enter MODEL_PENDING, checkpoint (memory recall is a request shaper: avo.memory_bundle)."""
    transition(rt, ctx, RunState.MODEL_PENDING)
    await checkpoint(rt, ctx)


def _bind_event_sink(rt: AgentRuntime, ctx: _RunContext) -> None:
    if not hasattr(rt.provider, "event_sink"):
        return

    async def sink(event_type: EventType | str, payload: dict[str, Any]) -> None:
        kind = EventType(event_type)
        if kind not in _PROVIDER_EVENT_TYPES:
            raise ValueError(f"a provider may only record {sorted(_PROVIDER_EVENT_TYPES)}")
        append(rt, ctx, kind, dict(payload))

    setattr(rt.provider, "event_sink", sink)  # noqa: B010 - provider-declared seam


async def handle_model_pending(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Check the bounds, call the provider, record the decision, checkpoint."""
    policy = ctx.policy
    if await stopped_by_runtime_bound(rt, ctx):
        return
    if ctx.next_step > policy.max_steps:
        await trigger_policy(
            rt, ctx, StopReason.MAX_STEPS, f"Run stopped: max_steps ({policy.max_steps}) reached."
        )
        return
    if rt._breaker is not None:
        try:
            rt._breaker.allow()
        except BreakerOpen as exc:
            await handle_provider_error(rt, ctx, ProviderError(str(exc), retryable=False))
            return
    if rt._steering.queued:  # messages posted while the run worked join the transcript
        rt._steering.deliver(rt, ctx)
    request_id = f"{ctx.run_id}:{ctx.next_step}:{ctx.consecutive_errors}"
    if ctx.provider_attempts:
        request_id = f"{request_id}.{ctx.provider_attempts}"
    request = trusted(
        ModelRequest,
        {
            "request_id": request_id,
            "run_id": ctx.run_id,
            "step": ctx.next_step,
            "messages": ctx.transcript(),
            "tools": rt.tools.metadata,
            "cache": rt.prompt_cache,
            "cache_prefix_messages": stable_prefix_size(ctx.messages) if rt.prompt_cache else None,
            "output_schema": ctx.output_schema if rt._schema_mode else None,
        },
    )
    seam = ctx.seam
    if seam is not None:  # the request seam (avo.shaping); None: a shaper failed closed
        request = await seam.shape(rt, ctx, request)
        if request is None:
            return
    if ctx.media:  # images/documents: bytes from the blob store, placeholders where unsupported
        from avo._media import media_request

        request = await media_request(rt, request)
    _bind_event_sink(rt, ctx)
    await flush(rt, ctx)
    started = rt.timer()
    try:
        if rt._rate_limiter is not None:
            await rt._rate_limiter.acquire(input_tokens=ctx.last_input_tokens)
        if rt.stream_callback is not None and rt._can_stream:
            response = await within(
                policy.provider_timeout_seconds, rt._stream_with_callback(request)
            )
        else:
            response = await within(policy.provider_timeout_seconds, rt.provider.generate(request))
    except TimeoutError:
        await handle_provider_error(
            rt,
            ctx,
            ProviderError(
                "Provider call exceeded the configured timeout of "
                f"{policy.provider_timeout_seconds:g} seconds."
            ),
        )
        return
    except ValidationError as exc:
        await _invalid_model_response(rt, ctx, exc)
        return
    except ProviderError as exc:
        await handle_provider_error(rt, ctx, exc)
        return
    except AvoError:
        raise
    except Exception as exc:
        error = ProviderError(f"{type(exc).__name__}: {exc}", retryable=_is_transient(exc))
        await handle_provider_error(rt, ctx, error)
        return
    if not isinstance(response, ModelResponse):
        problem = TypeError(f"provider returned {type(response).__name__}, not a ModelResponse")
        await _invalid_model_response(rt, ctx, problem)
        return
    await _record_response(rt, ctx, response, (rt.timer() - started) * 1000)


async def _record_response(
    rt: AgentRuntime, ctx: _RunContext, response: ModelResponse, duration_ms: float
) -> None:
    if rt._breaker is not None:
        rt._breaker.record_success()
    # A known secret the model echoes (in its answer or a tool call's arguments) is
    # masked before the transcript, a tool, a checkpoint or an event sees it.
    response = _mask_known_secrets(rt, response)
    ctx.provider_attempts = 0
    if response.tool_calls:
        response = _with_kernel_ids(response, rt.call_ids, ctx.call_ids_seen)
    run = ctx.run
    usage = response.usage
    accounting = run.token_accounting_available and usage is not None
    total = run.token_usage.plus(usage) if usage is not None else run.token_usage
    if usage is not None:
        ctx.last_input_tokens = usage.input_tokens
    ctx.detector.record_model_response(response)
    step = ctx.next_step
    # One redaction walk over the response; a tool call's four events reuse its result.
    dumped = rt.redactor.value(response_json(response))
    calls = response.tool_calls
    if calls:
        entries = dumped["tool_calls"]
        if len(calls) == 1:  # the common turn: one call
            entry = entries[0]
            ctx.call_payload = (
                calls[0],
                {
                    "tool_call_id": entry["tool_call_id"],
                    "name": entry["name"],
                    "arguments": entry["arguments"],
                },
            )
        else:
            ctx.call_payload = None
            payloads = ctx.call_payloads
            payloads.clear()  # the previous turn's calls are done
            for call, entry in zip(calls, entries, strict=True):
                payloads[call.tool_call_id] = (
                    call,
                    {
                        "tool_call_id": entry["tool_call_id"],
                        "name": entry["name"],
                        "arguments": entry["arguments"],
                    },
                )
    append_with_run(
        rt,
        ctx,
        EventType.MODEL_RESPONDED,
        {
            "step": step,
            "response": dumped,
            "duration_ms": round(duration_ms, 3),
            "token_accounting_available": accounting,
            "usage": dumped.get("usage"),  # the response's own usage, already dumped
            # the runtime's configuration (or the router route that answered), not model output
            "provider": response.provider or rt._provider_name,
            "model": response.model or rt._provider_model,
        },
        redact=False,
        steps=step,
        token_usage=total,
        token_accounting_available=accounting,
    )
    ctx.next_step = step + 1
    ctx.pending_response = response
    transition(rt, ctx, RunState.DECISION_RECEIVED)
    policy = ctx.policy
    if policy.checkpoint_every_step or calls:
        await checkpoint(rt, ctx)
    reason = policy.token_budget_reason(total, accounting_available=accounting)
    if reason is not None:
        await trigger_policy(
            rt,
            ctx,
            reason,
            f"Run stopped: token budget exceeded ({total.input_tokens} input, "
            f"{total.output_tokens} output, {total.total_tokens} total tokens).",
            output=response.content,
        )
        return
    if rt._budget is not None:
        decision = rt._budget.check(total)
        if getattr(decision, "exceeded_hard_limit", False):
            spent = getattr(decision, "spent_usd", None)
            await trigger_policy(
                rt,
                ctx,
                StopReason.TOKEN_BUDGET_EXCEEDED,
                f"Run stopped: cost budget exceeded (spent {spent} USD).",
                policy="budget",
                output=response.content,
            )


def _mask_known_secrets(rt: AgentRuntime, response: ModelResponse) -> ModelResponse:
    redactor = rt.redactor
    if not redactor.known_values:
        return response
    updates: dict[str, Any] = {}
    if response.content is not None:
        content = redactor.known(response.content)
        if content is not response.content:
            updates["content"] = content
    calls = response.tool_calls
    if calls:
        masked = [_masked_call(redactor, call) for call in calls]
        if any(new is not old for new, old in zip(masked, calls, strict=True)):
            updates["tool_calls"] = masked
    return replaced(response, **updates) if updates else response


def _masked_call(redactor: Any, call: ToolCall) -> ToolCall:
    arguments = redactor.known(call.arguments)
    return call if arguments is call.arguments else replaced(call, arguments=arguments)


def _with_kernel_ids(
    response: ModelResponse, mint: Callable[[], str], seen: set[str]
) -> ModelResponse:
    """``response`` with a kernel id on every call; a vendor's id moves to vendor_id.

    A call whose id the provider left to its default already has one the kernel
    made (``ToolCall``'s fresh UUID): it is kept when no earlier call of the run
    has it, so the common scripted call is not copied. Any other call (the
    vendor named it, or the same call object came back) gets ``mint()``.
    ``seen`` collects every id the run has given out.
    """
    calls = response.tool_calls
    if len(calls) == 1:  # the common turn: one call
        call = calls[0]
        fields = call.__dict__
        call_id = fields["tool_call_id"]
        if (
            fields["vendor_id"] is None
            and call_id not in seen
            and "tool_call_id" not in call.__pydantic_fields_set__
        ):
            seen.add(call_id)
            return response
    owned = []
    changed = False
    for call in calls:
        fields = call.__dict__
        call_id = fields["tool_call_id"]
        vendor_id = fields["vendor_id"]
        named = "tool_call_id" in call.__pydantic_fields_set__
        if vendor_id is None and not named and call_id not in seen:
            seen.add(call_id)
            owned.append(call)
            continue
        if vendor_id is None and named:
            vendor_id = call_id
        call_id = mint()
        seen.add(call_id)
        changed = True
        owned.append(
            trusted(
                ToolCall,
                {
                    "tool_call_id": call_id,
                    "name": fields["name"],
                    "arguments": fields["arguments"],
                    "vendor_id": vendor_id,
                    "signature": fields["signature"],
                },
            )
        )
    return replaced(response, tool_calls=owned) if changed else response


async def _invalid_model_response(rt: AgentRuntime, ctx: _RunContext, exc: Exception) -> None:
    ctx.consecutive_errors += 1
    message = f"Invalid model response: {exc}"
    append(
        rt,
        ctx,
        EventType.MODEL_FAILED,
        {
            "step": ctx.next_step,
            "error": message,
            "error_type": type(exc).__name__,
            "retryable": False,
            "consecutive_errors": ctx.consecutive_errors,
        },
    )
    await terminate(rt, ctx, RunState.FAILED, StopReason.INVALID_MODEL_RESPONSE, error=message)


async def handle_provider_error(rt: AgentRuntime, ctx: _RunContext, exc: ProviderError) -> None:
    """Record MODEL_FAILED; retry after a wait, or count the failure and fail or stop.

    A retryable failure is retried (after ``LoopPolicy.retry``'s backoff, or the
    vendor's Retry-After) until ``retry.max_attempts`` calls failed in a row;
    only a failure that exhausted its retries counts toward
    ``consecutive_error_limit`` (and is checkpointed). Below the limit the next
    round starts after the backoff of the round's last attempt, and its own
    backoff starts over (0.5 s, 1 s, 2 s by default, never 8 s): a dead
    endpoint stops a default run after 9 attempts and about 8.5 s of waiting.
    A non-retryable failure ends the run FAILED / PROVIDER_ERROR at once.
    """
    if rt._breaker is not None:
        rt._breaker.record_failure()
    policy = ctx.policy
    retry = policy.retry
    ctx.provider_attempts += 1
    # The attempt within this round of retries: each round is one retried model
    # call (its backoff starts over); an exhausted round is one consecutive error.
    attempt = (ctx.provider_attempts - 1) % retry.max_attempts + 1
    retryable = exc.retryable and not isinstance(exc, FakeProviderExhaustedError)
    counted = not retryable or attempt == retry.max_attempts
    message = str(exc)
    if counted:
        ctx.consecutive_errors += 1
        ctx.last_error = message
    again = retryable and (not counted or ctx.consecutive_errors < policy.consecutive_error_limit)
    delay = _retry_delay(rt, ctx, attempt, exc) if again else None
    payload: dict[str, Any] = {
        "step": ctx.next_step,
        "error": message,
        "error_type": type(exc).__name__,
        "retryable": exc.retryable,
        "consecutive_errors": ctx.consecutive_errors,
        "attempt": attempt,
        "max_attempts": retry.max_attempts,
        "retry_in_seconds": None if delay is None else round(delay, 3),
    }
    if exc.status_code is not None:
        payload["status_code"] = exc.status_code
    append(rt, ctx, EventType.MODEL_FAILED, payload)
    if counted:
        await checkpoint(rt, ctx)
    if not retryable:
        await terminate(
            rt, ctx, RunState.FAILED, StopReason.PROVIDER_ERROR, error=f"Provider error: {exc}"
        )
        return
    if counted and await check_consecutive_errors(rt, ctx):
        return
    await flush(rt, ctx)  # the retry is on record before the wait
    if delay:
        await rt.sleep(delay)


def _retry_delay(rt: AgentRuntime, ctx: _RunContext, attempt: int, exc: ProviderError) -> float:
    """The wait before the next attempt, never past the run's max_runtime_seconds."""
    delay = ctx.policy.retry.wait_before(attempt, retry_after_of(exc), rand=rt.random)
    limit = ctx.policy.max_runtime_seconds
    if limit is not None:
        delay = min(delay, max(0.0, limit - elapsed_seconds(rt, ctx)))
    return delay


async def handle_decision_received(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Handle a final answer, or open the tool-call batch and go to TOOL_PENDING."""
    response = ctx.pending_response
    if response is None:
        answer = _final_answer_in_transcript(ctx)
        if answer is None:
            raise RuntimeError("decision_received without a pending model response")
        # Resumed from the checkpoint written just before finalize_run (the process
        # died in between): the answer is already in the transcript; finish with it.
        await finish_answer(rt, ctx, answer)
        return
    if response.content is not None:
        await handle_answer(rt, ctx, response)
        return
    calls = ctx.calls = response.tool_calls  # copied before any change (approval)
    ctx.messages.append(tool_calls_message(calls, response.thinking))
    detector = ctx.detector
    limit = ctx.policy.repeated_action_limit
    results = ctx.results  # resumed mid-batch: calls with a durable result are done
    for call in calls:
        detector.record_action(call)
        if call.tool_call_id in results:
            continue
        append(rt, ctx, EventType.TOOL_REQUESTED, dict(call_payload(rt, ctx, call)), redact=False)
        if detector.repeated_action(limit):
            await trigger_policy(
                rt,
                ctx,
                StopReason.REPEATED_ACTION,
                f"Run stopped: the model repeated the same {call.name!r} call {limit} times.",
            )
            return
    transition(rt, ctx, RunState.TOOL_PENDING)


async def handle_observation_recorded(rt: AgentRuntime, ctx: _RunContext) -> None:
    """Back to MODEL_PENDING for the next step."""
    transition(rt, ctx, RunState.MODEL_PENDING)


async def handle_paused(rt: AgentRuntime, ctx: _RunContext) -> None:
    """A run cannot be driven while PAUSED; resume() moves it out of PAUSED first."""
    raise UnsafeResumeError(
        f"Run {ctx.run_id!r} is paused at no resumable state; resume it from a checkpoint "
        "with AgentRuntime.resume(run_id)",
        run_id=ctx.run_id,
    )


def _final_answer_in_transcript(ctx: _RunContext) -> str | None:
    last = ctx.messages[-1] if ctx.messages else None
    if last is not None and last.get("role") == "assistant":
        content = last.get("content")
        if isinstance(content, str) and ctx.log.model_responded:
            return (ctx.partial_output or "") + content
    return None


HANDLERS: dict[RunState, Handler] = {
    RunState.CREATED: handle_created,
    RunState.MODEL_PENDING: handle_model_pending,
    RunState.DECISION_RECEIVED: handle_decision_received,
    RunState.TOOL_PENDING: handle_tool_pending,
    RunState.APPROVAL_PENDING: handle_approval_pending,
    RunState.TOOL_EXECUTING: handle_tool_executing,
    RunState.OBSERVATION_RECORDED: handle_observation_recorded,
    RunState.PAUSED: handle_paused,
}

__all__ = [
    "HANDLERS",
    "handle_approval_pending",
    "handle_created",
    "handle_decision_received",
    "handle_model_pending",
    "handle_observation_recorded",
    "handle_paused",
    "handle_provider_error",
    "handle_tool_executing",
    "handle_tool_pending",
]
