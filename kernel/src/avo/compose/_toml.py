"""A small TOML writer for the config files avo writes (``avo setup``).

Covers what a config holds: strings, integers, floats, booleans, lists, and
tables (nested tables as ``[a.b]`` sections, tables inside lists inline).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def _key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dumps(table: Mapping[str, Any], *, header: str = "") -> str:
    """``table`` as TOML text."""
    lines = [f"# {line}" for line in header.splitlines()]

    def section(prefix: str, values: Mapping[str, Any]) -> None:
        scalars = {k: v for k, v in values.items() if not isinstance(v, Mapping)}
        tables = {k: v for k, v in values.items() if isinstance(v, Mapping)}
        if prefix and (scalars or not tables):
            lines.extend(["", f"[{prefix}]"])
        for key, value in scalars.items():
            lines.append(f"{_key(str(key))} = {_value(value)}")
        for key, value in tables.items():
            section(f"{prefix}.{_key(str(key))}" if prefix else _key(str(key)), value)

    section("", table)
    return "\n".join(lines).strip("\n") + "\n"


__all__ = ["dumps"]
