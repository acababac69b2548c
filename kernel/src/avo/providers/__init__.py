"""Model provider contracts and the built-in FakeProvider.

HTTP adapters (Anthropic, OpenAI-compatible, Ollama, ...) ship in the
``avo-providers`` plugin; this package holds only the protocols, the
streaming primitives and the test double.
"""

from __future__ import annotations

from typing import Any

from avo.providers.base import ModelProvider, StatefulModelProvider

_LAZY = {
    "FakeProvider": "avo.providers.fake",
    "ScriptItem": "avo.providers.fake",
    "StreamingModelProvider": "avo.providers.streaming",
    "ModelChunk": "avo.providers.streaming",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'avo.providers' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "FakeProvider",
    "ModelChunk",
    "ModelProvider",
    "ScriptItem",
    "StatefulModelProvider",
    "StreamingModelProvider",
]
