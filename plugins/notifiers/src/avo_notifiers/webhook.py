"""POST notifications as JSON to a webhook URL (Slack/Discord/generic compatible)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from avo.exceptions import ConfigError, NotifierError
from avo.redaction import Redactor
from avo_notifiers.core import Notification

Sleep = Callable[[float], Awaitable[None]]


def _safe_target(url: str) -> str:
    """scheme://host[:port] — webhook paths often embed a secret, so never show them."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"


class WebhookNotifier:
    """Sends ``{"title", "body", "level", "text"}`` as a JSON POST.

    A 5xx response, a connection error or a timeout is retried ``retries``
    times with exponential backoff (``backoff``, doubled each time); a 4xx is
    not retried. The error raised after the last attempt names the host only:
    the URL path (which often carries the webhook's secret) never appears.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 5.0,
        retries: int = 2,
        backoff: float = 0.5,
        headers: dict[str, str] | None = None,
        sleep: Sleep = asyncio.sleep,
        transport: Any = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"webhook url must be an http(s) URL, got {_safe_target(url)!r}",
                key="url",
            )
        if timeout <= 0:
            raise ConfigError(f"webhook timeout must be > 0 seconds, got {timeout}", key="timeout")
        if retries < 0:
            raise ConfigError(f"webhook retries must be >= 0, got {retries}", key="retries")
        self.url = url
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.headers = dict(headers or {})
        self._sleep = sleep
        self._transport = transport
        self._redactor = Redactor(secrets=[parts.path, parts.query] if parts.path != "/" else [])
        self.attempts = 0
        """How many HTTP attempts the last ``send`` made."""

    def __repr__(self) -> str:
        return f"WebhookNotifier({_safe_target(self.url)!r})"

    async def send(self, notification: Notification) -> None:
        """POST ``notification``; raise NotifierError when every attempt fails."""
        import httpx  # lazy: importing the plugin must stay cheap

        body = {
            "title": notification.title,
            "body": notification.body,
            "level": notification.level,
            "text": f"{notification.title}\n{notification.body}",
        }
        target = _safe_target(self.url)
        last = ""
        self.attempts = 0
        async with httpx.AsyncClient(timeout=self.timeout, transport=self._transport) as client:
            for attempt in range(self.retries + 1):
                if attempt:
                    await self._sleep(self.backoff * 2 ** (attempt - 1))
                self.attempts += 1
                try:
                    response = await client.post(self.url, json=body, headers=self.headers)
                except httpx.TimeoutException:
                    last = f"timed out after {self.timeout}s"
                    continue
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}: {self._redactor.text(str(exc))}"
                    continue
                if response.status_code < 400:
                    return
                last = f"HTTP {response.status_code}"
                if response.status_code < 500:
                    raise NotifierError(
                        f"webhook {target} rejected the notification ({last}); "
                        "check the URL and its credentials"
                    )
        raise NotifierError(
            f"webhook {target} failed after {self.attempts} attempts (last: {last})"
        )


__all__ = ["WebhookNotifier"]
