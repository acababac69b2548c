"""Hook sets contributed through ``avo.hooks``: notify, logging and block.

Each factory takes its settings table and returns ``(HookEvent, hook)`` pairs
that the composer registers on the runtime's :class:`~avo.hooks.HookRegistry`
(:func:`register_all` does exactly that).
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any

from avo.exceptions import ConfigError, NotifierError
from avo.hooks import HookCallable, HookContext, HookDecision, HookEvent, HookRegistry
from avo.redaction import Redactor
from avo_notifiers.core import Notification, NotificationDispatcher

HookPairs = list[tuple[HookEvent, HookCallable]]
_log = logging.getLogger("avo.notifiers.hooks")

_LEVEL_OF_STATE = {"completed": "info", "stopped": "warning", "cancelled": "warning"}


def register_all(registry: HookRegistry, pairs: Iterable[tuple[HookEvent, HookCallable]]) -> None:
    """Register every ``(event, hook)`` pair on ``registry``."""
    for event, hook in pairs:
        registry.register(event, hook)


def _stop_notification(context: HookContext) -> Notification:
    run = context.run
    if run is None:
        return Notification(title="avo run finished", body=f"run {context.run_id}")
    state = run.state.value
    reason = run.stop_reason.value if run.stop_reason else "-"
    lines = [
        f"run {run.run_id}: {state} ({reason}) after {run.steps} steps",
        f"tokens: {run.token_usage.input_tokens} in / {run.token_usage.output_tokens} out",
    ]
    if run.error:
        lines.append(f"error: {run.error}")
    elif run.output:
        lines.append(run.output[:300])
    return Notification(
        title=f"avo run {state}",
        body="\n".join(lines),
        level=_LEVEL_OF_STATE.get(state, "error"),
    )


def notify_hooks(
    settings: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    dispatcher: NotificationDispatcher | None = None,
) -> HookPairs:
    """Hooks that send a notification on NOTIFICATION and at run end (STOP).

    Settings: ``on_stop`` / ``on_notification`` (default true each), and where
    to send: ``webhook`` (a URL) and ``desktop`` (true/false). Without either,
    the dispatcher is :meth:`NotificationDispatcher.from_env`
    (``AVO_NOTIFY_WEBHOOK`` / ``AVO_NOTIFY_DESKTOP``). A failed delivery is
    logged, never raised into the run.
    """
    options = dict(settings or {})
    allowed = {"on_stop", "on_notification", "webhook", "desktop"}
    unknown = set(options) - allowed
    if unknown:
        raise ConfigError(
            f"unknown notify hook settings {sorted(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )
    env = os.environ if environ is None else environ
    if dispatcher is not None:
        sender = dispatcher
    elif "webhook" in options or "desktop" in options:
        sender = NotificationDispatcher(redactor=Redactor(environ=env))
        if options.get("webhook"):
            from avo_notifiers.webhook import WebhookNotifier

            sender.register(WebhookNotifier(str(options["webhook"])))
        if options.get("desktop"):
            from avo_notifiers.desktop import DesktopNotifier

            desktop = DesktopNotifier(path=env.get("PATH"))
            if desktop.command is None:
                raise ConfigError(
                    "notify hook: desktop = true but no notify-send, osascript or "
                    "terminal-notifier is on PATH",
                    key="desktop",
                )
            sender.register(desktop)
    else:
        sender = NotificationDispatcher.from_env(env)

    async def deliver(notification: Notification) -> HookDecision:
        try:
            await sender.send(notification)
        except NotifierError as exc:
            _log.warning("notify hook: %s", exc)
            return HookDecision.allow(f"notification not delivered: {exc}")
        return HookDecision.allow()

    async def on_notification(context: HookContext) -> HookDecision:
        text = context.notification or "avo needs attention"
        return await deliver(
            Notification(title="avo", body=f"run {context.run_id}: {text}", level="warning")
        )

    async def on_stop(context: HookContext) -> HookDecision:
        return await deliver(_stop_notification(context))

    pairs: HookPairs = []
    if options.get("on_notification", True):
        pairs.append((HookEvent.NOTIFICATION, on_notification))
    if options.get("on_stop", True):
        pairs.append((HookEvent.STOP, on_stop))
    return pairs


def logging_hooks(settings: Mapping[str, Any] | None = None) -> HookPairs:
    """Hooks that log every hook event through :mod:`logging` (redacted by its filter).

    Settings: ``logger`` (default ``avo.hooks``), ``level`` (default ``INFO``),
    ``events`` (default all four).
    """
    options = dict(settings or {})
    logger = logging.getLogger(str(options.get("logger", "avo.hooks")))
    level_name = str(options.get("level", "INFO")).upper()
    level = logging.getLevelName(level_name)
    if not isinstance(level, int):
        raise ConfigError(f"logging hook level {level_name!r} is not a logging level", key="level")
    try:
        events = [HookEvent(e) for e in options.get("events", [e.value for e in HookEvent])]
    except ValueError as exc:
        choices = ", ".join(e.value for e in HookEvent)
        raise ConfigError(f"logging hook: {exc}; choose from {choices}", key="events") from None

    def hook(context: HookContext) -> HookDecision:
        tool = context.tool_call.name if context.tool_call else None
        extra = f" tool={tool}" if tool else ""
        if context.tool_result is not None:
            extra += f" success={context.tool_result.success}"
        if context.notification:
            extra += f" notification={context.notification!r}"
        if context.run is not None:
            extra += f" state={context.run.state.value}"
        logger.log(level, "hook %s run=%s%s", context.event.value, context.run_id, extra)
        return HookDecision.allow()

    return [(event, hook) for event in events]


def block_hooks(settings: Mapping[str, Any] | None = None) -> HookPairs:
    """A PRE_TOOL_USE hook that blocks tool calls matching rules.

    Settings: ``rules`` — a list of ``{"tool": GLOB, "reason": TEXT}`` with an
    optional ``"argument": NAME, "contains": TEXT`` to block only calls whose
    argument contains a substring; or the shorthand ``tools = [GLOB, ...]``.
    """
    options = dict(settings or {})
    rules: list[dict[str, Any]] = [dict(r) for r in options.get("rules", [])]
    rules += [{"tool": t} for t in options.get("tools", [])]
    if not rules:
        raise ConfigError("block hook needs 'rules' or 'tools' in its settings", key="rules")
    for rule in rules:
        if not isinstance(rule.get("tool"), str) or not rule["tool"]:
            raise ConfigError(f"block rule {rule!r} needs a 'tool' glob", key="rules")
        if ("argument" in rule) != ("contains" in rule):
            raise ConfigError(
                f"block rule {rule!r}: give 'argument' and 'contains' together", key="rules"
            )

    def hook(context: HookContext) -> HookDecision:
        call = context.tool_call
        if call is None:
            return HookDecision.allow()
        for rule in rules:
            if not fnmatch.fnmatchcase(call.name, rule["tool"]):
                continue
            if "argument" in rule:
                value = call.arguments.get(rule["argument"])
                if not isinstance(value, str) or rule["contains"] not in value:
                    continue
            return HookDecision.block(
                str(rule.get("reason") or f"tool {call.name!r} is blocked by rule {rule['tool']!r}")
            )
        return HookDecision.allow()

    return [(HookEvent.PRE_TOOL_USE, hook)]


__all__ = ["block_hooks", "logging_hooks", "notify_hooks", "register_all"]
