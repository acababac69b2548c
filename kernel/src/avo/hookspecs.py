"""Every hook avo's plugin manager knows, grouped by phase.

A plugin is any module or object with functions decorated by
:data:`hookimpl` whose names match the specs below. Plugins reach the kernel
through entry points (groups ``avo.providers``, ``avo.tools``, ``avo.stores``,
``avo.notifiers``, ``avo.hooks``, ``avo.permissions``, ``avo.sandboxes``,
``avo.commands``, ``avo.shapers``, ``avo.bundles``, ``avo.slash_commands``,
``avo.memory``, ``avo.engines``); the entry point's name is
the name the plugin registers and its value is the plugin object (usually
built with :func:`avo.plugins.provides`).

Hooks only grow: new arguments may be added and an implementation may accept
any subset of a spec's arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from avo.events import AgentEvent
    from avo.models import ModelRequest, RunResult
    from avo.plugins.specs import (
        BundleSpec,
        CommandSpec,
        EngineSpec,
        HookPluginSpec,
        MemorySpec,
        NotifierSpec,
        PermissionSpec,
        ProviderSpec,
        SandboxSpec,
        ShaperSpec,
        SlashCommandSpec,
        StoreSpec,
        ToolSpec,
    )
    from avo.shaping import Shaping, ShapingContext

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


@hookspec
def avo_register_shapers(register: Callable[[ShaperSpec], None]) -> None:
    """Register request shapers (compaction policies, instruction injection, tool gating).

    :param register: call once per shaper with a :class:`~avo.plugins.ShaperSpec`;
        its factory builds the object that implements :func:`avo_prepare_request`.

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_bundles(register: Callable[[BundleSpec], None]) -> None:
    """Register plugin bundles: tools, instructions, shapers and hooks set up per run.

    :param register: call once per bundle with a :class:`~avo.plugins.BundleSpec`;
        its factory builds an object with ``async setup(run) -> BundleParts`` and
        ``async close()`` (see :mod:`avo.bundles`).

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_slash_commands(register: Callable[[SlashCommandSpec], None]) -> None:
    """Register chat slash commands (``/cost``, ``/undo``, a third party's ``/jira``).

    :param register: call once per command with a :class:`~avo.plugins.SlashCommandSpec`;
        its ``run(chat, argument)`` is called with the front end's chat context
        and the text after the command name.

    Dispatch: all implementations are called; fires when a chat front end
    (``avo chat``) loads its commands.
    """


@hookspec
def avo_register_memory(register: Callable[[MemorySpec], None]) -> None:
    """Register long-term memory providers (SQLite FTS5, PostgreSQL, a vector database).

    :param register: call once per provider with a :class:`~avo.plugins.MemorySpec`;
        its factory builds the memory store ``[memory] provider`` names (see
        :mod:`avo.memory`).

    Dispatch: all implementations are called; fires when the manager loads the plugin.
    """


@hookspec
def avo_register_engines(register: Callable[[EngineSpec], None]) -> None:
    """Register execution engines: where runs are driven (``avo worker --engine NAME``).

    :param register: call once per engine with a :class:`~avo.plugins.EngineSpec`;
        its factory builds an :class:`avo.engines.Engine` (submit runs, relay
        operations to a run's driver, serve workers).

    Dispatch: all implementations are called; fires when the manager loads the plugin.
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


# ---------------------------------------------------------------- model call


@hookspec
def avo_prepare_request(request: ModelRequest, context: ShapingContext) -> Shaping | None:
    """Shape the request one model call sees, without touching the stored transcript.

    Implemented by request shaper objects (built by a
    :class:`~avo.plugins.ShaperSpec` factory or contributed by a bundle), not
    by every loaded plugin: a shaper acts only in the runs it is enabled for.

    :param request: the request as the shapers before this one left it
        (read-only: its message list is shared with the run's checkpoint).
    :param context: the run, the step, the full transcript, this shaper's own
        checkpointed ``state``, the model's context window and a token gauge
        (see :class:`avo.shaping.ShapingContext`).
    :return: a :class:`~avo.shaping.Shaping` (messages to insert, hide or
        rewrite; tools to hide or add; a note for the record) for this call
        only, or None to leave the request as it is. Returning the same object
        as on the previous step says "no change" for free. May be a coroutine.

    Dispatch: called before every model call (after queued steering messages
    joined the transcript) on each shaper enabled for the run, one after the
    other in order (``ShaperSpec.order``, then the configured order); each sees
    the previous one's result. Whenever a shaper's result changes, a
    ``request_shaped`` event records it. An implementation that raises fails
    the run closed (FAILED, internal_error, naming the shaper): an unshaped
    request is never sent.
    """


__all__ = [
    "PROJECT_NAME",
    "avo_event_appended",
    "avo_prepare_request",
    "avo_register_bundles",
    "avo_register_commands",
    "avo_register_engines",
    "avo_register_hooks",
    "avo_register_memory",
    "avo_register_notifiers",
    "avo_register_permissions",
    "avo_register_providers",
    "avo_register_sandboxes",
    "avo_register_shapers",
    "avo_register_slash_commands",
    "avo_register_stores",
    "avo_register_tools",
    "avo_run_finished",
    "avo_run_started",
    "hookimpl",
    "hookspec",
]
