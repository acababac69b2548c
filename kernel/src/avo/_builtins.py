"""The kernel's own plugins, registered through entry points like any other.

``kernel/pyproject.toml`` points the ``fake`` provider, the ``memory`` store, the
``in-process`` engine and the ``run``, ``plugin``, ``runs``, ``worker`` (...)
commands at the objects below. Nothing here is special-cased by the plugin
manager; importing this module stays cheap (factories and command bodies
import their modules when called).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from avo.plugins import (
    EngineSpec,
    ProviderCapabilities,
    ProviderSpec,
    StoreSpec,
    lazy_command,
    provides,
)


def _make_fake_provider(settings: Mapping[str, Any], *, environ: Any = None) -> Any:
    from avo._builtin_settings import FakeProviderSettings
    from avo.providers.fake import FakeProvider

    parsed = FakeProviderSettings.model_validate(dict(settings))
    return FakeProvider(
        parsed.script,
        repeat_last=parsed.repeat_last,
        chunk_chars=parsed.chunk_chars,
        chunk_delay=parsed.chunk_delay_ms / 1000,
    )


def _make_memory_store(location: str = "", settings: Mapping[str, Any] | None = None) -> Any:
    from avo.storage.memory import InMemoryEventStore

    return InMemoryEventStore()


def _fake_provider() -> Any:
    from avo._builtin_settings import FakeProviderSettings

    return provides(
        ProviderSpec(
            name="fake",
            factory=_make_fake_provider,
            description="Scripted responses from [provider.settings] script: no network, no key.",
            settings_model=FakeProviderSettings,
            models=("fake",),
            capabilities=ProviderCapabilities(streaming=True, tool_calls=True),
            embeddings={"fake-embed": 64},
        )
    )


memory_store = provides(
    StoreSpec(
        name="memory",
        factory=_make_memory_store,
        description="In-process event store; everything is lost when the process ends.",
        schemes=("memory",),
    )
)


def _make_in_process_engine(settings: Mapping[str, Any], *, environ: Any = None) -> Any:
    from avo.engines import InProcessEngine

    return InProcessEngine(settings, environ=environ)


in_process_engine = provides(
    EngineSpec(
        name="in-process",
        factory=_make_in_process_engine,
        description="Drive each run in the process that starts it (avo run): the default.",
    )
)

_LAZY: dict[str, Any] = {}
fake_provider: Any  # built by __getattr__ on first use


def __getattr__(name: str) -> Any:
    """``fake_provider`` is built on first use: its settings model needs pydantic."""
    if name == "fake_provider":
        if name not in _LAZY:
            _LAZY[name] = _fake_provider()
        return _LAZY[name]
    raise AttributeError(f"module 'avo._builtins' has no attribute {name!r}")


# ------------------------------------------------------------------ commands


run_command = provides(
    lazy_command(
        "run", "avo.cli.run", help="run a task with the runtime composed from avo.toml and flags"
    )
)

plugin_command = provides(
    lazy_command("plugin", "avo.cli.plugin", help="list, show, install, remove or scaffold plugins")
)

runs_command = provides(
    lazy_command(
        "runs", "avo.cli.runs", help="list, inspect, resume, cancel, diff and clean up stored runs"
    )
)

replay_command = provides(
    lazy_command(
        "replay",
        "avo.cli.replay",
        help="re-drive stored runs through today's code (no provider or tool calls) and compare",
    )
)

config_command = provides(
    lazy_command(
        "config", "avo.cli.config_cmd", help="show the resolved configuration and its sources"
    )
)

setup_command = provides(
    lazy_command(
        "setup", "avo.cli.setup", help="set up a provider, model, API key and permission mode"
    )
)

models_command = provides(
    lazy_command("models", "avo.cli.models", help="models of the installed providers, with prices")
)

login_command = provides(
    lazy_command("login", "avo.cli.login", help="store a provider's API key (--list, --remove)")
)

sessions_command = provides(
    lazy_command(
        "sessions", "avo.cli.sessions", help="list sessions and show one (runs that continue)"
    )
)

worker_command = provides(
    lazy_command(
        "worker",
        "avo.cli.worker",
        help="serve as a worker of an engine (avo worker --engine temporal): drive its runs",
    )
)

completion_command = provides(
    lazy_command("completion", "avo.cli.completion", help="print a shell completion script")
)

__all__ = [
    "completion_command",
    "config_command",
    "fake_provider",
    "in_process_engine",
    "login_command",
    "memory_store",
    "models_command",
    "plugin_command",
    "replay_command",
    "run_command",
    "runs_command",
    "sessions_command",
    "setup_command",
    "worker_command",
]
