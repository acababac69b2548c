"""What every command shares: the resolved configuration and the event store it names."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from avo.exceptions import ConfigError, RunNotFoundError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def resolved(args: Any, **flags: Any) -> Any:
    """The one configuration resolution (flags > env > avo.toml > user config > defaults)."""
    from avo.compose.resolve import resolve_config

    return resolve_config(
        getattr(args, "config", None),
        environ=getattr(args, "avo_environ", None),
        database=getattr(args, "database", None),
        **flags,
    )


def store_location(args: Any) -> tuple[str, str]:
    """The event store location for ``args`` and where that value came from."""
    config = resolved(args)
    return config.store_location, config.source("store.location")


def _file_path(location: str) -> str | None:
    """The file a location names (a bare path or ``sqlite:///path``), or None for a URL."""
    match = _SCHEME.match(location)
    if match is None:
        return location
    if location.startswith("sqlite://"):
        path = location[len("sqlite://") :]
        return path[1:] if path.startswith("/") else path
    return None


def check_location(location: str, source: str) -> None:
    """Refuse a file store that does not exist (reading commands must not create one)."""
    path = _file_path(location)
    if path is None:
        return
    where = "" if source in ("default", "flag -d/--database") else f" (from {source})"
    if Path(path).is_dir():
        raise ConfigError(
            f"the event store {location}{where} is a directory; pass -d with the store file "
            f"in it (e.g. {Path(path) / 'avo.db'}) or a store URL",
            key="database",
        )
    if not Path(path).exists():
        raise ConfigError(
            f"no event store at {location}{where} (the file does not exist); pass "
            "-d PATH or a store URL, or run something first",
            key="database",
        )


async def open_store(args: Any, *, must_exist: bool = True) -> tuple[Any, str]:
    """Open the resolved event store; returns it and its location."""
    from avo.compose import open_store as open_by_location

    config = resolved(args)
    location, source = config.store_location, config.source("store.location")
    if must_exist:
        check_location(location, source)
    # the configured store's own settings (a PostgreSQL schema, ...) apply to its location,
    # not to another one given with -d
    table = config.config.store if not source.startswith("flag") else None
    store = open_by_location(
        location,
        manager=getattr(args, "avo_plugins", None),
        name=table.name if table is not None else None,
        settings=table.settings if table is not None else None,
        environ=getattr(args, "avo_environ", None),
    )
    if inspect.isawaitable(store):
        store = await store
    return store, location


async def resolve_run_id(store: Any, text: str) -> str:
    """``text`` if it is a run id, else the one run whose id starts with it."""
    if await store.get_run(text) is not None:
        return text
    matches: list[str] = [
        run.run_id for run in await store.list_runs() if run.run_id.startswith(text)
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RunNotFoundError(f"run {text!r} was not found in the event store", run_id=text)
    shown = ", ".join(sorted(matches)[:5])
    raise RunNotFoundError(
        f"run id prefix {text!r} is ambiguous ({len(matches)} runs: {shown}); give more of the id",
        run_id=text,
    )


__all__ = ["check_location", "open_store", "resolve_run_id", "resolved", "store_location"]
