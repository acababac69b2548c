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


async def test_audit_observer_records_a_real_run(tmp_path, monkeypatch):
    from avo.audit import AuditObserver
    from avo.hooks import HookEvent, HookRegistry, make_blocking_hook
    from avo.models import ModelResponse, ToolCall
    from avo.plugins.manager import PluginManager
    from avo.policies import LoopPolicy
    from avo.providers.fake import FakeProvider
    from avo.runtime import AgentRuntime

    monkeypatch.setenv("SHOP_API_KEY", "shop-key-0000-secret")
    log = AuditLog(tmp_path / "audit.jsonl", environ={})
    manager = PluginManager(autoload=False, environ={})
    manager.register(AuditObserver(log, actor="ci"), "audit")
    hooks = HookRegistry()
    hooks.register(HookEvent.PRE_TOOL_USE, make_blocking_hook("no deletes"))
    call = ToolCall(name="delete_all", arguments={"token": "shop-key-0000-secret"})
    runtime = AgentRuntime(
        provider=FakeProvider([ModelResponse(tool_call=call)]),
        plugins=manager,
        hooks=hooks,
        policy=LoopPolicy(on_tool_denied="stop"),  # the denial ends the run
    )
    result = await runtime.run("clean up with shop-key-0000-secret")
    assert result.stop_reason.value == "policy_denied"
    events = log.read()
    assert [e.action for e in events] == [
        "run.created",
        "tool.approval_requested",
        "tool.denied",
        "policy.triggered",
        "run.finished",
    ]
    assert all(e.run_id == result.run_id and e.actor == "ci" for e in events)
    assert events[2].payload["reason"] == "no deletes"
    assert events[-1].payload["stop_reason"] == "policy_denied"
    assert "shop-key-0000-secret" not in (tmp_path / "audit.jsonl").read_text()
