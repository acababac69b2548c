"""Small helpers shared by the composition modules: look a plugin up, validate its settings."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from avo.compose.config import dotted, known_keys, validation_error
from avo.exceptions import ConfigError, PluginError

if TYPE_CHECKING:
    from avo.plugins.manager import PluginManager


def validated_settings(
    spec: Any, settings: Mapping[str, Any], *, file: str, key: str
) -> dict[str, Any]:
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


def get_spec(manager: PluginManager, kind: str, name: str, *, file: str, key: str) -> Any:
    """``manager.get(kind, name)`` with errors naming where the name came from."""
    try:
        return manager.get(kind, name)
    except PluginError as exc:
        raise ConfigError(f"{file}: {key}: {exc}", key=key, file=file) from exc


def call_factory(factory: Callable[..., Any], *args: Any, **optional: Any) -> Any:
    """Call a plugin factory with the optional keywords its signature accepts.

    Factories only grow: ``environ``, ``store_location`` and ``workspace`` are
    offered to every factory, and one that takes none of them is called with
    its settings alone.
    """
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory(*args)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return factory(*args, **optional)
    return factory(*args, **{k: v for k, v in optional.items() if k in parameters})


def accepts_setting(spec: Any, name: str) -> bool:
    """True when the spec's settings model declares ``name`` (or takes any table)."""
    model: type[BaseModel] | None = getattr(spec, "settings_model", None)
    return model is None or name in model.model_fields


__all__ = ["accepts_setting", "call_factory", "get_spec", "validated_settings"]
