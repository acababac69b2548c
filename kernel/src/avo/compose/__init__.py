"""Compose an :class:`~avo.runtime.AgentRuntime` from the configuration and the plugin registry.

Every name in the config (provider, store, tools, permission mode, hooks,
notifiers) is resolved through a :class:`~avo.plugins.manager.PluginManager`;
nothing is special-cased. The configuration itself comes from one resolution
shared by every command (:func:`resolve_config`: flags > environment >
workspace ``avo.toml`` > user config > defaults). Python users call
:func:`compose` (or :func:`runtime_from_config`); ``avo run`` calls the same
function with its flags as overrides, and ``avo runs resume`` composes the run's
recorded composition again with :func:`compose` ``(resolved=...)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from avo.compose._context import context_parts
from avo.compose._memory import memory_bundle_from_config
from avo.compose._notify import notification_hook
from avo.compose._plugins import accepts_setting, call_factory, get_spec, validated_settings
from avo.compose._record import composition_record
from avo.compose.config import (
    AvoConfig,
    PermissionRef,
    PluginRef,
    find_config,
    load_config,
    validation_error,
)
from avo.compose.resolve import ResolvedConfig, resolve_config, user_config_path
from avo.compose.stores import open_store, select_store_spec
from avo.config import DEFAULT_DATABASE
from avo.exceptions import AvoError, ConfigError

if TYPE_CHECKING:
    from avo.plugins.manager import PluginManager
    from avo.runtime import AgentRuntime


@dataclass
class Composition:
    """A composed runtime plus what it was built from; close it when done."""

    runtime: AgentRuntime
    event_store: Any
    manager: PluginManager
    config: AvoConfig
    config_file: str
    store_location: str
    notifiers: list[Any] = field(default_factory=list)
    resolved: ResolvedConfig | None = None
    record: dict[str, Any] = field(default_factory=dict)
    owns_store: bool = True

    async def aclose(self) -> None:
        """Close the event store (when this composition opened it) and the memory store."""
        memory = getattr(self.runtime, "memory", None)
        close_memory = getattr(memory, "aclose", None)
        if callable(close_memory) and self.config.memory is not None:
            await close_memory()
        close = getattr(self.event_store, "close", None)
        if close is not None and self.owns_store:
            await close()

    async def __aenter__(self) -> Composition:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _ref(item: str | PluginRef) -> PluginRef:
    return PluginRef(name=item) if isinstance(item, str) else item


def _budget_prices(
    config: AvoConfig, env: Mapping[str, str], manager: Any, model_provider: Any
) -> Any:
    """The prices ``avo cost`` would charge the configured provider's model (None: unknown)."""
    if not any(config.budget.get(key) is not None for key in ("warning_usd", "hard_limit_usd")):
        return None
    from avo.pricing import price_book

    name = config.provider.name if config.provider is not None else None
    model = getattr(model_provider, "model", None)
    book = price_book(pricing=config.pricing, budget=config.budget, environ=env, manager=manager)
    found, _ = book.lookup(name, model if isinstance(model, str) else None)
    return found


def _bounds(
    config: AvoConfig, env: Mapping[str, str], label: str, prices: Any = None
) -> tuple[Any, Any]:
    """The ``[budget]`` checker and ``[rate_limit]`` limiter (None when not configured)."""
    from avo.budget import budget_from_settings
    from avo.rate_limit import rate_limiter_from_settings

    try:
        budget = budget_from_settings(config.budget, environ=env, prices=prices)
    except AvoError as exc:
        raise ConfigError(f"{label}: [budget]: {exc}", key="budget", file=label) from None
    try:
        limiter = rate_limiter_from_settings(config.rate_limit)
    except AvoError as exc:
        raise ConfigError(f"{label}: [rate_limit]: {exc}", key="rate_limit", file=label) from None
    return budget, limiter


def _no_provider(resolved: ResolvedConfig, manager: PluginManager) -> ConfigError:
    available = ", ".join(manager.names("provider")) or "(none)"
    return ConfigError(
        f"{resolved.label}: no provider configured: run `avo setup`, set [provider] name in "
        f"avo.toml, pass --provider NAME or set AVO_PROVIDER; available: {available}",
        key="provider.name",
        file=resolved.label,
    )


def _provider(resolved: ResolvedConfig, manager: PluginManager, env: Mapping[str, str]) -> Any:
    config = resolved.config
    if config.provider is None:
        raise _no_provider(resolved, manager)
    name = config.provider.name
    source = resolved.source("provider.name")
    key = "--provider" if source.startswith("flag") else "provider.name"
    spec = get_spec(manager, "provider", name, file=source, key=key)
    table = dict(config.provider.settings)
    model_source = resolved.source("provider.settings.model")
    if "model" in table and not accepts_setting(spec, "model"):
        if model_source == "env AVO_MODEL":
            table.pop("model")  # a shell-wide AVO_MODEL does not apply to this provider
        elif model_source == "flag --model":
            raise ConfigError(
                f"--model: provider {name!r} has no model setting; drop --model",
                key="provider.settings.model",
            )
    settings = validated_settings(
        spec, table, file=resolved.source("provider.settings"), key="provider.settings"
    )
    return spec.factory(settings, environ=env)


def _tools(
    resolved: ResolvedConfig, manager: PluginManager, env: Mapping[str, str], workspace: str
) -> list[Any]:
    from_flag = resolved.source("tools") == "flag --tool"
    built: list[Any] = []
    for index, item in enumerate(resolved.config.tools):
        ref = _ref(item)
        key = "--tool" if from_flag else f"tools[{index}]"
        file = resolved.source("tools")
        spec = get_spec(manager, "tool", ref.name, file=file, key=key)
        settings = validated_settings(spec, ref.settings, file=file, key=f"{key}.settings")
        made = call_factory(spec.factory, settings, environ=env, workspace=workspace)
        built.extend(made if isinstance(made, list | tuple) else [made])
    return built


def _policy(resolved: ResolvedConfig) -> Any:
    from avo.policies import LoopPolicy

    label = resolved.source("policy")
    try:
        return LoopPolicy(**resolved.config.policy)
    except ValidationError as exc:
        error = validation_error(exc, file=label, prefix="policy")
        known = ", ".join(sorted(LoopPolicy.model_fields))
        raise ConfigError(f"{error}; [policy] accepts: {known}", key="policy", file=label) from None


def _hooks(
    resolved: ResolvedConfig,
    manager: PluginManager,
    env: Mapping[str, str],
    location: str,
    tools: Any = None,
) -> tuple[Any, list[Any]]:
    from avo.hooks import HookEvent, HookRegistry

    config = resolved.config
    registry = HookRegistry()
    file = resolved.source("hooks")
    # Only the hook plugins the config names are imported (a named one may also
    # watch run lifecycles); an installed hook plugin it does not name never is.
    for index, item in enumerate(config.hooks):
        ref = _ref(item)
        spec = get_spec(manager, "hook", ref.name, file=file, key=f"hooks[{index}]")
        settings = validated_settings(spec, ref.settings, file=file, key=f"hooks[{index}].settings")
        made = call_factory(
            spec.factory,
            settings,
            environ=env,
            store_location=location,
            tools=list(tools.metadata) if tools is not None else [],
        )
        for event, hook in made:
            # a hook object may name itself (``hook_label``): two hooks of one plugin differ
            own_name = getattr(hook, "hook_label", None)
            registry.register(
                HookEvent(event), hook, name=own_name if isinstance(own_name, str) else ref.name
            )
    notifiers: list[tuple[str, Any]] = []
    file = resolved.source("notifiers")
    for index, item in enumerate(config.notifiers):
        ref = _ref(item)
        spec = get_spec(manager, "notifier", ref.name, file=file, key=f"notifiers[{index}]")
        settings = validated_settings(
            spec, ref.settings, file=file, key=f"notifiers[{index}].settings"
        )
        notifiers.append((ref.name, call_factory(spec.factory, settings, environ=env)))
    if notifiers:
        hook = notification_hook(notifiers)
        registry.register(HookEvent.STOP, hook)
        registry.register(HookEvent.NOTIFICATION, hook)
    return registry, [notifier for _, notifier in notifiers]


def _approval(
    resolved: ResolvedConfig,
    manager: PluginManager,
    env: Mapping[str, str],
    tools: Any,
    workspace: str | None = None,
) -> Any:
    """The approval callback of ``[permission]``; without the table, mode ``default``.

    The safe default: read-only (``inspect``) tools run; tools that modify or
    execute need a human. When no ``default`` permission plugin is installed,
    the kernel's own fallback runs only read-only tools.
    """
    permission = resolved.config.permission
    metadata = list(tools.metadata)
    if permission is None:
        if "default" not in manager.names("permission"):
            return _read_only_callback(metadata)
        permission = PermissionRef()
    file = resolved.source("permission")
    spec = get_spec(manager, "permission", permission.mode, file=file, key="permission.mode")
    settings = validated_settings(spec, permission.plugin_settings(), file=file, key="permission")
    return call_factory(spec.factory, settings, environ=env, tools=metadata, workspace=workspace)


def _read_only_callback(tools: list[Any]) -> Callable[[Any], bool]:
    from avo.risk import ToolRisk

    read_only = {meta.name for meta in tools if meta.effective_risk is ToolRisk.INSPECT}

    def approve(call: Any) -> bool:
        return bool(call.name in read_only)

    return approve


def _check_location(resolved: ResolvedConfig, location: str) -> None:
    if "://" not in location and Path(location).is_dir():
        source = resolved.source("store.location")
        where = "-d" if source.startswith("flag") else f"{source}: [store] location"
        raise ConfigError(
            f"{where} {location!r} is a directory, not an event store; give a file in it "
            f"(e.g. {Path(location) / DEFAULT_DATABASE}) or a store URL",
            key="store.location",
        )


def _open_event_store(resolved: ResolvedConfig, manager: PluginManager, location: str) -> Any:
    store_ref = resolved.config.store
    name = store_ref.name if store_ref else None
    file = resolved.source("store")
    if name:
        key = "--store" if resolved.source("store.name").startswith("flag") else "store.name"
        spec = get_spec(manager, "store", name, file=file, key=key)
    else:
        _check_location(resolved, location)
        try:
            spec = select_store_spec(location, manager)
        except ConfigError as exc:
            raise ConfigError(
                f"{resolved.source('store.location')}: {exc}", key=exc.key, file=file
            ) from None
    table = store_ref.settings if store_ref else {}
    return spec.factory(location, validated_settings(spec, table, file=file, key="store.settings"))


def _manager(resolved: ResolvedConfig, env: Mapping[str, str]) -> PluginManager:
    from avo.plugins.manager import PluginManager

    switches = resolved.config.plugins
    return PluginManager(
        environ=env, autoload=switches.autoload, block=switches.block, allow=switches.allow
    )


def _media_fallback(resolved: Any) -> str:
    """``[media] fallback``: what happens to an attachment the model cannot take."""
    table = resolved.config.media or {}
    unknown = sorted(set(table) - {"fallback"})
    if unknown:
        raise ConfigError(f"[media]: unknown keys {unknown}; allowed: fallback", key="media")
    value = table.get("fallback", "refuse")
    if value not in ("refuse", "placeholder"):
        raise ConfigError(
            f'[media] fallback = {value!r}: choose "refuse" (stop before the run starts) or '
            '"placeholder" (a line of text stands in for it)',
            key="media.fallback",
        )
    return str(value)


def compose(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    manager: PluginManager | None = None,
    provider: str | None = None,
    model: str | None = None,
    store: str | None = None,
    database: str | Path | None = None,
    tools: Iterable[str] | None = None,
    permission_mode: str | None = None,
    stream_callback: Callable[[str], None] | None = None,
    approval_callback: Any | None = None,
    answerer: Any | None = None,
    discover_config: bool = False,
    cwd: str | Path | None = None,
    workspace: str | Path | None = None,
    resolved: ResolvedConfig | None = None,
    event_store: Any | None = None,
) -> Composition:
    """Build a runtime from the resolved configuration plus overrides.

    :param path: ``avo.toml`` or a ``pyproject.toml`` with ``[tool.avo]``; None
        uses no workspace file unless ``discover_config`` looks in ``cwd``.
        The user config (``avo setup``) and the environment apply either way.
    :param provider, model, store, database, tools, permission_mode: the
        command-line overrides (``--provider``, ``--model``, ``--store``,
        ``-d``, ``--tool``..., ``--permission-mode``); ``tools`` replaces the list.
    :param workspace: the directory workspace tools use when their settings
        name none (default: ``cwd``, else the current directory).
    :param resolved: an already resolved configuration (resume composes a
        run's recorded one); the path and overrides are then ignored.
    :param event_store: an open store to use instead of opening the configured
        one (the composition then does not close it).
    """
    from avo.runtime import AgentRuntime
    from avo.tools import ToolRegistry

    base_env = os.environ if environ is None else environ
    if resolved is None:
        resolved = resolve_config(
            path,
            environ=base_env,
            cwd=cwd,
            discover=discover_config,
            provider=provider,
            model=model,
            store=store,
            database=database,
            tools=tools,
            permission_mode=permission_mode,
        )
    env = resolved.environ
    manager = manager or _manager(resolved, env)
    directory = str(Path(workspace or cwd or Path.cwd()).resolve())
    model_provider = _provider(resolved, manager, env)
    registry = ToolRegistry(_tools(resolved, manager, env, directory))
    policy = _policy(resolved)
    location = resolved.store_location
    hook_registry, notifiers = _hooks(resolved, manager, env, location, registry)
    callback = approval_callback or _approval(resolved, manager, env, registry, directory)
    try:
        prices = _budget_prices(resolved.config, env, manager, model_provider)
    except AvoError as exc:  # a bad [pricing] table
        raise ConfigError(f"{resolved.label}: {exc}", key="pricing", file=resolved.label) from None
    budget, rate_limiter = _bounds(resolved.config, env, resolved.label, prices)
    memory = memory_bundle_from_config(resolved, manager, env, directory)  # [memory]
    owns_store = event_store is None
    if event_store is None:  # last, so nothing above leaves it open on error
        event_store = _open_event_store(resolved, manager, location)
    record = composition_record(
        resolved.raw, workspace=directory, kernel_version=getattr(manager, "kernel_version", None)
    )
    # request shapers, bundles ([instructions], [skills], [mcp]) and the context window
    context = context_parts(resolved, manager, env, model_provider, directory)
    runtime = AgentRuntime(
        provider=model_provider,
        tools=registry,
        policy=policy,
        event_store=event_store,
        approval_callback=callback,
        answerer=answerer,
        hooks=hook_registry if hook_registry else None,
        stream_callback=stream_callback,
        plugins=manager,
        rate_limiter=rate_limiter,
        budget=budget,
        environ=env,
        composition=record,
        memory=memory,
        media_fallback=_media_fallback(resolved),
        **context,
    )
    return Composition(
        runtime=runtime,
        event_store=event_store,
        manager=manager,
        config=resolved.config,
        config_file=resolved.label,
        store_location=location,
        notifiers=notifiers,
        resolved=resolved,
        record=record,
        owns_store=owns_store,
    )


def provider_from_config(resolved: ResolvedConfig, *, manager: PluginManager | None = None) -> Any:
    """The model provider a resolved configuration names, built by its plugin.

    What ``avo doctor`` checks; :func:`compose` builds the same one.
    """
    env = resolved.environ
    return _provider(resolved, manager or _manager(resolved, env), env)


def memory_from_config(
    resolved: ResolvedConfig,
    *,
    manager: PluginManager | None = None,
    workspace: str | Path | None = None,
    scope: str | None = None,
    default: bool = False,
) -> Any:
    """The memory store ``[memory]`` names, built by its ``avo.memory`` plugin.

    What ``avo memory`` manages; :func:`compose` builds the same store for runs.
    None when the config has no ``[memory]`` table (or it is disabled), unless
    ``default``: then the default memory plugin's store with its defaults.
    ``scope`` overrides the configured scope. Close the store when done.
    """
    from avo.compose._memory import memory_store
    from avo.compose.config import MemorySettings

    env = resolved.environ
    settings = resolved.config.memory
    if settings is None and default:
        settings = MemorySettings()
    directory = str(Path(workspace or Path.cwd()).resolve())
    return memory_store(
        resolved,
        manager or _manager(resolved, env),
        env,
        directory,
        settings=settings,
        scope=scope,
    )


def runtime_from_config(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> AgentRuntime:
    """The runtime :func:`compose` builds.

    Close its store when done: ``await runtime.event_store.close()``.
    """
    return compose(path, environ=environ, **overrides).runtime


__all__ = [
    "DEFAULT_DATABASE",
    "Composition",
    "ResolvedConfig",
    "compose",
    "find_config",
    "load_config",
    "memory_from_config",
    "open_store",
    "provider_from_config",
    "resolve_config",
    "runtime_from_config",
    "select_store_spec",
    "user_config_path",
]
