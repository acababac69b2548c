"""avo.toml [budget] and [rate_limit] tables, hook factory keywords, injected secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from avo._builtins import fake_provider, memory_store
from avo.compose import compose
from avo.exceptions import ConfigError
from avo.plugins import HookPluginSpec, provides
from avo.state import StopReason
from avo.testing import plugin_manager

SCRIPT = """
[provider]
name = "fake"
[[provider.settings.script]]
content = "done, with the key sk-test-0123456789abcdef and secret s3cr3t-value"
usage = {input_tokens = 4000, output_tokens = 1000}
"""

seen: dict[str, Any] = {}


def _hook_factory(settings: dict[str, Any], *, store_location: str, environ: Any) -> list[Any]:
    seen.update(store_location=store_location, environ=dict(environ))
    return []


def _plain_hook_factory(settings: dict[str, Any]) -> list[Any]:
    seen["plain"] = True
    return []


hooks = provides(
    HookPluginSpec(name="spy", factory=_hook_factory),
    HookPluginSpec(name="plain", factory=_plain_hook_factory),
)


def _compose(
    tmp_path: Path, extra: str, environ: dict[str, str] | None = None, top: str = ""
) -> Any:
    path = tmp_path / "avo.toml"
    text = top + SCRIPT + '[store]\nlocation = "memory:"\n' + extra
    path.write_text(text, encoding="utf-8")
    manager = plugin_manager(fake_provider, memory_store, hooks)
    return compose(path, environ=environ or {}, manager=manager)


async def test_budget_table_stops_the_run(tmp_path: Path) -> None:
    composition = _compose(
        tmp_path,
        '[budget]\nhard_limit_usd = "0.01"\ninput_per_1k = "0.003"\noutput_per_1k = "0.015"\n',
    )
    async with composition:
        result = await composition.runtime.run("go")
    assert result.stop_reason is StopReason.TOKEN_BUDGET_EXCEEDED


async def test_rate_limit_table_builds_a_limiter(tmp_path: Path) -> None:
    composition = _compose(tmp_path, "[rate_limit]\nrequests_per_minute = 600\n")
    async with composition:
        assert composition.runtime._rate_limiter is not None
        result = await composition.runtime.run("go")
    assert result.status.value == "completed"


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("[budget]\nhard_limit = 3\n", "budget"),
        ("[rate_limit]\nrequests_per_hour = 3\n", "rate_limit"),
    ],
)
def test_bad_bound_tables_name_file_and_key(tmp_path: Path, extra: str, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"avo.toml: \[{key}\]") as info:
        _compose(tmp_path, extra)
    assert info.value.key == key


async def test_hook_factories_get_the_keywords_they_accept(tmp_path: Path) -> None:
    seen.clear()
    composition = _compose(tmp_path, "", environ={"X": "1"}, top='hooks = ["spy", "plain"]\n')
    async with composition:
        pass
    assert seen == {"store_location": "memory:", "environ": {"X": "1"}, "plain": True}


async def test_secrets_of_an_injected_environment_are_masked(tmp_path: Path) -> None:
    composition = _compose(tmp_path, "", environ={"MY_SERVICE_SECRET": "s3cr3t-value"})
    async with composition:
        result = await composition.runtime.run("go")
        events = await composition.event_store.get_events(result.run_id)
    text = str([e.payload for e in events]) + str(result.output)
    assert "s3cr3t-value" not in text and "sk-test-0123456789abcdef" not in text


def test_a_misspelt_script_key_is_refused_when_composing(tmp_path: Path) -> None:
    path = tmp_path / "avo.toml"
    path.write_text(
        '[provider]\nname = "fake"\n[[provider.settings.script]]\ncontnet = "hi"\n'
        '[store]\nlocation = "memory:"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        compose(path, environ={}, manager=plugin_manager(fake_provider, memory_store))
    message = str(caught.value)
    assert "script[0]" in message and "contnet" in message and "content" in message
