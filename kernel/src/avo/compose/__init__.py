"""Compose an :class:`~avo.runtime.AgentRuntime` from ``avo.toml`` and the plugin registry.

Every name in the config (provider, store, tools, permission mode, hooks,
notifiers) is resolved through a :class:`~avo.plugins.manager.PluginManager`;
nothing is special-cased. Python users call :func:`compose` (or
:func:`runtime_from_config`); ``avo run`` calls the same function with its
flags as overrides.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from avo.compose.config import (
    AvoConfig,
    PermissionRef,
    PluginRef,
    dotted,
    find_config,
    known_keys,
    load_config,
    validation_error,
)
from avo.config import DEFAULT_DATABASE, apply_runtime_overrides, database_location
from avo.exceptions import AvoError, ConfigError, PluginError

if TYPE_CHECKING:
    from avo.plugins.manager import PluginManager
    from avo.runtime import AgentRuntime

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


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

    async def aclose(self) -> None:
        """Close the event store (and anything else that holds resources)."""
        close = getattr(self.event_store, "close", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> Composition:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _ref(item: str | PluginRef) -> PluginRef:
    return PluginRef(name=item) if isinstance(item, str) else item


def _settings(spec: Any, settings: Mapping[str, Any], *, file: str, key: str) -> dict[str, Any]:
    """Validate a settings table with the spec's ``settings_model`` (if any)."""
    model: type[BaseModel] | None = getattr(spec, "settings_model", None)
    if model is None:
        return dict(settings)
    try:
        return model.model_validate(dict(settings)).model_dump()
    except ValidationError as exc:
        error = validation_error(exc, file=file, prefix=key)
        first = exc.errors()[0]
        where = key
        if first["type"] == "extra_forbidden":  # name the table the unknown key sits in
            inner = dotted(first["loc"][:-1])
            where = f"{key}.{inner}" if inner else key
        known = ", ".join(known_keys(model, first["loc"])) or "(none)"
        raise ConfigError(f"{error}; {where} accepts: {known}", key=key, file=file) from None


def _get(manager: PluginManager, kind: str, name: str, *, file: str, key: str) -> Any:
    try:
        return manager.get(kind, name)
    except PluginError as exc:
        raise ConfigError(f"{file}: {key}: {exc}", key=key, file=file) from exc


def select_store_spec(location: str, manager: PluginManager) -> Any:
    """The store spec whose ``schemes`` (URL) or ``suffixes`` (file) match ``location``."""
    manager.load_kind("store")
    specs = manager.specs("store")
    match = _SCHEME.match(location)
    if match and len(match.group(1)) > 1:  # not a Windows drive letter
        scheme = match.group(1).lower()
        chosen = [s for s in specs.values() if scheme in {x.lower() for x in s.schemes}]
        what = f"URL scheme {scheme!r}"
    else:
        suffix = Path(location).suffix.lower()
        chosen = [s for s in specs.values() if suffix in {x.lower() for x in s.suffixes}]
        what = f"file suffix {suffix!r}" if suffix else "a path without a suffix"
    if len(chosen) == 1:
        return chosen[0]
    offers = "; ".join(
        f"{name} (schemes: {', '.join(s.schemes) or '-'}; suffixes: {', '.join(s.suffixes) or '-'})"
        for name, s in sorted(specs.items())
    )
    if not chosen:
        raise ConfigError(
            f"no store plugin opens {location!r} ({what}); installed stores: "
            f"{offers or '(none)'}; install one (e.g. avo-sqlite) or name a store explicitly",
            key="store.location",
        )
    names = ", ".join(sorted(s.name for s in chosen))
    raise ConfigError(
        f"several store plugins open {location!r} ({what}): {names}; pick one with "
        f"[store] name or --store",
        key="store.name",
    )


def open_store(
    location: str | Path,
    *,
    manager: PluginManager | None = None,
    name: str | None = None,
    settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Any:
    """Open an event store by location (URL scheme or file suffix) or by plugin ``name``."""
    from avo.plugins.manager import PluginManager

    manager = manager or PluginManager(environ=environ)
    text = str(location)
    if name:
        spec = _get(manager, "store", name, file="(arguments)", key="store.name")
    else:
        spec = select_store_spec(text, manager)
    checked = _settings(spec, settings or {}, file="(arguments)", key="store.settings")
    return spec.factory(text, checked)


def _notification_hook(notifiers: Sequence[Any]) -> Callable[[Any], Any]:
    from avo.hooks import HookDecision, HookEvent

    async def notify(context: Any) -> Any:
        from avo.notifications import Notification
        from avo.redaction import shorten

        if context.event is HookEvent.STOP:
            run = context.run
            state = getattr(getattr(run, "state", None), "value", "finished")
            reason = getattr(getattr(run, "stop_reason", None), "value", "-")
            detail = getattr(run, "error", None) or getattr(run, "output", None) or ""
            body = f"stop reason: {reason}; steps: {getattr(run, 'steps', '?')}"
            if detail:
                body += f"\n{shorten(str(detail), 500)}"  # detail is already redacted
            level = {"failed": "error", "stopped": "warning"}.get(state, "info")
            note = Notification(title=f"avo run {context.run_id} {state}", body=body, level=level)
        else:
            note = Notification(
                title=f"avo run {context.run_id}", body=context.notification, level="warning"
            )
        for notifier in notifiers:
            try:
                await notifier.send(note)
            except Exception:
                continue
        return HookDecision.allow()

    return notify


def _call_factory(factory: Callable[..., Any], *args: Any, **optional: Any) -> Any:
    """Call a plugin factory with the optional keywords its signature accepts.

    Factories only grow: ``environ`` and ``store_location`` are offered to every
    hook factory, and one that takes neither is called with its settings alone.
    """
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory(*args)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return factory(*args, **optional)
    return factory(*args, **{k: v for k, v in optional.items() if k in parameters})


def _approval(
    config: AvoConfig, manager: PluginManager, env: Mapping[str, str], label: str, tools: list[Any]
) -> Any:
    """The approval callback of ``[permission]``; without the table, mode ``default``.

    The safe default: read-only (``inspect``) tools run; tools that modify or
    execute need a human. When no ``default`` permission plugin is installed,
    the kernel's own fallback runs only read-only tools.
    """
    permission = config.permission
    if permission is None:
        if "default" not in manager.names("permission"):
            return _read_only_callback(tools)
        permission = PermissionRef()
    spec = _get(manager, "permission", permission.mode, file=label, key="permission.mode")
    settings = _settings(spec, permission.plugin_settings(), file=label, key="permission")
    return spec.factory(settings, environ=env, tools=tools)


def _read_only_callback(tools: list[Any]) -> Callable[[Any], bool]:
    from avo.risk import ToolRisk

    read_only = {meta.name for meta in tools if meta.effective_risk is ToolRisk.INSPECT}

    def approve(call: Any) -> bool:
        return bool(call.name in read_only)

    return approve


def _bounds(config: AvoConfig, env: Mapping[str, str], label: str) -> tuple[Any, Any]:
    """The ``[budget]`` checker and ``[rate_limit]`` limiter (None when not configured)."""
    from avo.budget import budget_from_settings
    from avo.rate_limit import rate_limiter_from_settings

    try:
        budget = budget_from_settings(config.budget, environ=env)
    except AvoError as exc:
        raise ConfigError(f"{label}: [budget]: {exc}", key="budget", file=label) from None
    try:
        limiter = rate_limiter_from_settings(config.rate_limit)
    except AvoError as exc:
        raise ConfigError(f"{label}: [rate_limit]: {exc}", key="rate_limit", file=label) from None
    return budget, limiter


def compose(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    manager: PluginManager | None = None,
    provider: str | None = None,
    store: str | None = None,
    database: str | Path | None = None,
    tools: Iterable[str] | None = None,
    stream_callback: Callable[[str], None] | None = None,
    approval_callback: Any | None = None,
    discover_config: bool = False,
) -> Composition:
    """Build a runtime from a config file plus overrides.

    :param path: ``avo.toml`` or a ``pyproject.toml`` with ``[tool.avo]``; None
        uses no file unless ``discover_config`` looks in the current directory.
    :param provider, store, tools: override the config's names (``avo run``'s
        ``--provider``, ``--store``, ``--tool``); ``tools`` replaces the list.
    :param database: the store location (``-d``); else ``[store] location``,
        else ``AVO_DATABASE_PATH``, else ``avo.db``.
    """
    from avo.hooks import HookEvent, HookRegistry
    from avo.plugins.manager import PluginManager
    from avo.policies import LoopPolicy
    from avo.runtime import AgentRuntime
    from avo.tools import ToolRegistry

    env = os.environ if environ is None else environ
    if path is None and discover_config:
        path = find_config()
    config, label = load_config(path)
    if manager is None:
        switches = config.plugins
        manager = PluginManager(
            environ=env, autoload=switches.autoload, block=switches.block, allow=switches.allow
        )

    # provider
    provider_name = provider or (config.provider.name if config.provider else None)
    provider_name = provider_name or env.get("AVO_PROVIDER") or None
    if not provider_name:
        raise ConfigError(
            f"{label}: no provider configured: set [provider] name, pass --provider NAME or set "
            f"AVO_PROVIDER; available: {', '.join(manager.names('provider')) or '(none)'}",
            key="provider.name",
            file=label,
        )
    provider_key = "--provider" if provider else "provider.name"
    provider_spec = _get(manager, "provider", provider_name, file=label, key=provider_key)
    provider_table = (
        config.provider.settings
        if config.provider and config.provider.name == provider_name
        else {}
    )
    provider_settings = _settings(
        provider_spec, provider_table, file=label, key="provider.settings"
    )
    model_provider = provider_spec.factory(provider_settings, environ=env)

    # tools
    refs = [PluginRef(name=n) for n in tools] if tools is not None else config.tools
    built_tools: list[Any] = []
    for index, item in enumerate(refs):
        ref = _ref(item)
        key = "--tool" if tools is not None else f"tools[{index}]"
        spec = _get(manager, "tool", ref.name, file=label, key=key)
        made = spec.factory(_settings(spec, ref.settings, file=label, key=f"{key}.settings"))
        built_tools.extend(made if isinstance(made, list | tuple) else [made])
    registry = ToolRegistry(built_tools)

    # policy
    try:
        policy = LoopPolicy(**apply_runtime_overrides(config.policy, env))
    except ValidationError as exc:
        error = validation_error(exc, file=label, prefix="policy")
        known = ", ".join(sorted(LoopPolicy.model_fields))
        raise ConfigError(f"{error}; [policy] accepts: {known}", key="policy", file=label) from None

    # hooks and notifiers (every enabled hook plugin may also watch run lifecycles)
    manager.load_kind("hook")
    hook_registry = HookRegistry()
    store_ref = config.store
    location = str(
        database
        or (store_ref.location if store_ref and store_ref.location else None)
        or database_location(env)
    )
    for index, item in enumerate(config.hooks):
        ref = _ref(item)
        spec = _get(manager, "hook", ref.name, file=label, key=f"hooks[{index}]")
        settings = _settings(spec, ref.settings, file=label, key=f"hooks[{index}].settings")
        made = _call_factory(spec.factory, settings, environ=env, store_location=location)
        for event, hook in made:
            hook_registry.register(HookEvent(event), hook, name=ref.name)
    notifiers = []
    for index, item in enumerate(config.notifiers):
        ref = _ref(item)
        spec = _get(manager, "notifier", ref.name, file=label, key=f"notifiers[{index}]")
        settings = _settings(spec, ref.settings, file=label, key=f"notifiers[{index}].settings")
        notifiers.append(spec.factory(settings, environ=env))
    if notifiers:
        hook = _notification_hook(notifiers)
        hook_registry.register(HookEvent.STOP, hook)
        hook_registry.register(HookEvent.NOTIFICATION, hook)

    # permission mode: only ever builds an approval callback
    callback = approval_callback
    if callback is None:
        callback = _approval(config, manager, env, label, list(registry.metadata))

    budget, rate_limiter = _bounds(config, env, label)

    # store last, so nothing above leaves it open on error
    store_name = store or (store_ref.name if store_ref else None)
    if store_name:
        store_spec = _get(
            manager, "store", store_name, file=label, key="--store" if store else "store.name"
        )
    else:
        try:
            store_spec = select_store_spec(location, manager)
        except ConfigError as exc:
            raise ConfigError(f"{label}: {exc}", key=exc.key, file=label) from None
    store_table = store_ref.settings if store_ref and store_ref.name in (None, store_name) else {}
    event_store = store_spec.factory(
        location, _settings(store_spec, store_table, file=label, key="store.settings")
    )
    try:
        runtime = AgentRuntime(
            provider=model_provider,
            tools=registry,
            policy=policy,
            event_store=event_store,
            approval_callback=callback,
            hooks=hook_registry if hook_registry else None,
            stream_callback=stream_callback,
            plugins=manager,
            rate_limiter=rate_limiter,
            budget=budget,
            environ=env,
        )
    except AvoError:
        raise
    except Exception as exc:  # pragma: no cover - defensive
        raise ConfigError(f"{label}: cannot build the runtime: {exc}", file=label) from exc
    return Composition(
        runtime=runtime,
        event_store=event_store,
        manager=manager,
        config=config,
        config_file=label,
        store_location=location,
        notifiers=notifiers,
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
    "compose",
    "find_config",
    "load_config",
    "open_store",
    "runtime_from_config",
    "select_store_spec",
]
