"""The notification contract: the value a notifier sends and the Notifier protocol.

Notifier implementations (webhook, desktop, ...) ship as plugins in the
``avo.notifiers`` group; the kernel and ``avo.compose`` only need these two names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from avo.redaction import Redactor

LEVELS = ("info", "warning", "error")
"""The levels a notification may have."""


@dataclass(frozen=True)
class Notification:
    """One message for a human: a title, a body and a level (info, warning, error)."""

    title: str
    body: str
    level: str = "info"

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"notification level {self.level!r} is not one of {', '.join(LEVELS)}")

    def redacted(self, redactor: Redactor) -> Notification:
        """A copy with secrets masked in the title and body."""
        return Notification(redactor.text(self.title), redactor.text(self.body), self.level)


@runtime_checkable
class Notifier(Protocol):
    """Anything that can deliver a :class:`Notification`."""

    async def send(self, notification: Notification) -> None:
        """Deliver ``notification``; raise ``NotifierError`` when it cannot."""
        ...


__all__ = ["LEVELS", "Notification", "Notifier"]
