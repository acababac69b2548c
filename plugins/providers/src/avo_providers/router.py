"""Routers over several providers: sequential fallback and a speculative race.

Both keep a :class:`RouteHealth` per route. A route that fails (a
``ProviderError`` or a timeout) cools down for ``cooldown_seconds`` on the
injectable ``clock`` and is skipped while a healthy route remains; after the
cooldown it is tried again, and a success resets it. Every failover is
recorded as a ``ROUTE_FAILOVER`` event in the run through the runtime's
``event_sink`` seam (and passed to ``event_callback`` when one is given).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from avo.exceptions import ProviderError
from avo.models import ModelRequest, ModelResponse
from avo.providers.base import ModelProvider

if TYPE_CHECKING:
    from avo.providers.streaming import ModelChunk

Clock = Callable[[], float]
EventCallback = Callable[[dict[str, Any]], Awaitable[None] | None]
EventSink = Callable[[Any, dict[str, Any]], Awaitable[None]]


@dataclass
class RouteHealth:
    """What the router knows about one route."""

    name: str
    is_healthy: bool = True
    consecutive_failures: int = 0
    cooldown_until: float = 0.0
    last_error: str | None = None
    last_latency_ms: float | None = None
    clock: Clock = field(default=time.monotonic, repr=False, compare=False)

    @property
    def is_cooling_down(self) -> bool:
        """True until ``cooldown_until`` has passed."""
        return self.clock() < self.cooldown_until

    def remaining_cooldown(self) -> float:
        """Seconds of cooldown left (0 when none)."""
        return max(0.0, self.cooldown_until - self.clock())

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly view (without the clock)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "clock"}
        data["is_cooling_down"] = self.is_cooling_down
        data["remaining_cooldown"] = self.remaining_cooldown()
        return data


class BaseRouterProvider:
    """Shared health bookkeeping; subclasses decide how routes are tried."""

    name = "router"

    def __init__(
        self,
        routes: Sequence[tuple[str, ModelProvider]],
        *,
        cooldown_seconds: float = 30.0,
        clock: Clock = time.monotonic,
        event_callback: EventCallback | None = None,
    ) -> None:
        if not routes:
            raise ValueError(f"{type(self).__name__} requires at least one route")
        names = [name for name, _ in routes]
        if len(set(names)) != len(names):
            raise ValueError(f"route names must be unique, got {names}")
        if cooldown_seconds < 0:
            raise ValueError(f"cooldown_seconds must be >= 0, got {cooldown_seconds}")
        self.routes: list[tuple[str, ModelProvider]] = list(routes)
        self.cooldown_seconds = cooldown_seconds
        self.model = f"router({','.join(names)})"
        self._clock = clock
        self._health = {name: RouteHealth(name=name, clock=clock) for name in names}
        self._event_callback = event_callback
        self.event_sink: EventSink | None = None

    @property
    def capabilities(self) -> Any:
        """What every route accepts: any route may answer, so media are sent only
        when all of them take them (None when a route declares nothing)."""
        import dataclasses

        from avo.plugins import ProviderCapabilities

        found = [getattr(provider, "capabilities", None) for _, provider in self.routes]
        if any(caps is None or callable(caps) for caps in found):
            return ProviderCapabilities(streaming=True, tool_calls=True)
        first = found[0]
        documents = [d for d in first.documents if all(d in c.documents for c in found)]
        flags = {
            name: all(getattr(caps, name) for caps in found)
            for name in ("vision", "image_urls", "document_urls", "thinking", "prompt_caching")
        }
        windows = [caps.context_window for caps in found if caps.context_window]
        return dataclasses.replace(
            first,
            documents=tuple(documents),
            context_window=min(windows) if len(windows) == len(found) else None,
            **flags,
        )

    # ------------------------------------------------------------ health
    def get_health_status(self) -> dict[str, dict[str, Any]]:
        """Every route's health, by name."""
        return {name: health.as_dict() for name, health in self._health.items()}

    def health(self, name: str) -> RouteHealth:
        """The live :class:`RouteHealth` of route ``name``."""
        try:
            return self._health[name]
        except KeyError:
            raise ValueError(
                f"unknown route {name!r}; routes are {', '.join(self._health)}"
            ) from None

    def reset_health(self, name: str | None = None) -> None:
        """Forget failures of one route (or of all)."""
        names = [name] if name is not None else list(self._health)
        for route in names:
            self.health(route)
            self._health[route] = RouteHealth(name=route, clock=self._clock)

    def _record_success(self, name: str, started: float) -> None:
        health = self._health[name]
        health.is_healthy = True
        health.consecutive_failures = 0
        health.cooldown_until = 0.0
        health.last_error = None
        health.last_latency_ms = (time.perf_counter() - started) * 1000

    def _record_failure(self, name: str, error: BaseException) -> None:
        health = self._health[name]
        health.is_healthy = False
        health.consecutive_failures += 1
        health.cooldown_until = self._clock() + self.cooldown_seconds
        health.last_error = _describe(error)

    def _candidates(self) -> list[tuple[str, ModelProvider]]:
        """Routes to try, in order: the ones not cooling down, else all of them."""
        ready = [(n, p) for n, p in self.routes if not self._health[n].is_cooling_down]
        if ready:
            return ready
        # Every route is cooling down: try them soonest-recovering first rather than fail.
        return sorted(self.routes, key=lambda route: self._health[route[0]].cooldown_until)

    async def _emit_failover(
        self, from_route: str, to_route: str | None, error: BaseException
    ) -> None:
        payload: dict[str, Any] = {
            "router": type(self).__name__,
            "from_route": from_route,
            "to_route": to_route,
            "error_type": type(error).__name__,
            "error": _describe(error),
            "retryable": bool(getattr(error, "retryable", True)),
            "cooldown_seconds": self.cooldown_seconds,
        }
        if self.event_sink is not None:
            from avo.events import EventType

            await self.event_sink(EventType.ROUTE_FAILOVER, payload)
        if self._event_callback is not None:
            result = self._event_callback({"event_type": "route_failover", **payload})
            if inspect.isawaitable(result):
                await result

    def _all_failed(self, errors: list[tuple[str, BaseException]]) -> ProviderError:
        detail = "; ".join(f"{name}: {_describe(err)}" for name, err in errors)
        retryable = any(getattr(err, "retryable", True) for _, err in errors)
        return ProviderError(f"All router routes failed: {detail}", retryable=retryable)

    # ------------------------------------------------------------ probes
    async def probe_route(self, name: str, *, timeout_seconds: float = 3.0) -> RouteHealth:
        """Send a one-word request to route ``name`` and record the outcome."""
        provider = dict(self.routes).get(name)
        if provider is None:
            self.health(name)  # raises the helpful error
            raise AssertionError("unreachable")
        request = ModelRequest(
            run_id="router-probe", step=1, messages=[{"role": "user", "content": "ping"}]
        )
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_seconds):
                await provider.generate(request)
        except (ProviderError, TimeoutError) as exc:
            self._record_failure(name, exc)
        else:
            self._record_success(name, started)
        return self._health[name]

    async def probe_all(self, *, timeout_seconds: float = 3.0) -> dict[str, RouteHealth]:
        """Probe every route concurrently."""
        results = await asyncio.gather(
            *(self.probe_route(name, timeout_seconds=timeout_seconds) for name, _ in self.routes)
        )
        return {health.name: health for health in results}

    async def aclose(self) -> None:
        """Close every route that can be closed."""
        for _, provider in self.routes:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()

    async def generate(self, request: ModelRequest) -> ModelResponse:  # pragma: no cover
        """Implemented by subclasses."""
        raise NotImplementedError


def _describe(error: BaseException) -> str:
    from avo.redaction import redact_text, shorten

    # Redact first, then shorten: a route's error may echo a key-shaped value.
    text = str(error) or type(error).__name__
    return shorten(redact_text(text, environ={}), 500)


async def _stream_or_generate(
    provider: ModelProvider, request: ModelRequest
) -> AsyncGenerator[ModelChunk, None]:
    from avo.providers.streaming import response_to_chunks

    stream = getattr(provider, "stream", None)
    if stream is None:
        for chunk in response_to_chunks(await provider.generate(request)):
            yield chunk
        return
    async for chunk in stream(request):
        yield chunk


class FallbackRouterProvider(BaseRouterProvider):
    """Try routes in order; on failure fail over to the next one."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """The first successful route's response."""
        candidates = self._candidates()
        errors: list[tuple[str, BaseException]] = []
        for position, (name, provider) in enumerate(candidates):
            started = time.perf_counter()
            try:
                response = await provider.generate(request)
            except (ProviderError, TimeoutError) as exc:
                self._record_failure(name, exc)
                errors.append((name, exc))
                following = candidates[position + 1][0] if position + 1 < len(candidates) else None
                await self._emit_failover(name, following, exc)
                continue
            self._record_success(name, started)
            return response
        raise self._all_failed(errors)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream from the first route that starts; fail over only before the first chunk."""
        candidates = self._candidates()
        errors: list[tuple[str, BaseException]] = []
        for position, (name, provider) in enumerate(candidates):
            started = time.perf_counter()
            chunks = _stream_or_generate(provider, request)
            try:
                first = await anext(chunks)
            except StopAsyncIteration:
                first = None
            except (ProviderError, TimeoutError) as exc:
                await chunks.aclose()
                self._record_failure(name, exc)
                errors.append((name, exc))
                following = candidates[position + 1][0] if position + 1 < len(candidates) else None
                await self._emit_failover(name, following, exc)
                continue
            try:
                if first is not None:
                    yield first
                async for chunk in chunks:
                    yield chunk
            except (ProviderError, TimeoutError) as exc:
                # Chunks already reached the caller: switching routes inside this stream
                # would mix two answers. The route cools down and the error becomes
                # retryable, so the runtime's retry goes to the next route.
                self._record_failure(name, exc)
                following = candidates[position + 1][0] if position + 1 < len(candidates) else None
                await self._emit_failover(name, following, exc)
                raise ProviderError(
                    f"Router route {name!r} failed mid-stream: {_describe(exc)}",
                    retryable=following is not None or bool(getattr(exc, "retryable", True)),
                ) from None
            finally:
                await chunks.aclose()
            self._record_success(name, started)
            return
        raise self._all_failed(errors)


class RaceRouterProvider(BaseRouterProvider):
    """Start routes (staggered by ``speculative_delay_seconds``); the first success wins.

    The losers are cancelled. ``stream`` races ``generate`` and replays the
    winner as chunks, so only one vendor's answer ever reaches the caller.
    """

    def __init__(
        self,
        routes: Sequence[tuple[str, ModelProvider]],
        *,
        cooldown_seconds: float = 30.0,
        speculative_delay_seconds: float = 0.0,
        clock: Clock = time.monotonic,
        event_callback: EventCallback | None = None,
    ) -> None:
        super().__init__(
            routes, cooldown_seconds=cooldown_seconds, clock=clock, event_callback=event_callback
        )
        if speculative_delay_seconds < 0:
            raise ValueError(
                f"speculative_delay_seconds must be >= 0, got {speculative_delay_seconds}"
            )
        self.speculative_delay_seconds = speculative_delay_seconds

    async def _attempt(
        self, position: int, name: str, provider: ModelProvider, request: ModelRequest
    ) -> tuple[str, ModelResponse]:
        if position and self.speculative_delay_seconds:
            await asyncio.sleep(self.speculative_delay_seconds * position)
        started = time.perf_counter()
        try:
            response = await provider.generate(request)
        except (ProviderError, TimeoutError) as exc:
            self._record_failure(name, exc)
            raise
        self._record_success(name, started)
        return name, response

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """The fastest healthy route's response; the others are cancelled."""
        candidates = self._candidates()
        tasks = {
            asyncio.create_task(self._attempt(position, name, provider, request)): name
            for position, (name, provider) in enumerate(candidates)
        }
        errors: list[tuple[str, BaseException]] = []
        pending = set(tasks)
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    exc = task.exception()
                    if exc is None:
                        return task.result()[1]
                    if not isinstance(exc, ProviderError | TimeoutError):
                        raise exc
                    name = tasks[task]
                    errors.append((name, exc))
                    others = [n for t, n in tasks.items() if t in pending]
                    await self._emit_failover(name, others[0] if others else None, exc)
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        raise self._all_failed(errors)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Race ``generate``; yield the winner as chunks."""
        from avo.providers.streaming import response_to_chunks

        for chunk in response_to_chunks(await self.generate(request)):
            yield chunk


__all__ = [
    "BaseRouterProvider",
    "FallbackRouterProvider",
    "RaceRouterProvider",
    "RouteHealth",
]
