"""Providers from the environment: factories, ``build_provider_from_env``, router env.

Every provider plugin's factory has the plugin signature
``factory(settings: dict, *, environ: Mapping[str, str])``. ``settings`` may
carry ``model``, ``base_url``, ``api_key``, ``max_completion_tokens``,
``request_timeout_seconds`` (and ``api_style`` for MiniMax); anything unset is
read from ``environ`` (``AVO_{NAME}_API_KEY`` / ``_BASE_URL`` / ``_MODEL``).

Model resolution for ``AVO_PROVIDER=<name>``: ``AVO_{NAME}_MODEL``, then
``AVO_MODEL``, then the catalog's first entry. Router routes use
``AVO_{NAME}_MODEL`` or the catalog's first entry.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from avo.exceptions import ConfigError
from avo_providers.catalog import (
    API_KEY_ENV,
    OLLAMA_CLOUD_MODELS,
    PROVIDER_MODELS,
    ProviderName,
    env_prefix,
)

ROUTER_RACE_STRATEGIES = frozenset({"race", "fastest", "parallel"})
AUTO_CHAIN_CANDIDATES: tuple[str, ...] = (
    "openrouter",
    "groq",
    "cerebras",
    "anthropic",
    "openai",
    "gemini",
)

EventCallback = Callable[[dict[str, Any]], Awaitable[None] | None]


# ----------------------------------------------------------------- helpers
def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    return value.strip() if value and value.strip() else None


def _api_key(name: str, settings: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    if settings.get("api_key"):
        return str(settings["api_key"])
    for var in API_KEY_ENV.get(name, ()):
        value = _env(environ, var)
        if value:
            return value
    return None


def _required_key(name: str, settings: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    key = _api_key(name, settings, environ)
    if key:
        return key
    var = API_KEY_ENV[name][0]
    chosen_by_env = (_env(environ, "AVO_PROVIDER") or "").lower() == name
    if settings.get("required_by") or chosen_by_env:
        when = settings.get("required_by") or f"AVO_PROVIDER={name}"
        raise ConfigError(f"{var} is required when {when}", key=var)
    raise ConfigError(
        f"{var} is required for provider {name!r}: export it, or store it with `avo login {name}`",
        key=var,
    )


def _model(name: str, settings: Mapping[str, Any], environ: Mapping[str, str], default: str) -> str:
    """settings > ``AVO_{NAME}_MODEL`` > ``AVO_MODEL`` (for the selected provider) > catalog."""
    selected = (_env(environ, "AVO_PROVIDER") or "").lower() == name
    return str(
        settings.get("model")
        or _env(environ, f"{env_prefix(name)}_MODEL")
        or (_env(environ, "AVO_MODEL") if selected else None)
        or default
    )


def _base_url(name: str, settings: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    value = settings.get("base_url") or _env(environ, f"{env_prefix(name)}_BASE_URL")
    return str(value) if value else None


def _sizes(settings: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "max_completion_tokens": int(settings.get("max_completion_tokens") or 1024),
        "request_timeout_seconds": float(settings.get("request_timeout_seconds") or 30.0),
    }


def _client(settings: Mapping[str, Any]) -> Any:
    return settings.get("client")


# ----------------------------------------------------------------- factories
def _openrouter_headers(environ: Mapping[str, str]) -> dict[str, str]:
    from avo_providers.openai_vendors import (
        OPENROUTER_DEFAULT_APP_NAME,
        OPENROUTER_DEFAULT_SITE_URL,
    )

    return {
        "HTTP-Referer": _env(environ, "AVO_OPENROUTER_SITE_URL") or OPENROUTER_DEFAULT_SITE_URL,
        "X-Title": _env(environ, "AVO_OPENROUTER_APP_NAME") or OPENROUTER_DEFAULT_APP_NAME,
    }


def _provider_factory(
    cls_path: str,
    name: str,
    *,
    key_required: bool = True,
    headers: Callable[[Mapping[str, str]], dict[str, str]] | None = None,
    doc: str | None = None,
) -> Callable[..., Any]:
    """A plugin factory for the HTTP adapter at ``cls_path``, configured as ``name``.

    One body for every adapter configured the same way: model, API key and base
    URL from settings / ``AVO_{NAME}_*``; the adapter class is imported on first
    call so the entry-point module stays cheap to import.
    """

    def factory(settings: Mapping[str, Any], *, environ: Mapping[str, str]) -> Any:
        import importlib

        from avo_providers.base_http import ProviderConfig

        module, _, cls_name = cls_path.rpartition(".")
        cls = getattr(importlib.import_module(module), cls_name)
        config = ProviderConfig(
            model=_model(name, settings, environ, PROVIDER_MODELS[name][0]),
            api_key=(_required_key if key_required else _api_key)(name, settings, environ),
            base_url=_base_url(name, settings, environ),
            headers=headers(environ) if headers is not None else {},
        )
        return cls(config, **_sizes(settings), client=_client(settings))

    factory.__name__ = factory.__qualname__ = f"make_{name.replace('-', '_')}"
    default_doc = f"``{cls_name_of(cls_path)}`` from settings / ``{env_prefix(name)}_*``."
    factory.__doc__ = doc or default_doc
    return factory


def cls_name_of(path: str) -> str:
    """The class name at the end of a dotted path."""
    return path.rpartition(".")[2]


make_anthropic = _provider_factory("avo_providers.anthropic.AnthropicProvider", "anthropic")
make_openai = _provider_factory(
    "avo_providers.openai_compatible.OpenAICompatibleProvider", "openai"
)
make_groq = _provider_factory("avo_providers.openai_vendors.GroqProvider", "groq")
make_cerebras = _provider_factory("avo_providers.openai_vendors.CerebrasProvider", "cerebras")
make_openrouter = _provider_factory(
    "avo_providers.openai_vendors.OpenRouterProvider", "openrouter", headers=_openrouter_headers
)
make_gemini = _provider_factory("avo_providers.gemini.GeminiProvider", "gemini")
make_ollama = _provider_factory(
    "avo_providers.ollama.OllamaProvider",
    "ollama",
    key_required=False,
    doc="``OllamaProvider`` (local; key optional) from settings / ``AVO_OLLAMA_*``.",
)


def make_ollama_cloud(settings: Mapping[str, Any], *, environ: Mapping[str, str]) -> Any:
    """``OllamaCloudProvider`` from settings / ``AVO_OLLAMA_CLOUD_API_KEY``."""
    from avo_providers.base_http import ProviderConfig
    from avo_providers.ollama import OllamaCloudProvider

    config = ProviderConfig(
        model=str(settings.get("model") or OLLAMA_CLOUD_MODELS[0]),
        api_key=_required_key("ollama-cloud", settings, environ),
        base_url=str(settings["base_url"]) if settings.get("base_url") else None,
    )
    return OllamaCloudProvider(config, **_sizes(settings), client=_client(settings))


def make_openai_responses(settings: Mapping[str, Any], *, environ: Mapping[str, str]) -> Any:
    """``OpenAIResponsesProvider`` from settings / ``AVO_OPENAI_*`` (the Chat adapter's variables).

    ``tool_choice``, ``reasoning_effort`` and ``reasoning_summary`` come from
    settings or ``AVO_OPENAI_TOOL_CHOICE`` / ``AVO_OPENAI_REASONING_EFFORT`` /
    ``AVO_OPENAI_REASONING_SUMMARY``.
    """
    from avo_providers.base_http import ProviderConfig
    from avo_providers.openai_responses import OpenAIResponsesProvider

    name = "openai-responses"
    choice = str(settings.get("tool_choice") or _env(environ, "AVO_OPENAI_TOOL_CHOICE") or "auto")
    effort = settings.get("reasoning_effort") or _env(environ, "AVO_OPENAI_REASONING_EFFORT")
    if effort is not None and str(effort).lower() not in REASONING_EFFORTS:
        raise ConfigError(
            f"AVO_OPENAI_REASONING_EFFORT must be one of {', '.join(REASONING_EFFORTS)}, "
            f"got {effort!r}",
            key="AVO_OPENAI_REASONING_EFFORT",
        )
    summary = settings.get("reasoning_summary") or _env(environ, "AVO_OPENAI_REASONING_SUMMARY")
    if summary is not None and str(summary).lower() not in REASONING_SUMMARIES:
        raise ConfigError(
            f"AVO_OPENAI_REASONING_SUMMARY must be one of {', '.join(REASONING_SUMMARIES)}, "
            f"got {summary!r}",
            key="AVO_OPENAI_REASONING_SUMMARY",
        )
    config = ProviderConfig(
        model=_model(name, settings, environ, PROVIDER_MODELS[name][0]),
        api_key=_required_key(name, settings, environ),
        base_url=_base_url(name, settings, environ),
    )
    return OpenAIResponsesProvider(
        config,
        **_sizes(settings),
        client=_client(settings),
        tool_choice=choice,
        reasoning_effort=str(effort).lower() if effort else None,
        reasoning_summary=str(summary).lower() if summary else None,
    )


REASONING_EFFORTS = ("minimal", "low", "medium", "high")
REASONING_SUMMARIES = ("auto", "concise", "detailed")


def make_minimax(settings: Mapping[str, Any], *, environ: Mapping[str, str]) -> Any:
    """``MiniMaxProvider``; ``AVO_MINIMAX_API_STYLE`` defaults to ``anthropic``."""
    from avo_providers.base_http import MiniMaxConfig
    from avo_providers.minimax import API_STYLES, MiniMaxProvider

    style = str(settings.get("api_style") or _env(environ, "AVO_MINIMAX_API_STYLE") or "anthropic")
    style = style.lower()
    if style not in API_STYLES:
        raise ConfigError(
            f"AVO_MINIMAX_API_STYLE must be 'openai' or 'anthropic', got {style!r}",
            key="AVO_MINIMAX_API_STYLE",
        )
    config = MiniMaxConfig(
        model=_model("minimax", settings, environ, PROVIDER_MODELS["minimax"][0]),
        api_key=_required_key("minimax", settings, environ),
        base_url=_base_url("minimax", settings, environ),
        api_style=style,  # type: ignore[arg-type]
    )
    return MiniMaxProvider(config, **_sizes(settings), client=_client(settings))


# ----------------------------------------------------------------- registry
def find_provider_spec(name: str) -> Any | None:
    """The ``ProviderSpec`` registered under ``name``: ours first, then any installed plugin."""
    from avo_providers import plugin

    own = plugin.PROVIDER_SPECS.get(name)
    if own is not None:
        return own
    from importlib.metadata import entry_points

    for entry in entry_points(group="avo.providers"):
        if entry.name != name:
            continue
        obj = entry.load()
        for spec in getattr(obj, "specs", ()):
            if getattr(spec, "name", None) == name:
                return spec
    return None


def available_provider_names() -> list[str]:
    """Every provider name that ``AVO_PROVIDER`` may take."""
    from importlib.metadata import entry_points

    from avo_providers import plugin

    names = set(plugin.PROVIDER_SPECS)
    names.update(entry.name for entry in entry_points(group="avo.providers"))
    return sorted(names)


# ----------------------------------------------------------------- router
def _float_env(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = _env(environ, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}", key=name) from None
    if value < 0:
        raise ConfigError(f"{name} must be >= 0, got {raw!r}", key=name)
    return value


def router_chain_from_env(environ: Mapping[str, str]) -> list[str]:
    """Route names from ``AVO_ROUTER_CHAIN`` (or ``AVO_ROUTER_PROVIDERS``), ``auto`` expanded."""
    raw = _env(environ, "AVO_ROUTER_CHAIN") or _env(environ, "AVO_ROUTER_PROVIDERS") or "auto"
    if raw.lower() == "auto":
        chain = ["ollama"]
        for name in AUTO_CHAIN_CANDIDATES:
            if any(_env(environ, var) for var in API_KEY_ENV[name]):
                chain.append(name)
        if len(chain) == 1:
            chain.append("openrouter")
        return chain
    chain = [part.strip().lower() for part in raw.split(",") if part.strip()]
    if not chain:
        raise ConfigError("AVO_ROUTER_CHAIN is empty; name providers like 'ollama,groq'")
    if "router" in chain:
        raise ConfigError("AVO_ROUTER_CHAIN cannot contain 'router' itself")
    if len(set(chain)) != len(chain):
        raise ConfigError(f"AVO_ROUTER_CHAIN names a provider twice: {raw!r}")
    return chain


def make_router(settings: Mapping[str, Any], *, environ: Mapping[str, str]) -> Any:
    """A Fallback or Race router over ``AVO_ROUTER_CHAIN``."""
    from avo_providers.router import FallbackRouterProvider, RaceRouterProvider

    chain = list(settings.get("routes") or router_chain_from_env(environ))
    routes = []
    for name in chain:
        spec = find_provider_spec(name)
        if spec is None:
            raise ConfigError(
                f"AVO_ROUTER_CHAIN names unknown provider {name!r}; "
                f"choose from {', '.join(n for n in available_provider_names() if n != 'router')}",
                key="AVO_ROUTER_CHAIN",
            )
        route_settings = {
            **_sizes(settings),
            "required_by": f"AVO_PROVIDER=router routes through {name}",
        }
        routes.append((name, spec.factory(route_settings, environ=environ)))
    cooldown = settings.get("cooldown_seconds")
    if cooldown is None:
        cooldown = _float_env(environ, "AVO_ROUTER_COOLDOWN_SECONDS", 30.0)
    strategy = str(
        settings.get("strategy")
        or _env(environ, "AVO_ROUTER_STRATEGY")
        or _env(environ, "AVO_ROUTER_MODE")
        or "fallback"
    )
    callback = settings.get("event_callback")
    if strategy.lower() in ROUTER_RACE_STRATEGIES:
        delay_ms = settings.get("speculative_delay_ms")
        if delay_ms is None:
            delay_ms = _float_env(environ, "AVO_ROUTER_SPECULATIVE_DELAY_MS", 0.0)
        return RaceRouterProvider(
            routes,
            cooldown_seconds=cooldown,
            speculative_delay_seconds=delay_ms / 1000.0,
            event_callback=callback,
        )
    return FallbackRouterProvider(routes, cooldown_seconds=cooldown, event_callback=callback)


# ----------------------------------------------------------------- front door
def build_provider_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    max_completion_tokens: int = 1024,
    request_timeout_seconds: float = 30.0,
    event_callback: EventCallback | None = None,
) -> Any:
    """Build the provider ``AVO_PROVIDER`` names; raise ``ConfigError`` naming what is wrong."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    name = (_env(env, "AVO_PROVIDER") or "").lower()
    if not name:
        raise ConfigError(
            f"AVO_PROVIDER is required; set it to one of {', '.join(available_provider_names())}",
            key="AVO_PROVIDER",
        )
    spec = find_provider_spec(name)
    if spec is None:
        raise ConfigError(
            f"AVO_PROVIDER={name!r} is not a known provider; "
            f"choose from {', '.join(available_provider_names())}",
            key="AVO_PROVIDER",
        )
    settings: dict[str, Any] = {
        "max_completion_tokens": max_completion_tokens,
        "request_timeout_seconds": request_timeout_seconds,
    }
    if name == "router":
        settings["event_callback"] = event_callback
    else:
        model = _env(env, f"{env_prefix(name)}_MODEL") or _env(env, "AVO_MODEL")
        if model:
            settings["model"] = model
    return spec.factory(settings, environ=env)


__all__ = [
    "PROVIDER_MODELS",
    "ProviderName",
    "available_provider_names",
    "build_provider_from_env",
    "find_provider_spec",
    "make_anthropic",
    "make_cerebras",
    "make_gemini",
    "make_groq",
    "make_minimax",
    "make_ollama",
    "make_ollama_cloud",
    "make_openai",
    "make_openai_responses",
    "make_openrouter",
    "make_router",
    "router_chain_from_env",
]
