"""The command and http hook executors in real runs: allow, deny, and failures that fail closed.

Real subprocesses (shell scripts) and a real HTTP server on 127.0.0.1; the
model is a scripted FakeProvider.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from avo.events import EventType
from avo.hooks import HookContext, HookEvent, HookRegistry
from avo.models import ToolCall
from avo.runtime import AgentRuntime
from avo.testing.scripts import answer, scripted, tool_call
from avo_hooks.plugin import _command_factory, _http_factory

from .conftest import HookServer, shout_tool

SECRET = "sk-test-0123456789abcdef"


def _registry(pairs: list[tuple[Any, Any]]) -> HookRegistry:
    registry = HookRegistry()
    for event, hook in pairs:
        registry.register(event, hook, name=hook.hook_label)
    return registry


SEEN: dict[str, Any] = {}


async def _run(pairs: list[tuple[Any, Any]], text: str = "hi") -> tuple[Any, list[Any], list[str]]:
    calls: list[str] = []
    provider = scripted(tool_call("shout", {"text": text}), answer("done"))
    runtime = AgentRuntime(
        provider=provider, tools=[shout_tool(calls)], hooks=_registry(pairs), environ={}
    )
    result = await runtime.run("shout")
    events = await runtime.event_store.get_events(result.run_id)
    # what the model read as the call's result, on the turn after it
    SEEN["result"] = provider.requests[-1].messages[-1] if len(provider.requests) > 1 else None
    return result, events, calls


def _goes_on(result: Any, reason: str) -> None:
    """The run went on past the denial: the model read the reason and answered."""
    assert result.status.value == "completed" and result.output == "done", result.error
    seen = SEEN["result"]
    assert seen["role"] == "tool" and reason in str(seen["content"])


def _denial(events: list[Any]) -> dict[str, Any]:
    [denied] = [e.payload for e in events if e.event_type is EventType.TOOL_DENIED]
    return denied


def _faults(events: list[Any]) -> list[dict[str, Any]]:
    return [e.payload for e in events if e.event_type is EventType.HOOK_FAILED]


# ---------------------------------------------------------------- command


async def test_command_hook_allows_and_sees_the_event_with_secrets_masked(
    script: Any, tmp_path: Path
) -> None:
    seen = tmp_path / "event.json"
    guard = script("guard.sh", f'cat > "{seen}"\nenv > "{tmp_path}/env.txt"\nexit 0\n')
    environ = {"PATH": os.environ["PATH"], "AVO_OPENAI_API_KEY": SECRET, "PLAIN": "visible"}
    pairs = _command_factory({"command": [guard], "name": "guard"}, environ=environ)
    result, _events, calls = await _run(pairs, text=f"key {SECRET}")
    assert result.status.value == "completed" and calls == [f"key {SECRET}"]
    event = json.loads(seen.read_text())
    assert event["event"] == "pre_tool_use" and event["hook"] == "guard"
    assert event["tool"]["name"] == "shout"
    assert event["tool"]["arguments"] == {"text": "key ***"}
    assert event["run_id"] == result.run_id
    child_env = (tmp_path / "env.txt").read_text()
    assert "PLAIN=visible" in child_env and "AVO_HOOK_EVENT=pre_tool_use" in child_env
    assert SECRET not in child_env  # secret-named variables are not passed on


async def test_command_hook_exit_2_denies_with_its_stderr_as_reason(script: Any) -> None:
    guard = script("guard.sh", 'cat >/dev/null\necho "no shouting in the library" >&2\nexit 2\n')
    result, events, calls = await _run(_command_factory({"command": guard, "name": "guard"}))
    assert calls == []
    denied = _denial(events)
    assert denied["reason"] == "no shouting in the library" and denied["blocked_by"] == "hook"
    assert _faults(events) == []
    _goes_on(result, "no shouting in the library")


async def test_command_hook_json_reply_denies_or_rewrites(script: Any) -> None:
    deny = script(
        "deny.sh", 'cat >/dev/null\necho \'{"decision": "deny", "reason": "too loud"}\'\n'
    )
    _, events, calls = await _run(_command_factory({"command": deny}))
    assert calls == [] and _denial(events)["reason"] == "too loud"

    rewrite = script(
        "rewrite.sh",
        'cat >/dev/null\necho \'{"decision": "allow", "arguments": {"text": "quiet"}}\'\n',
    )
    result, _, calls = await _run(_command_factory({"command": rewrite}))
    assert calls == ["quiet"] and result.status.value == "completed"


async def test_a_crashing_command_hook_fails_closed_naming_the_hook(script: Any) -> None:
    crash = script("crash.sh", 'cat >/dev/null\necho "Traceback: boom" >&2\nexit 1\n')
    result, events, calls = await _run(_command_factory({"command": crash, "name": "policy-bot"}))
    assert calls == []
    _goes_on(result, "policy-bot")
    reason = _denial(events)["reason"]
    assert "'policy-bot'" in reason and "exited with status 1: Traceback: boom" in reason
    assert "denies the call" in reason
    [fault] = _faults(events)
    assert (fault["hook"], fault["outcome"], fault["error_type"]) == (
        "policy-bot",
        "denied",
        "HookError",
    )


async def test_a_slow_command_hook_times_out_and_its_process_group_dies(
    script: Any, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    slow = script("slow.sh", f'cat >/dev/null\nsleep 30 &\necho $! > "{pid_file}"\nwait\n')
    started = time.monotonic()
    result, events, calls = await _run(_command_factory({"command": slow, "timeout": 0.5}))
    assert time.monotonic() - started < 20
    assert calls == []
    _goes_on(result, "timed out after 0.5 s")
    reason = _denial(events)["reason"]
    assert "'command:slow.sh'" in reason and "timed out after 0.5 s" in reason
    child = int(pid_file.read_text())
    for _ in range(50):  # the background sleep was in the hook's process group
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the hook's child {child} survived the timeout")


async def test_missing_executable_and_garbage_reply_fail_closed(
    script: Any, tmp_path: Path
) -> None:
    _, events, _ = await _run(_command_factory({"command": str(tmp_path / "nope.sh")}))
    assert "could not start" in _denial(events)["reason"]
    garbage = script("garbage.sh", "cat >/dev/null\necho 'sure, go ahead'\n")
    _, events, _ = await _run(_command_factory({"command": garbage}))
    assert "its reply is not JSON: 'sure, go ahead'" in _denial(events)["reason"]


async def test_post_tool_use_hook_failure_is_recorded_and_the_run_goes_on(script: Any) -> None:
    crash = script("post.sh", "cat >/dev/null\nexit 3\n")
    pairs = _command_factory({"command": crash, "events": ["post_tool_use"], "name": "audit"})
    result, events, calls = await _run(pairs)
    assert result.status.value == "completed" and calls == ["hi"]
    [fault] = _faults(events)
    assert (fault["hook"], fault["event"], fault["outcome"]) == (
        "audit",
        "post_tool_use",
        "ignored",
    )


async def test_tool_filter_skips_other_tools(script: Any) -> None:
    deny = script("deny.sh", "cat >/dev/null\nexit 2\n")
    result, _, calls = await _run(_command_factory({"command": deny, "tools": ["run_*"]}))
    assert result.status.value == "completed" and calls == ["hi"]


# ---------------------------------------------------------------- http


async def test_http_hook_allows_denies_and_masks(hook_server: HookServer) -> None:
    environ = {"HOOK_TOKEN": "tok-abcdefgh123", "AVO_GROQ_API_KEY": SECRET}
    settings = {
        "url": hook_server.url,
        "headers": {"Authorization": "Bearer ${HOOK_TOKEN}"},
        "events": ["pre_tool_use", "post_tool_use"],
    }
    result, _, calls = await _run(_http_factory(settings, environ=environ), text=SECRET)
    assert result.status.value == "completed" and calls == [SECRET]
    pre, post = hook_server.requests
    assert pre["headers"]["Authorization"] == "Bearer tok-abcdefgh123"
    assert pre["body"]["event"] == "pre_tool_use" and pre["body"]["hook"].startswith(
        "http:127.0.0.1"
    )
    assert pre["body"]["tool"]["arguments"] == {"text": "***"}
    assert post["body"]["tool"]["arguments"] == {"text": "***"}
    assert post["body"]["result"]["success"] is True

    hook_server.reply = (200, json.dumps({"decision": "deny", "reason": "quiet hours"}))
    _, events, calls = await _run(_http_factory({"url": hook_server.url}, environ={}))
    assert calls == [] and _denial(events)["reason"] == "quiet hours"


async def test_an_unreachable_http_hook_fails_closed() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = {"url": f"http://127.0.0.1:{port}/hook", "timeout": 2, "name": "gate"}
    result, events, calls = await _run(_http_factory(settings, environ={}))
    assert calls == []
    _goes_on(result, "could not reach")
    reason = _denial(events)["reason"]
    assert "'gate'" in reason and f"could not reach http://127.0.0.1:{port}/hook" in reason
    assert _faults(events)[0]["outcome"] == "denied"


async def test_slow_and_failing_http_hooks_fail_closed(hook_server: HookServer) -> None:
    hook_server.delay = 2.0
    _, events, calls = await _run(
        _http_factory({"url": hook_server.url, "timeout": 0.3}, environ={})
    )
    assert calls == [] and "within 0.3 s" in _denial(events)["reason"]
    hook_server.delay = 0
    hook_server.reply = (500, "upstream exploded")
    _, events, _ = await _run(_http_factory({"url": hook_server.url}, environ={}))
    assert "answered HTTP 500: upstream exploded" in _denial(events)["reason"]
    hook_server.reply = (200, json.dumps({"decision": "maybe"}))
    _, events, _ = await _run(_http_factory({"url": hook_server.url}, environ={}))
    assert "decision 'maybe'; use one of: allow, deny, error" in _denial(events)["reason"]


async def test_direct_call_returns_none_for_other_tools(hook_server: HookServer) -> None:
    [(event, hook)] = _http_factory({"url": hook_server.url, "tools": ["web_*"]}, environ={})
    context = HookContext(HookEvent.PRE_TOOL_USE, "run-1", tool_call=ToolCall(name="shout"))
    assert event is HookEvent.PRE_TOOL_USE and await hook(context) is None
    assert hook_server.requests == []
