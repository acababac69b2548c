"""Fallback and race routers: failover, cooldown with an injected clock, race cancellation.

The failover runs go over real loopback HTTP providers; the race-cancellation
test uses in-process providers so it can observe the loser being cancelled.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from avo.events import EventType
from avo.exceptions import ProviderError
from avo.models import ModelRequest, ModelResponse, TokenUsage
from avo.policies import LoopPolicy
from avo.providers.streaming import collect_stream
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo.testing.providers import ScriptedHTTPServer, unused_loopback_url
from avo_providers.base_http import ProviderConfig
from avo_providers.config import build_provider_from_env
from avo_providers.ollama import OllamaProvider
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.router import FallbackRouterProvider, RaceRouterProvider
from avo_providers.wire_fakes import OllamaWire, OpenAIWire

USAGE = TokenUsage(input_tokens=5, output_tokens=2)
WIRE = OpenAIWire()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def http_route(url: str) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(ProviderConfig(model="m", api_key="k-123456", base_url=url))


def request() -> ModelRequest:
    return ModelRequest(run_id="r", step=1, messages=[{"role": "user", "content": "hi"}])


class SlowProvider:
    """Answers after ``delay`` seconds; records whether it was cancelled."""

    def __init__(self, answer: str, delay: float, *, fail: bool = False) -> None:
        self.answer = answer
        self.delay = delay
        self.fail = fail
        self.started = 0
        self.cancelled = False
        self.name = answer
        self.model = answer

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.started += 1
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        if self.fail:
            raise ProviderError(f"{self.answer} is overloaded", retryable=True)
        return ModelResponse(content=self.answer, usage=USAGE)


# ------------------------------------------------------------ fallback
async def test_failover_on_retryable_error_is_recorded_in_the_run() -> None:
    with ScriptedHTTPServer() as first, ScriptedHTTPServer() as second:
        first.push(WIRE.error(503, "upstream unavailable"))
        second.push(WIRE.text("from second", USAGE))
        clock = FakeClock()
        router = FallbackRouterProvider(
            [("first", http_route(first.url)), ("second", http_route(second.url))],
            cooldown_seconds=30,
            clock=clock,
        )
        runtime = AgentRuntime(provider=router, policy=LoopPolicy(max_steps=3))
        result = await runtime.run("say hi")
        events = await runtime.event_store.get_events(result.run_id)
        await router.aclose()
    assert result.status is RunState.COMPLETED
    assert result.output == "from second"
    [failover] = [e for e in events if e.event_type is EventType.ROUTE_FAILOVER]
    assert failover.payload["from_route"] == "first"
    assert failover.payload["to_route"] == "second"
    assert failover.payload["retryable"] is True
    assert "503" in str(failover.payload["error"])
    responded = [e for e in events if e.event_type is EventType.MODEL_RESPONDED]
    assert responded[0].payload["provider"] == "router"
    assert responded[0].payload["model"] == "router(first,second)"
    health = router.get_health_status()
    assert health["first"]["is_cooling_down"] is True
    assert health["first"]["consecutive_failures"] == 1
    assert health["second"]["is_healthy"] is True


async def test_cooled_down_route_is_skipped_then_recovers_after_cooldown() -> None:
    clock = FakeClock()
    with ScriptedHTTPServer() as first, ScriptedHTTPServer() as second:
        router = FallbackRouterProvider(
            [("first", http_route(first.url)), ("second", http_route(second.url))],
            cooldown_seconds=30,
            clock=clock,
        )
        first.push(WIRE.error(429, "rate limited"))
        second.push(WIRE.text("b1", USAGE), WIRE.text("b2", USAGE))
        assert (await router.generate(request())).content == "b1"
        assert router.health("first").remaining_cooldown() == 30

        clock.now += 29  # still cooling: the first route is not even contacted
        assert (await router.generate(request())).content == "b2"
        assert len(first.requests) == 1

        clock.now += 2  # cooldown over: the first route is tried again and recovers
        first.push(WIRE.text("a", USAGE))
        assert (await router.generate(request())).content == "a"
        assert len(first.requests) == 2
        assert len(second.requests) == 2
        assert router.health("first").is_healthy is True
        assert router.health("first").consecutive_failures == 0
        await router.aclose()


async def test_all_routes_failing_raises_with_every_reason() -> None:
    clock = FakeClock()
    router = FallbackRouterProvider(
        [("a", http_route(unused_loopback_url())), ("b", http_route(unused_loopback_url()))],
        clock=clock,
    )
    with pytest.raises(ProviderError) as info:
        await router.generate(request())
    assert info.value.retryable is True
    assert "a: OpenAI request failed" in str(info.value)
    assert "b: OpenAI request failed" in str(info.value)
    # Every route cooling down: the router still tries them rather than refusing.
    with pytest.raises(ProviderError):
        await router.generate(request())
    assert router.health("a").consecutive_failures == 2
    await router.aclose()


async def test_stream_fails_over_before_the_first_chunk() -> None:
    with ScriptedHTTPServer() as first, ScriptedHTTPServer() as second:
        first.push(WIRE.error(500, "boom"))
        second.push(WIRE.text_stream("streamed", USAGE))
        seen: list[dict[str, Any]] = []
        router = FallbackRouterProvider(
            [("first", http_route(first.url)), ("second", http_route(second.url))],
            clock=FakeClock(),
            event_callback=seen.append,
        )
        response = await collect_stream(router, request())
        await router.aclose()
    assert response.content == "streamed"
    assert seen[0]["event_type"] == "route_failover"
    assert seen[0]["from_route"] == "first"


async def test_streamed_agent_run_through_router_over_ndjson_and_sse() -> None:
    ollama_wire = OllamaWire()
    with ScriptedHTTPServer() as local, ScriptedHTTPServer() as remote:
        local.push(ollama_wire.truncated_stream())
        remote.push(WIRE.text_stream("remote answer", USAGE))
        ollama = OllamaProvider(ProviderConfig(model="m", base_url=local.url))
        router = FallbackRouterProvider(
            [("ollama", ollama), ("openai", http_route(remote.url))], clock=FakeClock()
        )
        chunks: list[str] = []
        runtime = AgentRuntime(
            provider=router, policy=LoopPolicy(max_steps=2), stream_callback=chunks.append
        )
        result = await runtime.run("hi")
        events = await runtime.event_store.get_events(result.run_id)
        await router.aclose()
    # The truncated NDJSON stream had already produced text, so switching routes inside it
    # would mix two answers: the router records the failover and raises a retryable error,
    # and the runtime's retry goes to the next route (the first one is cooling down).
    assert result.status is RunState.COMPLETED
    assert result.output == "remote answer"
    [failover] = [e for e in events if e.event_type is EventType.ROUTE_FAILOVER]
    assert failover.payload["from_route"] == "ollama"
    assert failover.payload["to_route"] == "openai"
    [failed] = [e for e in events if e.event_type is EventType.MODEL_FAILED]
    assert "Ollama" in json.dumps(failed.payload)
    assert len(local.requests) == 1


# ------------------------------------------------------------ race
async def test_race_returns_fastest_healthy_and_cancels_the_rest() -> None:
    fast, slow = SlowProvider("fast", 0.01), SlowProvider("slow", 30)
    router = RaceRouterProvider([("slow", slow), ("fast", fast)], clock=FakeClock())
    response = await router.generate(request())
    assert response.content == "fast"
    assert slow.started == 1
    assert slow.cancelled is True
    assert router.health("fast").last_latency_ms is not None


async def test_race_skips_failures_and_records_failover_in_the_run() -> None:
    broken, ok = SlowProvider("broken", 0, fail=True), SlowProvider("ok", 0.05)
    router = RaceRouterProvider([("broken", broken), ("ok", ok)], clock=FakeClock())
    runtime = AgentRuntime(provider=router, policy=LoopPolicy(max_steps=2))
    result = await runtime.run("hi")
    events = await runtime.event_store.get_events(result.run_id)
    assert result.output == "ok"
    [failover] = [e for e in events if e.event_type is EventType.ROUTE_FAILOVER]
    assert failover.payload["from_route"] == "broken"
    assert failover.payload["router"] == "RaceRouterProvider"
    assert router.health("broken").is_cooling_down


async def test_race_speculative_delay_gives_the_first_route_a_head_start() -> None:
    first, second = SlowProvider("first", 0.01), SlowProvider("second", 0)
    router = RaceRouterProvider(
        [("first", first), ("second", second)],
        speculative_delay_seconds=30,
        clock=FakeClock(),
    )
    assert (await router.generate(request())).content == "first"
    assert second.started == 0  # cancelled while still waiting for its turn


async def test_race_over_real_http_routes() -> None:
    with ScriptedHTTPServer() as slow, ScriptedHTTPServer() as fast:
        slow_answer = WIRE.text("slow", USAGE)
        slow_answer.delay_seconds = 5
        slow.push(slow_answer)
        fast.push(WIRE.text("fast", USAGE))
        router = RaceRouterProvider(
            [("slow", http_route(slow.url)), ("fast", http_route(fast.url))], clock=FakeClock()
        )
        chunks = await collect_stream(router, request())
        await router.aclose()
    assert chunks.content == "fast"


# ------------------------------------------------------------ health, probes, config
async def test_probes_update_health_and_reset_clears_it() -> None:
    with ScriptedHTTPServer() as up:
        up.push(WIRE.text("pong", USAGE))
        router = FallbackRouterProvider(
            [("up", http_route(up.url)), ("down", http_route(unused_loopback_url()))],
            clock=FakeClock(),
        )
        health = await router.probe_all(timeout_seconds=5)
        await router.aclose()
    assert health["up"].is_healthy and health["up"].last_latency_ms is not None
    assert not health["down"].is_healthy and health["down"].is_cooling_down
    router.reset_health("down")
    assert router.get_health_status()["down"]["is_healthy"] is True
    with pytest.raises(ValueError, match="unknown route 'nope'"):
        router.reset_health("nope")


def test_router_needs_routes() -> None:
    with pytest.raises(ValueError, match="FallbackRouterProvider requires at least one route"):
        FallbackRouterProvider([])
    with pytest.raises(ValueError, match="RaceRouterProvider requires at least one route"):
        RaceRouterProvider([])


def test_router_from_env_race_strategy() -> None:
    router = build_provider_from_env(
        {
            "AVO_PROVIDER": "router",
            "AVO_ROUTER_CHAIN": "ollama,groq",
            "AVO_GROQ_API_KEY": "gsk-123456",
            "AVO_GROQ_MODEL": "llama-3.1-8b-instant",
            "AVO_ROUTER_STRATEGY": "race",
            "AVO_ROUTER_COOLDOWN_SECONDS": "12.5",
            "AVO_ROUTER_SPECULATIVE_DELAY_MS": "250",
        }
    )
    assert isinstance(router, RaceRouterProvider)
    assert router.model == "router(ollama,groq)"
    assert router.cooldown_seconds == 12.5
    assert router.speculative_delay_seconds == 0.25
    assert [p.model for _, p in router.routes] == ["llama3.1", "llama-3.1-8b-instant"]


def test_router_from_env_auto_chain_and_fallback_default() -> None:
    router = build_provider_from_env(
        {
            "AVO_PROVIDER": "router",
            "OPENROUTER_API_KEY": "or-123456",
            "AVO_ANTHROPIC_API_KEY": "sk-ant-123456",
        }
    )
    assert isinstance(router, FallbackRouterProvider)
    assert [name for name, _ in router.routes] == ["ollama", "openrouter", "anthropic"]
    assert router.cooldown_seconds == 30.0
