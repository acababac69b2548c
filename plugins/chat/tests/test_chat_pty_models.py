"""/model and /provider switch the next turn, the session remembers it, avo resume takes it up.

A real provider plugin (openai) speaking its wire format to a loopback server:
each turn's request names the model that turn used, priced from the plugin's
catalog in the status line and /cost.
"""

from __future__ import annotations

import pytest
from chat_kit import Place

from avo.models import TokenUsage
from avo.testing.providers import ScriptedHTTPServer

CONFIG = """
[provider]
name = "openai"

[provider.settings]
model = "gpt-4o-mini"

[store]
location = "chat.db"
"""


def test_model_switches_are_part_of_the_session(place: Place) -> None:
    wires = pytest.importorskip("avo_providers.wire_fakes")
    wire = wires.OpenAIWire()
    usage = TokenUsage(input_tokens=1000, output_tokens=500)
    with ScriptedHTTPServer(
        [
            wire.text_stream("first answer", usage),
            wire.text_stream("second answer", usage),
            wire.text_stream("third answer", usage),
        ]
    ) as server:
        place.config(CONFIG)
        env = {"AVO_OPENAI_BASE_URL": server.url + "/v1", "AVO_OPENAI_API_KEY": "sk-test-0123"}
        term = place.terminal("chat", **env)
        term.wait_for("/help lists commands")
        term.enter("one")
        term.wait_for("first answer")
        term.wait_until(lambda t: "$0.00045" in t.display(), what="the priced status line")
        term.enter("/model gpt-4o")
        term.wait_for("model openai/gpt-4o from the next turn")
        term.enter("/model")
        term.wait_for("model: openai/gpt-4o")
        term.enter("two")
        term.wait_for("second answer")
        term.enter("/provider nosuch")
        term.wait_for("no provider 'nosuch'")
        term.ctrl("d")
        assert term.wait_exit() == 0

        again = place.terminal("resume", **env)
        again.wait_for("model openai/gpt-4o (as the session's last turn)")
        again.wait_for("/help lists commands")
        again.enter("three")
        again.wait_for("third answer")
        again.enter("/cost")
        again.wait_for("total")
        text = again.text()
        rows = {line.split()[0]: line.split() for line in text.splitlines() if "/gpt-" in line}
        # gpt-4o-mini: 0.15 / 0.60 USD per 1M tokens; gpt-4o: 2.50 / 10.00
        assert rows["openai-compatible/gpt-4o-mini"][1:] == ["1", "1,000", "500", "$0.00045"]
        assert rows["openai-compatible/gpt-4o"][1:] == ["2", "2,000", "1,000", "$0.015"]
        again.ctrl("d")
        assert again.wait_exit() == 0
        models = [request.json()["model"] for request in server.requests]
    assert models == ["gpt-4o-mini", "gpt-4o", "gpt-4o"]
