"""Messages both ways: avo's transcript dicts and LangChain's message objects.

avo keeps a run's transcript as plain dicts in OpenAI's shape (``role``
``system`` / ``user`` / ``assistant`` / ``tool``; an assistant turn that asks
for tools lists them under ``tool_calls`` with their arguments as a JSON
string). LangChain has a class per role (``SystemMessage``, ``HumanMessage``,
``AIMessage``, ``ToolMessage``) and keeps tool-call arguments as a dict.

Call ids: a call's id on the LangChain side is the id its vendor gave it
(avo's ``vendor_id``), else avo's own id, so a tool result always names the
call it answers whichever side made the call. A response turns into an
``AIMessage`` with its token usage as ``usage_metadata`` and its finish
reason under ``response_metadata["finish_reason"]``, and back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from pydantic import JsonValue
from pydantic_core import to_jsonable_python

from avo.exceptions import ConfigError, ProviderError
from avo.models import FinishReason, ModelResponse, TokenUsage, ToolCall, new_id

_FINISH = {reason.value: reason for reason in FinishReason}
# The spellings LangChain integrations put in response_metadata, onto avo's.
_VENDOR_FINISH = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "STOP": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "MAX_TOKENS": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "SAFETY": FinishReason.CONTENT_FILTER,
}


# ------------------------------------------------------------------ avo -> LangChain


def _lc_content(content: Any) -> str | list[str | dict[Any, Any]]:
    """avo message content as LangChain content (text stays text; blocks pass through)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return [item if isinstance(item, str | dict) else str(item) for item in content]
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict (avo records them as a JSON string)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw in (None, ""):
        return {}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"tool-call arguments {str(raw)[:80]!r} are not JSON; record them as a JSON object"
        ) from exc
    if not isinstance(parsed, dict):
        raise ConfigError(f"tool-call arguments {str(raw)[:80]!r} are not a JSON object")
    return parsed


def to_langchain_message(message: Mapping[str, Any]) -> BaseMessage:
    """One avo transcript message as a LangChain message."""
    role = message.get("role")
    content = _lc_content(message.get("content"))
    if role == "system":
        return SystemMessage(content=content)
    if role == "user":
        return HumanMessage(content=content)
    if role == "assistant":
        calls = []
        for entry in message.get("tool_calls") or ():
            function = entry.get("function") or {}
            calls.append(
                {
                    "name": function.get("name") or entry.get("name"),
                    "args": _arguments(function.get("arguments", entry.get("arguments"))),
                    "id": entry.get("vendor_id") or entry.get("id"),
                    "type": "tool_call",
                }
            )
        return AIMessage(content=content, tool_calls=calls)
    if role == "tool":
        return ToolMessage(
            content=content,
            tool_call_id=str(message.get("vendor_id") or message.get("tool_call_id") or ""),
            name=message.get("name"),
        )
    if isinstance(role, str) and role:
        return ChatMessage(role=role, content=content)
    raise ConfigError(f"avo message has role {role!r}; expected system, user, assistant or tool")


def to_langchain_messages(messages: Iterable[Mapping[str, Any]]) -> list[BaseMessage]:
    """A whole avo transcript as LangChain messages, in order."""
    return [to_langchain_message(message) for message in messages]


def usage_metadata(usage: TokenUsage | None) -> UsageMetadata | None:
    """avo token usage as LangChain's ``usage_metadata``."""
    if usage is None:
        return None
    return UsageMetadata(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
    )


def to_langchain_ai_message(response: ModelResponse, *, model: str | None = None) -> AIMessage:
    """An avo provider's response as the ``AIMessage`` a LangChain chat model returns."""
    metadata: dict[str, Any] = {}
    if response.finish_reason is not None:
        metadata["finish_reason"] = response.finish_reason.value
    if model:
        metadata["model_name"] = model
    calls = [
        {
            "name": call.name,
            "args": dict(call.arguments),
            "id": call.vendor_id or call.tool_call_id,
            "type": "tool_call",
        }
        for call in response.tool_calls
    ]
    return AIMessage(
        content=response.content or "",
        tool_calls=calls,
        usage_metadata=usage_metadata(response.usage),
        response_metadata=metadata,
        id=response.response_id,
    )


# ------------------------------------------------------------------ LangChain -> avo


def _avo_content(content: Any) -> JsonValue:
    """LangChain content as avo content: text as one string, other blocks kept."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        blocks: list[JsonValue] = []
        for item in content:
            if isinstance(item, str):
                blocks.append({"type": "text", "text": item})
            elif isinstance(item, dict):
                blocks.append(to_jsonable_python(item, fallback=str))
        if all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
            return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
        return blocks
    return str(content)


def _call_entry(name: str, args: Any, call_id: str | None) -> dict[str, JsonValue]:
    arguments = json.dumps(to_jsonable_python(args or {}, fallback=str), ensure_ascii=False)
    return {
        "id": call_id or new_id(),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def from_langchain_message(message: BaseMessage) -> dict[str, JsonValue]:
    """One LangChain message as an avo transcript message."""
    content = _avo_content(message.content)
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": content}
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": content}
    if isinstance(message, AIMessage):
        calls = [_call_entry(c["name"], c.get("args"), c.get("id")) for c in message.tool_calls]
        if not calls:
            return {"role": "assistant", "content": content}
        text = content if content not in ("", []) else None
        return {"role": "assistant", "content": text, "tool_calls": list(calls)}
    if isinstance(message, ToolMessage):
        out: dict[str, JsonValue] = {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": content,
        }
        if message.name:
            out["name"] = message.name
        return out
    if isinstance(message, FunctionMessage):
        return {
            "role": "tool",
            "tool_call_id": message.name,
            "name": message.name,
            "content": content,
        }
    if isinstance(message, ChatMessage):
        role = {"human": "user", "ai": "assistant"}.get(message.role, message.role)
        return {"role": role, "content": content}
    raise ConfigError(
        f"LangChain message of type {type(message).__name__} has no avo counterpart; "
        "use a system, human, AI or tool message"
    )


def from_langchain_messages(messages: Sequence[BaseMessage]) -> list[dict[str, JsonValue]]:
    """LangChain messages as an avo transcript, in order."""
    return [from_langchain_message(message) for message in messages]


avo_messages_from_lc = from_langchain_messages
"""LangChain messages as an avo transcript (the name the API reference gives it)."""


def finish_reason_of(metadata: Mapping[str, Any]) -> FinishReason | None:
    """The finish reason a LangChain integration reported, in avo's words."""
    raw = metadata.get("finish_reason") or metadata.get("stop_reason")
    if not isinstance(raw, str) or not raw:
        return None
    return _FINISH.get(raw) or _VENDOR_FINISH.get(raw) or FinishReason.UNKNOWN


def from_langchain_ai_message(message: BaseMessage) -> ModelResponse:
    """A LangChain chat model's ``AIMessage`` as an avo ``ModelResponse``.

    Tool calls keep LangChain's id as ``vendor_id`` (the kernel gives each call
    its own id and sends the vendor's back). Calls LangChain could not parse
    (``invalid_tool_calls``) are a provider error the run may retry.
    """
    if not isinstance(message, AIMessage):
        raise ProviderError(
            f"the LangChain chat model returned a {type(message).__name__}, not an AIMessage",
            retryable=False,
        )
    if message.invalid_tool_calls:
        bad = message.invalid_tool_calls[0]
        raise ProviderError(
            f"the LangChain chat model made a tool call avo cannot read "
            f"({bad.get('name')!r}: {bad.get('error') or bad.get('args')!r})",
            retryable=True,
        )
    calls = [
        ToolCall(
            name=call["name"],
            arguments=to_jsonable_python(call.get("args") or {}, fallback=str),
            vendor_id=call.get("id"),
        )
        for call in message.tool_calls
    ]
    usage = None
    if message.usage_metadata:
        usage = TokenUsage(
            input_tokens=message.usage_metadata.get("input_tokens", 0),
            output_tokens=message.usage_metadata.get("output_tokens", 0),
        )
    finish = finish_reason_of(message.response_metadata or {})
    if calls:
        return ModelResponse(
            tool_calls=calls, usage=usage, finish_reason=finish or FinishReason.TOOL_CALLS
        )
    text = _avo_content(message.content)
    if not isinstance(text, str):
        text = (
            "".join(str(b.get("text", "")) for b in text if isinstance(b, dict) and "text" in b)
            if isinstance(text, list)
            else str(text)
        )
    return ModelResponse(content=text, usage=usage, finish_reason=finish or FinishReason.STOP)


__all__ = [
    "avo_messages_from_lc",
    "finish_reason_of",
    "from_langchain_ai_message",
    "from_langchain_message",
    "from_langchain_messages",
    "to_langchain_ai_message",
    "to_langchain_message",
    "to_langchain_messages",
    "usage_metadata",
]
