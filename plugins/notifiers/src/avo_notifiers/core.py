"""Notification values, the Notifier protocol and the fan-out dispatcher."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence

from avo.exceptions import NotifierError
from avo.notifications import LEVELS, Notification, Notifier
from avo.redaction import Redactor

WEBHOOK_ENV = "AVO_NOTIFY_WEBHOOK"
DESKTOP_ENV = "AVO_NOTIFY_DESKTOP"

_log = logging.getLogger("avo.notifiers")


class NotificationDispatcher:
    """Sends each notification to every registered notifier, concurrently.

    Every notifier is tried even when another fails; failures are then raised
    together as one ``NotifierError``. Titles and bodies are redacted before
    any notifier sees them.
    """

    def __init__(
        self,
        notifiers: Sequence[Notifier] | None = None,
        *,
        redactor: Redactor | None = None,
    ) -> None:
        self._notifiers: list[Notifier] = list(notifiers or ())
        self._redactor = redactor or Redactor()

    @property
    def notifiers(self) -> tuple[Notifier, ...]:
        """The registered notifiers, in order."""
        return tuple(self._notifiers)

    def __bool__(self) -> bool:
        return bool(self._notifiers)

    def register(self, notifier: Notifier) -> None:
        """Add ``notifier``."""
        if not callable(getattr(notifier, "send", None)):
            raise TypeError(f"{notifier!r} has no async send(notification) method")
        self._notifiers.append(notifier)

    async def send(self, notification: Notification) -> None:
        """Deliver ``notification`` through every notifier."""
        if not self._notifiers:
            return
        clean = notification.redacted(self._redactor)
        results = await asyncio.gather(
            *(n.send(clean) for n in self._notifiers), return_exceptions=True
        )
        failures = [
            f"{type(n).__name__}: {self._redactor.text(str(r))}"
            for n, r in zip(self._notifiers, results, strict=True)
            if isinstance(r, BaseException)
        ]
        for failure in failures:
            _log.warning("notification %r not delivered: %s", clean.title, failure)
        if failures:
            raise NotifierError(
                f"{len(failures)} of {len(self._notifiers)} notifiers failed: "
                + "; ".join(failures)
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> NotificationDispatcher:
        """``AVO_NOTIFY_WEBHOOK`` adds a webhook; ``AVO_NOTIFY_DESKTOP=1`` a desktop notifier.

        The desktop notifier is only added when a notifier command
        (notify-send, osascript, terminal-notifier) is found on PATH.
        """
        env = os.environ if environ is None else environ
        dispatcher = cls(redactor=Redactor(environ=env))
        url = env.get(WEBHOOK_ENV, "").strip()
        if url:
            from avo_notifiers.webhook import WebhookNotifier

            dispatcher.register(WebhookNotifier(url))
        if env.get(DESKTOP_ENV, "").strip() == "1":
            from avo_notifiers.desktop import DesktopNotifier

            desktop = DesktopNotifier(path=env.get("PATH"))
            if desktop.command is not None:
                dispatcher.register(desktop)
            else:
                _log.warning(
                    "%s=1 but no notify-send, osascript or terminal-notifier is on PATH",
                    DESKTOP_ENV,
                )
        return dispatcher


__all__ = [
    "DESKTOP_ENV",
    "LEVELS",
    "WEBHOOK_ENV",
    "Notification",
    "NotificationDispatcher",
    "Notifier",
    "NotifierError",
]
