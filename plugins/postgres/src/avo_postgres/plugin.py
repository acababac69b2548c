"""The ``postgres`` store plugin (entry point ``avo.stores: postgres``).

Importing this module is cheap: asyncpg is imported only when a store connects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from avo.exceptions import ConfigError
from avo.plugins import StoreSpec, provides

if TYPE_CHECKING:
    from avo_postgres.store import PostgresEventStore

_NUMBER_SETTINGS = ("connect_timeout", "command_timeout")
_SIZE_SETTINGS = ("pool_min_size", "pool_max_size", "concurrency")
_TEXT_SETTINGS = ("schema", "application_name")
_KNOWN = frozenset({*_NUMBER_SETTINGS, *_SIZE_SETTINGS, *_TEXT_SETTINGS})


def store_from_settings(location: str, settings: Mapping[str, Any]) -> PostgresEventStore:
    """Build a store from a DSN and a ``[store.settings]`` table.

    Raises ConfigError naming the key and the accepted values for a bad setting.
    """
    unknown = sorted(set(settings) - _KNOWN)
    if unknown:
        raise ConfigError(
            f"unknown postgres store setting(s) {', '.join(unknown)}; "
            f"known settings: {', '.join(sorted(_KNOWN))}",
            key=unknown[0],
        )
    kwargs: dict[str, Any] = {}
    for key in _NUMBER_SETTINGS:
        if key in settings:
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(
                    f"postgres store setting {key}={value!r} must be a positive number of seconds",
                    key=key,
                )
            kwargs[key] = float(value)
    for key in _SIZE_SETTINGS:
        if key in settings:
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"postgres store setting {key}={value!r} must be an integer >= 1", key=key
                )
            kwargs[key] = value
    for key in _TEXT_SETTINGS:
        if key in settings:
            value = settings[key]
            if not isinstance(value, str) or not value:
                raise ConfigError(
                    f"postgres store setting {key}={value!r} must be a non-empty string", key=key
                )
            kwargs[key] = value
    from avo_postgres.store import PostgresEventStore

    return PostgresEventStore(location, **kwargs)


def _postgres_factory(location: str, settings: dict[str, Any] | None = None) -> Any:
    """Open ``location`` (a postgresql:// URL) with the ``[store.settings]`` table."""
    return store_from_settings(location, settings or {})


postgres = provides(
    StoreSpec(
        name="postgres",
        factory=_postgres_factory,
        description="PostgreSQL event store: many processes and hosts append to one store",
        schemes=("postgresql", "postgres"),
    )
)
"""The pluggy plugin object the entry point names."""
