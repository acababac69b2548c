"""Prompt-cache helpers and the optional native loader."""

from __future__ import annotations

import copy
import hashlib
import importlib
import os
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avo import _native, prompt_cache
from avo.prompt_cache import (
    CacheBreakpoints,
    annotate_anthropic_messages,
    cache_key_for_request,
    cache_key_hash,
    canonical_message_json,
    compute_breakpoints,
    stable_prefix_size,
)

# Known answers shared with native/README.md (the Rust crate's tests use the same).
KNOWN_ANSWERS = [
    ("", 1, [], "ed022e0fea6855d99f5b119c65f603c46b06b0ef1ace06a5f790b7df9ab91a2d"),
    (
        "run-1",
        3,
        ['{"b":[1,2],"content":"héllo","role":"user"}'],
        "7236a314a731a458ddc501fdbcaf9f4aa1e63c0d3e2052da6b0114aed54fcb35",
    ),
]

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are careful."},
    {"role": "assistant", "content": "Ready."},
    {"role": "user", "content": "List files"},
    {"role": "assistant", "content": [{"type": "text", "text": "Calling ls"}]},
    {"role": "tool", "content": "a.py b.py"},
]

# ------------------------------------------------------------------ breakpoints


def test_stable_prefix_counts_leading_system_and_assistant_turns() -> None:
    assert stable_prefix_size(CONVERSATION) == 2
    assert stable_prefix_size([]) == 0
    assert stable_prefix_size([{"role": "user", "content": "x"}]) == 0
    assert stable_prefix_size(CONVERSATION[:2]) == 2


def test_compute_breakpoints_defaults_and_override() -> None:
    assert compute_breakpoints(CONVERSATION) == CacheBreakpoints(prefix=2, tail=1)
    assert compute_breakpoints(CONVERSATION, prefix_override=4, tail=2) == CacheBreakpoints(4, 2)
    assert compute_breakpoints(CONVERSATION, prefix_override=99).prefix == len(CONVERSATION)
    assert CacheBreakpoints(prefix=2).prefix_index == 1
    assert CacheBreakpoints(prefix=0).prefix_index is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"tail": -1}, "tail must be >= 0, got -1"), ({"prefix_override": -2}, "got -2")],
)
def test_compute_breakpoints_refuses_negative_values(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compute_breakpoints(CONVERSATION, **kwargs)


def _marked(messages: list[dict[str, object]]) -> list[int]:
    out = []
    for index, message in enumerate(messages):
        content = message["content"]
        if isinstance(content, list) and content and "cache_control" in content[-1]:
            assert content[-1]["cache_control"] == {"type": "ephemeral"}
            out.append(index)
    return out


def test_annotate_marks_prefix_and_tail_without_mutating() -> None:
    original = copy.deepcopy(CONVERSATION)
    annotated = annotate_anthropic_messages(CONVERSATION, compute_breakpoints(CONVERSATION))
    assert original == CONVERSATION
    assert _marked(annotated) == [1, 4]
    assert annotated[1]["content"] == [
        {"type": "text", "text": "Ready.", "cache_control": {"type": "ephemeral"}}
    ]
    assert annotated[0] == CONVERSATION[0]
    assert annotated[2] == CONVERSATION[2]


def test_annotate_marks_last_block_of_list_content() -> None:
    annotated = annotate_anthropic_messages(CONVERSATION, CacheBreakpoints(prefix=4, tail=0))
    assert _marked(annotated) == [3]
    assert annotated[3]["content"][0]["text"] == "Calling ls"
    assert "cache_control" not in CONVERSATION[3]["content"][0]


def test_annotate_caps_breakpoints_at_four_and_skips_empty_content() -> None:
    messages = [{"role": "user", "content": f"m{i}"} for i in range(8)]
    annotated = annotate_anthropic_messages(messages, CacheBreakpoints(prefix=1, tail=8))
    assert _marked(annotated) == [0, 5, 6, 7]
    empty = annotate_anthropic_messages([{"role": "user", "content": ""}], CacheBreakpoints(0))
    assert empty == [{"role": "user", "content": ""}]


def test_annotate_empty_list() -> None:
    assert annotate_anthropic_messages([], CacheBreakpoints(prefix=0)) == []


# ------------------------------------------------------------------ cache keys


@pytest.mark.parametrize(("run_id", "step", "messages_json", "expected"), KNOWN_ANSWERS)
def test_cache_key_hash_known_answers(
    run_id: str, step: int, messages_json: list[str], expected: str
) -> None:
    assert cache_key_hash(run_id, step, messages_json) == expected


def test_cache_key_format_and_framing() -> None:
    messages = [{"role": "user", "content": "héllo", "b": [1, 2]}]
    key = cache_key_for_request(run_id="run-1", step=3, messages=messages)
    assert key == "avo:run-1:3:7236a314a731a458"
    assert re.fullmatch(r"avo:run-1:3:[0-9a-f]{16}", key)
    # The framing, recomputed independently.
    digest = hashlib.sha256()
    for part in ("run-1", "3", canonical_message_json(messages[0])):
        data = part.encode()
        digest.update(len(data).to_bytes(8, "big") + data)
    assert key.endswith(digest.hexdigest()[:16])


def test_cache_key_is_canonical_and_content_addressed() -> None:
    a = [{"role": "user", "content": "x", "meta": {"b": 1, "a": 2}}]
    b = [{"meta": {"a": 2, "b": 1}, "content": "x", "role": "user"}]
    assert cache_key_for_request(run_id="r", step=1, messages=a) == cache_key_for_request(
        run_id="r", step=1, messages=b
    )
    changed = [{"role": "user", "content": "y", "meta": {"b": 1, "a": 2}}]
    assert cache_key_for_request(run_id="r", step=1, messages=a) != cache_key_for_request(
        run_id="r", step=1, messages=changed
    )
    # Framing keeps boundaries: moving text between messages changes the key.
    split_one = [{"c": "ab"}, {"c": ""}]
    split_two = [{"c": "a"}, {"c": "b"}]
    assert cache_key_for_request(run_id="r", step=1, messages=split_one) != cache_key_for_request(
        run_id="r", step=1, messages=split_two
    )


# ------------------------------------------------------------------ native loader


def test_native_loader_reports_absence_here() -> None:
    if _native.is_available():  # pragma: no cover - only when the wheel is installed
        pytest.skip("avo_native is installed")
    assert _native.version() is None
    assert isinstance(_native.import_error(), ImportError)
    with pytest.raises(RuntimeError) as info:
        _native.cache_key_hash_native("r", 1, [])
    assert str(info.value) == "avo_native extension is not loaded"
    with pytest.raises(AttributeError):
        _native.cache_key_hash  # noqa: B018
    with pytest.raises(AttributeError):
        _native.no_such_name  # noqa: B018


@pytest.fixture
def fake_native() -> Iterator[types.SimpleNamespace]:
    """Install a stand-in ``avo_native`` module and reload the loader (the real one comes back)."""
    calls = types.SimpleNamespace(count=0, fail_with=None)

    def cache_key_hash_ext(run_id: str, step: int, messages_json: list[str]) -> str:
        calls.count += 1
        if calls.fail_with is not None:
            raise calls.fail_with
        return cache_key_hash(run_id, step, messages_json)

    module = types.ModuleType("avo_native")
    module.cache_key_hash = cache_key_hash_ext  # type: ignore[attr-defined]
    module.version = lambda: "0.1.4"  # type: ignore[attr-defined]
    real = sys.modules.get("avo_native")
    switch = os.environ.pop(_native.ENV_SWITCH, None)  # the stand-in loads even under AVO_NATIVE=0
    sys.modules["avo_native"] = module
    importlib.reload(_native)
    try:
        yield calls
    finally:
        if real is None:
            del sys.modules["avo_native"]
        else:
            sys.modules["avo_native"] = real
        if switch is not None:
            os.environ[_native.ENV_SWITCH] = switch
        importlib.reload(_native)
        assert getattr(prompt_cache, "_native") is _native  # noqa: B009


def test_native_path_is_used_and_identical(fake_native: types.SimpleNamespace) -> None:
    assert _native.is_available()
    assert _native.version() == "0.1.4"
    assert _native.import_error() is None
    assert callable(_native.cache_key_hash)
    key = cache_key_for_request(run_id="run-1", step=3, messages=CONVERSATION)
    assert fake_native.count == 1
    assert key == f"avo:run-1:3:{cache_key_hash('run-1', 3, _canon(CONVERSATION))[:16]}"


@pytest.mark.parametrize("error", [TypeError("bad arg"), ValueError("bad value")])
def test_native_type_and_value_errors_fall_back(
    fake_native: types.SimpleNamespace, error: Exception
) -> None:
    fake_native.fail_with = error
    key = cache_key_for_request(run_id="r", step=2, messages=CONVERSATION)
    assert fake_native.count == 1
    assert key == f"avo:r:2:{cache_key_hash('r', 2, _canon(CONVERSATION))[:16]}"


def _canon(messages: list[dict[str, Any]]) -> list[str]:
    return [canonical_message_json(m) for m in messages]


_MESSAGES = st.lists(
    st.dictionaries(
        st.text(max_size=6),
        st.one_of(st.text(max_size=12), st.integers(), st.booleans(), st.none()),
        max_size=4,
    ),
    max_size=5,
)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=12), st.integers(1, 10**6), _MESSAGES)
def test_keys_are_deterministic(run_id: str, step: int, messages: list[dict[str, object]]) -> None:
    key = cache_key_for_request(run_id=run_id, step=step, messages=messages)
    assert key == cache_key_for_request(run_id=run_id, step=step, messages=copy.deepcopy(messages))
    assert key.startswith(f"avo:{run_id}:{step}:")
    assert len(key.rsplit(":", 1)[1]) == 16
