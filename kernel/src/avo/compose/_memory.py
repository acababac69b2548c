"""``[memory]``: the long-term memory store (an ``avo.memory`` plugin) and its bundle.

The table names the memory plugin (``provider``, default ``sqlite`` from
avo-memory), its own ``settings``, the ``scope`` (``workspace`` or ``user``),
how many memories a run recalls and what runs write back. With
``[memory.embeddings]`` a provider plugin that declares embedding models
embeds what is stored and searched (for the plugins that can use vectors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from avo.compose._plugins import call_factory, get_spec, validated_settings
from avo.exceptions import ConfigError, PluginError

if TYPE_CHECKING:
    from avo.compose.config import EmbeddingsRef, MemorySettings
    from avo.compose.resolve import ResolvedConfig
    from avo.embeddings import Embedder
    from avo.plugins.manager import PluginManager

_SHIPPED_BY = {"sqlite": "avo-memory", "postgres": "avo-memory[postgres]"}


def embedder_from_config(
    ref: EmbeddingsRef, manager: PluginManager, env: Mapping[str, str], *, file: str
) -> Embedder:
    """The :class:`~avo.embeddings.Embedder` ``[memory.embeddings]`` names."""
    from avo.embeddings import Embedder

    key = "memory.embeddings"
    spec = get_spec(manager, "provider", ref.provider, file=file, key=f"{key}.provider")
    declared: Mapping[str, int] = getattr(spec, "embeddings", {}) or {}
    if ref.model not in declared:
        offered = ", ".join(sorted(declared)) or "none"
        raise ConfigError(
            f"{file}: {key}.model: provider {ref.provider!r} declares no embedding model "
            f"{ref.model!r}; its embedding models: {offered}",
            key=f"{key}.model",
            file=file,
        )
    settings = validated_settings(spec, ref.settings, file=file, key=f"{key}.settings")
    provider = spec.factory(settings, environ=env)
    return Embedder(provider, ref.model, int(declared[ref.model]), name=ref.provider)


def memory_store(
    resolved: ResolvedConfig,
    manager: PluginManager,
    env: Mapping[str, str],
    workspace: str,
    *,
    settings: MemorySettings | None = None,
    scope: str | None = None,
) -> Any:
    """The memory store ``[memory]`` configures (None when memory is off).

    ``avo memory list/search/forget`` open it the same way a run does (``scope``
    overrides the configured one).
    """
    memory = settings if settings is not None else resolved.config.memory
    if memory is None or not memory.enabled:
        return None
    if scope is not None and scope not in ("workspace", "user"):
        raise ConfigError(
            f"unknown memory scope {scope!r}; choose workspace or user", key="memory.scope"
        )
    file = resolved.source("memory")
    try:
        spec = manager.get("memory", memory.provider)
    except PluginError:
        package = _SHIPPED_BY.get(memory.provider)
        hint = f" (install {package})" if package else ""
        available = ", ".join(manager.names("memory")) or "(none)"
        raise ConfigError(
            f"{file}: memory.provider: no memory plugin named {memory.provider!r} is "
            f"installed{hint}; available: {available}",
            key="memory.provider",
            file=file,
        ) from None
    embedder = None
    if memory.embeddings is not None:
        if not getattr(spec, "embeddings", False):
            raise ConfigError(
                f"{file}: memory.embeddings: memory plugin {memory.provider!r} does not search "
                "by embeddings; remove [memory.embeddings] or choose a plugin that does "
                "(postgres)",
                key="memory.embeddings",
                file=file,
            )
        embedder = embedder_from_config(memory.embeddings, manager, env, file=file)
    checked = validated_settings(spec, memory.settings, file=file, key="memory.settings")
    return call_factory(
        spec.factory,
        checked,
        environ=env,
        workspace=workspace,
        scope=scope or memory.scope,
        embedder=embedder,
        store_location=resolved.store_location,
    )


def memory_bundle_from_config(
    resolved: ResolvedConfig, manager: PluginManager, env: Mapping[str, str], workspace: str
) -> Any:
    """The :class:`~avo.memory_bundle.MemoryBundle` for ``AgentRuntime(memory=...)``, or None."""
    memory = resolved.config.memory
    store = memory_store(resolved, manager, env, workspace)
    if store is None or memory is None:
        return None
    from avo.memory_bundle import MemoryBundle

    return MemoryBundle(
        store,
        recall_k=memory.recall,
        write=memory.write,
        max_chars=memory.max_chars,
        min_answer_chars=memory.min_answer_chars,
    )


__all__ = ["embedder_from_config", "memory_bundle_from_config", "memory_store"]
