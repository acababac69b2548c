"""Model provider contracts and the built-in FakeProvider.

HTTP adapters (Anthropic, OpenAI-compatible, Ollama, ...) ship in the
``avo-providers`` plugin; this package holds only the protocols, the
streaming primitives and the test double.
"""

from __future__ import annotations

from avo.lazy import lazy_exports
from avo.providers.base import ModelProvider, StatefulModelProvider

_LAZY = {
    "FakeProvider": "avo.providers.fake",
    "ScriptItem": "avo.providers.fake",
    "StreamingModelProvider": "avo.providers.streaming",
    "ModelChunk": "avo.providers.streaming",
}


__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "FakeProvider",
    "ModelChunk",
    "ModelProvider",
    "ScriptItem",
    "StatefulModelProvider",
    "StreamingModelProvider",
]
