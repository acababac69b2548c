"""LangChain tools as avo tools, and avo tool metadata as LangChain tool schemas.

:func:`avo_tool_from_lc` wraps any LangChain ``BaseTool`` (a ``@tool``
function, a ``StructuredTool``, a toolkit's tools) so an avo run can call it.
The model is shown exactly the JSON schema LangChain itself would send a
vendor for that tool (``convert_to_openai_tool``), so arguments the model
writes for it are the ones the tool expects. A call runs ``tool.ainvoke``
(a sync-only tool runs in a worker thread, as LangChain does it); what it
returns becomes the call's output as JSON (a LangChain message: its content).
A tool that fails fails the call, with LangChain's message; a tool built with
``handle_tool_error`` returns its own error text instead, as in LangChain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import JsonValue
from pydantic_core import to_jsonable_python

from avo.exceptions import ConfigError, ToolExecutionError
from avo.models import ArgumentKind, ToolMetadata, ToolRisk


def lc_tool_schema(tool: Any) -> dict[str, Any]:
    """The OpenAI-style function entry LangChain makes for ``tool`` (name, description,
    parameters): a ``BaseTool``, a pydantic model, a function or a JSON schema dict."""
    try:
        converted = convert_to_openai_tool(tool)
    except Exception as exc:  # LangChain raises ValueError/TypeError/NotImplementedError
        raise ConfigError(
            f"cannot turn {tool!r} into a tool schema ({exc}); pass a LangChain tool, "
            "a pydantic model, a typed function with a docstring, or a JSON schema"
        ) from exc
    return dict(converted["function"])


def metadata_from_lc(
    tool: Any,
    *,
    risk: ToolRisk | None = None,
    argument_kinds: Mapping[str, ArgumentKind | str] | None = None,
) -> ToolMetadata:
    """avo ``ToolMetadata`` for anything LangChain's ``bind_tools`` accepts."""
    function = lc_tool_schema(tool)
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    return ToolMetadata(
        name=function["name"],
        description=function.get("description") or function["name"],
        input_schema=parameters,
        risk=risk,
        argument_kinds={k: ArgumentKind(v) for k, v in (argument_kinds or {}).items()},
    )


def _output(value: Any) -> JsonValue:
    """A tool's return value as JSON (a message: its content; otherwise JSON or text)."""
    if isinstance(value, BaseMessage):
        value = value.content
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return to_jsonable_python(value, fallback=str)  # type: ignore[no-any-return]


class LangChainTool:
    """An avo tool that runs a LangChain ``BaseTool`` (see :func:`avo_tool_from_lc`)."""

    def __init__(self, tool: BaseTool, metadata: ToolMetadata) -> None:
        self.tool = tool
        self.name = metadata.name
        self._metadata = metadata

    @property
    def metadata(self) -> ToolMetadata:
        """Name, description, the LangChain schema and the declared risk."""
        return self._metadata

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> JsonValue:
        """Run the LangChain tool with ``arguments``; its result as JSON."""
        try:
            value = await self.tool.ainvoke(dict(arguments))
        except Exception as exc:
            raise ToolExecutionError(
                f"LangChain tool {self.name!r} failed: {type(exc).__name__}: {exc}",
                tool_name=self.name,
            ) from exc
        return _output(value)

    def __repr__(self) -> str:
        return f"LangChainTool({self.name!r})"


def avo_tool_from_lc(
    tool: BaseTool,
    *,
    risk: ToolRisk | str | None = None,
    argument_kinds: Mapping[str, ArgumentKind | str] | None = None,
) -> LangChainTool:
    """A LangChain tool as an avo tool (for ``AgentRuntime(tools=[...])``).

    ``risk`` classifies it for avo's permission modes (LangChain tools declare
    none; undeclared counts as ``execute``); ``argument_kinds`` says which
    arguments are paths, URLs or commands, for argument-aware permission rules.
    """
    if not isinstance(tool, BaseTool):
        raise ConfigError(
            f"avo_tool_from_lc needs a LangChain BaseTool, got {type(tool).__name__}; "
            "wrap a function with langchain_core.tools.tool first"
        )
    if isinstance(risk, str) and risk not in {r.value for r in ToolRisk}:
        raise ConfigError(
            f"tool risk {risk!r} is unknown; use {', '.join(r.value for r in ToolRisk)}"
        )
    level = ToolRisk(risk) if isinstance(risk, str) else risk
    return LangChainTool(tool, metadata_from_lc(tool, risk=level, argument_kinds=argument_kinds))


__all__ = ["LangChainTool", "avo_tool_from_lc", "lc_tool_schema", "metadata_from_lc"]
