"""Build a capped FunctionTool: every tool result is capped at the source."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from typing import Any, TypeVar

from pydantic import BaseModel

from avo.models import ToolRisk
from avo.tools import FunctionTool
from avo_tools.output import DEFAULT_MAX_CHARS, cap_output
from avo_tools.sandbox_binding import bind_sandbox, has_sandbox
from avo_tools.workspace import PathLike, Workspace, bind_workspace, has_workspace

ArgsT = TypeVar("ArgsT", bound=BaseModel)


def build_tool(
    *,
    name: str,
    description: str,
    arguments_model: type[ArgsT],
    function: Callable[[ArgsT], Any | Awaitable[Any]],
    risk: ToolRisk,
    max_chars: int = DEFAULT_MAX_CHARS,
    workspace: Workspace | PathLike | None = None,
    sandbox: Any = None,
    argument_kinds: dict[str, str] | None = None,
) -> FunctionTool[ArgsT]:
    """A FunctionTool whose output strings/lists are capped (head + tail + marker).

    ``workspace`` / ``sandbox`` are defaults used when the call runs outside
    ``bind_workspace`` / ``bind_sandbox`` (a bound one always wins);
    ``argument_kinds`` tells permission rules which arguments are paths,
    URLs, commands or free text.
    """
    default_workspace = (
        None
        if workspace is None
        else workspace
        if isinstance(workspace, Workspace)
        else Workspace(workspace)
    )

    async def capped(arguments: ArgsT) -> Any:
        with ExitStack() as stack:
            if default_workspace is not None and not has_workspace():
                stack.enter_context(bind_workspace(default_workspace))
            if sandbox is not None and not has_sandbox():
                stack.enter_context(bind_sandbox(sandbox))
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
        argument_kinds=argument_kinds,
    )
