"""Warnings from avo's loggers reach the person at the terminal: ``avo: warning: …``.

A notifier that could not send, a hook that raised, a lease that could not be
renewed: each is logged by the component on an ``avo.*`` logger; the CLI
shows them on stderr, one line each, secrets redacted. ``-v`` adds INFO lines,
``-vvv`` DEBUG. ``AVO_LOG_FORMAT=json`` gives JSON lines instead.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping

_MARK = "_avo_cli_handler"


class _Line(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(super().format(record).split("\n"))
        return f"avo: {record.levelname.lower()}: {text}"


def setup(verbosity: int, environ: Mapping[str, str]) -> None:
    """Route ``avo.*`` records at WARNING (or more with ``-v``) to stderr, once per process."""
    from avo.logging_config import LOG_FORMAT_ENV, RedactingFilter, install_json_handler
    from avo.redaction import Redactor

    level = logging.WARNING if verbosity < 1 else logging.INFO if verbosity < 3 else logging.DEBUG
    logger = logging.getLogger("avo")
    if environ.get(LOG_FORMAT_ENV, "").strip().lower() == "json":
        install_json_handler(logger, level=logging.getLevelName(level), environ=environ)
        logger.setLevel(level)
        return
    for old in [h for h in logger.handlers if getattr(h, _MARK, False)]:
        logger.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(level)
    handler.setFormatter(_Line("%(message)s"))
    handler.addFilter(RedactingFilter(Redactor(environ=environ)))
    setattr(handler, _MARK, True)
    logger.addHandler(handler)
    if level < logging.WARNING:  # -v: let INFO (or DEBUG) records through to the handler
        logger.setLevel(level)


__all__ = ["setup"]
