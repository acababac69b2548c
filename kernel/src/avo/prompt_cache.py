"""Prompt-cache helpers: breakpoints, Anthropic annotation, stable cache keys.

Cache keys are content-addressed::

    avo:{run_id}:{step}:{sha256[:16]}

The digest is SHA-256 over a length-prefixed framing of the run id, the step
and each message's canonical JSON (``sort_keys=True``, compact separators,
non-ASCII kept as UTF-8)::

    for part in (run_id, str(step), *canonical_messages):
        update(len(utf8(part)).to_bytes(8, "big")); update(utf8(part))

The optional ``avo_native`` extension computes the same digest faster; when it
is loaded (see :mod:`avo._native`) :func:`cache_key_for_request` uses it, and
falls back to Python on ``TypeError``/``ValueError``. Both paths produce
identical keys: that is the contract, and the tests assert it with known
answers that the Rust crate's tests share.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from avo import _native

#: Roles whose leading run forms the stable, cacheable prefix of a conversation.
STABLE_PREFIX_ROLES = frozenset({"system", "assistant"})

#: Anthropic accepts at most this many cache_control breakpoints per request.
MAX_ANTHROPIC_BREAKPOINTS = 4

_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


@dataclass
class CacheBreakpoints:
    """Where to place cache breakpoints: after ``prefix`` messages, and on the last ``tail``."""

    prefix: int
    tail: int = 1

    @property
    def prefix_index(self) -> int | None:
        """Index of the last message of the stable prefix (None for an empty prefix)."""
        return self.prefix - 1 if self.prefix > 0 else None


def stable_prefix_size(messages: Sequence[Mapping[str, Any]]) -> int:
    """Count the leading system/assistant turns (the part that does not change per step)."""
    size = 0
    for message in messages:
        if message.get("role") not in STABLE_PREFIX_ROLES:
            break
        size += 1
    return size


def compute_breakpoints(
    messages: Sequence[Mapping[str, Any]],
    *,
    prefix_override: int | None = None,
    tail: int = 1,
) -> CacheBreakpoints:
    """Choose breakpoints: the stable prefix (or ``prefix_override``) and ``tail`` last turns.

    ``prefix_override`` is clamped to the number of messages.
    """
    if tail < 0:
        raise ValueError(f"tail must be >= 0, got {tail}; pass 0 to mark no trailing message")
    if prefix_override is not None:
        if prefix_override < 0:
            raise ValueError(
                f"prefix_override must be >= 0, got {prefix_override}; "
                "pass None to use the stable system/assistant prefix"
            )
        prefix = min(prefix_override, len(messages))
    else:
        prefix = stable_prefix_size(messages)
    return CacheBreakpoints(prefix=prefix, tail=tail)


def _marked_indices(count: int, breakpoints: CacheBreakpoints) -> list[int]:
    indices: list[int] = []
    prefix_index = breakpoints.prefix_index
    if prefix_index is not None and prefix_index < count:
        indices.append(prefix_index)
    tail_start = max(0, count - breakpoints.tail)
    for index in range(count - 1, tail_start - 1, -1):
        if len(indices) >= MAX_ANTHROPIC_BREAKPOINTS:
            break
        if index not in indices:
            indices.append(index)
    return sorted(indices)


def _with_cache_control(message: Mapping[str, Any]) -> dict[str, Any]:
    marked = dict(message)
    content = marked.get("content")
    if isinstance(content, str):
        if content:
            marked["content"] = [
                {"type": "text", "text": content, "cache_control": dict(_EPHEMERAL)}
            ]
    elif isinstance(content, list) and content and isinstance(content[-1], Mapping):
        last = dict(content[-1])
        last["cache_control"] = dict(_EPHEMERAL)
        marked["content"] = [*content[:-1], last]
    return marked


def annotate_anthropic_messages(
    messages: Sequence[Mapping[str, Any]], breakpoints: CacheBreakpoints
) -> list[dict[str, Any]]:
    """Return a copy of ``messages`` with ``cache_control: {"type": "ephemeral"}`` added.

    The last content block of the prefix's last message and of each of the
    ``tail`` last messages is marked (string content becomes one text block;
    empty content is left alone, as Anthropic refuses cache_control on it).
    At most four breakpoints are placed: the prefix first, then the newest
    messages. The input is never mutated.
    """
    marked = set(_marked_indices(len(messages), breakpoints))
    return [
        _with_cache_control(message) if index in marked else dict(message)
        for index, message in enumerate(messages)
    ]


def canonical_message_json(message: Mapping[str, Any]) -> str:
    """The canonical JSON of one message: sorted keys, compact, UTF-8 kept."""
    return json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key_hash(run_id: str, step: int, messages_json: Sequence[str]) -> str:
    """Pure-Python hex SHA-256 digest; the native ``cache_key_hash`` returns the same."""
    digest = hashlib.sha256()
    update = digest.update
    for part in (run_id, str(step), *messages_json):
        data = part.encode("utf-8")
        update(len(data).to_bytes(8, "big"))
        update(data)
    return digest.hexdigest()


def cache_key_for_request(*, run_id: str, step: int, messages: Sequence[Mapping[str, Any]]) -> str:
    """Return ``avo:{run_id}:{step}:{digest[:16]}`` for a request's messages."""
    messages_json = [canonical_message_json(message) for message in messages]
    digest: str | None = None
    if _native.is_available():
        try:
            digest = _native.cache_key_hash_native(run_id, step, messages_json)
        except (TypeError, ValueError):
            digest = None
    if digest is None:
        digest = cache_key_hash(run_id, step, messages_json)
    return f"avo:{run_id}:{step}:{digest[:16]}"


__all__ = [
    "MAX_ANTHROPIC_BREAKPOINTS",
    "STABLE_PREFIX_ROLES",
    "CacheBreakpoints",
    "annotate_anthropic_messages",
    "cache_key_for_request",
    "cache_key_hash",
    "canonical_message_json",
    "compute_breakpoints",
    "stable_prefix_size",
]
