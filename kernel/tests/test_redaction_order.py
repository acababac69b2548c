"""Redact first, then shorten; mask a known key split across stream chunks (issue 13, item 9)."""

from __future__ import annotations

import pytest

from avo.redaction import Redactor, StreamRedactor, shorten

KEY = "SEEDED7f3a9c2e5b1d4f6a8e0c2b4d6f8a1357"
FRAGMENT = KEY[:10]


def test_shorten_never_leaves_part_of_a_token() -> None:
    text = "error: bad key sk-proj-abcdefgh12345678 given"
    cut = shorten(text, 24)
    assert cut.endswith("…") and len(cut) <= 24
    assert "sk-" not in cut
    assert shorten("short", 24) == "short"
    assert shorten("x" * 50, 10) == "x" * 9 + "…"  # one token longer than the limit


def test_redact_then_shorten_masks_a_key_the_cut_would_split() -> None:
    redactor = Redactor(environ={"AVO_X_API_KEY": KEY})
    text = "p" * 20 + " " + KEY + " tail"
    assert FRAGMENT not in redactor.brief(text, 30)
    assert redactor.brief(text, 30).startswith("p" * 20)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, 64])
def test_stream_redactor_masks_a_known_value_split_across_chunks(size: int) -> None:
    redactor = Redactor(environ={"AVO_X_API_KEY": KEY})
    shown: list[str] = []
    stream = StreamRedactor(redactor, shown.append)
    text = f"a {KEY}, b {KEY[:-1]} c {KEY}"
    for i in range(0, len(text), size):
        stream.feed(text[i : i + size])
    stream.close()
    assert "".join(shown) == f"a ***, b {KEY[:-1]} c ***"


async def test_a_known_key_the_model_echoes_never_reaches_a_tool_or_a_checkpoint() -> None:
    from pydantic import BaseModel

    from avo import AgentRuntime, FakeProvider, FunctionTool, ModelResponse, ToolCall
    from avo.storage.memory import InMemoryEventStore

    class Args(BaseModel):
        url: str

    seen: list[str] = []

    def fetch(args: Args) -> str:
        seen.append(args.url)
        return "ok"

    store = InMemoryEventStore()
    runtime = AgentRuntime(
        provider=FakeProvider(
            [
                ModelResponse(
                    tool_call=ToolCall(name="fetch", arguments={"url": f"https://x/?k={KEY}"})
                ),
                ModelResponse(content=f"done; the key was {KEY}; token = load_token()"),
            ]
        ),
        tools=[
            FunctionTool(
                name="fetch", description="fetch a url", arguments_model=Args, function=fetch
            )
        ],
        event_store=store,
        environ={"AVO_X_API_KEY": KEY},
    )
    result = await runtime.run("go")
    assert seen == ["https://x/?k=***"]
    # The run record is redacted by shape too (as every record is); the transcript is not.
    assert result.output is not None and result.output.startswith("done; the key was ***;")
    checkpoint = await store.get_latest_checkpoint(result.run_id)
    assert checkpoint is not None
    # (provider_metadata is the FakeProvider's own script, written by the test.)
    kept = checkpoint.model_dump_json(exclude={"provider_metadata"})
    assert FRAGMENT not in kept
    assert "token = load_token()" in kept
    events = await store.get_events(result.run_id)
    assert all(FRAGMENT not in event.model_dump_json() for event in events)
