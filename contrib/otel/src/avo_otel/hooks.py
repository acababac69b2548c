"""``avo.hooks: otel`` — enable run tracing from ``avo.toml``::

    hooks = [{name = "otel", settings = {service_name = "my-agent"}}]

The factory (called when the config enables it) checks the ``AVO_OTEL_ENABLED``
gate, configures the tracer and arms an :class:`~avo_otel.OtelPlugin` observer;
the composed runtime's plugin manager then feeds it every event. It contributes
no run hooks. One observer per process: the last configuration wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from avo.hookspecs import hookimpl
from avo.plugins import HookPluginSpec

if TYPE_CHECKING:
    from avo.events import AgentEvent
    from avo_otel.plugin import OtelPlugin


class OtelSettings(BaseModel):
    """``[hooks] otel`` settings."""

    model_config = ConfigDict(extra="forbid")

    service_name: str | None = None
    """OTel ``service.name`` (default: ``AVO_OTEL_SERVICE_NAME``, then ``avo``)."""


class OtelHooks:
    """The ``avo.hooks: otel`` plugin object: a spec plus an event observer."""

    def __init__(self) -> None:
        self.spec = HookPluginSpec(
            name="otel",
            factory=self._factory,
            description="trace runs with OpenTelemetry (span per run, model turn, tool call)",
            settings_model=OtelSettings,
        )
        self.observer: OtelPlugin | None = None

    @hookimpl
    def avo_register_hooks(self, register: Callable[[HookPluginSpec], None]) -> None:
        """Register the ``otel`` hook set."""
        register(self.spec)

    @hookimpl
    def avo_event_appended(self, event: AgentEvent) -> None:
        """Forward events to the tracer once tracing has been enabled."""
        if self.observer is not None:
            self.observer.avo_event_appended(event)

    def _factory(
        self,
        settings: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        exporter: Any = None,
    ) -> list[Any]:
        from avo_otel.plugin import OtelPlugin

        options = OtelSettings.model_validate(dict(settings or {}))
        self.observer = OtelPlugin.from_env(
            environ=environ, service_name=options.service_name, exporter=exporter
        )
        return []

    def disable(self) -> None:
        """Stop tracing runs."""
        self.observer = None


otel = OtelHooks()

__all__ = ["OtelHooks", "OtelSettings", "otel"]
