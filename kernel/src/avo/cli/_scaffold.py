"""``avo plugin init``: scaffold a separately versioned plugin package.

The generated package has the shape every avo package has
(``pyproject.toml``, ``README.md``, ``src/avo_<name>/``, ``tests/``), declares
itself only through entry points, and ships a working example with a passing
test that uses :mod:`avo.testing`.
"""

from __future__ import annotations

import re
from pathlib import Path

from avo.exceptions import AvoError

GROUPS = {
    "tool": "avo.tools",
    "provider": "avo.providers",
    "store": "avo.stores",
    "notifier": "avo.notifiers",
    "hook": "avo.hooks",
    "permission": "avo.permissions",
}

PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "avo-{dist}"
version = "0.1.0"
description = "{summary}"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["avo-kernel>=1.0,<2"]

[project.optional-dependencies]
test = ["pytest>=8", "pytest-asyncio>=0.24"]

# The kernel discovers the plugin through this entry point alone; its name is
# the name users write in avo.toml.
[project.entry-points."{group}"]
{name} = "avo_{module}.plugin:plugin"

[tool.hatch.build.targets.wheel]
packages = ["src/avo_{module}"]

[tool.pytest.ini_options]
asyncio_mode = "auto"

[tool.ruff]
line-length = 100

[tool.ruff.lint]
select = ["E", "F", "I", "UP", "B", "SIM", "RUF"]

[tool.ruff.lint.isort]
known-first-party = ["avo", "avo_{module}"]
"""

README = """\
# avo-{dist}

{summary}

An [avo](https://github.com/) {kind} plugin, discovered through the
`{group}` entry point `{name}`.

## Install and check

```bash
avo plugin install ./avo-{dist}      # or: pip install -e './avo-{dist}[test]'
avo plugin show {name}
pip install 'pytest>=8' 'pytest-asyncio>=0.24'   # the [test] extra
python -m pytest avo-{dist}/tests
```

## Use

{usage}
"""

INIT = '''\
"""avo-{dist}: {summary}"""

__version__ = "0.1.0"
'''

PLUGINS: dict[str, tuple[str, str, str]] = {}

PLUGINS["tool"] = (
    "A tool that upper-cases text.",
    '```toml\ntools = [{{ name = "{name}", settings = {{ suffix = "!" }} }}]\n```',
    '''\
"""The `{name}` tool (entry point group avo.tools). Importing this module is cheap."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides


class Settings(BaseModel):
    """``settings`` of the tool in avo.toml."""

    model_config = ConfigDict(extra="forbid")
    suffix: str = Field(default="!", description="Appended to every result.")


class Arguments(BaseModel):
    """What the model passes to the tool (anything else is refused)."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, description="The text to upper-case.")


def make_tool(settings: dict[str, Any]) -> Any:
    """Build the tool from its validated settings."""
    from avo.tools import FunctionTool

    suffix = str(settings.get("suffix", "!"))

    def run(arguments: Arguments) -> str:
        return arguments.text.upper() + suffix

    return FunctionTool(
        name="{name}",
        description="Upper-case a text.",
        arguments_model=Arguments,
        function=run,
        risk=ToolRisk.INSPECT,
    )


plugin = provides(
    ToolSpec(
        name="{name}",
        factory=make_tool,
        description="Upper-case a text.",
        risk=ToolRisk.INSPECT,
        settings_model=Settings,
    )
)
''',
)

TOOL_TEST = """\
from avo.runtime import AgentRuntime
from avo.testing import check_tool_contract, check_tool_spec, plugin_manager, tool_then_answer
from avo_{module}.plugin import plugin


async def test_the_tool_keeps_the_kernel_tool_contract() -> None:
    spec = plugin_manager(plugin).get("tool", "{name}")
    tool = check_tool_spec(spec, {{"suffix": "!"}})
    assert await check_tool_contract(tool, valid_arguments={{"text": "hi"}}) == "HI!"


async def test_the_tool_runs_inside_a_runtime() -> None:
    manager = plugin_manager(plugin)
    tool = manager.get("tool", "{name}").factory({{"suffix": "!"}})
    provider = tool_then_answer("{name}", {{"text": "hi"}}, "done")
    runtime = AgentRuntime(provider=provider, tools=[tool], plugins=manager)
    result = await runtime.run("use the tool")
    assert result.output == "done"
    events = await runtime.event_store.get_events(result.run_id)
    completed = [e for e in events if e.event_type.value == "tool_completed"]
    assert "HI!" in str(completed[0].payload)
"""

PLUGINS["provider"] = (
    "A model provider that echoes the task back.",
    '```toml\n[provider]\nname = "{name}"\n[provider.settings]\nprefix = "echo: "\n```',
    '''\
"""The `{name}` provider (entry point group avo.providers). Importing this module is cheap."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.plugins import ProviderCapabilities, ProviderSpec, provides


class Settings(BaseModel):
    """``[provider.settings]`` in avo.toml."""

    model_config = ConfigDict(extra="forbid")
    prefix: str = Field(default="echo: ", description="Put before the echoed task.")


class EchoProvider:
    """Answers every request with the last user message, prefixed."""

    name = "{name}"
    model = "echo"

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def generate(self, request: Any) -> Any:
        from avo.models import ModelResponse, TokenUsage

        users = [m for m in request.messages if m.get("role") == "user"]
        text = str(users[-1].get("content", "")) if users else ""
        usage = TokenUsage(input_tokens=len(text.split()), output_tokens=len(text.split()) + 1)
        return ModelResponse(content=self.prefix + text, usage=usage)


def make_provider(settings: dict[str, Any], *, environ: Mapping[str, str]) -> EchoProvider:
    """Build the provider from its validated settings (and the environment)."""
    return EchoProvider(str(settings.get("prefix", "echo: ")))


plugin = provides(
    ProviderSpec(
        name="{name}",
        factory=make_provider,
        description="Echoes the task back (a template to start a real adapter from).",
        settings_model=Settings,
        models=("echo",),
        capabilities=ProviderCapabilities(tool_calls=False),
    )
)
''',
)

PROVIDER_TEST = """\
from avo.runtime import AgentRuntime
from avo.testing import plugin_manager
from avo_{module}.plugin import plugin


async def test_the_provider_answers_a_run() -> None:
    manager = plugin_manager(plugin)
    provider = manager.get("provider", "{name}").factory({{"prefix": "echo: "}}, environ={{}})
    runtime = AgentRuntime(provider=provider, plugins=manager)
    result = await runtime.run("hello there")
    assert result.status.value == "completed"
    assert result.output == "echo: hello there"
    assert result.token_usage.total_tokens > 0
"""

PLUGINS["store"] = (
    "An event store (starts as the in-memory store under its own URL scheme).",
    '```toml\n[store]\nlocation = "{name}://runs"\n```',
    '''\
"""The `{name}` event store (entry point group avo.stores). Importing this module is cheap.

It starts as the kernel's in-memory store; replace ``make_store`` with a real
backend and keep the conformance suite in tests/ passing.
"""

from __future__ import annotations

from typing import Any

from avo.plugins import StoreSpec, provides


def make_store(location: str, settings: dict[str, Any]) -> Any:
    """Open the store at ``location`` (a ``{name}://`` URL)."""
    from avo.storage.memory import InMemoryEventStore

    return InMemoryEventStore()


plugin = provides(
    StoreSpec(
        name="{name}",
        factory=make_store,
        description="An event store plugin.",
        schemes=("{name}",),
    )
)
''',
)

STORE_TEST = """\
from typing import Any

from avo.testing import plugin_manager
from avo.testing.stores import EventStoreConformance
from avo_{module}.plugin import make_store, plugin


class TestStoreConformance(EventStoreConformance):
    shares_location = False  # in-memory until a real backend replaces it

    async def make_store(self, location: Any) -> Any:
        return make_store(str(location), {{}})


def test_the_store_is_registered_for_its_scheme() -> None:
    spec = plugin_manager(plugin).get("store", "{name}")
    assert spec.schemes == ("{name}",)
"""

PLUGINS["notifier"] = (
    "A notifier that writes notifications to stderr.",
    '```toml\nnotifiers = [{{ name = "{name}", settings = {{ prefix = "[avo] " }} }}]\n```',
    '''\
"""The `{name}` notifier (entry point group avo.notifiers). Importing this module is cheap."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from avo.plugins import NotifierSpec, provides


class Settings(BaseModel):
    """``settings`` of the notifier in avo.toml."""

    model_config = ConfigDict(extra="forbid")
    prefix: str = "[avo] "


class StderrNotifier:
    """Writes each notification (title, body, level) as one line to stderr."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def send(self, notification: Any) -> None:
        level = getattr(notification, "level", "info")
        print(f"{{self.prefix}}{{level}}: {{notification.title}}", file=sys.stderr)


def make_notifier(settings: dict[str, Any], *, environ: Mapping[str, str]) -> StderrNotifier:
    """Build the notifier from its validated settings."""
    return StderrNotifier(str(settings.get("prefix", "[avo] ")))


plugin = provides(
    NotifierSpec(
        name="{name}",
        factory=make_notifier,
        description="Writes notifications to stderr.",
        settings_model=Settings,
    )
)
''',
)

NOTIFIER_TEST = """\
from dataclasses import dataclass

import pytest

from avo.testing import plugin_manager
from avo_{module}.plugin import plugin


@dataclass(frozen=True)
class Note:
    title: str
    body: str = ""
    level: str = "info"


async def test_the_notifier_sends(capsys: pytest.CaptureFixture[str]) -> None:
    spec = plugin_manager(plugin).get("notifier", "{name}")
    notifier = spec.factory({{"prefix": "[t] "}}, environ={{}})
    await notifier.send(Note("run finished"))
    assert "[t] info: run finished" in capsys.readouterr().err
"""

PLUGINS["hook"] = (
    "Run hooks that block the tools listed in `deny`.",
    '```toml\nhooks = [{{ name = "{name}", settings = {{ deny = ["run_shell"] }} }}]\n```',
    '''\
"""The `{name}` hooks (entry point group avo.hooks). Importing this module is cheap."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.plugins import HookPluginSpec, provides


class Settings(BaseModel):
    """``settings`` of the hook set in avo.toml."""

    model_config = ConfigDict(extra="forbid")
    deny: list[str] = Field(default_factory=list, description="Tool names to block.")


def make_hooks(settings: dict[str, Any]) -> list[tuple[Any, Any]]:
    """The (HookEvent, hook) pairs this plugin adds to a run."""
    from avo.hooks import HookDecision, HookEvent

    denied = set(settings.get("deny", []))

    async def guard(context: Any) -> Any:
        call = context.tool_call
        if call is not None and call.name in denied:
            return HookDecision.block(f"{{call.name}} is blocked by the {name} hook")
        return HookDecision.allow()

    return [(HookEvent.PRE_TOOL_USE, guard)]


plugin = provides(
    HookPluginSpec(
        name="{name}",
        factory=make_hooks,
        description="Blocks the tools listed in settings.deny.",
        settings_model=Settings,
    )
)
''',
)

HOOK_TEST = """\
from pydantic import BaseModel

from avo.hooks import HookRegistry
from avo.runtime import AgentRuntime
from avo.testing import plugin_manager, tool_then_answer
from avo.tools import FunctionTool
from avo_{module}.plugin import plugin


class NoArgs(BaseModel):
    pass


async def test_the_hook_blocks_a_denied_tool() -> None:
    spec = plugin_manager(plugin).get("hook", "{name}")
    hooks = HookRegistry()
    for event, hook in spec.factory({{"deny": ["wipe"]}}):
        hooks.register(event, hook)
    ran: list[str] = []
    wipe = FunctionTool(
        name="wipe",
        description="Pretend to delete everything.",
        arguments_model=NoArgs,
        function=lambda args: ran.append("wiped"),
    )
    provider = tool_then_answer("wipe", {{}}, "done")
    runtime = AgentRuntime(provider=provider, tools=[wipe], hooks=hooks)
    result = await runtime.run("clean up")
    # the call was denied: the model read why (the call's result) and answered
    assert result.output == "done" and ran == []
    events = await runtime.event_store.get_events(result.run_id)
    denied = [e.payload for e in events if e.event_type.value == "tool_denied"]
    assert [d["blocked_by"] for d in denied] == ["hook"]
"""

PLUGINS["permission"] = (
    "A permission mode that approves only the tools listed in `allow`.",
    '```toml\n[permission]\nmode = "{name}"\n[permission.settings]\nallow = ["read_file"]\n```',
    '''\
"""The `{name}` permission mode (entry point group avo.permissions). Cheap to import.

A permission mode only builds an approval callback: approval is one seam.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.plugins import PermissionSpec, provides


class Settings(BaseModel):
    """``[permission.settings]`` in avo.toml."""

    model_config = ConfigDict(extra="forbid")
    allow: list[str] = Field(default_factory=list, description="Tools approved without asking.")


def make_callback(
    settings: dict[str, Any], *, environ: Mapping[str, str], tools: list[Any]
) -> Callable[[Any], bool]:
    """Approve a call when its tool is in ``allow``; refuse everything else."""
    allowed = set(settings.get("allow", []))

    def approve(call: Any) -> bool:
        return call.name in allowed

    return approve


plugin = provides(
    PermissionSpec(
        name="{name}",
        factory=make_callback,
        description="Approves only the tools in settings.allow.",
        settings_model=Settings,
    )
)
''',
)

PERMISSION_TEST = """\
from avo.models import ToolCall
from avo.testing import plugin_manager
from avo_{module}.plugin import plugin


def test_the_callback_approves_only_allowed_tools() -> None:
    spec = plugin_manager(plugin).get("permission", "{name}")
    approve = spec.factory({{"allow": ["read_file"]}}, environ={{}}, tools=[])
    assert approve(ToolCall(name="read_file")) is True
    assert approve(ToolCall(name="run_shell")) is False
"""

TESTS = {
    "tool": TOOL_TEST,
    "provider": PROVIDER_TEST,
    "store": STORE_TEST,
    "notifier": NOTIFIER_TEST,
    "hook": HOOK_TEST,
    "permission": PERMISSION_TEST,
}

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


def scaffold(name: str, *, kind: str, directory: Path | None = None) -> Path:
    """Create the package for plugin ``name`` of ``kind``; returns its directory."""
    if not _NAME.match(name):
        raise AvoError(
            f"invalid plugin name {name!r}: use lower-case letters, digits, '-' or '_', "
            "starting with a letter (e.g. shout)"
        )
    if kind not in GROUPS:
        raise AvoError(f"unknown plugin kind {kind!r}; choose one of {', '.join(GROUPS)}")
    dist = name.replace("_", "-")
    module = name.replace("-", "_")
    target = directory if directory is not None else Path.cwd() / f"avo-{dist}"
    if target.exists() and any(target.iterdir()):
        raise AvoError(f"{target} already exists and is not empty; pick another --directory")
    summary, usage, plugin_source = PLUGINS[kind]
    values = {
        "name": name,
        "dist": dist,
        "module": module,
        "kind": kind,
        "group": GROUPS[kind],
        "summary": summary,
    }
    values["usage"] = usage.format(**values)
    files = {
        "pyproject.toml": PYPROJECT.format(**values),
        "README.md": README.format(**values),
        f"src/avo_{module}/__init__.py": INIT.format(**values),
        f"src/avo_{module}/plugin.py": plugin_source.format(**values),
        f"tests/test_{module}_plugin.py": TESTS[kind].format(**values),
    }
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return target


__all__ = ["GROUPS", "scaffold"]
