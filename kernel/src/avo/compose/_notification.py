"""Fallback notification value for notifier plugins (used until ``avo.notifications`` exists)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Notification:
    """What a notifier sends: a title, a body and a level (info, warning, error)."""

    title: str
    body: str
    level: str = "info"


__all__ = ["Notification"]
