"""The messages a run's transcript holds for model decisions and tool calls (internal).

A model turn that asks for tools becomes one assistant message listing every
call (OpenAI's shape, which every adapter converts); when the batch closes,
each call gets exactly one ``role: tool`` message, in the model's order: its
durable result, or a line saying it was denied or never ran. Vendor ids,
signatures and thinking blocks ride along in the messages so adapters can send
them back to the vendor that made them, and so they survive a resume.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import JsonValue

from avo._run_context import _RunContext
from avo.models import ModelResponse, ToolCall, ToolResult
from avo.tools import call_json, canonical_json


def tool_calls_message(
    calls: Iterable[ToolCall], thinking: list[dict[str, JsonValue]] | None = None
) -> dict[str, JsonValue]:
    """The assistant message recording a turn's tool calls (OpenAI-style shape).

    Each entry carries the kernel's ``id`` and, when the vendor gave them, its
    ``vendor_id`` and ``signature``; ``thinking`` holds the turn's reasoning blocks.
    """
    entries: list[JsonValue] = []
    for call in calls:
        fields = call.__dict__
        entry: dict[str, JsonValue] = {
            "id": fields["tool_call_id"],
            "type": "function",
            "function": {"name": fields["name"], "arguments": call_json(call)[0]},
        }
        if fields["vendor_id"] is not None:
            entry["vendor_id"] = fields["vendor_id"]
        if fields["signature"] is not None:
            entry["signature"] = fields["signature"]
        entries.append(entry)
    message: dict[str, JsonValue] = {"role": "assistant", "content": None, "tool_calls": entries}
    if thinking:
        message["thinking"] = list(thinking)
    return message


def tool_call_message(call: ToolCall) -> dict[str, JsonValue]:
    """The assistant message recording one tool call."""
    return tool_calls_message((call,))


def answer_message(response: ModelResponse) -> dict[str, JsonValue]:
    """The assistant message recording a final (or partial) answer."""
    message: dict[str, JsonValue] = {"role": "assistant", "content": response.content}
    thinking = response.__dict__["thinking"]
    if thinking:
        message["thinking"] = list(thinking)
    return message


def tool_result_message(result: ToolResult, vendor_id: str | None = None) -> dict[str, JsonValue]:
    """The ``role: tool`` message carrying a result back to the model."""
    if result.success:
        output: Any = result.output
        if type(output) is str:
            content: JsonValue = output
        elif type(output) is dict and output.get("type") == "content_blocks":
            content = list(output["blocks"])  # text, images, documents (avo.content_blocks)
        else:
            content = canonical_json(output)
    else:
        content = canonical_json({"error": result.error})
    message: dict[str, JsonValue] = {
        "role": "tool",
        "tool_call_id": result.tool_call_id,
        "name": result.tool_name,
        "content": content,
    }
    if vendor_id is not None:
        message["vendor_id"] = vendor_id
    return message


def no_result_message(call: ToolCall, text: str) -> dict[str, JsonValue]:
    """The ``role: tool`` message of a call that has no result (denied, never ran)."""
    message: dict[str, JsonValue] = {
        "role": "tool",
        "tool_call_id": call.tool_call_id,
        "name": call.name,
        "content": canonical_json({"error": text}),
    }
    vendor_id = call.__dict__["vendor_id"]
    if vendor_id is not None:
        message["vendor_id"] = vendor_id
    return message


def apply_tool_result(ctx: _RunContext, result: ToolResult, vendor_id: str | None = None) -> None:
    """Fold one durable result into the transcript and the loop detectors."""
    ctx.messages.append(tool_result_message(result, vendor_id))
    ctx.detector.record_observation(result)
    if result.success:
        ctx.consecutive_errors = 0
    else:
        ctx.consecutive_errors += 1
        ctx.last_error = result.error


def close_batch(ctx: _RunContext, stop_reason: str | None = None) -> None:
    """Give every call of the open batch its one tool message, in the model's order.

    A call with a durable result gets it; a denied call the reason; any other
    call says the run stopped (``stop_reason``) before it ran, or while it ran.
    """
    calls = ctx.calls
    if not calls:
        return
    results = ctx.results
    messages = ctx.messages
    detector = ctx.detector
    for call in calls:
        fields = call.__dict__
        call_id = fields["tool_call_id"]
        result = results.get(call_id)
        if result is not None:  # (apply_tool_result, inline: once per step)
            messages.append(tool_result_message(result, fields["vendor_id"]))
            detector.record_observation(result)
            if result.success:
                ctx.consecutive_errors = 0
            else:
                ctx.consecutive_errors += 1
                ctx.last_error = result.error
            continue
        text = ctx.outcomes.get(call_id)
        if text is None:
            if call_id in ctx.log.started_tool_calls:
                text = (
                    f"the run stopped ({stop_reason}) while this call was running; "
                    "its outcome is unknown"
                )
            else:
                text = f"the run stopped ({stop_reason}) before this call ran"
        messages.append(no_result_message(call, text))
    ctx.calls = []
    ctx.results = {}
    if ctx.outcomes:
        ctx.outcomes = {}


def trim_batch(messages: list[dict[str, JsonValue]], calls: list[ToolCall], *, keep: bool) -> None:
    """Drop a batch's messages from the end of ``messages`` (when resuming into it).

    Finds the assistant message listing exactly ``calls``; removes the tool
    messages after it, and the message itself unless ``keep``. A checkpoint
    written while the run was stopping may hold them already.
    """
    ids = [call.tool_call_id for call in calls]
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        entries: Any = message.get("tool_calls")
        if message.get("role") == "assistant" and isinstance(entries, list):
            if [entry.get("id") for entry in entries if isinstance(entry, dict)] == ids:
                del messages[index + 1 if keep else index :]
            return
        if message.get("role") != "tool":
            return


__all__ = [
    "answer_message",
    "apply_tool_result",
    "close_batch",
    "no_result_message",
    "tool_call_message",
    "tool_calls_message",
    "tool_result_message",
    "trim_batch",
]
