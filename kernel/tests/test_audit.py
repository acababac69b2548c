import json

import pytest

from avo.audit import AuditError, AuditEvent, AuditLog, redact

SECRET = "sk-live-abcdef0123456789"


def test_audit_log_appends_redacted_jsonl(tmp_path):
    log = AuditLog(tmp_path / "logs" / "audit.jsonl", environ={"X_API_KEY": "env-secret-value"})
    log.record(
        "tool.approved",
        actor="alice",
        run_id="r1",
        payload={"api_key": SECRET, "args": {"cmd": "echo env-secret-value"}, "n": 1},
    )
    log.record("run.finished", run_id="r1", payload={"note": f"Bearer {SECRET}"})
    raw = (tmp_path / "logs" / "audit.jsonl").read_text()
    assert SECRET not in raw and "env-secret-value" not in raw
    lines = [json.loads(line) for line in raw.splitlines()]
    assert [line["action"] for line in lines] == ["tool.approved", "run.finished"]
    events = log.read()
    assert events[0].payload == {"api_key": "***", "args": {"cmd": "echo ***"}, "n": 1}
    assert events[0].actor == "alice" and events[0].run_id == "r1"
    assert list(log) == events


def test_redact_masks_secret_keys_without_mutating():
    payload = {"password": "p4ssw0rd!", "nested": {"Authorization": "x"}, "ok": "fine"}
    assert redact(payload, environ={}) == {
        "password": "***",
        "nested": {"Authorization": "***"},
        "ok": "fine",
    }
    assert payload["password"] == "p4ssw0rd!"


def test_errors(tmp_path):
    assert AuditLog(tmp_path / "none.jsonl", environ={}).read() == []
    with pytest.raises(AuditError, match="non-empty action"):
        AuditLog(tmp_path / "a.jsonl", environ={}).record(" ")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n")
    with pytest.raises(AuditError, match="line 1"):
        AuditLog(bad, environ={}).read()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(AuditError, match="cannot append"):
        AuditLog(blocker / "sub" / "audit.jsonl", environ={}).record("x")


def test_event_round_trip():
    event = AuditEvent(action="a", payload={"k": 1})
    assert AuditEvent.from_dict(event.to_dict()) == event
