"""Write a config table as TOML (the standard library reads TOML but cannot write it).

Each top-level key becomes ``key = value`` with nested tables written inline,
which TOML allows at any depth; strings are written as JSON strings, which are
valid TOML basic strings.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any

from avo.exceptions import ConfigError

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, dict):
        items = ", ".join(
            f"{_key(str(k))} = {_value(v, f'{where}.{k}')}"
            for k, v in value.items()
            if v is not None
        )
        return "{" + items + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    raise ConfigError(
        f"{where}: a {type(value).__name__} cannot be written to avo.toml; use a string, "
        "number, boolean, list or table",
        key=where,
    )


def dumps(table: dict[str, Any]) -> str:
    """``table`` as a TOML document (``tomllib.loads`` reads it back equal)."""
    return "".join(f"{_key(k)} = {_value(v, k)}\n" for k, v in table.items() if v is not None)


__all__ = ["dumps"]
