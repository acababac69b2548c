"""avo hook executors: ``command`` and ``http`` hooks with allow / deny / error outcomes."""

from __future__ import annotations

from avo_hooks.command import CommandHook
from avo_hooks.http import HttpHook
from avo_hooks.payload import encode_event, event_payload, parse_reply
from avo_hooks.settings import CommandHookSettings, HttpHookSettings

__all__ = [
    "CommandHook",
    "CommandHookSettings",
    "HttpHook",
    "HttpHookSettings",
    "encode_event",
    "event_payload",
    "parse_reply",
]
