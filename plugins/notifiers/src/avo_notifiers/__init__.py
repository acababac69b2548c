"""avo notifiers: webhook and desktop notifications, and the notify/logging/block hook sets.

Importing the package is cheap: httpx is imported when a webhook is sent.
"""

from __future__ import annotations

from avo_notifiers.core import Notification, NotificationDispatcher, Notifier, NotifierError
from avo_notifiers.desktop import DesktopNotifier
from avo_notifiers.hooks import block_hooks, logging_hooks, notify_hooks, register_all
from avo_notifiers.webhook import WebhookNotifier

__version__ = "1.0.0"

__all__ = [
    "DesktopNotifier",
    "Notification",
    "NotificationDispatcher",
    "Notifier",
    "NotifierError",
    "WebhookNotifier",
    "block_hooks",
    "logging_hooks",
    "notify_hooks",
    "register_all",
]
