"""Entry-point objects. Importing this module imports no httpx and runs no command."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from avo.exceptions import ConfigError
from avo.plugins import HookPluginSpec, NotifierSpec, provides


def _webhook_factory(
    settings: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None
) -> Any:
    from avo_notifiers.core import WEBHOOK_ENV
    from avo_notifiers.webhook import WebhookNotifier

    options = dict(settings or {})
    env = os.environ if environ is None else environ
    url = options.pop("url", None) or env.get(WEBHOOK_ENV)
    if not url:
        raise ConfigError(
            f"the webhook notifier needs a url: set [notifiers.webhook] url or {WEBHOOK_ENV}",
            key="url",
        )
    allowed = {"timeout", "retries", "backoff", "headers"}
    unknown = set(options) - allowed
    if unknown:
        raise ConfigError(
            f"unknown webhook settings {sorted(unknown)}; "
            f"allowed: url, {', '.join(sorted(allowed))}"
        )
    return WebhookNotifier(url, **options)


def _desktop_factory(
    settings: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None
) -> Any:
    from avo_notifiers.desktop import DesktopNotifier

    options = dict(settings or {})
    env = os.environ if environ is None else environ
    notifier = DesktopNotifier(command=options.get("command"), path=env.get("PATH"))
    if notifier.command is None:
        raise ConfigError(
            "the desktop notifier found no notify-send, osascript or terminal-notifier on PATH; "
            "install one or set [notifiers.desktop] command"
        )
    return notifier


def _notify_factory(
    settings: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None
) -> Any:
    from avo_notifiers.hooks import notify_hooks

    return notify_hooks(settings, environ=environ)


def _logging_factory(settings: Mapping[str, Any] | None = None) -> Any:
    from avo_notifiers.hooks import logging_hooks

    return logging_hooks(settings)


def _block_factory(settings: Mapping[str, Any] | None = None) -> Any:
    from avo_notifiers.hooks import block_hooks

    return block_hooks(settings)


webhook = provides(
    NotifierSpec(
        name="webhook",
        factory=_webhook_factory,
        description="POST JSON notifications to a webhook (retries 5xx, times out)",
    )
)
desktop = provides(
    NotifierSpec(
        name="desktop",
        factory=_desktop_factory,
        description="desktop notifications via notify-send / osascript / terminal-notifier",
    )
)
notify = provides(
    HookPluginSpec(
        name="notify",
        factory=_notify_factory,
        description="send a notification on NOTIFICATION hooks and when a run ends",
    )
)
logging_hooks = provides(
    HookPluginSpec(name="logging", factory=_logging_factory, description="log every hook event")
)
block = provides(
    HookPluginSpec(
        name="block",
        factory=_block_factory,
        description="block tool calls matching name/argument rules (PRE_TOOL_USE)",
    )
)

__all__ = ["block", "desktop", "logging_hooks", "notify", "webhook"]
