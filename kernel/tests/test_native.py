"""The avo_native extension against its pure-Python twins.

Every accelerated function is compared with the Python code that runs without
the extension, over at least 10,000 generated values each (unicode with lone
surrogates, NaN / -0.0 / infinities, huge ints, deep nesting, non-string keys,
subclasses and objects the encoder stringifies). Results must be identical;
where Python raises, the native path must raise the same error (it leaves such
values to Python). These tests skip when the extension is not built; the
loader and the ``AVO_NATIVE`` switch are tested either way.
"""

from __future__ import annotations

import enum
import importlib.util
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from avo import _native, prompt_cache, redaction, tools
from avo.models import ModelResponse, ToolCall, ToolResult
from avo.progress import model_response_fingerprint
from avo.redaction import Redactor, is_secret_key

VALUES_PER_FUNCTION = 10_000
BATCH = 10
EXAMPLES = VALUES_PER_FUNCTION // BATCH + 100  # a few examples may be rejected

needs_native = pytest.mark.skipif(
    not _native.is_available(),
    reason=f"avo_native is not built here ({_native.import_error()}); "
    "`bash scripts/build-native.sh` builds it (needs cargo)",
)

# The module-level bindings each caller falls back from (None = the Python twin runs).
_BINDINGS: list[tuple[Any, str]] = [
    (tools, "_native_canonical_json"),
    (tools, "_native_canonical_fingerprint"),
    (tools, "_native_sha256_hex"),
    (tools, "_native_tool_result_fingerprint"),
    (redaction, "_native_joined_strings"),
    (_native, "_cache_key_hash"),
]


@contextmanager
def python_only() -> Iterator[None]:
    """Run the pure-Python twins: exactly what a process without the extension runs."""
    saved = [(module, name, getattr(module, name)) for module, name in _BINDINGS]
    for module, name, _value in saved:
        setattr(module, name, None)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", repr(result))`` or ``("raised", (type, message))``: comparable, NaN included."""
    try:
        return "ok", repr(fn())
    except (RecursionError, MemoryError):  # pragma: no cover - depends on the stack left
        return "raised", ("RecursionError", "")
    except Exception as exc:  # the point is to compare any error
        return "raised", (type(exc).__name__, str(exc))


def both(fn: Callable[[], Any]) -> tuple[tuple[str, Any], tuple[str, Any]]:
    native = outcome(fn)
    with python_only():
        python = outcome(fn)
    return native, python


# ------------------------------------------------------------------ the values


class Colour(enum.IntEnum):
    RED = 1


class Tag(str):
    """A str subclass: the encoder writes it, the extension leaves it to Python."""


class Ratio(float):
    """A float subclass (its repr may differ from float's)."""

    def __repr__(self) -> str:
        return "Ratio()"


SECRET_VALUE = "sk-test-0123456789abcdefXYZ"
KNOWN_SECRET_ENV = {"AVO_OPENAI_API_KEY": SECRET_VALUE}

# Every code point, lone surrogates included.
any_char = st.characters(exclude_categories=())
texts = st.one_of(
    st.text(any_char, max_size=12),
    st.text(st.characters(max_codepoint=0x7F), max_size=12),
    st.sampled_from(["", "\x00", "\u2028", "é", "😀", "\ud800", "a\udfffb", '"\\/\b\f\n\r\t']),
    st.sampled_from(["Bearer abc", "sk-live-xyz", "my api_key is", SECRET_VALUE, "token=1"]),
)
huge_ints = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, -(2**64)]),
    # Around Python's 4300-digit limit for int -> str (beyond it both paths raise).
    st.integers(4298, 4301).map(lambda digits: 10 ** (digits - 1)),
)
special_floats = st.sampled_from(
    [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, 1e16, 1e15, 1e-5, 1e-4]
)
floats = st.one_of(st.floats(), special_floats, st.floats(width=32))
odd_leaves = st.one_of(
    st.just(Colour.RED),
    st.builds(Tag, texts),
    st.builds(Ratio, st.floats(allow_nan=False)),
    st.just(datetime(2026, 1, 1, tzinfo=UTC)),
    st.just(b"bytes"),
)
keys = st.one_of(
    texts,
    st.sampled_from(["api_key", "password", "Authorization", "token", "name", "content", "x"]),
)
odd_keys = st.one_of(st.integers(-3, 3), st.floats(), st.booleans(), st.none())


def json_like(*, odd: bool) -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), huge_ints, floats, texts)
    if odd:
        leaves = st.one_of(leaves, odd_leaves)
    key_strategy = st.one_of(keys, odd_keys) if odd else keys
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.lists(children, max_size=3).map(tuple),
            st.dictionaries(key_strategy, children, max_size=4),
        ),
        max_leaves=8,
    )


def nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``inner`` wrapped in 150-260 levels (the extension stops at 200 and leaves it to Python)."""

    def wrap(args: tuple[Any, int, bool]) -> Any:
        value, depth, as_dict = args
        for _ in range(depth):
            value = {"k": value} if as_dict else [value]
        return value

    return st.tuples(inner, st.integers(150, 260), st.booleans()).map(wrap)


plain_values = json_like(odd=False)
any_values = st.one_of(
    json_like(odd=False),
    json_like(odd=True),
    nested(json_like(odd=False)),
)
batch = st.lists(any_values, min_size=BATCH, max_size=BATCH)
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)


class Counter:
    def __init__(self) -> None:
        self.values = 0


def run_property(test: Callable[[Counter], None]) -> None:
    counter = Counter()
    test(counter)
    assert counter.values >= VALUES_PER_FUNCTION


# ---------------------------------------------------------- property: identical


@needs_native
def test_canonical_json_is_identical() -> None:
    def check(counter: Counter) -> None:
        @PROPERTY
        @given(batch)
        def inner(values: list[Any]) -> None:
            for value in values:
                native, python = both(lambda v=value: tools.canonical_json(v))
                assert native == python, value
                counter.values += 1

        inner()

    run_property(check)


@needs_native
def test_canonical_fingerprint_is_identical() -> None:
    def check(counter: Counter) -> None:
        @PROPERTY
        @given(batch)
        def inner(values: list[Any]) -> None:
            for value in values:
                native, python = both(lambda v=value: tools.canonical_fingerprint(v))
                assert native == python, value
                counter.values += 1

        inner()

    run_property(check)


@needs_native
def test_sha256_hex_is_identical() -> None:
    def check(counter: Counter) -> None:
        @PROPERTY
        @given(st.lists(st.one_of(texts, st.text(any_char, max_size=300)), min_size=BATCH))
        def inner(values: list[str]) -> None:
            for value in values[:BATCH]:
                native, python = both(lambda v=value: tools.sha256_hex(v))
                assert native == python, value
                counter.values += 1

        inner()

    run_property(check)


tool_results = st.builds(
    lambda name, success, output, error: ToolResult.model_construct(
        tool_call_id="call-1",
        tool_name=name,
        success=success,
        output=output,
        error=error,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, tzinfo=UTC),
    ),
    texts,
    st.booleans(),
    any_values,
    st.one_of(st.none(), texts),
)


@needs_native
def test_tool_result_fingerprint_is_identical() -> None:
    def check(counter: Counter) -> None:
        @PROPERTY
        @given(st.lists(tool_results, min_size=BATCH, max_size=BATCH))
        def inner(results: list[ToolResult]) -> None:
            for result in results:
                native, python = both(lambda r=result: tools.tool_result_fingerprint(r))
                assert native == python, result
                counter.values += 1

        inner()

    run_property(check)


tool_calls = st.builds(
    lambda name, arguments: ToolCall.model_construct(
        tool_call_id="call-1", name=name, arguments=arguments
    ),
    texts,
    st.dictionaries(keys, plain_values, max_size=3),
)


@needs_native
def test_tool_call_and_response_fingerprints_are_identical() -> None:
    def check(counter: Counter) -> None:
        @PROPERTY
        @given(st.lists(tool_calls, min_size=BATCH, max_size=BATCH))
        def inner(calls: list[ToolCall]) -> None:
            for call in calls:
                tools._last_call = (None, "", "")  # no memo: both paths compute
                native, python = both(lambda c=call: tools.tool_call_fingerprint(c))
                assert native == python, call
                response = ModelResponse.model_construct(
                    response_id="r", content=None, tool_calls=[call]
                )
                tools._last_call = (None, "", "")
                native, python = both(lambda r=response: model_response_fingerprint(r))
                assert native == python, call
                counter.values += 1

        inner()

    run_property(check)


@needs_native
def test_redactor_scan_is_identical() -> None:
    redactor = Redactor(environ=KNOWN_SECRET_ENV)
    joined_native = _native.function("joined_strings")
    assert joined_native is not None

    def check(counter: Counter) -> None:
        @PROPERTY
        @given(batch)
        def inner(values: list[Any]) -> None:
            for value in values:
                native, python = both(lambda v=value: redactor.value(v))
                assert native == python, value
                clean = both(lambda v=value: redactor._is_clean(v))
                assert clean[0] == clean[1], value
                joined = outcome(lambda v=value: joined_native(v, is_secret_key))
                if joined[0] == "ok" and joined[1] != "None":
                    strings: list[str] = []
                    assert redaction._collect_strings(value, strings)
                    assert joined[1] == repr("\n".join(strings)), value
                counter.values += 1

        inner()

    run_property(check)


# The extension hashes the messages' canonical JSON; canonical_json itself is tested above.
messages = st.lists(
    st.dictionaries(st.sampled_from(["role", "content", "name"]), texts, max_size=3), max_size=3
)


@needs_native
def test_cache_key_is_identical() -> None:
    def check(counter: Counter) -> None:
        @PROPERTY
        @given(st.lists(st.tuples(texts, huge_ints, messages), min_size=BATCH, max_size=BATCH))
        def inner(requests: list[tuple[str, int, list[dict[str, Any]]]]) -> None:
            for run_id, step, request in requests:
                native, python = both(
                    lambda r=run_id, s=step, m=request: prompt_cache.cache_key_for_request(
                        run_id=r, step=s, messages=m
                    )
                )
                assert native == python, (run_id, step, request)
                counter.values += 1

        inner()

    run_property(check)


# -------------------------------------------------------------- fixed answers


@needs_native
def test_the_extension_exports_what_the_kernel_uses() -> None:
    import avo_native

    assert _native.functions() == list(_native.ACCELERATED)
    assert set(avo_native.functions()) == set(_native.ACCELERATED)
    assert _native.version() == avo_native.version()
    assert avo_native.cache_key_hash("", 1, []) == (
        "ed022e0fea6855d99f5b119c65f603c46b06b0ef1ace06a5f790b7df9ab91a2d"
    )
    assert avo_native.canonical_json({"b": [1.0, -0.0, math.nan], "a": "é"}) == (
        '{"a":"\\u00e9","b":[1.0,-0.0,NaN]}'
    )
    # Values the extension leaves to Python come back as None.
    assert avo_native.canonical_json({1: "x"}) is None
    assert avo_native.canonical_json("\ud800") is None
    assert avo_native.sha256_hex("\ud800") is None


@needs_native
def test_bad_input_errors_are_pythons() -> None:
    # A huge int beyond Python's digit limit, mixed key types: the same error either way.
    for value in (10**5000, {"a": 1, 2: 3}):
        native, python = both(lambda v=value: tools.canonical_json(v))
        assert native[0] == "raised" and native == python
    native, python = both(lambda: tools.sha256_hex("\udc80"))
    assert native[0] == "raised" and native == python


# ------------------------------------------------------- the loader and switch


def _probe(env_value: str | None) -> list[str]:
    code = (
        "from avo import _native, native, tools\n"
        "print(_native.is_available(), _native.is_disabled(), _native.functions(),"
        " tools._native_canonical_json is None)\n"
        "print(_native.import_error())\n"
        "print(native.status().describe())\n"
    )
    env = dict(os.environ)
    env.pop(_native.ENV_SWITCH, None)
    if env_value is not None:
        env[_native.ENV_SWITCH] = env_value
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()


@pytest.mark.parametrize("value", ["0", "off", "FALSE", " no "])
def test_avo_native_switch_turns_the_extension_off(value: str) -> None:
    status, error, described = _probe(value)
    assert status == "False True [] True"
    assert error == f"avo_native is turned off by AVO_NATIVE={value}; unset AVO_NATIVE to use it"
    assert described == f"not loaded ({error}); results are the same, only slower"


def test_without_the_switch_the_extension_loads_when_built() -> None:
    status, error, described = _probe(None)
    if importlib.util.find_spec("avo_native") is not None:
        assert status == f"True False {list(_native.ACCELERATED)} False"
        assert error == "None"
        assert described.startswith("loaded (avo_native 0.")
    else:
        assert status == "False False [] True"
        assert "avo_native" in error
        assert described.startswith("not loaded (avo_native is not installed; ")


def test_function_names_only_what_the_kernel_accelerates() -> None:
    assert _native.function("no_such_function") is None
    assert _native.function("version") is None
    if not _native.is_available():
        assert _native.functions() == []
        assert all(_native.function(name) is None for name in _native.ACCELERATED)


def test_python_only_twins_answer_without_the_extension() -> None:
    with python_only():
        assert tools.canonical_json({"b": 1, "a": [True, None]}) == '{"a":[true,null],"b":1}'
        assert tools.sha256_hex("") == (
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
        assert Redactor(environ=KNOWN_SECRET_ENV).value({"api_key": "x"}) == {"api_key": "***"}
