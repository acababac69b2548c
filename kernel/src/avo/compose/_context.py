"""What the config says a run's context is made of: shapers, bundles and the window.

- ``shapers = [...]`` / ``bundles = [...]`` name ``avo.shapers`` / ``avo.bundles``
  plugins, with settings, like ``tools``;
- ``[instructions]``, ``[skills]`` and ``[mcp]`` each enable the bundle (or
  shaper) plugin of the same name, the table being its settings
  (``enabled = false`` turns it off);
- ``[context]`` resolves the model's context window (``window``, else the
  provider plugin's catalog, else ``default_window``) and enables its
  ``policy`` plugin (default ``compaction``; ``"none"`` for no policy), every
  other key of the table being the policy's settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from avo.compose._plugins import call_factory, get_spec, validated_settings
from avo.compose.config import PluginRef
from avo.context_window import DEFAULT_WINDOW, ContextWindow, resolve_context_window
from avo.exceptions import ConfigError, PluginError
from avo.shaping import bind_shaper

if TYPE_CHECKING:
    from avo.compose.resolve import ResolvedConfig
    from avo.plugins.manager import PluginManager

TABLE_PLUGINS = ("instructions", "skills", "mcp")
"""Config tables that enable the bundle (or shaper) plugin of the same name."""
_SHIPPED_BY = {
    "compaction": "avo-context",
    "instructions": "avo-context",
    "skills": "avo-skills",
    "mcp": "avo-mcp",
}


def _ref(item: str | PluginRef) -> PluginRef:
    return PluginRef(name=item) if isinstance(item, str) else item


def _build(
    spec: Any,
    settings: Mapping[str, Any],
    env: Mapping[str, str],
    workspace: str,
    *,
    file: str,
    key: str,
) -> Any:
    checked = validated_settings(spec, settings, file=file, key=key)
    return call_factory(spec.factory, checked, environ=env, workspace=workspace)


def _find(manager: PluginManager, name: str, *, file: str, key: str) -> tuple[str, Any]:
    """The bundle, else the shaper, registered as ``name``."""
    for kind in ("bundle", "shaper"):
        try:
            return kind, manager.get(kind, name)
        except PluginError:
            continue
    package = _SHIPPED_BY.get(name)
    hint = f" (install {package})" if package else ""
    raise ConfigError(
        f"{file}: {key}: no bundle or request shaper plugin named {name!r} is installed{hint}; "
        f"bundles: {', '.join(manager.names('bundle')) or '(none)'}; "
        f"shapers: {', '.join(manager.names('shaper')) or '(none)'}",
        key=key,
        file=file,
    )


def _window(
    resolved: ResolvedConfig, manager: PluginManager, env: Mapping[str, str], provider: Any
) -> ContextWindow:
    config = resolved.config
    context = config.context
    spec = None
    if config.provider is not None:
        try:
            spec = manager.get("provider", config.provider.name)
        except PluginError:
            spec = None
    capabilities = getattr(spec, "capabilities", None)
    model = getattr(provider, "model", None)
    return resolve_context_window(
        model=model if isinstance(model, str) else None,
        explicit=context.window if context is not None else None,
        catalog=getattr(spec, "context_windows", None),
        provider_window=getattr(capabilities, "context_window", None),
        provider=provider,
        default=context.default_window if context is not None else DEFAULT_WINDOW,
        environ=env,
    )


def context_parts(
    resolved: ResolvedConfig,
    manager: PluginManager,
    env: Mapping[str, str],
    provider: Any,
    workspace: str,
) -> dict[str, Any]:
    """``AgentRuntime`` keywords: ``shapers``, ``bundles``, ``context_window``, ``workspace``."""
    config = resolved.config
    shapers: list[Any] = []
    bundles: list[Any] = []
    context = config.context
    if context is not None and context.policy != "none":
        file = resolved.source("context")
        kind, spec = _find(manager, context.policy, file=file, key="context.policy")
        made = _build(spec, context.model_extra or {}, env, workspace, file=file, key="context")
        if kind == "bundle":
            bundles.append(made)
        else:
            shapers.append(bind_shaper(made, name=spec.name, order=spec.order))
    for table in TABLE_PLUGINS:
        settings = getattr(config, table)
        if settings is None:
            continue
        settings = dict(settings)
        if settings.pop("enabled", True) is False:
            continue
        file = resolved.source(table)
        kind, spec = _find(manager, table, file=file, key=f"[{table}]")
        made = _build(spec, settings, env, workspace, file=file, key=table)
        if kind == "bundle":
            bundles.append(made)
        else:
            shapers.append(bind_shaper(made, name=spec.name, order=spec.order))
    for index, item in enumerate(config.shapers):
        ref = _ref(item)
        file = resolved.source("shapers")
        spec = get_spec(manager, "shaper", ref.name, file=file, key=f"shapers[{index}]")
        made = _build(spec, ref.settings, env, workspace, file=file, key=f"shapers[{index}]")
        shapers.append(bind_shaper(made, name=ref.name, order=spec.order))
    for index, item in enumerate(config.bundles):
        ref = _ref(item)
        file = resolved.source("bundles")
        spec = get_spec(manager, "bundle", ref.name, file=file, key=f"bundles[{index}]")
        bundles.append(
            _build(spec, ref.settings, env, workspace, file=file, key=f"bundles[{index}]")
        )
    return {
        "shapers": shapers,
        "bundles": bundles,
        "context_window": _window(resolved, manager, env, provider),
        "workspace": workspace,
    }


__all__ = ["TABLE_PLUGINS", "context_parts"]
