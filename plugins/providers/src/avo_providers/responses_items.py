"""The run's transcript as OpenAI Responses input items, and the tools' shape.

A reasoning item must reach the API followed by the item it led to (a function
call, or the answer's message), paired by their item ids; a request without
``store`` keeps nothing on OpenAI's side, so the pair has to come back whole.
The adapter therefore keeps, next to a turn's verbatim reasoning items, the
order of the turn's output items and their ids (an ``output_order`` thinking
block) and rebuilds the turn in that order, each function call and message
with the id the vendor gave it. A turn without reasoning goes back without ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from avo.models import ToolMetadata
from avo_providers.http_common import (
    json_safe_content,
    own_thinking,
    vendor_call_id,
    vendor_result_id,
)
from avo_providers.media import is_blocks, responses_function_output, responses_parts

SOURCE = "openai-responses"
"""The tag of the reasoning this adapter keeps (and the provider's name)."""

ToolChoice = str
"""``auto``, ``required``, ``none``, or the name of one tool the model must call."""


def responses_tools(tools: Sequence[ToolMetadata]) -> list[dict[str, Any]]:
    """Function tools in the Responses shape (flat, ``strict`` off like the Chat adapter).

    The Responses API makes function tools strict unless told otherwise; strict
    mode refuses most hand-written schemas (optional properties, open objects).
    """
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
            "strict": False,
        }
        for tool in tools
    ]


def tool_choice_value(choice: ToolChoice, tools: Sequence[ToolMetadata]) -> Any:
    """``tool_choice`` for this request (a named tool not offered now: ``auto``)."""
    if choice in ("auto", "required", "none"):
        return choice
    if not any(tool.name == choice for tool in tools):
        return "auto"
    return {"type": "function", "name": choice}


def order_block(output: Sequence[Any], source: str = SOURCE) -> dict[str, Any] | None:
    """The ``output_order`` block of a turn with reasoning (None without reasoning).

    One entry per output item, in order: ``{"reasoning": index}`` (the position
    among the turn's reasoning blocks), ``{"call": call_id, "id": item id}`` or
    ``{"message": item id}``.
    """
    entries: list[dict[str, Any]] = []
    reasoning = 0
    for item in output:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "reasoning":
            entries.append({"reasoning": reasoning})
            reasoning += 1
        elif kind == "function_call" and item.get("call_id"):
            entries.append({"call": str(item["call_id"]), "id": item.get("id")})
        elif kind == "message":
            entries.append({"message": item.get("id")})
    if not reasoning:
        return None
    return {"type": "output_order", "items": entries, "source": source}


def _call_item(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    return {
        "type": "function_call",
        "call_id": str(vendor_call_id(call)),
        "name": function.get("name"),
        "arguments": arguments if isinstance(arguments, str) else "{}",
    }


def _message_item(text: str, item_id: Any) -> dict[str, Any]:
    if not item_id:
        return {"role": "assistant", "content": text}
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def assistant_items(message: dict[str, Any], source: str = SOURCE) -> list[dict[str, Any]]:
    """One recorded assistant turn as the items the vendor produced, in its order."""
    blocks = own_thinking(message, source)
    reasoning = [
        block["item"]
        for block in blocks
        if block.get("type") == "reasoning" and isinstance(block.get("item"), dict)
    ]
    order = next((b for b in blocks if b.get("type") == "output_order"), None)
    text = json_safe_content(message.get("content"))
    calls = {
        str(vendor_call_id(call)): _call_item(call) for call in message.get("tool_calls") or []
    }
    items: list[dict[str, Any]] = []
    used: set[int] = set()
    for entry in (order or {}).get("items") or []:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("reasoning"), int) and entry["reasoning"] < len(reasoning):
            used.add(entry["reasoning"])
            items.append(reasoning[entry["reasoning"]])
        elif entry.get("call") in calls:
            item = calls.pop(entry["call"])
            if entry.get("id"):
                item["id"] = entry["id"]
            items.append(item)
        elif "message" in entry and text:
            items.append(_message_item(text, entry["message"]))
            text = ""
    items += [item for index, item in enumerate(reasoning) if index not in used]
    if text:
        items.append(_message_item(text, None))
    return items + list(calls.values())


def _text_content(content: Any) -> Any:
    """A message's content: a string, or input parts when it holds media."""
    if is_blocks(content):
        return responses_parts(content)
    return json_safe_content(content)


def responses_input(messages: list[dict[str, Any]], source: str = SOURCE) -> list[dict[str, Any]]:
    """The runtime's transcript as Responses input items.

    System and user messages become message items; an assistant turn its
    reasoning items (verbatim), text and ``function_call`` items, in the order
    the vendor produced them (see :func:`assistant_items`); a ``role: tool``
    message a ``function_call_output``.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            output = content if is_blocks(content) else json_safe_content(content)
            items.append(responses_function_output(str(vendor_result_id(message)), output))
        elif role == "assistant":
            items += assistant_items(message, source)
        else:
            items.append({"role": str(role or "user"), "content": _text_content(content)})
    return items


__all__ = [
    "SOURCE",
    "ToolChoice",
    "assistant_items",
    "order_block",
    "responses_input",
    "responses_tools",
    "tool_choice_value",
]
