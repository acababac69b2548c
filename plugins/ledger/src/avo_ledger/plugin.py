"""Entry-point objects (cheap to import: SQLite and the report code load on first use).

* ``avo.commands: cost`` — the ``avo cost`` subcommand.
* ``avo.hooks: ledger`` — enable per-step ledger writing from ``avo.toml``::

      hooks = [{name = "ledger", settings = {database = "avo.db"}}]

  Its factory (called when the config enables it) arms an observer that
  implements ``avo_event_appended``; the composed runtime's plugin manager then
  feeds it every event. It contributes no run hooks. Prices: ``AVO_USAGE_RATES_*``
  first, else the catalog of the provider plugin named in each event (cache
  tokens at their own prices), else its legacy pricing table.
  The observer is one per process: the last configuration wins.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from avo.config import database_location
from avo.hookspecs import hookimpl
from avo.plugins import HookPluginSpec, lazy_command, provides

if TYPE_CHECKING:
    from avo.events import AgentEvent
    from avo_ledger.recorder import LedgerPlugin


cost = provides(
    lazy_command(
        "cost",
        "avo_ledger.cost",
        help="token usage and cost per run and per model, from the token ledger",
    )
)


class LedgerSettings(BaseModel):
    """``[hooks] ledger`` settings."""

    model_config = ConfigDict(extra="forbid")

    database: str | None = None
    """Ledger database (default: the run's SQLite store, then ``AVO_DATABASE_PATH``, ``avo.db``)."""


class _ProviderPricing(dict[str, tuple[Decimal, Decimal]]):
    """Model -> rates, filled lazily from the provider plugin named in each event."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        super().__init__()
        self._environ = environ
        self._asked: set[str] = set()

    def learn(self, provider: str) -> None:
        if provider in self._asked:
            return
        self._asked.add(provider)
        from avo.plugins.manager import PluginManager
        from avo_ledger.recorder import pricing_from_plugins

        manager = PluginManager(environ=self._environ)
        # The event names the adapter (e.g. "openai-compatible"), not always the plugin
        # ("openai"): then every provider plugin's prices are asked, by model name.
        named = provider in manager.names("provider")
        if not named and "*" in self._asked:
            return
        self._asked.add("*" if not named else provider)
        chosen = [provider] if named else None
        for model, rates in pricing_from_plugins(manager, providers=chosen).items():
            self.setdefault(model, rates)


def _sqlite_path(location: str | None) -> str | None:
    """The run's own store file when it is SQLite (the ledger lives beside the events)."""
    if not location:
        return None
    if location.startswith("sqlite:///"):
        return location.removeprefix("sqlite:///")
    if "://" in location:
        return None  # another kind of store (e.g. PostgreSQL): use the default ledger file
    return location if location.endswith((".db", ".sqlite", ".sqlite3")) else None


class LedgerHooks:
    """The ``avo.hooks: ledger`` plugin object: a spec plus an event observer."""

    def __init__(self) -> None:
        self.spec = HookPluginSpec(
            name="ledger",
            factory=self._factory,
            description="write a token-ledger row (tokens, cost) for every model call",
            settings_model=LedgerSettings,
        )
        self.recorder: LedgerPlugin | None = None
        self._pricing: _ProviderPricing | None = None

    @hookimpl
    def avo_register_hooks(self, register: Callable[[HookPluginSpec], None]) -> None:
        """Register the ``ledger`` hook set."""
        register(self.spec)

    @hookimpl
    def avo_event_appended(self, event: AgentEvent) -> None:
        """Record MODEL_RESPONDED usage once the ledger has been enabled."""
        recorder = self.recorder
        if recorder is None:
            return
        provider = event.payload.get("provider")
        if self._pricing is not None and isinstance(provider, str) and provider:
            self._pricing.learn(provider)
        recorder.avo_event_appended(event)

    def _factory(
        self,
        settings: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        store_location: str | None = None,
    ) -> list[Any]:
        from avo_ledger.recorder import LedgerPlugin

        options = LedgerSettings.model_validate(dict(settings or {}))
        env = os.environ if environ is None else environ
        database = options.database or _sqlite_path(store_location) or database_location(env)
        if self.recorder is not None:
            self.recorder.close()
        from avo.pricing import price_book

        self._pricing = _ProviderPricing(env)
        book = price_book(environ=env)  # AVO_USAGE_RATES_*, then the provider catalogs
        self.recorder = LedgerPlugin(database, pricing=self._pricing, environ=env, book=book)
        return []

    def disable(self) -> None:
        """Stop recording and close the ledger."""
        if self.recorder is not None:
            self.recorder.close()
        self.recorder = None


ledger = LedgerHooks()

__all__ = ["LedgerHooks", "LedgerSettings", "cost", "ledger"]
