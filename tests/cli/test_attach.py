"""``avo run --attach FILE...``: images and PDFs reach the model as its vendor documents.

A real ``avo`` subprocess; the provider plugins talk to loopback servers that
record what they were sent.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from cli_kit import CLI, write

from avo.models import TokenUsage
from avo.testing.providers import ScriptedHTTPServer

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
KEY = "sk-attach-test-0123456789"


@pytest.fixture
def server() -> Iterator[ScriptedHTTPServer]:
    with ScriptedHTTPServer() as running:
        yield running


def _provider(cli: CLI, name: str, model: str, extra: str = "") -> None:
    write(
        cli.cwd / "avo.toml",
        f'[provider]\nname = "{name}"\n[provider.settings]\nmodel = "{model}"\n{extra}',
    )


def test_attached_image_and_pdf_reach_openai_as_parts(cli: CLI, server: ScriptedHTTPServer) -> None:
    pytest.importorskip("avo_providers")
    from avo_providers.wire_fakes import OpenAIWire

    (cli.cwd / "pixel.png").write_bytes(PNG)
    (cli.cwd / "report.pdf").write_bytes(PDF)
    _provider(cli, "openai", "gpt-4o-mini")
    server.push(
        OpenAIWire().text_stream(
            "a pixel and a report", TokenUsage(input_tokens=9, output_tokens=4)
        )
    )
    env = {"AVO_OPENAI_BASE_URL": server.url + "/v1", "AVO_OPENAI_API_KEY": KEY}
    done = cli("run", "describe them", "--attach", "pixel.png", "report.pdf", **env)
    assert done.code == 0, done.err
    assert "a pixel and a report" in done.out
    user = server.requests[-1].json()["messages"][-1]
    assert user["content"] == [
        {"type": "text", "text": "describe them"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
        },
        {
            "type": "file",
            "file": {
                "filename": "report.pdf",
                "file_data": "data:application/pdf;base64," + base64.b64encode(PDF).decode(),
            },
        },
    ]


def test_a_missing_file_or_a_model_without_vision_stops_before_the_run(
    cli: CLI, server: ScriptedHTTPServer
) -> None:
    pytest.importorskip("avo_providers")
    from avo_providers.wire_fakes import OpenAIWire

    (cli.cwd / "pixel.png").write_bytes(PNG)
    _provider(cli, "groq", "llama-3.1-8b-instant")
    env = {"AVO_GROQ_BASE_URL": server.url, "AVO_GROQ_API_KEY": KEY}
    missing = cli("run", "look", "--attach", "nope.png", **env)
    assert missing.code == 2
    assert missing.first_err == "avo: nope.png: no such file to attach; check the path"
    refused = cli("run", "look", "--attach", "pixel.png", **env)
    assert refused.code == 2
    assert refused.first_err.startswith(
        "avo: cannot attach the image pixel.png: groq/llama-3.1-8b-instant: the model does not "
        "accept images; choose a model that accepts it (avo models)"
    )
    assert not server.requests
    runs = cli("runs", "list", "--json")
    assert runs.out.strip() in ("", "[]"), runs.out

    # [media] fallback = "placeholder": the run goes ahead with a line of text instead.
    _provider(cli, "groq", "llama-3.1-8b-instant", '[media]\nfallback = "placeholder"\n')
    server.push(
        OpenAIWire().text_stream("no image here", TokenUsage(input_tokens=9, output_tokens=4))
    )
    placed = cli("run", "look", "--attach", "pixel.png", **env)
    assert placed.code == 0, placed.err
    content = server.requests[-1].json()["messages"][-1]["content"]
    assert content.startswith("look\n[image pixel.png: image/png, 70 bytes; not shown: the model")
