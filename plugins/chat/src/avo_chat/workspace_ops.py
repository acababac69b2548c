"""Workspace work the user asks for directly: ``!cmd``, ``/grep``, ``/test``...

Nothing here runs on the host behind the configuration's back: commands run
in a sandbox (the runtime's ``run_shell`` tool when it has one, else the
working ``avo.sandboxes`` plugin with the highest priority, as shell tools
choose), and ``/grep``, ``/find``, ``/map``, ``/symbols``, ``/test``,
``/lint`` call the tool plugins of the same names (the runtime's own when
configured, else built from the installed plugin for this workspace). These
calls are the user's, not the agent's: they are not recorded in a run; their
output is offered to the next turn instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from avo.exceptions import AvoError, ConfigError
from avo_chat.slash import ShellResult

if TYPE_CHECKING:
    from avo_chat.chat import Chat


def _offer(factory: Callable[..., Any], *args: Any, **optional: Any) -> Any:
    """Call a plugin factory with the optional keywords its signature names."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory(*args)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return factory(*args, **optional)
    return factory(*args, **{k: v for k, v in optional.items() if k in parameters})


def _settings(spec: Any, table: dict[str, Any]) -> dict[str, Any]:
    model = getattr(spec, "settings_model", None)
    if model is None:
        return table
    fields = getattr(model, "model_fields", {})
    return model.model_validate({k: v for k, v in table.items() if k in fields}).model_dump()


def tool(chat: Chat, name: str) -> Any:
    """The tool ``name``: the runtime's, else built from its plugin for this workspace."""
    tools = chat.runtime.tools
    if name in tools:
        return tools.get(name)
    try:
        spec = chat.manager.get("tool", name)
    except AvoError as exc:
        raise ConfigError(
            f"no {name} tool here ({exc}); install avo-tools (pip install avo-tools) or add "
            f'"{name}" to tools in avo.toml',
            key="tools",
        ) from None
    settings = _settings(spec, {"workspace": str(chat.workspace)})
    made = _offer(spec.factory, settings, environ=chat.environ, workspace=str(chat.workspace))
    return made[0] if isinstance(made, list | tuple) else made


async def run_tool(chat: Chat, name: str, arguments: dict[str, Any]) -> Any:
    """Call tool ``name`` with ``arguments`` and return its output."""
    return await tool(chat, name).invoke(arguments)


def _sandbox(chat: Chat) -> Any:
    manager = chat.manager
    manager.load_kind("sandbox")
    specs = sorted(
        manager.specs("sandbox").values(), key=lambda s: (-getattr(s, "priority", 0), s.name)
    )
    reasons = []
    for spec in specs:
        probe = getattr(spec, "probe", None)
        problem = probe(chat.environ) if probe is not None else None
        if problem is None:
            return _offer(spec.factory, _settings(spec, {}), environ=chat.environ)
        reasons.append(f"{spec.name}: {problem}")
    found = "; ".join(reasons) or "no avo.sandboxes plugin is installed (pip install avo-sandbox)"
    raise ConfigError(f"commands run in a sandbox and none works here ({found})", key="sandbox")


async def shell(chat: Chat, command: str, *, limit: float | None = 120) -> ShellResult:
    """Run ``command`` in the workspace, sandboxed."""
    if "run_shell" in chat.runtime.tools:
        output = await run_tool(chat, "run_shell", {"command": command, "timeout_seconds": limit})
        if isinstance(output, dict):
            text = str(output.get("stdout") or "") + str(output.get("stderr") or "")
            return ShellResult(int(output.get("exit_code") or 0), text)
        return ShellResult(0, str(output))
    executor = _sandbox(chat)
    result = await executor.run(command, workspace_dir=chat.workspace, timeout_seconds=limit)
    return ShellResult(int(result.exit_code), str(result.stdout) + str(result.stderr))


__all__ = ["run_tool", "shell", "tool"]
