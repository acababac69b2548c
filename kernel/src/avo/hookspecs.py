"""Every hook avo's plugin manager knows, grouped by phase.

A plugin is any module or object with functions decorated by
:data:`hookimpl` whose names match the specs below. Plugins reach the kernel
through entry points (groups ``avo.providers``, ``avo.tools``, ``avo.stores``,
``avo.notifiers``, ``avo.hooks``, ``avo.permissions``, ``avo.sandboxes``,
``avo.commands``); the entry point's name is the name the plugin registers and
its value is the plugin object (usually built with :func:`avo.plugins.provides`).

Hooks only grow: new arguments may be added and an implementation may accept
any subset of a spec's arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from avo.events import AgentEvent
    from avo.models import RunResult
    from avo.plugins.specs import (
        CommandSpec,
        HookPluginSpec,
        NotifierSpec,
        PermissionSpec,
        ProviderSpec,
        SandboxSpec,
        StoreSpec,
        ToolSpec,
    )

PROJECT_NAME = "avo"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# ---------------------------------------------------------------- registration


@hookspec
def avo_register_providers(register: Callable[[ProviderSpec], None]) -> None:
    """Register model providers.

    :param register: call once per provider with a :class:`~avo.plugins.ProviderSpec`;
        the manager records which distribution registered it, and a name that
        another distribution already registered is reported as a conflict
        naming both packages.

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_tools(register: Callable[[ToolSpec], None]) -> None:
    """Register tools.

    :param register: call once per tool with a :class:`~avo.plugins.ToolSpec`
        (its ``risk`` classifies the tool for the permission modes).

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_stores(register: Callable[[StoreSpec], None]) -> None:
    """Register event stores.

    :param register: call once per store with a :class:`~avo.plugins.StoreSpec`
        (its ``schemes`` and ``suffixes`` say which locations it opens).

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_notifiers(register: Callable[[NotifierSpec], None]) -> None:
    """Register notifiers.

    :param register: call once per notifier with a :class:`~avo.plugins.NotifierSpec`.

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_hooks(register: Callable[[HookPluginSpec], None]) -> None:
    """Register run hooks (PRE_TOOL_USE, POST_TOOL_USE, NOTIFICATION, STOP).

    :param register: call once per hook set with a :class:`~avo.plugins.HookPluginSpec`.

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_permissions(register: Callable[[PermissionSpec], None]) -> None:
    """Register permission modes; each builds an ``approval_callback``.

    :param register: call once per mode with a :class:`~avo.plugins.PermissionSpec`.

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_sandboxes(register: Callable[[SandboxSpec], None]) -> None:
    """Register sandbox backends for ``run_shell`` and ``avo sandbox run``.

    :param register: call once per backend with a :class:`~avo.plugins.SandboxSpec`.

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_commands(register: Callable[[CommandSpec], None]) -> None:
    """Register ``avo`` subcommands.

    :param register: call once per subcommand with a :class:`~avo.plugins.CommandSpec`.

    Dispatch: all implementations are called; fires when the CLI builds its parser.
    """


# ---------------------------------------------------------------- run lifecycle


@hookspec
def avo_run_started(run_id: str, task: str, plugins: list[dict[str, Any]]) -> None:
    """Observe a run starting (after its RUN_CREATED event is durable).

    :param run_id: the new run's id.
    :param task: the task text.
    :param plugins: the plugin set the run was composed from
        (``{"name", "kind", "package", "version"}`` each).

    Dispatch: all implementations are called; return values are ignored.
    """


@hookspec
def avo_event_appended(event: AgentEvent) -> None:
    """Observe every event after the store accepted it.

    :param event: the stored event, with its sequence assigned.

    Dispatch: all implementations are called; return values are ignored. An
    implementation that raises is reported and does not affect the run.
    """


@hookspec
def avo_run_finished(run_id: str, result: RunResult) -> None:
    """Observe a run reaching a terminal state (after its terminal event is durable).

    :param run_id: the run's id.
    :param result: the :class:`~avo.models.RunResult` that ``run``/``resume`` returns.

    Dispatch: all implementations are called; return values are ignored.
    """


__all__ = [
    "PROJECT_NAME",
    "avo_event_appended",
    "avo_register_commands",
    "avo_register_hooks",
    "avo_register_notifiers",
    "avo_register_permissions",
    "avo_register_providers",
    "avo_register_sandboxes",
    "avo_register_stores",
    "avo_register_tools",
    "avo_run_finished",
    "avo_run_started",
    "hookimpl",
    "hookspec",
]
