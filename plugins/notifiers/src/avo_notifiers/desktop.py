"""Desktop notifications through the platform's notifier command."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable

from avo.exceptions import NotifierError
from avo_notifiers.core import Notification

_URGENCY = {"info": "normal", "warning": "normal", "error": "critical"}


def _osascript_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class DesktopNotifier:
    """Pops a desktop notification with notify-send, osascript or terminal-notifier.

    ``command`` forces a program (argv[0]); otherwise :meth:`_detect_command`
    picks the first one found on ``path`` (default ``$PATH``). The command is
    run without a shell; arguments are passed as a list.
    """

    def __init__(
        self,
        *,
        command: str | None = None,
        path: str | None = None,
        timeout: float = 5.0,
        which: Callable[..., str | None] = shutil.which,
        platform: str = sys.platform,
    ) -> None:
        self._which = which
        self._path = path
        self.platform = platform
        self.timeout = timeout
        self.command = command if command is not None else self._detect_command()

    def _detect_command(self) -> str | None:
        candidates = (
            ("osascript", "terminal-notifier", "notify-send")
            if self.platform == "darwin"
            else ("notify-send", "terminal-notifier", "osascript")
        )
        for name in candidates:
            found = self._which(name, path=self._path)
            if found:
                return found
        return None

    def argv(self, notification: Notification) -> list[str]:
        """The command line that shows ``notification``."""
        if self.command is None:
            raise NotifierError("no desktop notifier command found (install notify-send)")
        name = self.command.rsplit("/", 1)[-1]
        if name == "osascript":
            script = (
                f"display notification {_osascript_quote(notification.body)} "
                f"with title {_osascript_quote(notification.title)}"
            )
            return [self.command, "-e", script]
        if name == "terminal-notifier":
            return [self.command, "-title", notification.title, "-message", notification.body]
        return [
            self.command,
            "--app-name=avo",
            f"--urgency={_URGENCY.get(notification.level, 'normal')}",
            "--",
            notification.title,
            notification.body,
        ]

    async def send(self, notification: Notification) -> None:
        """Run the notifier command; NotifierError when it fails or hangs."""
        argv = self.argv(notification)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise NotifierError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        try:
            _, stderr = await asyncio.wait_for(process.communicate(), self.timeout)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise NotifierError(f"{argv[0]} did not finish within {self.timeout}s") from None
        if process.returncode != 0:
            detail = stderr.decode(errors="replace").strip()[:200]
            raise NotifierError(f"{argv[0]} exited with {process.returncode}: {detail}")


__all__ = ["DesktopNotifier"]
