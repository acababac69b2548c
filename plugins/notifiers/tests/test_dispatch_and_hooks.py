import logging
import stat
import sys
from datetime import UTC, datetime

import pytest

from avo.exceptions import ConfigError, NotifierError
from avo.hooks import HookContext, HookEvent, HookRegistry
from avo.models import RunRecord, TokenUsage, ToolCall
from avo.state import RunState, StopReason
from avo_notifiers import (
    DesktopNotifier,
    Notification,
    NotificationDispatcher,
    block_hooks,
    logging_hooks,
    notify_hooks,
    register_all,
)


class Collect:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[Notification] = []
        self.fail = fail

    async def send(self, notification: Notification) -> None:
        if self.fail:
            raise NotifierError("boom")
        self.sent.append(notification)


async def test_dispatcher_fans_out_redacts_and_reports_failures():
    from avo.redaction import Redactor

    good, bad = Collect(), Collect(fail=True)
    dispatcher = NotificationDispatcher(
        [good, bad], redactor=Redactor(environ={"X_API_KEY": "supersecretvalue"})
    )
    with pytest.raises(NotifierError, match="1 of 2 notifiers failed"):
        await dispatcher.send(Notification("key supersecretvalue", "Bearer abcdefghijk"))
    assert good.sent == [Notification("key ***", "Bearer ***")]
    await NotificationDispatcher().send(Notification("t", "b"))  # empty is a no-op
    with pytest.raises(TypeError):
        dispatcher.register(object())  # type: ignore[arg-type]


def test_from_env(tmp_path):
    assert not NotificationDispatcher.from_env({})
    fake = tmp_path / "notify-send"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {
        "AVO_NOTIFY_WEBHOOK": "http://127.0.0.1:9/hook",
        "AVO_NOTIFY_DESKTOP": "1",
        "PATH": str(tmp_path),
    }
    kinds = [type(n).__name__ for n in NotificationDispatcher.from_env(env).notifiers]
    assert kinds == ["WebhookNotifier", "DesktopNotifier"]
    no_cmd = {"AVO_NOTIFY_DESKTOP": "1", "PATH": str(tmp_path / "empty")}
    assert not NotificationDispatcher.from_env(no_cmd)


def fake_notify_send(tmp_path, code: int = 0):
    """A real executable standing in for notify-send: records its argv."""
    out = tmp_path / "argv.txt"
    script = tmp_path / "notify-send"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"open({str(out)!r}, 'w').write('\\n'.join(sys.argv[1:]))\n"
        f"sys.stderr.write('nope')\nsys.exit({code})\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, out


async def test_desktop_notifier_runs_real_command(tmp_path):
    script, out = fake_notify_send(tmp_path)
    notifier = DesktopNotifier(path=str(tmp_path))
    assert notifier.command == str(script)
    await notifier.send(Notification("Title", "Body text", level="error"))
    assert out.read_text().splitlines() == [
        "--app-name=avo",
        "--urgency=critical",
        "--",
        "Title",
        "Body text",
    ]


async def test_desktop_notifier_failure_and_argv_variants(tmp_path):
    script, _ = fake_notify_send(tmp_path, code=3)
    with pytest.raises(NotifierError, match="exited with 3: nope"):
        await DesktopNotifier(command=str(script)).send(Notification("t", "b"))
    osa = DesktopNotifier(command="/usr/bin/osascript").argv(Notification('a"b', "c"))
    assert osa == ["/usr/bin/osascript", "-e", 'display notification "c" with title "a\\"b"']
    tn = DesktopNotifier(command="terminal-notifier").argv(Notification("a", "b"))
    assert tn == ["terminal-notifier", "-title", "a", "-message", "b"]
    assert DesktopNotifier(path=str(tmp_path / "none")).command is None


def _run(state: RunState, reason: StopReason | None, **kw) -> RunRecord:
    now = datetime.now(UTC)
    return RunRecord(
        run_id="run-1",
        task="t",
        state=state,
        stop_reason=reason,
        steps=3,
        token_usage=TokenUsage(input_tokens=10, output_tokens=5),
        created_at=now,
        updated_at=now,
        **kw,
    )


async def test_notify_hooks_fire_on_notification_and_stop():
    sink = Collect()
    registry = HookRegistry()
    register_all(registry, notify_hooks(dispatcher=NotificationDispatcher([sink])))
    await registry.fire(
        HookEvent.NOTIFICATION,
        HookContext(event=HookEvent.NOTIFICATION, run_id="run-1", notification="3 errors"),
    )
    run = _run(RunState.STOPPED, StopReason.MAX_STEPS)
    await registry.fire(HookEvent.STOP, HookContext(event=HookEvent.STOP, run_id="run-1", run=run))
    assert sink.sent[0] == Notification("avo", "run run-1: 3 errors", "warning")
    assert sink.sent[1].title == "avo run stopped" and sink.sent[1].level == "warning"
    assert "max_steps" in sink.sent[1].body and "10 in / 5 out" in sink.sent[1].body


async def test_notify_hook_delivery_failure_never_breaks_the_run():
    registry = HookRegistry()
    register_all(registry, notify_hooks(dispatcher=NotificationDispatcher([Collect(fail=True)])))
    run = _run(RunState.FAILED, StopReason.PROVIDER_ERROR, error="down")
    decision = await registry.fire(
        HookEvent.STOP, HookContext(event=HookEvent.STOP, run_id="run-1", run=run)
    )
    assert not decision.blocked and "not delivered" in decision.reason


def test_notify_hook_settings():
    pairs = notify_hooks({"on_stop": False}, environ={})
    assert [e for e, _ in pairs] == [HookEvent.NOTIFICATION]
    with pytest.raises(ConfigError, match="unknown notify hook settings"):
        notify_hooks({"bogus": 1}, environ={})


async def test_logging_hooks_log_each_event(caplog):
    registry = HookRegistry()
    register_all(registry, logging_hooks({"logger": "avo.test.hooks", "events": ["pre_tool_use"]}))
    call = ToolCall(name="read_file", arguments={"path": "x"})
    with caplog.at_level(logging.INFO, logger="avo.test.hooks"):
        await registry.fire(
            HookEvent.PRE_TOOL_USE,
            HookContext(event=HookEvent.PRE_TOOL_USE, run_id="r9", tool_call=call),
        )
        await registry.fire(HookEvent.STOP, HookContext(event=HookEvent.STOP, run_id="r9"))
    assert [r.getMessage() for r in caplog.records] == ["hook pre_tool_use run=r9 tool=read_file"]
    with pytest.raises(ConfigError, match="choose from"):
        logging_hooks({"events": ["nope"]})


async def test_block_hooks_rules():
    registry = HookRegistry()
    register_all(
        registry,
        block_hooks(
            {
                "rules": [
                    {
                        "tool": "run_shell",
                        "argument": "command",
                        "contains": "rm -rf",
                        "reason": "no",
                    }
                ],
                "tools": ["git_*"],
            }
        ),
    )

    async def fire(name: str, **args):
        ctx = HookContext(
            event=HookEvent.PRE_TOOL_USE, run_id="r", tool_call=ToolCall(name=name, arguments=args)
        )
        return await registry.fire(HookEvent.PRE_TOOL_USE, ctx)

    assert (await fire("run_shell", command="rm -rf /")).reason == "no"
    assert not (await fire("run_shell", command="ls")).blocked
    blocked = await fire("git_commit", message="x")
    assert blocked.blocked and "git_*" in blocked.reason
    assert not (await fire("read_file", path="a")).blocked
    with pytest.raises(ConfigError, match="needs 'rules'"):
        block_hooks({})
    with pytest.raises(ConfigError, match="together"):
        block_hooks({"rules": [{"tool": "x", "argument": "a"}]})


def test_entry_points_build_through_the_plugin_manager(tmp_path):
    from avo.plugins.manager import PluginManager
    from avo_notifiers import plugin

    manager = PluginManager(autoload=False)
    for obj, name in [
        (plugin.webhook, "webhook"),
        (plugin.desktop, "desktop"),
        (plugin.notify, "notify"),
        (plugin.logging_hooks, "logging"),
        (plugin.block, "block"),
    ]:
        manager.register(obj, name, package="avo-notifiers")
    spec = manager.get("notifier", "webhook")
    notifier = spec.factory(
        {"timeout": 1.0}, environ={"AVO_NOTIFY_WEBHOOK": "http://127.0.0.1:1/h"}
    )
    assert notifier.timeout == 1.0
    with pytest.raises(ConfigError, match="AVO_NOTIFY_WEBHOOK"):
        spec.factory({}, environ={})
    with pytest.raises(ConfigError, match="unknown webhook settings"):
        spec.factory({"url": "http://127.0.0.1/x", "nope": 1}, environ={})
    with pytest.raises(ConfigError, match="notify-send"):
        manager.get("notifier", "desktop").factory({}, environ={"PATH": str(tmp_path)})
    pairs = manager.get("hook", "block").factory({"tools": ["x"]})
    assert pairs[0][0] is HookEvent.PRE_TOOL_USE
    assert manager.get("hook", "notify").factory({}, environ={}) != []
    assert manager.get("hook", "logging").factory({})


def test_installed_entry_points_are_declared():
    from importlib.metadata import entry_points

    names = {
        (ep.group, ep.name)
        for group in ("avo.notifiers", "avo.hooks")
        for ep in entry_points(group=group)
        if ep.value.startswith("avo_notifiers")
    }
    assert names == {
        ("avo.notifiers", "webhook"),
        ("avo.notifiers", "desktop"),
        ("avo.hooks", "notify"),
        ("avo.hooks", "logging"),
        ("avo.hooks", "block"),
    }
