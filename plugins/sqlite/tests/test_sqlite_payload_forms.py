"""Stored payload forms (schema 2): shorter than JSON where a value repeats, always exact."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from avo.events import AgentEvent, EventType
from avo.state import RunState
from avo.testing.store_values import start_run
from avo_sqlite import SQLiteEventStore
from avo_sqlite._codec import dumps
from avo_sqlite._payloads import decode_payload, encode_payload

RUN = "run-1"
CALL = "c006b865-9218-443b-9369-80d9b2456600"

RESULT = {
    "tool_call_id": CALL,
    "tool_name": "echo",
    "success": True,
    "output": {"n": 2},
    "error": None,
    "duration_ms": 0.28,
}
COMPLETED = {
    "tool_call_id": CALL,
    "name": "echo",
    "success": True,
    "duration_ms": 0.28,
    "result": RESULT,
}
USAGE = {"input_tokens": 3, "output_tokens": 4}

CASES: list[tuple[EventType, dict[str, Any], bool]] = [
    # (kind, payload, shorter than its JSON)
    (EventType.STATE_CHANGED, {"from_state": "model_pending", "to_state": "paused"}, True),
    (EventType.STATE_CHANGED, {"from_state": "model_pending", "to_state": "nowhere"}, False),
    (EventType.STATE_CHANGED, {"from_state": 1, "to_state": "paused"}, False),
    (EventType.STATE_CHANGED, {"from_state": "paused", "to_state": "failed", "why": 1}, False),
    (EventType.TOOL_COMPLETED, COMPLETED, True),
    (EventType.TOOL_FAILED, {**COMPLETED, "success": False, "result": RESULT}, True),
    # a copy that differs (value or JSON type) stays
    (EventType.TOOL_COMPLETED, {**COMPLETED, "duration_ms": 1}, True),
    (EventType.TOOL_COMPLETED, {**COMPLETED, "result": {**RESULT, "success": 1}}, True),
    (EventType.TOOL_COMPLETED, {**COMPLETED, "result": {**RESULT, "tool_name": "other"}}, True),
    (EventType.TOOL_COMPLETED, {"tool_call_id": CALL, "result": "text"}, False),
    (EventType.TOOL_COMPLETED, {"tool_call_id": CALL, "result": {"output": 1}}, False),
    (EventType.TOOL_COMPLETED, {"result": {"tool_call_id": CALL}}, False),
    (
        EventType.TOOL_APPROVAL_REQUESTED,
        {"tool_call_id": CALL, "idempotency_key": f"{RUN}:{CALL}", "name": "echo"},
        True,
    ),
    (
        EventType.TOOL_APPROVAL_REQUESTED,
        {"tool_call_id": CALL, "idempotency_key": f"other:{CALL}"},
        False,
    ),
    (EventType.MODEL_RESPONDED, {"response": {"usage": USAGE}, "usage": USAGE, "step": 1}, True),
    (
        EventType.MODEL_RESPONDED,
        {"response": {"usage": USAGE}, "usage": {**USAGE, "input_tokens": 3.0}},
        False,
    ),
    (EventType.MODEL_RESPONDED, {"response": None, "usage": USAGE}, False),
    (EventType.TOOL_REQUESTED, {"tool_call_id": CALL, "name": "échø", "arguments": {}}, False),
]


@pytest.mark.parametrize(("kind", "payload", "shorter"), CASES)
def test_every_form_gives_the_payload_back(
    kind: EventType, payload: dict[str, Any], shorter: bool
) -> None:
    text = encode_payload(kind, payload, RUN)
    assert decode_payload(kind, text, RUN) == payload
    assert (len(text) < len(dumps(payload))) is shorter, text


def test_a_rebuilt_copy_is_not_shared_with_its_source() -> None:
    payload = {"response": {"usage": dict(USAGE)}, "usage": dict(USAGE)}
    decoded = decode_payload(
        EventType.MODEL_RESPONDED, encode_payload(EventType.MODEL_RESPONDED, payload, RUN), RUN
    )
    assert decoded["usage"] == decoded["response"]["usage"]
    assert decoded["usage"] is not decoded["response"]["usage"]


def test_plain_json_rows_of_schema_1_still_read() -> None:
    payload = {"from_state": "model_pending", "to_state": "paused"}
    assert decode_payload(EventType.STATE_CHANGED, dumps(payload), RUN) == payload
    assert decode_payload(EventType.TOOL_COMPLETED, dumps(COMPLETED), RUN) == COMPLETED


async def test_the_store_keeps_short_forms_and_returns_equal_events(tmp_path: Path) -> None:
    path = tmp_path / "avo.db"
    async with SQLiteEventStore(path) as store:
        run_id = await start_run(store)
        started = AgentEvent(
            run_id=run_id,
            event_type=EventType.TOOL_STARTED,
            payload={"tool_call_id": CALL, "name": "echo", "arguments": {}},
        )
        completed = AgentEvent(
            run_id=run_id, event_type=EventType.TOOL_COMPLETED, payload=dict(COMPLETED)
        )
        run = await store.get_run(run_id)
        assert run is not None
        stored = await store.append_batch(run, [started, completed])
        events = await store.get_events(run_id)
        assert events[-2:] == stored
        assert any(e.event_type is EventType.STATE_CHANGED for e in events)
    conn = sqlite3.connect(path)
    texts = [row[0] for row in conn.execute("SELECT payload FROM events")]
    conn.close()
    assert any(text.startswith("=") for text in texts)  # the state changes
    assert any(text.startswith("~") for text in texts)  # the tool result
    assert RunState.MODEL_PENDING.value not in "".join(texts)


async def test_a_batch_mixing_events_with_and_without_a_parent(tmp_path: Path) -> None:
    async with SQLiteEventStore(tmp_path / "avo.db") as store:
        run_id = await start_run(store)
        first = AgentEvent(run_id=run_id, event_type=EventType.MODEL_REQUESTED, payload={"n": 1})
        child = AgentEvent(
            run_id=run_id,
            event_type=EventType.MODEL_REQUESTED,
            payload={"n": 2},
            parent_event_id=first.event_id,
        )
        run = await store.get_run(run_id)
        assert run is not None
        stored = await store.append_batch(run, [first, child])
        assert (await store.get_events(run_id))[-2:] == stored
        assert stored[1].parent_event_id == first.event_id


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, None, True, 'é\\n"x'], "b": {"c": {}}},
        "text",
        7,
        [float("inf"), float("nan"), 1e16],
        {1: "int key", "k": []},
    ],
)
def test_dumps_is_compact_json_dumps(value: Any) -> None:
    import json

    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_dumps_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError, match="object is not JSON serializable"):
        dumps({"a": object()})
