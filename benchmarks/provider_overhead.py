"""Provider overhead: the time avo adds around one loopback model call.

A loopback HTTP server (avo.testing.providers.ScriptedHTTPServer) answers in
the OpenAI and Anthropic wire formats. For each format, streaming and not, the
benchmark times, over the same server in the same run:

* baseline: a bare httpx request with the same body, reading the JSON (or the
  stream's lines) — what any client must pay;
* adapter: ``provider.generate`` / assembling ``provider.stream`` (payload
  build, error/content-type checks, parsing, stream validation);
* adapter + event: the above plus building the MODEL_RESPONDED event and
  appending it (validated) to the in-memory store, as the runtime does.

Calls are interleaved so all three see the same machine load. Figures are
medians in milliseconds and ratios to the baseline; "best-case ratio" compares
the fastest adapter+event call with the fastest bare call.

Run: python benchmarks/provider_overhead.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from avo.events import AgentEvent, EventType
from avo.models import ModelRequest, RunRecord, TokenUsage, ToolMetadata
from avo.providers.streaming import collect_stream
from avo.storage.memory import InMemoryEventStore
from avo.testing.providers import ScriptedHTTPServer, ScriptedResponse
from avo_providers.anthropic import AnthropicProvider
from avo_providers.base_http import ProviderConfig
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.wire_fakes import AnthropicWire, OpenAIWire

USAGE = TokenUsage(input_tokens=120, output_tokens=40)
ANSWER = "The build is green; all 42 tests passed and the linter reported nothing. " * 4
TOOL = ToolMetadata(
    name="run_tests",
    description="Run the test suite.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)


def _request() -> ModelRequest:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful agent."}]
    for i in range(10):
        messages.append({"role": "user", "content": f"step {i}: please check the build"})
        messages.append({"role": "assistant", "content": f"checked step {i}"})
    messages.append({"role": "user", "content": "and now?"})
    return ModelRequest(run_id="bench", step=1, messages=messages, tools=[TOOL])


async def _interleaved(
    calls: list[Callable[[], Awaitable[Any]]],
    repeats: int,
    server: ScriptedHTTPServer,
    make: Callable[[], ScriptedResponse],
) -> list[list[float]]:
    """Time each call ``repeats`` times, interleaved, so all see the same machine load."""
    samples: list[list[float]] = [[] for _ in calls]
    for i in range(repeats):
        order = list(range(len(calls)))
        order = order[i % len(order) :] + order[: i % len(order)]
        for index in order:
            server.push(make())
            started = time.perf_counter()
            await calls[index]()
            samples[index].append((time.perf_counter() - started) * 1000)
    return samples


async def _bench_format(name: str, wire: Any, provider_cls: Any, repeats: int) -> None:
    request = _request()
    store = InMemoryEventStore()
    await store.create_run(
        RunRecord(run_id="bench", task="bench"),
        AgentEvent(run_id="bench", event_type=EventType.RUN_CREATED, payload={"task": "bench"}),
    )
    with ScriptedHTTPServer() as server:
        async with httpx.AsyncClient() as client:
            provider = provider_cls(
                ProviderConfig(model="m", api_key="k-bench-123456", base_url=server.url),
                client=client,
            )
            url = provider.endpoint(stream=False)
            headers = provider._all_headers()
            plain_body = provider.build_payload(request, stream=False)
            stream_body = provider.build_payload(request, stream=True)

            async def bare() -> None:
                response = await client.post(url, json=plain_body, headers=headers)
                response.json()

            async def bare_stream() -> None:
                async with client.stream("POST", url, json=stream_body, headers=headers) as r:
                    async for _line in r.aiter_lines():
                        pass

            async def adapter() -> Any:
                return await provider.generate(request)

            async def adapter_stream() -> Any:
                return await collect_stream(provider, request)

            async def with_event(call: Callable[[], Awaitable[Any]]) -> None:
                started = time.perf_counter()
                response = await call()
                event = AgentEvent(
                    run_id="bench",
                    event_type=EventType.MODEL_RESPONDED,
                    payload={
                        "step": 1,
                        "response": response.model_dump(mode="json"),
                        "duration_ms": (time.perf_counter() - started) * 1000,
                        "token_accounting_available": True,
                        "usage": response.usage.model_dump(mode="json"),
                        "provider": provider.name,
                        "model": provider.model,
                    },
                )
                await store.append_event(event)

            def plain() -> ScriptedResponse:
                return wire.text(ANSWER, USAGE)

            def streamed() -> ScriptedResponse:
                return wire.text_stream(ANSWER, USAGE)

            rows = [
                ("generate", bare, adapter, plain),
                ("stream", bare_stream, adapter_stream, streamed),
            ]
            # The CPU part alone, without the network: build + parse + event, in µs.
            data = json.loads(plain().body)
            loops = repeats * 10
            started = time.perf_counter()
            for _ in range(loops):
                json.dumps(provider.build_payload(request, stream=False))
                response = provider.parse_response(data)
                AgentEvent(
                    run_id="bench",
                    event_type=EventType.MODEL_RESPONDED,
                    payload={"response": response.model_dump(mode="json")},
                )
            cpu_us = (time.perf_counter() - started) / loops * 1e6
            print(f"{name:9} in-process build + parse + event: {cpu_us:7.1f} µs per call")
            for mode, base_call, avo_call, make in rows:
                calls = [base_call, avo_call, lambda c=avo_call: with_event(c)]
                await _interleaved(calls, 10, server, make)  # warm up
                bare_ms, adapter_ms, full_ms = await _interleaved(calls, repeats, server, make)
                base, adapted, full = (statistics.median(x) for x in (bare_ms, adapter_ms, full_ms))
                floor = min(bare_ms)
                print(
                    f"{name:9} {mode:8}  bare httpx {base:7.3f} ms | "
                    f"adapter {adapted:7.3f} ms ({adapted / base:4.2f}x) | "
                    f"adapter+event {full:7.3f} ms ({full / base:4.2f}x) | "
                    f"best-case ratio {min(full_ms) / floor:4.2f}x"
                )


async def main(quick: bool) -> None:
    repeats = 60 if quick else 200
    print(f"provider overhead over loopback HTTP ({repeats} calls per figure, medians)")
    await _bench_format("openai", OpenAIWire(), OpenAICompatibleProvider, repeats)
    await _bench_format("anthropic", AnthropicWire(), AnthropicProvider, repeats)


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv))
