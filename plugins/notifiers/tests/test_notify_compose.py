"""avo.toml enables the notify hook set by name; a composed run posts to the webhook."""

import pytest

from avo.compose import compose
from avo.exceptions import ConfigError


async def test_composed_runtime_notifies_from_avo_toml(tmp_path, webhook_server):
    config = tmp_path / "avo.toml"
    config.write_text(
        f"""
[[hooks]]
name = "notify"
settings = {{webhook = "{webhook_server.url}", on_notification = false}}

[[hooks]]
name = "block"
settings = {{tools = ["danger*"]}}

[store]
name = "memory"

[provider]
name = "fake"

[[provider.settings.script]]
content = "composed and done"
"""
    )
    composition = compose(config, environ={"PATH": "/usr/bin"})
    async with composition:
        result = await composition.runtime.run("x")
    assert result.status.value == "completed"
    (sent,) = webhook_server.requests
    assert sent["title"] == "avo run completed" and "composed and done" in sent["body"]


def test_notify_settings_validation(tmp_path):
    from avo_notifiers import notify_hooks

    with pytest.raises(ConfigError, match="desktop = true"):
        notify_hooks({"desktop": True}, environ={"PATH": str(tmp_path)})
    with pytest.raises(ConfigError, match="allowed: desktop, on_notification"):
        notify_hooks({"url": "x"}, environ={})
