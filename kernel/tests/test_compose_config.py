"""Composition from avo.toml: every name resolved through the plugin registry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from avo._builtins import fake_provider, memory_store
from avo.compose import compose, open_store, runtime_from_config
from avo.config import apply_runtime_overrides, database_path_from_env
from avo.exceptions import ConfigError
from avo.hooks import HookDecision, HookEvent
from avo.models import ToolRisk
from avo.plugins import (
    HookPluginSpec,
    NotifierSpec,
    PermissionSpec,
    StoreSpec,
    ToolSpec,
    provides,
)
from avo.plugins.manager import PluginManager
from avo.storage.memory import InMemoryEventStore
from avo.testing import plugin_manager
from avo.tools import FunctionTool


class ShoutArgs(BaseModel):
    text: str


class ShoutSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    suffix: str = "!"


def _shout_factory(settings: dict[str, Any]) -> FunctionTool[ShoutArgs]:
    suffix = settings["suffix"]
    return FunctionTool(
        name="shout",
        description="Upper-case the text.",
        arguments_model=ShoutArgs,
        function=lambda args: args.text.upper() + suffix,
        risk=ToolRisk.INSPECT,
    )


shout_plugin = provides(
    ToolSpec(name="shout", factory=_shout_factory, settings_model=ShoutSettings)
)

SCRIPT = """
[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {name = "shout", arguments = {text = "hi"}}
[[provider.settings.script]]
content = "done"
"""


def _write(tmp_path: Path, text: str, name: str = "avo.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _manager(*extra: Any) -> PluginManager:
    return plugin_manager(fake_provider, memory_store, shout_plugin, *extra)


async def test_config_composes_a_runtime_that_records_its_plugin_set(tmp_path: Path) -> None:
    config = _write(
        tmp_path,
        'tools = [{name = "shout", settings = {suffix = "?"}}]\n'
        + SCRIPT
        + '[store]\nlocation = "memory:"\n[policy]\nmax_steps = 4\n',
    )
    composition = compose(config, environ={}, manager=_manager())
    async with composition:
        result = await composition.runtime.run("shout hi")
        events = await composition.event_store.get_events(result.run_id)
    assert result.status.value == "completed" and result.output == "done"
    assert composition.runtime.policy.max_steps == 4
    completed = [e for e in events if e.event_type.value == "tool_completed"]
    assert "HI?" in str(completed[0].payload)
    plugins = events[0].payload["plugins"]
    assert {(p["kind"], p["name"]) for p in plugins} == {
        ("provider", "fake"),
        ("store", "memory"),
        ("tool", "shout"),
    }


async def test_runtime_from_config_with_overrides(tmp_path: Path) -> None:
    config = _write(tmp_path, 'tools = ["shout"]\n' + SCRIPT)
    runtime = runtime_from_config(
        config, environ={}, manager=_manager(), database="memory:", tools=["shout"]
    )
    result = await runtime.run("go")
    await runtime.event_store.close()
    assert result.output == "done"
    assert isinstance(runtime.event_store, InMemoryEventStore)


def test_pyproject_tool_avo_table(tmp_path: Path) -> None:
    body = SCRIPT.replace("[provider]", "[tool.avo.provider]").replace(
        "[[provider.settings.script]]", "[[tool.avo.provider.settings.script]]"
    )
    path = _write(tmp_path, '[project]\nname = "x"\n' + body, "pyproject.toml")
    composition = compose(path, environ={}, manager=_manager(), database="memory:")
    assert composition.config.provider is not None
    assert composition.config.provider.name == "fake"
    empty = _write(tmp_path, '[project]\nname = "x"\n', "pyproject.toml")
    with pytest.raises(ConfigError, match=r"has no \[tool.avo\] table"):
        compose(empty, environ={}, manager=_manager())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'provder = "fake"\n',
            r"avo.toml: unknown key 'provder'; known keys: budget, bundles, context, engine, "
            r"hooks, instructions, mcp, media, memory, notifiers, permission, plugins, policy, "
            r"pricing, provider",
        ),
        ('[provider]\nname = "nope"\n', r"provider.name: unknown provider 'nope'; available: fake"),
        (
            '[provider]\nname = "fake"\n[provider.settings]\nscrpt = []\n',
            r"unknown key 'provider.settings.scrpt'.*accepts: chunk_chars, chunk_delay_ms, "
            "repeat_last, script",
        ),
        (
            '[provider]\nname = "fake"\n[policy]\nmax_steps = 0\n',
            r"policy.max_steps: Input should be greater than 0 \(got 0\)",
        ),
        (
            '[provider]\nname = "fake"\n[policy]\nmax_stepz = 3\n',
            r"policy.max_stepz.*\[policy\] accepts: .*max_steps",
        ),
        (
            'tools = ["shout", "nope"]\n[provider]\nname = "fake"\n',
            r"tools\[1\]: unknown tool 'nope'; available: shout",
        ),
        (
            'tools = [{name = "shout", settings = {loud = true}}]\n[provider]\nname = "fake"\n',
            r"unknown key 'tools\[0\].settings.loud'.*accepts: suffix",
        ),
        ("[provider\n", r"not valid TOML"),
        ('[provider]\nname = "fake"\n[store]\nlocation = "runs.xyz"\n', r"no store plugin opens"),
        ('[permission]\nmode = "yolo"\n[provider]\nname = "fake"\n', r"unknown permission 'yolo'"),
    ],
)
def test_config_errors_name_file_key_and_choices(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=expected) as excinfo:
        compose(path, environ={}, manager=_manager(), database=None)
    assert str(path) in str(excinfo.value)


def test_missing_provider_lists_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no provider configured.*available: fake"):
        compose(None, environ={}, manager=_manager())
    composition = compose(
        None, environ={"AVO_PROVIDER": "fake"}, manager=_manager(), database="memory:"
    )
    assert type(composition.runtime.provider).__name__ == "FakeProvider"


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        compose(tmp_path / "nope.toml", environ={}, manager=_manager())


def test_env_overrides_apply_to_the_policy(tmp_path: Path) -> None:
    path = _write(tmp_path, SCRIPT)
    env = {"AVO_MAX_TOTAL_TOKENS": "500", "AVO_REPEATED_ACTION_LIMIT": "7"}
    runtime = compose(path, environ=env, manager=_manager(), database="memory:").runtime
    assert runtime.policy.max_total_tokens == 500
    assert runtime.policy.repeated_action_limit == 7
    with pytest.raises(ConfigError, match="AVO_MAX_RUNTIME_SECONDS"):
        compose(path, environ={"AVO_MAX_RUNTIME_SECONDS": "soon"}, manager=_manager())


def test_apply_runtime_overrides_exact_behaviour() -> None:
    base = {"max_steps": 3}
    env = {
        "AVO_MAX_TOTAL_TOKENS": "100",
        "AVO_MAX_RUNTIME_SECONDS": "2.5",
        "AVO_REPEATED_ACTION_LIMIT": " 4 ",
        "AVO_UNRELATED": "x",
    }
    assert apply_runtime_overrides(base, env) == {
        "max_steps": 3,
        "max_total_tokens": 100,
        "max_runtime_seconds": 2.5,
        "repeated_action_limit": 4,
    }
    assert base == {"max_steps": 3}
    assert apply_runtime_overrides(base, {"AVO_MAX_TOTAL_TOKENS": ""}) == base
    for variable, value in [
        ("AVO_MAX_TOTAL_TOKENS", "1.5"),
        ("AVO_MAX_TOTAL_TOKENS", "-3"),
        ("AVO_REPEATED_ACTION_LIMIT", "many"),
        ("AVO_MAX_RUNTIME_SECONDS", "nan"),
        ("AVO_MAX_RUNTIME_SECONDS", "0"),
    ]:
        with pytest.raises(ConfigError, match=variable) as excinfo:
            apply_runtime_overrides({}, {variable: value})
        assert excinfo.value.key == variable
        assert isinstance(excinfo.value, ValueError)


def test_database_path_from_env(tmp_path: Path) -> None:
    assert database_path_from_env({}) is None
    assert database_path_from_env({"AVO_DATABASE_PATH": " "}) is None
    assert (
        database_path_from_env({"AVO_DATABASE_PATH": str(tmp_path / "a.db")}) == tmp_path / "a.db"
    )


def test_open_store_by_scheme_suffix_or_name() -> None:
    opened: list[tuple[str, str]] = []

    def factory(tag: str) -> Any:
        def make(location: str, settings: dict[str, Any]) -> Any:
            opened.append((tag, location))
            return InMemoryEventStore()

        return make

    stores = provides(
        StoreSpec(name="lite", factory=factory("lite"), schemes=("lite",), suffixes=(".ldb",)),
        StoreSpec(name="server", factory=factory("server"), schemes=("srv", "server")),
    )
    manager = plugin_manager(stores)
    open_store("runs.ldb", manager=manager)
    open_store("srv://host/db", manager=manager)
    open_store("anything", manager=manager, name="server")
    assert opened == [("lite", "runs.ldb"), ("server", "srv://host/db"), ("server", "anything")]
    with pytest.raises(ConfigError, match=r"no store plugin opens 'x.csv'.*lite \(schemes: lite"):
        open_store("x.csv", manager=manager)
    twice = plugin_manager(
        stores, provides(StoreSpec(name="other", factory=factory("o"), suffixes=(".ldb",)))
    )
    with pytest.raises(ConfigError, match=r"several store plugins open 'a\.ldb'"):
        open_store("a.ldb", manager=twice)


async def test_permission_hooks_and_notifiers_come_from_plugins(tmp_path: Path) -> None:
    sent: list[Any] = []
    seen_tools: list[list[str]] = []

    def permission_factory(settings: dict[str, Any], *, environ: Any, tools: Any) -> Any:
        seen_tools.append([t.name for t in tools])
        return lambda call: call.name not in settings["deny"]

    class Notifier:
        async def send(self, notification: Any) -> None:
            sent.append(notification)

    def hook_factory(settings: dict[str, Any]) -> Any:
        async def audit(context: Any) -> HookDecision:
            sent.append(f"pre {context.tool_call.name}")
            return HookDecision.allow()

        return [(HookEvent.PRE_TOOL_USE, audit)]

    extra = provides(
        PermissionSpec(name="deny-list", factory=permission_factory),
        HookPluginSpec(name="audit", factory=hook_factory),
        NotifierSpec(name="memory", factory=lambda settings, environ: Notifier()),
    )
    path = _write(
        tmp_path,
        'tools = ["shout"]\nhooks = ["audit"]\nnotifiers = ["memory"]\n'
        '[permission]\nmode = "deny-list"\n[permission.settings]\ndeny = ["shout"]\n'
        '[policy]\non_tool_denied = "stop"\n' + SCRIPT,
    )
    composition = compose(path, environ={}, manager=_manager(extra), database="memory:")
    async with composition:
        result = await composition.runtime.run("shout hi")
    assert seen_tools == [["shout"]]
    assert result.stop_reason is not None and result.stop_reason.value == "policy_denied"
    assert sent[0] == "pre shout"
    [note] = [n for n in sent[1:] if "stopped" in getattr(n, "title", "")]
    assert note.level == "warning" and "stop reason: policy_denied" in note.body


class _Crash(BaseException):
    """Stands in for the process dying mid-tool (not an Exception: nothing catches it)."""


async def test_resume_refuses_when_a_plugin_the_run_used_is_gone(tmp_path: Path) -> None:
    from avo.exceptions import UnsafeResumeError
    from avo.runtime import AgentRuntime

    def crashing_factory(settings: dict[str, Any]) -> FunctionTool[ShoutArgs]:
        def crash(args: ShoutArgs) -> str:
            raise _Crash

        return FunctionTool(
            name="shout",
            description="Dies.",
            arguments_model=ShoutArgs,
            function=crash,
            risk=ToolRisk.INSPECT,  # runs under the safe default (no [permission] table)
        )

    crashing = provides(ToolSpec(name="shout", factory=crashing_factory))
    path = _write(tmp_path, 'tools = ["shout"]\n' + SCRIPT)
    composition = compose(
        path,
        environ={},
        manager=plugin_manager(fake_provider, memory_store, crashing),
        database="memory:",
    )
    with pytest.raises(_Crash):
        await composition.runtime.run("shout hi")
    [run] = await composition.event_store.list_runs()
    assert not run.state.value.startswith(("completed", "failed", "stopped", "cancelled"))

    without_tool = plugin_manager(fake_provider, memory_store)
    resumer = AgentRuntime(
        provider=composition.runtime.provider,
        event_store=composition.event_store,
        plugins=without_tool,
    )
    with pytest.raises(UnsafeResumeError, match=r"tool 'shout' \(an in-process plugin\)") as info:
        await resumer.resume(run.run_id)
    assert "the plugins it was composed from changed" in str(info.value)


def test_find_config_prefers_avo_toml_then_pyproject(tmp_path: Path) -> None:
    from avo.compose import find_config

    assert find_config(tmp_path) is None
    _write(tmp_path, '[project]\nname = "x"\n', "pyproject.toml")
    assert find_config(tmp_path) is None
    _write(tmp_path, '[tool.avo.provider]\nname = "fake"\n', "pyproject.toml")
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    _write(tmp_path, "[provider\n", "pyproject.toml")
    assert find_config(tmp_path) is None
    _write(tmp_path, '[provider]\nname = "fake"\n')
    assert find_config(tmp_path) == tmp_path / "avo.toml"


def test_compose_discovers_the_config_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, SCRIPT)
    monkeypatch.chdir(tmp_path)
    composition = compose(environ={}, manager=_manager(), database="memory:", discover_config=True)
    assert composition.config_file == "avo.toml" or composition.config_file.endswith("avo.toml")
    assert composition.store_location == "memory:"
