"""Final answers: completion, truncated answers, refusals and output schemas.

A content response ends the run, unless it says it is incomplete:

- ``finish_reason=length`` (cut off at the output-token limit): the answer is
  continued — the partial text stays in the transcript, a user turn asks for
  the rest — up to ``LoopPolicy.continuation_turns`` times; the parts are
  joined into the output. Past that, the run stops ``OUTPUT_TRUNCATED``,
  keeping the partial answer as its output.
- ``refusal`` / ``content_filter``: the run stops ``MODEL_REFUSED`` (the
  refusal text, if any, is the output).
- With ``run(..., output_schema=Model)``, the answer must be JSON that
  validates as ``Model``; an answer that does not is sent back with the
  validation error up to ``LoopPolicy.output_retries`` times, then the run
  fails ``INVALID_MODEL_RESPONSE``. The parsed object is ``RunResult.parsed``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, JsonValue, ValidationError

from avo._run_context import _RunContext
from avo._transcript import answer_message
from avo.events import EventType
from avo.exceptions import ConfigError, OutputSchemaError
from avo.models import FinishReason, ModelResponse
from avo.runtime_persistence import append, terminate, transition
from avo.state import RunState, StopReason
from avo.tools import canonical_json, to_json_schema

if TYPE_CHECKING:
    from avo.runtime import AgentRuntime

CONTINUE_PROMPT = (
    "Your previous answer was cut off at the output limit. Continue it exactly where it "
    "stopped, without repeating anything."
)


def output_json_schema(model: Any) -> dict[str, JsonValue]:
    """The JSON schema a run's final answer must match (titled with the model's name)."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ConfigError(
            f"output_schema must be a pydantic BaseModel subclass, got {model!r}; "
            "define e.g. class Answer(BaseModel): ... and pass output_schema=Answer",
            key="output_schema",
        )
    schema = to_json_schema(model)
    return {"title": model.__name__, **schema}


def schema_instruction(schema: dict[str, JsonValue]) -> str:
    """The system message that asks for schema-shaped output from a provider without JSON mode."""
    return (
        "When you give your final answer, reply with only a JSON object (no prose, no code "
        f"fences) that matches this JSON schema:\n{canonical_json(schema)}"
    )


def parse_output(model: type[BaseModel], text: str) -> BaseModel:
    """``text`` (JSON, optionally in a code fence) validated as ``model``."""
    raw = text.strip()
    if raw.startswith("```"):
        raw = raw.split("\n", 1)[1] if "\n" in raw else ""
        raw = raw.rsplit("```", 1)[0].strip()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        where = (
            f" ({exc.msg} at position {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
        )
        raise OutputSchemaError(f"the answer is not JSON{where}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(part) for part in error['loc']) or 'the answer'}: {error['msg']}"
            for error in exc.errors()[:5]
        ]
        raise OutputSchemaError("; ".join(problems)) from None


async def handle_answer(rt: AgentRuntime, ctx: _RunContext, response: ModelResponse) -> None:
    """Complete, continue, stop or retry on a content response (see the module docstring)."""
    content = response.content or ""
    finish = response.finish_reason
    text = ctx.partial_output + content if ctx.partial_output else content
    ctx.messages.append(answer_message(response))
    if finish is FinishReason.REFUSAL or finish is FinishReason.CONTENT_FILTER:
        why = (
            "the model declined to answer"
            if finish is FinishReason.REFUSAL
            else "the vendor's content filter withheld the answer"
        )
        await terminate(
            rt,
            ctx,
            RunState.STOPPED,
            StopReason.MODEL_REFUSED,
            output=text or None,
            error=f"Run stopped: {why} (finish_reason={finish.value}).",
        )
        return
    if finish is FinishReason.LENGTH:
        turns = ctx.continuation_turns
        if turns < ctx.policy.continuation_turns:
            ctx.partial_output = text
            ctx.continuation_turns = turns + 1
            ctx.pending_response = None
            ctx.messages.append({"role": "user", "content": CONTINUE_PROMPT})
            transition(rt, ctx, RunState.MODEL_PENDING)
            return
        await terminate(
            rt,
            ctx,
            RunState.STOPPED,
            StopReason.OUTPUT_TRUNCATED,
            output=text,
            error=(
                "Run stopped: the answer was cut off at the output-token limit "
                f"after {turns} continuation turn(s); raise the provider's output-token "
                "limit or LoopPolicy.continuation_turns."
            ),
        )
        return
    ctx.pending_response = None
    await finish_answer(rt, ctx, text)


async def finish_answer(rt: AgentRuntime, ctx: _RunContext, text: str) -> None:
    """Validate ``text`` against the output schema (if any), then complete the run."""
    model = ctx.output_model
    if model is not None:
        try:
            ctx.parsed = parse_output(model, text)
        except OutputSchemaError as exc:
            await _refused_by_schema(rt, ctx, model, text, exc)
            return
    await terminate(rt, ctx, RunState.COMPLETED, StopReason.COMPLETED, output=text)


async def _refused_by_schema(
    rt: AgentRuntime, ctx: _RunContext, model: type[BaseModel], text: str, exc: OutputSchemaError
) -> None:
    used = ctx.output_retries
    retrying = used < ctx.policy.output_retries
    append(
        rt,
        ctx,
        EventType.MODEL_FAILED,
        {
            "step": ctx.next_step - 1,
            "error": f"The answer does not match the output schema {model.__name__}: {exc}",
            "error_type": type(exc).__name__,
            "retryable": retrying,
            "consecutive_errors": ctx.consecutive_errors,
            "output_retries": used,
        },
    )
    if not retrying:
        await terminate(
            rt,
            ctx,
            RunState.FAILED,
            StopReason.INVALID_MODEL_RESPONSE,
            output=text,
            error=(
                f"Invalid model response: the final answer does not match {model.__name__} "
                f"after {used + 1} answer(s): {exc}"
            ),
        )
        return
    ctx.output_retries = used + 1
    ctx.partial_output = None
    ctx.continuation_turns = 0
    ctx.messages.append(
        {
            "role": "user",
            "content": (
                f"Your answer does not match the required JSON schema: {exc}. "
                "Reply with only the corrected JSON object."
            ),
        }
    )
    transition(rt, ctx, RunState.MODEL_PENDING)


__all__ = [
    "CONTINUE_PROMPT",
    "finish_answer",
    "handle_answer",
    "output_json_schema",
    "parse_output",
    "schema_instruction",
]
