"""FunctionTool, ToolRegistry, schema helpers."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from json.encoder import c_encode_basestring_ascii, c_make_encoder  # type: ignore[attr-defined]
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, JsonValue, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from avo import _native
from avo.exceptions import (
    DuplicateToolError,
    ToolAlreadyCompletedError,
    ToolExecutionError,
    ToolInputRequiredError,
    ToolNotFoundError,
    ToolValidationError,
)
from avo.models import ToolCall, ToolEffect, ToolMetadata, ToolResult, ToolRisk, trusted, utc_now
from avo.risk import ARGUMENT_KIND_HINT, ArgumentKind

ArgumentsT = TypeVar("ArgumentsT", bound=BaseModel)
ToolCallable = Callable[[ArgumentsT], JsonValue | Awaitable[JsonValue]]


@runtime_checkable
class Tool(Protocol):
    """What the registry accepts: metadata plus an async invoke."""

    @property
    def metadata(self) -> ToolMetadata:
        """Name, description, JSON schema and risk class shown to the model."""
        ...

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> JsonValue:
        """Run the tool; return a plain JSON value."""
        ...


def to_json_schema(model: type[BaseModel], *, titles: bool = False) -> dict[str, JsonValue]:
    """JSON schema of ``model``: models closed (``additionalProperties: false``),
    ``dict[str, X]`` as ``additionalProperties: X``, titles dropped unless ``titles``.

    See :mod:`avo.schemas`.
    """
    from avo.schemas import to_json_schema as build

    return build(model, titles=titles)


def to_strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict form of ``schema`` (OpenAI strict mode), or None when it has none."""
    from avo.schemas import to_strict_schema as build

    return build(schema)


def to_openai_function(tool_name: str, description: str, model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI ``tools[]`` entry for a tool: strict when its schema has a strict form."""
    schema = to_json_schema(model)
    strict = to_strict_schema(schema)
    return {
        "type": "function",
        "function": {
            "name": tool_name,
            "description": description,
            "parameters": strict if strict is not None else schema,
            "strict": strict is not None,
        },
    }


def to_anthropic_tool(tool_name: str, description: str, model: type[BaseModel]) -> dict[str, Any]:
    """The Anthropic ``tools[]`` entry for a tool."""
    return {"name": tool_name, "description": description, "input_schema": to_json_schema(model)}


def argument_hint(kind: ArgumentKind | str) -> dict[str, JsonValue]:
    """A ``json_schema_extra`` declaring a pydantic field's :class:`ArgumentKind`.

    ``path: str = Field(json_schema_extra=argument_hint("path"))`` puts
    ``"x-avo-kind": "path"`` in the schema; ``ToolMetadata`` reads it into
    ``argument_kinds`` (and keeps it out of what the model is shown).
    """
    return {ARGUMENT_KIND_HINT: ArgumentKind(kind).value}


class FunctionTool(Generic[ArgumentsT]):
    """A tool made from a function and a pydantic arguments model.

    ``function`` may be sync or async. A sync function runs in a worker thread
    (``run_in_thread=False`` runs it on the event loop, for trivial functions).
    ``risk`` classifies the tool for the permission modes (None = undeclared);
    ``argument_kinds`` says which arguments are paths, URLs, commands or free
    text (see :class:`~avo.models.ToolMetadata`), e.g. ``{"path": "path"}``;
    ``asks_human`` marks a tool whose answer comes from a person (the run pauses
    for it; the function is not called). ``effect`` says what running the same
    call again does (:class:`~avo.models.ToolEffect`; None derives it from ``risk``).
    ``schema_titles=True`` keeps the ``title`` keywords in the advertised schema.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        arguments_model: type[ArgumentsT],
        function: ToolCallable[ArgumentsT],
        risk: ToolRisk | None = None,
        run_in_thread: bool = True,
        argument_kinds: Mapping[str, ArgumentKind | str] | None = None,
        schema_titles: bool = False,
        asks_human: bool = False,
        effect: ToolEffect | None = None,
    ) -> None:
        if not (isinstance(arguments_model, type) and issubclass(arguments_model, BaseModel)):
            raise TypeError(
                f"arguments_model for tool {name!r} must be a pydantic BaseModel subclass, "
                f"got {arguments_model!r}"
            )
        self.name = name
        self.arguments_model = arguments_model
        self.function = function
        # A plain (sync) function runs in a worker thread so a slow one cannot stall
        # the event loop (other runs, timeouts, cancellation). Context variables
        # (e.g. a bound workspace) are carried into the thread.
        self._offload = run_in_thread and not inspect.iscoroutinefunction(function)
        self._metadata = ToolMetadata(
            name=name,
            description=description,
            input_schema=copy.deepcopy(to_json_schema(arguments_model, titles=schema_titles)),
            risk=risk,
            argument_kinds=dict(argument_kinds or {}),
            asks_human=asks_human,
            effect=effect,
        )

    @property
    def metadata(self) -> ToolMetadata:
        """The tool's metadata (schema derived from the arguments model)."""
        return self._metadata

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> JsonValue:
        """Validate ``arguments``, call the function, JSON-adapt what it returns."""
        try:
            parsed = self.arguments_model.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ToolValidationError(
                f"Invalid arguments for tool {self.name!r}: {exc}", tool_name=self.name
            ) from exc
        try:
            if self._offload:
                value = await asyncio.to_thread(self.function, parsed)
            else:
                value = self.function(parsed)
            if inspect.isawaitable(value):
                value = await value
            return to_jsonable_python(value)  # type: ignore[no-any-return]
        except ToolInputRequiredError:
            raise  # the run asks a person, then calls again
        except Exception as exc:
            raise ToolExecutionError(
                f"Tool {self.name!r} raised {type(exc).__name__}: {exc}", tool_name=self.name
            ) from exc


class ToolRegistry:
    """The tools a runtime may call, by unique name, in registration order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._metadata: list[ToolMetadata] | None = None
        self._risks: dict[str, ToolRisk] = {}
        for item in tools:
            self.register(item)

    def register(self, item: Tool) -> Tool:
        """Add a tool; DuplicateToolError when its name is taken."""
        name = item.metadata.name
        if name in self._tools:
            raise DuplicateToolError(
                f"a tool named {name!r} is already registered; tool names must be unique",
                tool_name=name,
            )
        self._tools[name] = item
        self._metadata = None
        self._risks.pop(name, None)
        return item

    def unregister(self, name: str) -> Tool:
        """Remove and return the tool called ``name``; ToolNotFoundError if absent.

        For tool sets that change while a runtime lives (an MCP server's
        ``tools/list_changed``): the runtime reads the registry for every model
        request, so the next step offers the new set.
        """
        tool = self.get(name)
        del self._tools[name]
        self._metadata = None
        return tool

    @property
    def metadata(self) -> list[ToolMetadata]:
        """Metadata of every tool, in registration order."""
        if self._metadata is None:
            self._metadata = [tool.metadata for tool in self._tools.values()]
        return list(self._metadata)

    def risk(self, name: str) -> ToolRisk:
        """The risk class of tool ``name`` (EXECUTE when undeclared or not registered)."""
        risk = self._risks.get(name)
        if risk is None:
            tool = self._tools.get(name)
            risk = tool.metadata.effective_risk if tool is not None else ToolRisk.EXECUTE
            self._risks[name] = risk
        return risk

    def metadata_of(self, name: str) -> ToolMetadata | None:
        """The metadata of tool ``name`` (None when it is not registered)."""
        tool = self._tools.get(name)
        return tool.metadata if tool is not None else None

    def asks_human(self, name: str) -> bool:
        """True when tool ``name`` is answered by a person (``ToolMetadata.asks_human``)."""
        metadata = self.metadata_of(name)
        return metadata is not None and metadata.asks_human

    def names(self) -> list[str]:
        """Registered tool names, in registration order."""
        return list(self._tools)

    def with_tools(self, extra: Iterable[Tool]) -> ToolRegistry:
        """A new registry of this one's tools, then ``extra``; DuplicateToolError on a clash.

        How a run's bundles add their tools (avo.bundles). A registry that runs
        its calls elsewhere (an engine's workflow) returns one of its own kind,
        so the bundles' calls go the same way.
        """
        made = ToolRegistry(self._tools.values())
        for item in extra:
            made.register(item)
        return made

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool:
        """The tool called ``name``; ToolNotFoundError if absent."""
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(self._tools) or "none"
            raise ToolNotFoundError(
                f"Tool {name!r} is not registered (registered tools: {known})", tool_name=name
            ) from None

    async def invoke(self, call: ToolCall, *, completed_tool_call_ids: set[str]) -> ToolResult:
        """Run ``call`` and wrap the outcome in a ToolResult.

        Refuses a call whose id already has a durable result (ToolAlreadyCompletedError).
        Not-found, validation and execution errors become failed results.
        """
        if call.tool_call_id in completed_tool_call_ids:
            raise ToolAlreadyCompletedError(
                f"tool call {call.tool_call_id!r} ({call.name}) already completed; "
                "refusing to run it twice",
                tool_call_id=call.tool_call_id,
            )
        started_at = utc_now()
        started = time.perf_counter()
        try:
            output = await self.get(call.name).invoke(call.arguments)
        except (ToolNotFoundError, ToolValidationError, ToolExecutionError) as exc:
            return failed_result(call, str(exc), started_at, started)
        try:
            output = _json_value().validate_python(output)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"][1:]) or "the value"
            return failed_result(
                call,
                f"Tool {call.name!r} returned output that is not JSON data: {where} is of type "
                f"{type(problem['input']).__name__}; return dicts with string keys, lists, "
                "strings, numbers, booleans or None",
                started_at,
                started,
            )
        # Every other field is the kernel's own (a validated call, aware clock
        # readings, finished >= started, a non-negative duration): build the result
        # without validating them again.
        return trusted(
            ToolResult,
            {
                "tool_call_id": call.tool_call_id,
                "tool_name": call.name,
                "success": True,
                "output": output,
                "error": None,
                "started_at": started_at,
                "finished_at": max(utc_now(), started_at),
                "duration_ms": (time.perf_counter() - started) * 1000,
            },
        )


def failed_result(
    call: ToolCall,
    error: str,
    started_at: datetime,
    started: float,
    *,
    clock: Callable[[], datetime] = utc_now,
    timer: Callable[[], float] = time.perf_counter,
) -> ToolResult:
    """A failed result of ``call`` that started at ``started_at`` (``started``: ``timer()``).

    ``clock`` and ``timer`` read the finish (a runtime passes its own).
    """
    return ToolResult(
        tool_call_id=call.tool_call_id,
        tool_name=call.name,
        success=False,
        error=error,
        started_at=started_at,
        finished_at=max(clock(), started_at),
        duration_ms=(timer() - started) * 1000,
    )


_JSON_VALUE: TypeAdapter[JsonValue] | None = None


def _json_value() -> TypeAdapter[JsonValue]:
    """The JsonValue validator (built on first use: ``import avo`` stays light)."""
    global _JSON_VALUE
    if _JSON_VALUE is None:
        _JSON_VALUE = TypeAdapter(JsonValue)
    return _JSON_VALUE


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
# The C encoder JSONEncoder.encode would build on every call, built once (no
# circular-reference markers: the values are JSON data made by the loop).
_C_CANONICAL = (
    c_make_encoder(None, str, c_encode_basestring_ascii, None, ":", ",", True, False, True)
    if c_make_encoder is not None and c_encode_basestring_ascii is not None
    else None
)


# The extension's twins of the functions below (None without it): each returns
# None for a value it leaves to the Python code that follows it.
_native_canonical_json = _native.function("canonical_json")
_native_canonical_fingerprint = _native.function("canonical_fingerprint")
_native_sha256_hex = _native.function("sha256_hex")
_native_tool_result_fingerprint = _native.function("tool_result_fingerprint")


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys (one shared encoder; the loop calls this every step)."""
    if _native_canonical_json is not None:
        text: str | None = _native_canonical_json(value)
        if text is not None:
            return text
    if _C_CANONICAL is None or type(value) is str:  # pragma: no cover - pure-Python json
        return _CANONICAL.encode(value)
    return "".join(_C_CANONICAL(value, 0))


def canonical_fingerprint(value: JsonValue) -> str:
    """sha256 of ``json.dumps(value, sort_keys=True)``."""
    if _native_canonical_fingerprint is not None:
        digest: str | None = _native_canonical_fingerprint(value)
        if digest is not None:
            return digest
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def sha256_hex(text: str) -> str:
    """``hashlib.sha256(text.encode()).hexdigest()`` (the fingerprints' digest)."""
    if _native_sha256_hex is not None:
        digest: str | None = _native_sha256_hex(text)
        if digest is not None:
            return digest
    return hashlib.sha256(text.encode()).hexdigest()


_last_call: tuple[object, str, str] = (None, "", "")


def call_json(call: ToolCall) -> tuple[str, str]:
    """``(canonical_json(arguments), canonical_json({"name", "arguments"}))`` of ``call``.

    One step needs both three times (the assistant message, the action and the
    response fingerprints): the last call's are kept, by identity.
    """
    global _last_call
    last = _last_call
    if last[0] is call:
        return last[1], last[2]
    arguments = canonical_json(call.arguments)
    # canonical_json({"name": n, "arguments": a}), assembled: keys sort "arguments" < "name".
    whole = f'{{"arguments":{arguments},"name":{canonical_json(call.name)}}}'
    _last_call = (call, arguments, whole)
    return arguments, whole


def tool_call_fingerprint(call: ToolCall) -> str:
    """Fingerprint of name + arguments (the call id is deliberately excluded)."""
    return sha256_hex(call_json(call)[1])


def tool_result_fingerprint(result: ToolResult) -> str:
    """Fingerprint of tool_name, success, output and error."""
    if _native_tool_result_fingerprint is not None:
        digest: str | None = _native_tool_result_fingerprint(
            result.tool_name, result.success, result.output, result.error
        )
        if digest is not None:
            return digest
    return canonical_fingerprint(
        {
            "tool_name": result.tool_name,
            "success": result.success,
            "output": result.output,
            "error": result.error,
        }
    )


__all__ = [
    "ArgumentKind",
    "FunctionTool",
    "Tool",
    "ToolCallable",
    "ToolRegistry",
    "argument_hint",
    "canonical_fingerprint",
    "canonical_json",
    "to_anthropic_tool",
    "to_json_schema",
    "to_openai_function",
    "to_strict_schema",
    "tool_call_fingerprint",
    "tool_result_fingerprint",
]
