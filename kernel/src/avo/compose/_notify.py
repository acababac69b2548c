"""The STOP / NOTIFICATION hook that fans a run's outcome out to the configured notifiers."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger("avo.notify")


def notification_hook(notifiers: Sequence[tuple[str, Any]]) -> Callable[[Any], Any]:
    """A hook sending one Notification per STOP / NOTIFICATION to every ``(name, notifier)``.

    A notifier that fails does not stop the others or the run; its failure is
    logged as a warning on ``avo.notify`` naming the notifier (the CLI prints
    warnings on stderr).
    """
    from avo.hooks import HookDecision, HookEvent

    async def notify(context: Any) -> Any:
        from avo.notifications import Notification
        from avo.redaction import shorten

        if context.event is HookEvent.STOP:
            run = context.run
            state = getattr(getattr(run, "state", None), "value", "finished")
            reason = getattr(getattr(run, "stop_reason", None), "value", "-")
            detail = getattr(run, "error", None) or getattr(run, "output", None) or ""
            body = f"stop reason: {reason}; steps: {getattr(run, 'steps', '?')}"
            if detail:
                body += f"\n{shorten(str(detail), 500)}"  # detail is already redacted
            level = {"failed": "error", "stopped": "warning"}.get(state, "info")
            note = Notification(title=f"avo run {context.run_id} {state}", body=body, level=level)
        else:
            note = Notification(
                title=f"avo run {context.run_id}", body=context.notification, level="warning"
            )
        for name, notifier in notifiers:
            try:
                await notifier.send(note)
            except Exception as exc:
                logger.warning(
                    "notifier %r could not send the notification for run %s: %s: %s",
                    name,
                    context.run_id,
                    type(exc).__name__,
                    exc,
                )
        return HookDecision.allow()

    return notify


__all__ = ["notification_hook"]
