"""Build a capped FunctionTool: every tool result is capped at the source."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from avo.models import ToolRisk
from avo.tools import FunctionTool
from avo_tools.output import DEFAULT_MAX_CHARS, cap_output

ArgsT = TypeVar("ArgsT", bound=BaseModel)


def build_tool(
    *,
    name: str,
    description: str,
    arguments_model: type[ArgsT],
    function: Callable[[ArgsT], Any | Awaitable[Any]],
    risk: ToolRisk,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> FunctionTool[ArgsT]:
    """A FunctionTool whose output strings/lists are capped (head + tail + marker)."""

    async def capped(arguments: ArgsT) -> Any:
        value = function(arguments)
        if inspect.isawaitable(value):
            value = await value
        return cap_output(value, max_chars=max_chars)

    return FunctionTool(
        name=name,
        description=description,
        arguments_model=arguments_model,
        function=capped,
        risk=risk,
    )
