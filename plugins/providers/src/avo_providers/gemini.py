"""Google Gemini (Generative Language API v1beta) and :class:`GeminiProvider`.

``POST {base_url}/v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse`` with ``x-goog-api-key``. Tool calls are
``functionCall`` parts of a ``model`` turn, results ``functionResponse`` parts.
The ``thoughtSignature`` Gemini attaches to a function call travels with the
call in the run's transcript (``ToolCall.signature``) and goes back with it,
also after a resume.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from avo.content_blocks import is_media
from avo.models import FinishReason, ModelRequest, ModelResponse, TokenUsage, ToolCall, new_id
from avo_providers.base_http import HTTPProvider
from avo_providers.http_common import (
    decode_json,
    iter_sse_events,
    json_safe_content,
    malformed,
    map_finish,
    parse_json_content,
    parse_tool_arguments,
    recorded_call_arguments,
    require_tool_name,
    stream_error,
    vendor_call_id,
    vendor_result_id,
)
from avo_providers.media import gemini_media_part, gemini_parts, is_blocks, text_only
from avo_providers.openai_compatible import flush_chunks, text_chunks

if TYPE_CHECKING:
    from avo.providers.streaming import ModelChunk

GEMINI_FINISH: dict[str, FinishReason] = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "SPII": FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": FinishReason.CONTENT_FILTER,
}
"""Gemini ``finishReason`` values (the rest, e.g. ``OTHER``, are unknown)."""


# The OpenAPI-3.0 subset Gemini's ``Schema`` accepts; anything else is dropped.
_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "properties",
        "required",
        "items",
        "anyOf",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
    }
)


class _Recursive(Exception):
    """The schema refers to itself: the subset (which has no ``$ref``) cannot say it."""


def gemini_schema(
    schema: Any, defs: dict[str, Any] | None = None, _expanding: tuple[str, ...] = ()
) -> Any:
    """A JSON Schema rewritten to Gemini's subset: ``$ref`` inlined, unknown keys dropped.

    Raises ``_Recursive`` for a schema that refers to itself (a tree of nodes);
    :func:`_needs_json_schema` sends such schemas as JSON Schema instead.
    """
    if not isinstance(schema, dict):
        return schema
    defs = defs if defs is not None else dict(schema.get("$defs") or {})
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in _expanding:
            raise _Recursive(name)
        return gemini_schema(defs.get(name, {}), defs, (*_expanding, name))
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: gemini_schema(sub, defs, _expanding) for name, sub in value.items()}
        elif key == "items":
            out[key] = gemini_schema(value, defs, _expanding)
        elif key == "anyOf" and isinstance(value, list):
            options = [gemini_schema(v, defs, _expanding) for v in value if v.get("type") != "null"]
            if len(options) < len(value):
                out["nullable"] = True
            if len(options) == 1:
                out.update(options[0])
            else:
                out[key] = options
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out["type"] = types[0] if types else "string"
            if "null" in value:
                out["nullable"] = True
        else:
            out[key] = value
    return out


def _needs_json_schema(schema: Any) -> bool:
    """True when Gemini's OpenAPI subset cannot say what ``schema`` means.

    An object without listed properties (``dict[str, X]``, ``dict[str, Any]``)
    would reach Gemini as an object with no properties, which it refuses
    ("properties: should be non-empty for OBJECT type"); such schemas go as
    JSON Schema (``parametersJsonSchema`` / ``responseJsonSchema``) instead.
    So does a schema that refers to itself (the subset has no ``$ref``).
    """
    from avo.schemas import walk

    try:
        gemini_schema(schema)
    except _Recursive:
        return True
    found: list[bool] = []

    def visit(node: dict[str, Any]) -> None:
        extra = node.get("additionalProperties")
        open_map = isinstance(extra, dict) or extra is True
        if open_map or (node.get("type") == "object" and not node.get("properties")):
            found.append(True)

    walk(schema, visit)
    return bool(found)


def gemini_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """A function declaration's parameters: none for a tool without arguments, else
    ``parameters`` (Gemini's subset) or, when the subset would lose meaning,
    ``parametersJsonSchema`` (the schema as is)."""
    if (
        not schema.get("properties")
        and "$ref" not in schema
        and schema.get("additionalProperties") in (None, False)
    ):
        return {}  # no arguments: Gemini wants no parameters declared at all
    if _needs_json_schema(schema):
        return {"parametersJsonSchema": schema}
    return {"parameters": gemini_schema(schema)}


def gemini_contents(
    messages: list[dict[str, Any]],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(systemInstruction, contents)``; consecutive same-role turns are merged.

    A recorded call goes back with its ``thoughtSignature`` and, when Gemini
    gave one, its ``id`` (its response carries the same ``id``).
    """
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    names_by_id: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        parts: list[dict[str, Any]] = []
        if role == "system":
            text = json_safe_content(message.get("content"))
            if text:
                system.append({"text": text})
            continue
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            name = message.get("name") or names_by_id.get(call_id, "tool")
            content = message.get("content")
            media: list[dict[str, Any]] = []
            if is_blocks(content):  # the media go in functionResponse.parts
                media = [gemini_media_part(b) for b in content if is_media(b)]
                content = text_only(content)
            result = parse_json_content(content)
            response = result if isinstance(result, dict) else {"result": result}
            function_response: dict[str, Any] = {"name": name, "response": response}
            if media:
                function_response["parts"] = media
            if message.get("vendor_id"):
                function_response["id"] = vendor_result_id(message)
            role, parts = "user", [{"functionResponse": function_response}]
        else:
            content = message.get("content")
            if is_blocks(content):
                parts.extend(gemini_parts(content))
            else:
                text = json_safe_content(content)
                if text:
                    parts.append({"text": text})
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                names_by_id[str(call.get("id"))] = function.get("name", "")
                args = recorded_call_arguments(function)
                function_call: dict[str, Any] = {"name": function.get("name"), "args": args}
                if call.get("vendor_id"):
                    function_call["id"] = vendor_call_id(call)
                part: dict[str, Any] = {"functionCall": function_call}
                if call.get("signature"):
                    part["thoughtSignature"] = call["signature"]
                parts.append(part)
            role = "model" if role == "assistant" else "user"
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return ({"parts": system} if system else None), contents


def build_gemini_payload(request: ModelRequest, *, max_tokens: int) -> dict[str, Any]:
    """A ``generateContent`` body.

    With ``request.output_schema`` and no tools, Gemini's JSON mode
    (``responseMimeType`` + ``responseSchema``); with tools (Gemini does not mix
    function calling and JSON mode) the schema goes in as an instruction.
    """
    system, contents = gemini_contents(request.messages)
    config: dict[str, Any] = {"maxOutputTokens": max_tokens}
    payload: dict[str, Any] = {"contents": contents, "generationConfig": config}
    schema = request.output_schema
    if schema is not None and not request.tools:
        config["responseMimeType"] = "application/json"
        if _needs_json_schema(schema):
            config["responseJsonSchema"] = {k: v for k, v in schema.items() if k != "title"}
        else:
            config["responseSchema"] = gemini_schema(schema)
    elif schema is not None:
        instruction = (
            "When you give your final answer, reply with only a JSON object matching this "
            f"JSON schema: {json.dumps(schema, sort_keys=True)}"
        )
        system = {"parts": [*(system or {}).get("parts", []), {"text": instruction}]}
    if system:
        payload["systemInstruction"] = system
    if request.tools:
        payload["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": tool.name,
                        "description": tool.description,
                        **gemini_parameters(tool.input_schema),
                    }
                    for tool in request.tools
                ]
            }
        ]
    return payload


def _usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    thoughts = int(raw.get("thoughtsTokenCount") or 0)
    output = int(raw.get("candidatesTokenCount") or 0) + thoughts
    # promptTokenCount includes the cached tokens (cachedContentTokenCount).
    return TokenUsage(
        input_tokens=int(raw.get("promptTokenCount") or 0),
        output_tokens=output,
        cache_read_tokens=int(raw.get("cachedContentTokenCount") or 0),
        reasoning_tokens=thoughts,
    )


def _candidate(data: Any, vendor: str) -> dict[str, Any]:
    """The first candidate; a prompt Gemini blocked is an empty, filtered candidate."""
    if not isinstance(data, dict):
        raise malformed(vendor, f"expected a JSON object, got {type(data).__name__}")
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        blocked = (data.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            return {"content": {"parts": []}, "finishReason": "SAFETY", "blocked": str(blocked)}
        raise malformed(vendor, "no 'candidates' in the response")
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise malformed(vendor, "candidate is not an object")
    return candidate


# finishReasons that mean "the model produced a broken answer" when nothing came.
_FAILED_FINISH = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "OTHER"})


def _finish(
    vendor: str, candidate: dict[str, Any], *, produced: bool, calls: bool
) -> FinishReason | None:
    """The candidate's FinishReason; a broken, empty answer is a malformed response."""
    reason = candidate.get("finishReason")
    if not produced and reason in _FAILED_FINISH:
        raise malformed(vendor, f"no answer: the candidate finished with {reason}")
    finish = map_finish(GEMINI_FINISH, reason)
    if calls and finish is FinishReason.STOP:  # Gemini says STOP after function calls too
        return FinishReason.TOOL_CALLS
    return finish


def _tool_call(vendor: str, part: dict[str, Any]) -> ToolCall:
    call = part["functionCall"] or {}
    name = require_tool_name(vendor, call.get("name"))
    arguments = parse_tool_arguments(vendor, call.get("args"), name)
    signature = str(part["thoughtSignature"]) if part.get("thoughtSignature") else None
    if call.get("id"):
        return ToolCall(
            tool_call_id=str(call["id"]), name=name, arguments=arguments, signature=signature
        )
    return ToolCall(name=name, arguments=arguments, signature=signature)


def parse_gemini_response(data: Any, *, vendor: str = "Gemini") -> ModelResponse:
    """A ``generateContent`` response as a ModelResponse (every functionCall, in order)."""
    from avo.providers.streaming import split_thinking

    candidate = _candidate(data, vendor)
    parts = (candidate.get("content") or {}).get("parts") or []
    calls = [_tool_call(vendor, part) for part in parts if "functionCall" in part]
    finish = _finish(vendor, candidate, produced=bool(parts), calls=bool(calls))
    usage = _usage(data.get("usageMetadata"))
    response_id = str(data.get("responseId") or new_id())
    if calls:
        return ModelResponse(
            response_id=response_id, tool_calls=calls, usage=usage, finish_reason=finish
        )
    text = "".join(str(p.get("text", "")) for p in parts if "text" in p and not p.get("thought"))
    _, answer = split_thinking(text)
    return ModelResponse(response_id=response_id, content=answer, usage=usage, finish_reason=finish)


async def stream_gemini_chunks(
    lines: AsyncIterator[str], *, transport_name: str = "Gemini"
) -> AsyncIterator[ModelChunk]:
    """Normalized chunks from ``streamGenerateContent?alt=sse``; no finishReason means cut off."""
    from avo.providers.streaming import ModelChunk, ThinkingStreamParser

    parser = ThinkingStreamParser()
    finished = produced = False
    calls = 0
    response_id: str | None = None
    async for _event, data in iter_sse_events(lines):
        obj = decode_json(transport_name, data)
        if isinstance(obj, dict) and "error" in obj:
            raise stream_error(transport_name, obj["error"])
        candidate = _candidate(obj, transport_name)
        response_id = response_id or obj.get("responseId")
        for part in (candidate.get("content") or {}).get("parts") or []:
            if "functionCall" in part:
                call = part["functionCall"] or {}
                delta: dict[str, Any] = {
                    "index": calls,
                    "arguments": json.dumps(call.get("args") or {}),
                }
                if call.get("id"):
                    delta["id"] = str(call["id"])
                if call.get("name"):
                    delta["name"] = call["name"]
                if part.get("thoughtSignature"):
                    delta["signature"] = str(part["thoughtSignature"])
                calls += 1
                yield ModelChunk(tool_call_delta=delta, response_id=response_id)
            elif part.get("thought") and part.get("text"):
                yield ModelChunk(thought=str(part["text"]), response_id=response_id)
            elif part.get("text"):
                for chunk in text_chunks(parser, str(part["text"]), response_id):
                    yield chunk
        usage = _usage(obj.get("usageMetadata"))
        if usage is not None:
            yield ModelChunk(usage=usage, response_id=response_id)
        produced = produced or bool((candidate.get("content") or {}).get("parts"))
        if candidate.get("finishReason"):
            finish = _finish(transport_name, candidate, produced=produced, calls=calls > 0)
            finished = True
            reason = (finish or FinishReason.UNKNOWN).value
            yield ModelChunk(finish_reason=reason, response_id=response_id)
    for chunk in flush_chunks(parser, response_id):
        yield chunk
    if not finished:
        raise malformed(transport_name, "the stream ended before a finishReason")


class GeminiProvider(HTTPProvider):
    """Google's Gemini API."""

    name: ClassVar[str] = "gemini"
    vendor: ClassVar[str] = "Gemini"
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com"
    api_style: ClassVar[str] = "gemini"
    supports_output_schema: ClassVar[bool] = True

    def headers(self) -> dict[str, str]:
        """``x-goog-api-key`` (never a ``?key=`` query parameter, which would leak into logs)."""
        return {"x-goog-api-key": self.config.api_key} if self.config.api_key else {}

    def endpoint(self, *, stream: bool) -> str:
        """``generateContent`` or ``streamGenerateContent?alt=sse``."""
        base = f"{self.base_url}/v1beta/models/{self.model}"
        return f"{base}:streamGenerateContent?alt=sse" if stream else f"{base}:generateContent"

    def build_payload(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """A ``generateContent`` body (the same for streaming)."""
        return build_gemini_payload(request, max_tokens=self.max_completion_tokens)

    def parse_response(self, data: Any) -> ModelResponse:
        """A ``generateContent`` response."""
        return parse_gemini_response(data, vendor=self.vendor)

    def parse_stream(self, lines: AsyncIterator[str]) -> AsyncIterator[ModelChunk]:
        """A ``streamGenerateContent`` SSE stream."""
        return stream_gemini_chunks(lines, transport_name=self.vendor)


__all__ = [
    "GEMINI_FINISH",
    "GeminiProvider",
    "build_gemini_payload",
    "gemini_contents",
    "gemini_parameters",
    "gemini_schema",
    "parse_gemini_response",
    "stream_gemini_chunks",
]
