"""The values a plugin registers: one frozen spec per provider, tool, store, ...

A plugin answers a ``avo_register_<kind>(register)`` hook (see
:mod:`avo.hookspecs`) by calling ``register(spec)`` once per name it provides.
Specs are cheap to build: a ``factory`` imports heavy dependencies only when it
is called. :func:`provides` turns specs into a ready pluggy plugin object, so an
entry point can point straight at it::

    # avo_mytool/plugin.py
    from avo.plugins import ToolSpec, provides
    plugin = provides(ToolSpec(name="shout", factory=make_shout_tool, risk=ToolRisk.INSPECT))

    # pyproject.toml
    [project.entry-points."avo.tools"]
    shout = "avo_mytool.plugin:plugin"
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

# Only stdlib at import time: every plugin imports this module, and
# `avo plugin list` must stay fast (pydantic is needed only by type checkers).
from avo.risk import ToolEffect, ToolRisk

if TYPE_CHECKING:
    from decimal import Decimal

    from pydantic import BaseModel

    from avo.pricing import ModelPrices

PLUGIN_API_VERSION = "1.0"
"""The plugin API this kernel speaks. Plugins declare ``avo-kernel>=1.0,<2``."""

Factory = Callable[..., Any]


@dataclass(frozen=True)
class ProviderCapabilities:
    """What a provider can do, so the runtime and users can ask instead of guessing."""

    streaming: bool = False
    tool_calls: bool = True
    parallel_tool_calls: bool = False
    json_schema_output: bool = False
    vision: bool = False
    """Images reach the model (in user messages and in tool results)."""
    prompt_caching: bool = False
    context_window: int | None = None
    documents: tuple[str, ...] = ()
    """Media types of documents the model reads as documents (``application/pdf``...);
    a textual document it does not list reaches it as text."""
    image_urls: bool = False
    """An image may be given by URL (the vendor fetches it)."""
    document_urls: bool = False
    """A document may be given by URL (the vendor fetches it)."""
    thinking: bool = False
    """The model can reason before answering (reasoning tokens are reported)."""


@dataclass(frozen=True)
class ModelInfo:
    """What a provider plugin knows about one of its models; None means unknown.

    ``documents``: media types of documents the model reads (None unknown, ``()``
    none). ``prices`` (:class:`avo.pricing.ModelPrices`, USD per million tokens,
    with the date they were checked). ``local``: runs on the user's machine, so
    it costs nothing. ``source``: ``catalog`` (declared by the plugin) or
    ``server`` (listed by the provider's server, e.g. a local Ollama).
    """

    name: str
    context_window: int | None = None
    max_output_tokens: int | None = None
    tools: bool | None = None
    vision: bool | None = None
    documents: tuple[str, ...] | None = None
    json_schema: bool | None = None
    thinking: bool | None = None
    prompt_caching: bool | None = None
    prices: ModelPrices | None = None
    local: bool = False
    source: str = "catalog"

    def capabilities(self, base: ProviderCapabilities) -> ProviderCapabilities:
        """``base`` (the provider's) with what this model is known to do or not do."""
        import dataclasses

        updates: dict[str, Any] = {}
        for name, value in (
            ("vision", self.vision),
            ("tool_calls", self.tools),
            ("json_schema_output", self.json_schema),
            ("thinking", self.thinking),
            ("prompt_caching", self.prompt_caching),
            ("documents", self.documents),
            ("context_window", self.context_window),
        ):
            if value is not None:
                updates[name] = value
        if self.vision is False:
            updates["image_urls"] = False
        if self.documents == ():
            updates["document_urls"] = False
        return dataclasses.replace(base, **updates) if updates else base


@dataclass(frozen=True)
class ProviderSpec:
    """A model provider. ``factory(settings: dict, *, environ: Mapping[str, str])``.

    ``settings`` are the validated ``[provider.settings]`` table (validated by
    ``settings_model`` when given); ``environ`` is the injectable environment.
    ``pricing`` maps a model name to USD per 1k (input, output) tokens.
    """

    name: str
    factory: Factory
    description: str = ""
    settings_model: type[BaseModel] | None = None
    env_vars: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    capabilities: ProviderCapabilities = field(default_factory=ProviderCapabilities)
    pricing: Mapping[str, tuple[Decimal, Decimal]] = field(default_factory=dict)
    context_windows: Mapping[str, int] = field(default_factory=dict)
    """Context window (tokens) per model name; a model not listed falls back to
    ``capabilities.context_window``, and then counts as unknown."""
    embeddings: Mapping[str, int] = field(default_factory=dict)
    """Embedding models the provider offers, name -> vector dimensions. A provider
    that declares any builds objects with ``async embed(texts, *, model)`` (see
    :class:`avo.embeddings.EmbeddingProvider`)."""
    catalog: Mapping[str, ModelInfo] = field(default_factory=dict)
    """What the plugin knows about each model: limits, capabilities, prices."""
    local: bool = False
    """The models run on the user's machine: every call is free (priced at zero)."""
    list_models: Factory | None = None
    """``list_models(settings: dict, *, environ) -> list[ModelInfo]``: the models the
    provider's server offers right now (``avo models`` asks; e.g. a local Ollama)."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool. ``factory(settings: dict) -> Tool``; ``risk`` classifies it for permissions.

    ``effect`` says what running the same call again does (pure, idempotent,
    non_idempotent; None: derived from the tool's risk), for engines that may
    dispatch a call twice; declare the same on the tool's metadata.
    """

    name: str
    factory: Factory
    description: str = ""
    risk: ToolRisk = ToolRisk.EXECUTE
    settings_model: type[BaseModel] | None = None
    effect: ToolEffect | None = None


@dataclass(frozen=True)
class StoreSpec:
    """An event store. ``factory(location: str, settings: dict) -> EventStore``.

    ``schemes`` are URL schemes it opens (``postgresql://...``); ``suffixes`` are
    file suffixes it opens when given a bare path (``avo.db``).
    """

    name: str
    factory: Factory
    description: str = ""
    schemes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    settings_model: type[BaseModel] | None = None


@dataclass(frozen=True)
class NotifierSpec:
    """A notifier. ``factory(settings: dict, *, environ: Mapping[str, str]) -> Notifier``."""

    name: str
    factory: Factory
    description: str = ""
    settings_model: type[BaseModel] | None = None


@dataclass(frozen=True)
class HookPluginSpec:
    """Run hooks. ``factory(settings: dict) -> Iterable[tuple[HookEvent, HookCallable]]``."""

    name: str
    factory: Factory
    description: str = ""
    settings_model: type[BaseModel] | None = None


@dataclass(frozen=True)
class PermissionSpec:
    """A permission mode.

    ``factory(settings: dict, *, environ: Mapping[str, str], tools: list[ToolMetadata])``
    returns an ``ApprovalCallback`` — permission modes only build callbacks.
    """

    name: str
    factory: Factory
    description: str = ""
    settings_model: type[BaseModel] | None = None


@dataclass(frozen=True)
class SandboxSpec:
    """A sandbox backend. ``factory(settings: dict) -> executor`` with ``async run(...)``.

    ``probe(environ) -> str | None`` says why the backend cannot work on this
    machine right now (None when it can); when a tool asks for a sandbox
    without naming one, the working backend with the highest ``priority`` is
    used.
    """

    name: str
    factory: Factory
    description: str = ""
    settings_model: type[BaseModel] | None = None
    probe: Callable[[Mapping[str, str]], str | None] | None = None
    priority: int = 0


@dataclass(frozen=True)
class CommandSpec:
    """An ``avo`` subcommand.

    ``configure(parser)`` adds arguments to its argparse subparser;
    ``run(args) -> int`` executes it and returns the exit code.
    ``interactive_default``: a bare ``avo`` (no command) on a terminal runs
    this command with no arguments (``avo-chat`` sets it for ``avo chat``);
    when several installed commands ask for it, bare ``avo`` names them and
    prints the help instead.
    """

    name: str
    configure: Callable[[Any], None]
    run: Callable[[Any], int]
    help: str = ""
    interactive_default: bool = False


@dataclass(frozen=True)
class ShaperSpec:
    """A request shaper. ``factory(settings: dict, *, environ: Mapping[str, str]) -> shaper``.

    The shaper object implements ``avo_prepare_request(request, context)`` (see
    :mod:`avo.hookspecs` and :mod:`avo.shaping`): it changes what one model
    call sees, never the stored transcript. ``order`` places it among a run's
    shapers, lower first; shapers with equal order keep the configured order.
    """

    name: str
    factory: Factory
    description: str = ""
    order: int = 500
    settings_model: type[BaseModel] | None = None


@dataclass(frozen=True)
class BundleSpec:
    """A plugin bundle. ``factory(settings: dict, *, environ: Mapping[str, str]) -> bundle``.

    A bundle contributes tools, instructions, request shapers and hooks to each
    run it is enabled for, with a per-run ``setup`` and ``close`` (see
    :mod:`avo.bundles`).
    """

    name: str
    factory: Factory
    description: str = ""
    settings_model: type[BaseModel] | None = None


@dataclass(frozen=True)
class MemorySpec:
    """A long-term memory provider, chosen by ``[memory] provider`` in ``avo.toml``.

    ``factory(settings: dict, *, environ, workspace, embedder)`` returns a
    memory store: ``recall(query, *, k)`` and ``remember(content, *, session_id,
    tags)`` (:class:`avo.memory.MemoryProvider`), plus ``list_memories`` /
    ``forget`` for ``avo memory`` (:class:`avo.memory.ManagedMemory`). ``embedder``
    is an :class:`avo.embeddings.Embedder` when ``[memory.embeddings]`` names one
    (else None); ``embeddings`` says whether the provider can use it.
    """

    name: str
    factory: Factory
    description: str = ""
    settings_model: type[BaseModel] | None = None
    embeddings: bool = False


@dataclass(frozen=True)
class SlashCommandSpec:
    """A chat slash command: ``/name argument`` typed in ``avo chat``.

    ``run(chat, argument)`` (plain or async) does the work: ``chat`` is the
    front end's context (see docs/chat.md: print, the session, the store,
    the runtime, attach output to the next turn), ``argument`` the text after
    the name, stripped. ``usage`` shows the arguments (``[N]``, ``PATTERN``),
    ``aliases`` are other names typed for it (the registered names of other
    commands win), ``while_busy`` lets it run while a turn is working (a
    read-only command such as ``/cost``).
    """

    name: str
    run: Callable[[Any, str], Any]
    help: str = ""
    usage: str = ""
    aliases: tuple[str, ...] = ()
    while_busy: bool = False


@dataclass(frozen=True)
class EngineSpec:
    """An execution engine: where runs are driven. ``factory(settings: dict, *, environ)``.

    The factory returns an :class:`avo.engines.Engine`: it submits runs, relays
    operations (cancel, answers, resume) to the run's driver and serves
    workers (``avo worker --engine NAME``). The kernel's own engine,
    ``in-process``, drives a run in the process that starts it.
    """

    name: str
    factory: Factory
    description: str = ""
    settings_model: type[BaseModel] | None = None


def lazy_command(
    name: str,
    module: str,
    *,
    help: str = "",
    configure: str = "configure",
    run: str = "run",
    interactive_default: bool = False,
) -> CommandSpec:
    """A :class:`CommandSpec` whose functions live in ``module``, imported only when used.

    ``module.<configure>(parser)`` adds the arguments, ``module.<run>(args)``
    runs the command; listing commands never imports ``module``.
    """

    def _configure(parser: Any) -> None:
        getattr(importlib.import_module(module), configure)(parser)

    def _run(args: Any) -> int:
        return int(getattr(importlib.import_module(module), run)(args))

    return CommandSpec(
        name=name,
        configure=_configure,
        run=_run,
        help=help,
        interactive_default=interactive_default,
    )


def lazy_slash_command(
    name: str,
    module: str,
    function: str,
    *,
    help: str = "",
    usage: str = "",
    aliases: tuple[str, ...] = (),
    while_busy: bool = False,
) -> SlashCommandSpec:
    """A :class:`SlashCommandSpec` whose ``run`` is ``module.function``, imported on first use."""

    def _run(chat: Any, argument: str) -> Any:
        return getattr(importlib.import_module(module), function)(chat, argument)

    return SlashCommandSpec(
        name=name, run=_run, help=help, usage=usage, aliases=aliases, while_busy=while_busy
    )


Spec = (
    ProviderSpec
    | ToolSpec
    | StoreSpec
    | NotifierSpec
    | HookPluginSpec
    | PermissionSpec
    | SandboxSpec
    | CommandSpec
    | ShaperSpec
    | BundleSpec
    | SlashCommandSpec
    | MemorySpec
    | EngineSpec
)

KIND_OF_SPEC: dict[type, str] = {
    ProviderSpec: "provider",
    ToolSpec: "tool",
    StoreSpec: "store",
    NotifierSpec: "notifier",
    HookPluginSpec: "hook",
    PermissionSpec: "permission",
    SandboxSpec: "sandbox",
    CommandSpec: "command",
    ShaperSpec: "shaper",
    BundleSpec: "bundle",
    SlashCommandSpec: "slash_command",
    MemorySpec: "memory",
    EngineSpec: "engine",
}

HOOK_OF_KIND: dict[str, str] = {
    "provider": "avo_register_providers",
    "tool": "avo_register_tools",
    "store": "avo_register_stores",
    "notifier": "avo_register_notifiers",
    "hook": "avo_register_hooks",
    "permission": "avo_register_permissions",
    "sandbox": "avo_register_sandboxes",
    "command": "avo_register_commands",
    "shaper": "avo_register_shapers",
    "bundle": "avo_register_bundles",
    "slash_command": "avo_register_slash_commands",
    "memory": "avo_register_memory",
    "engine": "avo_register_engines",
}


class _SpecPlugin:
    """A pluggy plugin object that registers fixed specs (built by :func:`provides`)."""

    def __init__(self, specs: tuple[Spec, ...]) -> None:
        self.specs = specs
        kinds = {KIND_OF_SPEC[type(spec)] for spec in specs}
        # Only the hooks for the kinds actually provided are implemented, so the
        # plugin manager sees exactly what this plugin answers.
        from avo.hookspecs import hookimpl

        for kind in kinds:
            hook_name = HOOK_OF_KIND[kind]
            setattr(self, hook_name, hookimpl(self._make_impl(kind), specname=hook_name))

    def _make_impl(self, kind: str) -> Callable[[Callable[[Any], None]], None]:
        def impl(register: Callable[[Any], None]) -> None:
            for spec in self.specs:
                if KIND_OF_SPEC[type(spec)] == kind:
                    register(spec)

        return impl

    def __repr__(self) -> str:
        names = ", ".join(f"{KIND_OF_SPEC[type(s)]}:{s.name}" for s in self.specs)
        return f"<avo plugin providing {names}>"


def provides(*specs: Spec) -> Any:
    """Return a pluggy plugin object that registers ``specs`` through the hooks."""
    if not specs:
        raise ValueError("provides() needs at least one spec")
    return _SpecPlugin(tuple(specs))


__all__ = [
    "HOOK_OF_KIND",
    "KIND_OF_SPEC",
    "PLUGIN_API_VERSION",
    "BundleSpec",
    "CommandSpec",
    "EngineSpec",
    "HookPluginSpec",
    "MemorySpec",
    "NotifierSpec",
    "PermissionSpec",
    "ProviderCapabilities",
    "ProviderSpec",
    "SandboxSpec",
    "ShaperSpec",
    "SlashCommandSpec",
    "Spec",
    "StoreSpec",
    "ToolSpec",
    "lazy_command",
    "lazy_slash_command",
    "provides",
]
