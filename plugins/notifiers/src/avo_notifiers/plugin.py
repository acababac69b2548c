"""Entry-point objects. Importing this module imports no httpx and runs no command."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.exceptions import ConfigError
from avo.plugins import HookPluginSpec, NotifierSpec, provides

_EXAMPLE = 'notifiers = [{{name = "{name}", settings = {{{example}}}}}]'


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WebhookSettings(_Strict):
    """Settings of the ``webhook`` notifier."""

    url: str | None = Field(default=None, description="Where to POST (default AVO_NOTIFY_WEBHOOK)")
    timeout: float = Field(default=5.0, gt=0)
    retries: int = Field(default=2, ge=0)
    backoff: float = Field(default=0.5, ge=0)
    headers: dict[str, str] = Field(default_factory=dict)


class DesktopSettings(_Strict):
    """Settings of the ``desktop`` notifier."""

    command: str | None = Field(
        default=None, description="notify-send, osascript or terminal-notifier (default: found)"
    )


class NotifyHookSettings(_Strict):
    """Settings of the ``notify`` hook set."""

    on_stop: bool = True
    on_notification: bool = True
    webhook: str | None = None
    desktop: bool | None = None


class LoggingHookSettings(_Strict):
    """Settings of the ``logging`` hook set."""

    logger: str = "avo.hooks"
    level: str = "INFO"
    events: list[str] | None = None


class BlockHookSettings(_Strict):
    """Settings of the ``block`` hook set."""

    rules: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)


def _given(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """Only the keys set (validated settings come with every default filled in)."""
    return {k: v for k, v in dict(settings or {}).items() if v is not None}


def _webhook_factory(
    settings: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None
) -> Any:
    from avo_notifiers.core import WEBHOOK_ENV
    from avo_notifiers.webhook import WebhookNotifier

    options = _given(settings)
    env = os.environ if environ is None else environ
    url = options.pop("url", None) or env.get(WEBHOOK_ENV)
    if not url:
        example = _EXAMPLE.format(name="webhook", example='url = "https://…"')
        raise ConfigError(
            f"the webhook notifier needs a url: set {WEBHOOK_ENV}, or in avo.toml {example}",
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

    options = _given(settings)
    env = os.environ if environ is None else environ
    notifier = DesktopNotifier(command=options.get("command"), path=env.get("PATH"))
    if notifier.command is None:
        example = _EXAMPLE.format(name="desktop", example='command = "/usr/bin/notify-send"')
        raise ConfigError(
            "the desktop notifier found no notify-send, osascript or terminal-notifier on PATH; "
            f"install one (e.g. apt-get install libnotify-bin) or name it in avo.toml: {example}",
            key="command",
        )
    return notifier


def _notify_factory(
    settings: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None
) -> Any:
    from avo_notifiers.hooks import notify_hooks

    return notify_hooks(_given(settings), environ=environ)


def _logging_factory(settings: Mapping[str, Any] | None = None) -> Any:
    from avo_notifiers.hooks import logging_hooks

    return logging_hooks(_given(settings))


def _block_factory(settings: Mapping[str, Any] | None = None) -> Any:
    from avo_notifiers.hooks import block_hooks

    return block_hooks(_given(settings))


webhook = provides(
    NotifierSpec(
        name="webhook",
        factory=_webhook_factory,
        description="POST JSON notifications to a webhook (retries 5xx, times out)",
        settings_model=WebhookSettings,
    )
)
desktop = provides(
    NotifierSpec(
        name="desktop",
        factory=_desktop_factory,
        description="desktop notifications via notify-send / osascript / terminal-notifier",
        settings_model=DesktopSettings,
    )
)
notify = provides(
    HookPluginSpec(
        name="notify",
        factory=_notify_factory,
        description="send a notification on NOTIFICATION hooks and when a run ends",
        settings_model=NotifyHookSettings,
    )
)
logging_hooks = provides(
    HookPluginSpec(
        name="logging",
        factory=_logging_factory,
        description="log every hook event",
        settings_model=LoggingHookSettings,
    )
)
block = provides(
    HookPluginSpec(
        name="block",
        factory=_block_factory,
        description="block tool calls matching name/argument rules (PRE_TOOL_USE)",
        settings_model=BlockHookSettings,
    )
)

__all__ = ["block", "desktop", "logging_hooks", "notify", "webhook"]
