"""Open an event store by location (URL scheme or file suffix) or by plugin name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avo.compose._plugins import get_spec as _get
from avo.compose._plugins import validated_settings as _settings
from avo.exceptions import ConfigError

if TYPE_CHECKING:
    from avo.plugins.manager import PluginManager

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


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


__all__ = ["open_store", "select_store_spec"]
