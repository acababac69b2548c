"""Entry points: the ``command`` and ``http`` hook executors (``avo.hooks``).

``factory(settings, *, environ, tools)`` returns ``(HookEvent, hook)`` pairs,
one per event in ``settings.events`` (default ``["pre_tool_use"]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from avo.plugins import HookPluginSpec, provides
from avo_hooks.settings import CommandHookSettings, HttpHookSettings


def _tools(tools: Iterable[Any] | None) -> dict[str, Any]:
    found = {}
    for item in tools or ():
        metadata = getattr(item, "metadata", item)
        found[metadata.name] = metadata
    return found


def _command_factory(
    settings: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    tools: Iterable[Any] | None = None,
) -> list[tuple[Any, Any]]:
    from avo.hooks import HookEvent
    from avo_hooks.command import CommandHook

    parsed = CommandHookSettings.model_validate(dict(settings or {}))
    hook = CommandHook(parsed, environ=environ, tools=_tools(tools))
    return [(HookEvent(event), hook) for event in dict.fromkeys(parsed.events)]


def _http_factory(
    settings: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    tools: Iterable[Any] | None = None,
) -> list[tuple[Any, Any]]:
    from avo.hooks import HookEvent
    from avo_hooks.http import HttpHook

    parsed = HttpHookSettings.model_validate(dict(settings or {}))
    hook = HttpHook(parsed, environ=environ, tools=_tools(tools))
    return [(HookEvent(event), hook) for event in dict.fromkeys(parsed.events)]


command = provides(
    HookPluginSpec(
        name="command",
        factory=_command_factory,
        description="run an executable with each hook event as JSON on stdin; exit 2 denies",
        settings_model=CommandHookSettings,
    )
)
http = provides(
    HookPluginSpec(
        name="http",
        factory=_http_factory,
        description="POST each hook event as JSON to a URL; the reply allows or denies",
        settings_model=HttpHookSettings,
    )
)

__all__ = ["command", "http"]
