"""What real vendors send, on loopback servers speaking each wire format.

For every vendor family, generate and stream alike: a turn with three tool
calls (the middle one a barrier) gives three results in the model's order; a
vendor that repeats a call id across turns is harmless; an answer cut off at
the output limit is continued (or stops OUTPUT_TRUNCATED); a refusal stops
MODEL_REFUSED; a 429 with Retry-After is waited out (the wait is measured on
the server) and then succeeds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from avo.events import EventType
from avo.models import TokenUsage, ToolRisk
from avo.policies import LoopPolicy
from avo.runtime import AgentRuntime
from avo.runtime_answers import CONTINUE_PROMPT
from avo.state import RunState, StopReason
from avo.testing import minted_ids
from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse
from avo.tools import FunctionTool
from avo_providers.anthropic import AnthropicProvider
from avo_providers.base_http import MiniMaxConfig, ProviderConfig
from avo_providers.gemini import GeminiProvider
from avo_providers.minimax import MiniMaxProvider
from avo_providers.ollama import OllamaProvider
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.wire_fakes import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire

KEY = "sk-fidelity-0123456789abcdef"
USAGE = TokenUsage(input_tokens=10, output_tokens=4)
CALLS = [
    ("c1", "look", {"key": "a"}),
    ("c2", "write", {"key": "b"}),  # modifies: a barrier
    ("c3", "look", {"key": "c"}),
]


class Key(BaseModel):
    key: str


class Journal:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def tools(self) -> list[FunctionTool[Key]]:
        async def look(args: Key) -> dict[str, str]:
            self.lines.append(f"start {args.key}")
            await asyncio.sleep(0.01)
            self.lines.append(f"end {args.key}")
            return {"done": args.key}

        def write(args: Key) -> dict[str, str]:
            self.lines.append(f"start {args.key}")
            self.lines.append(f"end {args.key}")
            return {"done": args.key}

        return [
            FunctionTool(
                name="look", description="Look.", arguments_model=Key, function=look, risk="inspect"
            ),
            FunctionTool(
                name="write",
                description="Write.",
                arguments_model=Key,
                function=write,
                risk=ToolRisk.MODIFY,
            ),
        ]


# ------------------------------------------------------------ what each vendor was sent back
def openai_turn(body: dict[str, Any]) -> tuple[list[Any], list[tuple[Any, Any]]]:
    messages = body["messages"]
    at = max(i for i, m in enumerate(messages) if m.get("tool_calls"))
    calls = [(c["id"], c["function"]["name"]) for c in messages[at]["tool_calls"]]
    results = [
        (m["tool_call_id"], json.loads(m["content"]))
        for m in messages[at + 1 :]
        if m["role"] == "tool"
    ]
    return calls, results


def anthropic_turn(body: dict[str, Any]) -> tuple[list[Any], list[tuple[Any, Any]]]:
    messages = body["messages"]
    at = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "assistant" and any(b["type"] == "tool_use" for b in m["content"])
    )
    calls = [(b["id"], b["name"]) for b in messages[at]["content"] if b["type"] == "tool_use"]
    results = [
        (b["tool_use_id"], json.loads(b["content"]))
        for b in messages[at + 1]["content"]
        if b["type"] == "tool_result"
    ]
    return calls, results


def gemini_turn(body: dict[str, Any]) -> tuple[list[Any], list[tuple[Any, Any]]]:
    contents = body["contents"]
    at = max(
        i for i, c in enumerate(contents) if any("functionCall" in p for p in c.get("parts", []))
    )
    calls = [
        (p["functionCall"].get("id"), p["functionCall"]["name"])
        for p in contents[at]["parts"]
        if "functionCall" in p
    ]
    results = [
        (p["functionResponse"].get("id"), p["functionResponse"]["response"])
        for p in contents[at + 1]["parts"]
    ]
    return calls, results


def ollama_turn(body: dict[str, Any]) -> tuple[list[Any], list[tuple[Any, Any]]]:
    messages = body["messages"]
    at = max(i for i, m in enumerate(messages) if m.get("tool_calls"))
    calls = [(None, c["function"]["name"]) for c in messages[at]["tool_calls"]]
    results = [
        (m.get("tool_name"), json.loads(m["content"]))
        for m in messages[at + 1 :]
        if m["role"] == "tool"
    ]
    return calls, results


@dataclass
class Family:
    id: str
    wire: Any
    make: Callable[[str], Any]
    turn: Callable[[dict[str, Any]], tuple[list[Any], list[tuple[Any, Any]]]]
    ids: bool = True  # the vendor gives (and wants back) call ids
    refuses: bool = True  # the format can say "refused"


def _cfg(url: str) -> ProviderConfig:
    return ProviderConfig(model="m", api_key=KEY, base_url=url)


def _minimax(style: str) -> Callable[[str], Any]:
    return lambda u: MiniMaxProvider(
        MiniMaxConfig(model="m", api_key=KEY, base_url=u, api_style=style)  # type: ignore[arg-type]
    )


FAMILIES = [
    Family("openai", OpenAIWire(), lambda u: OpenAICompatibleProvider(_cfg(u)), openai_turn),
    Family("anthropic", AnthropicWire(), lambda u: AnthropicProvider(_cfg(u)), anthropic_turn),
    Family("gemini", GeminiWire(), lambda u: GeminiProvider(_cfg(u)), gemini_turn),
    Family(
        "ollama",
        OllamaWire(),
        lambda u: OllamaProvider(_cfg(u)),
        ollama_turn,
        ids=False,
        refuses=False,
    ),
    Family("minimax-openai", OpenAIWire(), _minimax("openai"), openai_turn),
    Family("minimax-anthropic", AnthropicWire(), _minimax("anthropic"), anthropic_turn),
]
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
EACH = pytest.mark.parametrize("family", FAMILIES, ids=[f.id for f in FAMILIES])


def calls_response(family: Family, calls: list[Any], stream: bool) -> ScriptedResponse:
    made = family.wire.tool_calls_stream if stream else family.wire.tool_calls
    return made(calls, USAGE)


def answer(family: Family, text: str, stream: bool) -> ScriptedResponse:
    wire = family.wire
    return wire.text_stream(text, USAGE) if stream else wire.text(text, USAGE)


async def drive(
    family: Family, script: list[ScriptedResponse], stream: bool, **kwargs: Any
) -> tuple[Any, list[Any], ScriptedHTTPServer, Journal]:
    journal = Journal()
    async with ScriptedHTTPServer(script) as server:
        provider = family.make(server.url)
        runtime = AgentRuntime(
            provider=provider,
            tools=journal.tools(),
            stream_callback=(lambda _text: None) if stream else None,
            **kwargs,
        )
        result = await runtime.run("go")
        events = await runtime.event_store.get_events(result.run_id)
        await provider.aclose()
    return result, events, server, journal


@STREAM
@EACH
async def test_three_parallel_calls_one_a_barrier(family: Family, stream: bool) -> None:
    script = [calls_response(family, CALLS, stream), answer(family, "all done", stream)]
    result, events, server, journal = await drive(family, script, stream)
    assert (result.status, result.output) == (RunState.COMPLETED, "all done"), result.error
    # a ran, then the barrier b alone, then c
    assert journal.lines == ["start a", "end a", "start b", "end b", "start c", "end c"]
    done = [e for e in events if e.event_type is EventType.TOOL_COMPLETED]
    assert [e.payload["result"]["output"] for e in done] == [{"done": k} for k in "abc"]
    # the next request gave the vendor back its calls and the three results, in order
    calls, results = family.turn(server.requests[1].json())
    assert [name for _, name in calls] == ["look", "write", "look"]
    assert [output for _, output in results] == [{"done": k} for k in "abc"]
    if family.ids:
        assert [call_id for call_id, _ in calls] == ["c1", "c2", "c3"]
        assert [call_id for call_id, _ in results] == ["c1", "c2", "c3"]
    else:
        assert [tool for tool, _ in results] == ["look", "write", "look"]


@STREAM
@EACH
async def test_a_vendor_repeating_a_call_id_across_turns(family: Family, stream: bool) -> None:
    script = [
        calls_response(family, [("call_0", "look", {"key": "a"})], stream),
        calls_response(family, [("call_0", "look", {"key": "b"})], stream),
        answer(family, "done", stream),
    ]
    result, events, server, _ = await drive(family, script, stream)
    assert result.status is RunState.COMPLETED, result.error
    started = [e.payload["tool_call_id"] for e in events if e.event_type is EventType.TOOL_STARTED]
    assert len(started) == len(set(started)) == 2  # the runtime's ids differ
    if family.ids:
        assert minted_ids(events)["call_0"] == started
        sent = json.dumps(server.requests[2].json())
        assert sent.count('"call_0"') >= 4  # both calls and both results, as the vendor named them


@STREAM
@EACH
async def test_a_truncated_answer_is_continued(family: Family, stream: bool) -> None:
    wire = family.wire
    cut = wire.truncated_answer_stream if stream else wire.truncated
    script = [cut("Once upon a ", USAGE), answer(family, "time.", stream)]
    result, events, server, _ = await drive(family, script, stream)
    assert (result.status, result.output) == (RunState.COMPLETED, "Once upon a time.")
    assert CONTINUE_PROMPT in json.dumps(server.requests[1].json())
    finishes = [
        e.payload["response"].get("finish_reason")
        for e in events
        if e.event_type is EventType.MODEL_RESPONDED
    ]
    assert finishes == ["length", "stop"]


@STREAM
@EACH
async def test_a_truncated_answer_without_continuations_stops(family: Family, stream: bool) -> None:
    wire = family.wire
    cut = wire.truncated_answer_stream if stream else wire.truncated
    result, _, _, _ = await drive(
        family, [cut("half an answer", USAGE)], stream, policy=LoopPolicy(continuation_turns=0)
    )
    assert (result.status, result.stop_reason) == (RunState.STOPPED, StopReason.OUTPUT_TRUNCATED)
    assert result.output == "half an answer"


@STREAM
@EACH
async def test_a_refusal_stops_the_run(family: Family, stream: bool) -> None:
    if not family.refuses:
        pytest.skip(f"{family.id} has no way to say it refused")
    wire = family.wire
    refuse = wire.refusal_stream if stream else wire.refusal
    result, events, _, _ = await drive(family, [refuse("I can't help with that.", USAGE)], stream)
    assert (result.status, result.stop_reason) == (RunState.STOPPED, StopReason.MODEL_REFUSED)
    [responded] = [e for e in events if e.event_type is EventType.MODEL_RESPONDED]
    finish = responded.payload["response"]["finish_reason"]
    if isinstance(wire, GeminiWire):
        assert finish == "content_filter" and not result.output
    else:
        assert finish == "refusal" and result.output == "I can't help with that."


def rate_limited(wire: Any, retry_after: str) -> ScriptedResponse:
    response = wire.error(429, "Rate limit reached, slow down")
    response.headers = {**response.headers, "retry-after": retry_after}
    return response


@EACH
async def test_a_429_with_retry_after_is_waited_out(family: Family) -> None:
    script = [rate_limited(family.wire, "1"), answer(family, "made it", False)]
    result, events, server, _ = await drive(family, script, False)
    assert (result.status, result.output) == (RunState.COMPLETED, "made it")
    waited = server.requests[1].received_at - server.requests[0].received_at
    assert waited >= 0.95, f"retried after {waited:.3f}s, the vendor asked for 1s"
    [failed] = [e.payload for e in events if e.event_type is EventType.MODEL_FAILED]
    assert failed["retry_in_seconds"] == 1 and failed["status_code"] == 429
    assert failed["attempt"] == 1 and failed["consecutive_errors"] == 0
    print(f"{family.id}: Retry-After 1 s, the retry came {waited:.3f} s later")


def test_retry_after_as_an_http_date() -> None:
    from avo_providers.http_common import retry_after_seconds

    now = 1_767_225_600.0  # 2026-01-01 00:00:00 GMT
    later = "Thu, 01 Jan 2026 00:00:30 GMT"
    assert retry_after_seconds({"Retry-After": later}, now=lambda: now) == 30
    assert retry_after_seconds({"retry-after": "2.5"}) == 2.5
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert (
        retry_after_seconds({"retry-after": "Thu, 01 Jan 2026 00:00:00 GMT"}, now=lambda: now + 9)
        == 0
    )
    assert retry_after_seconds({"retry-after": "soon"}) is None


async def test_exhausted_retries_name_the_vendor_and_status() -> None:
    wire = OpenAIWire()
    script = [rate_limited(wire, "0") for _ in range(4)]
    policy = LoopPolicy(consecutive_error_limit=2, retry={"max_attempts": 2})  # type: ignore[arg-type]
    result, _, server, _ = await drive(FAMILIES[0], script, False, policy=policy)
    assert result.stop_reason is StopReason.CONSECUTIVE_ERRORS
    assert result.error == (
        "Run stopped: 2 consecutive errors (limit 2). Last error: OpenAI API returned HTTP 429: "
        "rate_limit_exceeded: Rate limit reached, slow down (retry after 0s)"
    )
    assert len(server.requests) == 4


@STREAM
async def test_a_tool_call_cut_off_at_the_output_limit_says_so(stream: bool) -> None:
    wire = OpenAIWire()
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "look", "arguments": '{"key": "a very long'},
    }
    if stream:
        events: list[tuple[str | None, Any]] = [(None, wire._chunk({"tool_calls": [call]}))]
        reply = ScriptedResponse.sse(events + wire._tail("length", USAGE))
    else:
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        reply = ScriptedResponse.json(wire._completion(message, "length", USAGE))
    result, _, server, journal = await drive(FAMILIES[0], [reply], stream)
    assert result.status is RunState.FAILED and journal.lines == []
    assert "'look' was cut off at the output-token limit (finish_reason=length)" in result.error
    assert result.error.endswith("raise the provider's output-token limit")
    assert len(server.requests) == 1  # not retried: the same request would be cut again


@STREAM
async def test_an_anthropic_tool_use_cut_off_at_max_tokens_says_so(stream: bool) -> None:
    """A write cut short must not run with the half of its input that arrived."""
    wire = AnthropicWire()
    if stream:
        block = {"type": "tool_use", "id": "toolu_1", "name": "look", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": '{"key": "a very lo'}
        reply = ScriptedResponse.sse(
            [
                wire._start(USAGE),
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": block},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                *wire._end("max_tokens", USAGE),
            ]
        )
    else:
        partial = {"type": "tool_use", "id": "toolu_1", "name": "look", "input": {"key": "a"}}
        reply = ScriptedResponse.json(wire._message([partial], "max_tokens", USAGE))
    result, _, server, journal = await drive(FAMILIES[1], [reply], stream)
    assert result.status is RunState.FAILED and journal.lines == [], result.error
    assert "'look' was cut off at the output-token limit" in result.error
    assert len(server.requests) == 1
