"""The trial progress line on stderr: a redrawn bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


class Progress:
    """Counts finished trials; ``update`` after each one, ``close`` at the end."""

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        enabled: bool = True,
        environ: dict[str, str] | None = None,
        width: int = 24,
    ) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        env = os.environ if environ is None else environ
        isatty = getattr(self.stream, "isatty", None)
        self.live = bool(isatty and isatty()) and env.get("TERM") != "dumb"
        self.color = self.live and "NO_COLOR" not in env
        self.width = width
        self.started = time.monotonic()

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def update(self, case: str, trial: int, passed: bool, detail: str = "") -> None:
        """One trial finished."""
        self.done += 1
        self.failed += 0 if passed else 1
        if not self.enabled:
            return
        verdict = self._paint("pass", "32") if passed else self._paint("FAIL", "31")
        if self.live:
            filled = int(self.width * self.done / max(1, self.total))
            bar = "#" * filled + "-" * (self.width - filled)
            elapsed = time.monotonic() - self.started
            failed = f"  {self._paint(f'{self.failed} failed', '31')}" if self.failed else ""
            line = (
                f"\r\x1b[2K[{bar}] {self.done}/{self.total} trials  {elapsed:5.1f}s{failed}  "
                f"{case} #{trial} {verdict}"
            )
            self.stream.write(line)
        else:
            extra = f": {detail}" if detail and not passed else ""
            self.stream.write(f"eval: {self.done}/{self.total} {case} #{trial} {verdict}{extra}\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line (a terminal) so later output starts clean."""
        if self.enabled and self.live and self.done:
            self.stream.write("\n")
            self.stream.flush()


__all__ = ["Progress"]
