"""A third party's plugin package, declared only through entry points, end to end.

Built in a temp dir, installed with ``avo plugin install`` (real pip) into a
fresh venv, listed by ``avo plugin list``, composed from a config into a
runtime that uses both its tool and its provider, and taken away again by
``avo plugin remove``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ACME_PLUGIN = '''
"""avo-acme: a tool and a provider, reachable only through entry points."""

from pydantic import BaseModel

from avo.models import ToolRisk
from avo.plugins import ProviderSpec, ToolSpec, provides


class UpperArgs(BaseModel):
    text: str


def make_tool(settings):
    from avo.tools import FunctionTool

    return FunctionTool(
        name="acme_upper",
        description="Upper-case a text, the acme way.",
        arguments_model=UpperArgs,
        function=lambda args: "ACME:" + args.text.upper(),
        risk=ToolRisk.INSPECT,
    )


class AcmeProvider:
    """Calls acme_upper on the task, then answers with what the tool returned."""

    name = "acme"
    model = "acme-1"

    async def generate(self, request):
        from avo.models import ModelResponse, TokenUsage, ToolCall

        usage = TokenUsage(input_tokens=5, output_tokens=2)
        tool_messages = [m for m in request.messages if m.get("role") == "tool"]
        if not tool_messages:
            task = [m for m in request.messages if m.get("role") == "user"][-1]["content"]
            call = ToolCall(name="acme_upper", arguments={"text": task})
            return ModelResponse(tool_call=call, usage=usage)
        return ModelResponse(content="acme answer: " + tool_messages[-1]["content"], usage=usage)


def make_provider(settings, *, environ):
    return AcmeProvider()


tool = provides(ToolSpec(name="acme_upper", factory=make_tool, risk=ToolRisk.INSPECT))
provider = provides(ProviderSpec(name="acme", factory=make_provider, models=("acme-1",)))
'''

CONFIG = """
tools = ["acme_upper"]

[provider]
name = "acme"

[store]
location = "memory:"
"""


def _names(rows: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, str]]:
    return {(row["kind"], row["name"]): row for row in rows}


def test_third_party_plugin_install_list_compose_remove(
    tmp_path: Path, plugin_venv: Any, kit: Any
) -> None:
    package = kit.write_package(
        tmp_path / "src",
        "acme",
        version="0.3.0",
        entry_points={
            "avo.tools": {"acme_upper": "avo_acme.plugin:tool"},
            "avo.providers": {"acme": "avo_acme.plugin:provider"},
        },
        plugin_source=ACME_PLUGIN,
    )
    wheel = kit.build_wheel(package, tmp_path / "dist")

    before = _names(plugin_venv.avo_json("plugin", "list"))
    assert ("provider", "acme") not in before and ("provider", "fake") in before

    installed = plugin_venv.avo("plugin", "install", str(wheel))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "added:  provider 'acme' from avo-acme 0.3.0" in installed.stdout
    assert "added:  tool 'acme_upper' from avo-acme 0.3.0" in installed.stdout

    rows = _names(plugin_venv.avo_json("plugin", "list"))
    for key in (("provider", "acme"), ("tool", "acme_upper")):
        assert rows[key]["package"] == "avo-acme"
        assert rows[key]["version"] == "0.3.0"
        assert rows[key]["status"] == "ok"
    shown = plugin_venv.avo_json("plugin", "show", "acme")
    assert shown["entry_point"] == "avo.providers: acme = avo_acme.plugin:provider"

    config = plugin_venv.cwd / "avo.toml"
    config.write_text(CONFIG, encoding="utf-8")
    composed = plugin_venv.python_run(
        """
        import asyncio, json
        from avo.compose import compose

        async def main():
            async with compose("avo.toml", environ={}) as composition:
                result = await composition.runtime.run("make it loud")
                events = await composition.event_store.get_events(result.run_id)
            tools = [e.payload for e in events if e.event_type.value == "tool_completed"]
            print(json.dumps({
                "output": result.output,
                "status": result.status.value,
                "plugins": events[0].payload["plugins"],
                "tools": tools,
            }))

        asyncio.run(main())
        """
    )
    assert composed.returncode == 0, composed.stderr
    report = json.loads(composed.stdout)
    assert report["status"] == "completed"
    assert report["output"] == "acme answer: ACME:MAKE IT LOUD"
    used = {(p["kind"], p["name"]): p["package"] for p in report["plugins"]}
    assert used[("provider", "acme")] == "avo-acme"
    assert used[("tool", "acme_upper")] == "avo-acme"

    ran = plugin_venv.avo("run", "via the cli")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("acme answer:") and "stop reason: completed" in ran.stderr

    refused = plugin_venv.avo("plugin", "remove", "acme", stdin="n\n")
    assert refused.returncode == 1 and "[y/N]" in refused.stdout
    removed = plugin_venv.avo("plugin", "remove", "acme", "--yes")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "removed avo-acme" in removed.stdout

    after = _names(plugin_venv.avo_json("plugin", "list"))
    assert ("provider", "acme") not in after and ("tool", "acme_upper") not in after
    gone = plugin_venv.avo("run", "again")
    assert gone.returncode == 2
    assert "unknown provider 'acme'" in gone.stderr
