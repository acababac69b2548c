"""A tool call's arguments sorted by kind (paths, URLs, commands, free text).

The kinds come from the tool's ``ToolMetadata.argument_kinds`` (declared by the
tool, or read from ``x-avo-kind`` hints in its input schema). A top-level
argument the call leaves out counts with the schema's default, so
``grep(pattern=...)`` searches ``"."`` as far as the rules are concerned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from avo.models import ArgumentKind, ToolCall, ToolMetadata


@dataclass(frozen=True)
class CallArguments:
    """The string values of a call's declared arguments, by kind."""

    paths: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()

    def of(self, kind: ArgumentKind) -> tuple[str, ...]:
        """The values of one kind."""
        return {
            ArgumentKind.PATH: self.paths,
            ArgumentKind.URL: self.urls,
            ArgumentKind.COMMAND: self.commands,
            ArgumentKind.TEXT: self.texts,
        }[kind]


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, out)


def values_at(arguments: Mapping[str, Any], pointer: str) -> list[str]:
    """The strings at ``pointer`` (``a``, ``a[]``, ``a[].b``) in ``arguments``."""
    current: list[Any] = [arguments]
    for part in pointer.split("."):
        many = part.endswith("[]")
        key = part[:-2] if many else part
        found: list[Any] = []
        for item in current:
            if not isinstance(item, Mapping) or key not in item:
                continue
            value = item[key]
            if many and isinstance(value, list):
                found.extend(value)
            else:
                found.append(value)
        current = found
    out: list[str] = []
    for value in current:
        _strings(value, out)
    return out


def _default(metadata: ToolMetadata, pointer: str) -> Any:
    if "." in pointer or pointer.endswith("[]"):
        return None
    properties = metadata.input_schema.get("properties")
    if not isinstance(properties, dict):
        return None
    schema = properties.get(pointer)
    return schema.get("default") if isinstance(schema, dict) else None


def classify(call: ToolCall, metadata: ToolMetadata | None) -> CallArguments:
    """Sort ``call``'s declared arguments by kind (nothing when the tool declares none)."""
    if metadata is None or not metadata.argument_kinds:
        return CallArguments()
    sorted_values: dict[ArgumentKind, list[str]] = {kind: [] for kind in ArgumentKind}
    for pointer, kind in metadata.argument_kinds.items():
        values = values_at(call.arguments, pointer)
        key = pointer[:-2] if pointer.endswith("[]") else pointer
        if not values and "." not in pointer and key not in call.arguments:
            default = _default(metadata, key)
            _strings(default, values)
        sorted_values[ArgumentKind(kind)].extend(values)
    return CallArguments(
        paths=tuple(sorted_values[ArgumentKind.PATH]),
        urls=tuple(sorted_values[ArgumentKind.URL]),
        commands=tuple(sorted_values[ArgumentKind.COMMAND]),
        texts=tuple(sorted_values[ArgumentKind.TEXT]),
    )


__all__ = ["CallArguments", "classify", "values_at"]
