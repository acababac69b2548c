"""The ``http`` hook: POST the event as JSON to a URL, within a timeout.

A 2xx response's body is the reply (see :mod:`avo_hooks.payload`; empty =
allow). Anything else — a connection that fails, the timeout, a non-2xx
status, a body that is not a reply — means the hook **failed**: it raises
:class:`~avo.exceptions.HookError`, so at ``pre_tool_use`` the kernel denies
the call naming the hook (fail closed). Redirects are not followed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from avo.exceptions import HookError
from avo.hooks import HookContext, HookDecision
from avo.models import ToolMetadata
from avo.redaction import Redactor
from avo_hooks.command import expand
from avo_hooks.payload import applies, encode_event, event_payload, parse_reply
from avo_hooks.settings import HttpHookSettings


class HttpHook:
    """One configured HTTP hook; call it with a HookContext."""

    def __init__(
        self,
        settings: HttpHookSettings,
        *,
        environ: Mapping[str, str] | None = None,
        tools: Mapping[str, ToolMetadata] | None = None,
        transport: Any = None,
    ) -> None:
        env = dict(os.environ if environ is None else environ)
        self.settings = settings
        self.label = settings.name or f"http:{urlsplit(settings.url).netloc}"
        self.hook_label = self.label  # how the kernel names this hook in faults
        self.redactor = Redactor(environ=env)
        self.headers = {"content-type": "application/json", "user-agent": "avo-hooks"}
        for key, value in settings.headers.items():
            expanded = expand(value, env, where=f"hook {self.label!r}: headers.{key}")
            self.headers[key] = expanded
            if expanded != value or key.lower() in ("authorization", "cookie", "x-api-key"):
                self.redactor.add(expanded, *expanded.split()[1:])
        self.tools = dict(tools or {})
        self._transport = transport

    async def __call__(self, context: HookContext) -> HookDecision | None:
        if not applies(context, self.settings.tools):
            return None
        import httpx

        payload = event_payload(context, hook=self.label, redactor=self.redactor, tools=self.tools)
        url = self.settings.url
        shown = self.redactor.text(url)
        try:
            async with httpx.AsyncClient(
                timeout=self.settings.timeout, follow_redirects=False, transport=self._transport
            ) as client:
                response = await client.post(
                    url, content=encode_event(payload), headers=self.headers
                )
        except httpx.TimeoutException:
            raise HookError(
                f"http hook got no answer from {shown} within {self.settings.timeout:g} s",
                hook=self.label,
            ) from None
        except httpx.HTTPError as exc:
            detail = self.redactor.text(str(exc) or type(exc).__name__)
            raise HookError(
                f"http hook could not reach {shown}: {detail}", hook=self.label
            ) from None
        if not 200 <= response.status_code < 300:
            body = self.redactor.text(" ".join(response.text.split())[:200])
            raise HookError(
                f"http hook: {shown} answered HTTP {response.status_code}"
                + (f": {body}" if body else ""),
                hook=self.label,
            )
        return parse_reply(response.text, hook=self.label, redactor=self.redactor)


__all__ = ["HttpHook"]
