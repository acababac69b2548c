"""Round-trip properties of the SQLite store's compact encodings (ids, payloads)."""

from __future__ import annotations

import json
import math
import uuid

from hypothesis import given
from hypothesis import strategies as st

from avo.events import EventType
from avo_sqlite._codec import decode_id, encode_id
from avo_sqlite._payloads import decode_payload, encode_payload

_UUIDS = st.uuids().map(str)
_NEAR_UUIDS = st.one_of(
    _UUIDS.map(str.upper),
    _UUIDS.map(lambda text: text.replace("-", " ", 1)),
    _UUIDS.map(lambda text: text[:-1] + "g"),
    _UUIDS.map(lambda text: text + "\n"),
    _UUIDS.map(lambda text: text.replace("-", "")),
)


@given(st.one_of(_UUIDS, _NEAR_UUIDS, st.text(max_size=40)))
def test_every_id_round_trips_and_only_canonical_uuids_are_packed(text: str) -> None:
    stored = encode_id(text)
    assert decode_id(bytes(stored) if isinstance(stored, bytearray) else stored) == text
    canonical = _parses(text) and str(uuid.UUID(text)) == text
    assert isinstance(stored, bytearray) == canonical


def _parses(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1.0, 1e-7])
)


@given(duration=_FLOATS, copy=_FLOATS, success=st.one_of(st.booleans(), st.integers(0, 1)))
def test_a_tool_result_payload_round_trips_whatever_its_copies_hold(
    duration: float, copy: float, success: bool | int
) -> None:
    """A copy is left out only when its JSON text equals the original's (-0.0, NaN, 1 vs True)."""
    payload = {
        "tool_call_id": "c1",
        "name": "echo",
        "success": True,
        "duration_ms": duration,
        "result": {
            "tool_call_id": "c1",
            "tool_name": "echo",
            "success": success,
            "duration_ms": copy,
            "output": {"n": 1},
        },
    }
    text = encode_payload(EventType.TOOL_COMPLETED, payload, "run-1")
    decoded = decode_payload(EventType.TOOL_COMPLETED, text, "run-1")
    assert json.dumps(decoded, sort_keys=True) == json.dumps(payload, sort_keys=True)
    inner = decoded["result"]
    assert type(inner["success"]) is type(success)
    if not math.isnan(copy):
        assert math.copysign(1.0, inner["duration_ms"]) == math.copysign(1.0, copy)


def test_a_shared_usage_object_is_stored_once() -> None:
    usage = {"input_tokens": 3, "output_tokens": 4}
    payload = {"step": 1, "response": {"content": "hi", "usage": usage}, "usage": usage}
    text = encode_payload(EventType.MODEL_RESPONDED, payload, "run-1")
    assert text.startswith("~1") and text.count("input_tokens") == 1
    assert decode_payload(EventType.MODEL_RESPONDED, text, "run-1") == payload
