"""Logging setup: plain or JSON lines, with secrets redacted from every line.

``configure_logging(json_mode=True)`` (or ``AVO_LOG_FORMAT=json``) installs a
:class:`JsonFormatter`; either way a :class:`RedactingFilter` sits on the
handler, so API keys, bearer tokens and the values of ``*_KEY`` / ``*_TOKEN`` /
``*_SECRET`` / ``*_PASSWORD`` environment variables never reach a log line —
not in the message, its arguments, ``extra`` fields or a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import IO, Any, Literal, get_args

from avo.exceptions import ConfigError
from avo.redaction import Redactor

LogLevel = Literal["CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET"]
"""The level names ``configure_logging`` accepts (case-insensitive)."""

LOG_FORMAT_ENV = "AVO_LOG_FORMAT"
_AVO_HANDLER_ATTR = "_avo_handler"

# Attributes every LogRecord has; anything else came from ``extra=``.
_STANDARD_ATTRS = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys()
    | {"message", "asctime", "taskName"}
)


def _level(level: str) -> int:
    name = str(level).upper()
    if name not in get_args(LogLevel):
        raise ConfigError(
            f"unknown log level {level!r}; choose one of {', '.join(get_args(LogLevel))}",
            key="level",
        )
    value: int = logging.getLevelName(name)
    return value


class RedactingFilter(logging.Filter):
    """Masks secrets in a record before any formatter or handler sees it.

    The message is rendered (``msg % args``) and scrubbed, ``extra`` string
    values are scrubbed, and a traceback is pre-rendered and scrubbed into
    ``record.exc_text`` (which formatters use instead of re-rendering).
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor or Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken %-format must not break logging
            message = f"{record.msg!r} % {record.args!r}"
        record.msg = self.redactor.text(message)
        record.args = None
        for key, value in list(record.__dict__.items()):
            if key not in _STANDARD_ATTRS:
                record.__dict__[key] = self.redactor.value(value)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor.text(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redactor.text(record.stack_info)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: timestamp, level, logger, message, extras, exception."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            payload["exc_info"] = record.exc_text
        if record.stack_info:
            payload["stack_info"] = record.stack_info
        line = json.dumps(payload, default=str, ensure_ascii=False)
        return self.redactor.text(line) if self.redactor is not None else line


def _make_handler(
    *, json_mode: bool, level: int, stream: IO[str] | None, redactor: Redactor
) -> logging.Handler:
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setLevel(level)
    if json_mode:
        handler.setFormatter(JsonFormatter(redactor))
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter(redactor))
    setattr(handler, _AVO_HANDLER_ATTR, True)
    return handler


def _replace_avo_handlers(logger: logging.Logger, handler: logging.Handler) -> None:
    for old in list(logger.handlers):
        if getattr(old, _AVO_HANDLER_ATTR, False):
            logger.removeHandler(old)
            old.close()
    logger.addHandler(handler)


def install_json_handler(
    logger: logging.Logger,
    *,
    level: str = "INFO",
    stream: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Attach a redacting JSON handler to ``logger`` (replacing one avo installed before)."""
    numeric = _level(level)
    handler = _make_handler(
        json_mode=True, level=numeric, stream=stream, redactor=Redactor(environ=environ)
    )
    _replace_avo_handlers(logger, handler)


def configure_logging(
    *,
    level: str = "INFO",
    json_mode: bool = False,
    logger_name: str | None = None,
    stream: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Configure ``logger_name`` (default: the root logger) to log redacted lines.

    ``json_mode`` also engages when ``AVO_LOG_FORMAT=json`` in ``environ``.
    Calling it again replaces the handler it installed before, so it is safe
    to call once per CLI invocation.
    """
    env = os.environ if environ is None else environ
    numeric = _level(level)
    use_json = json_mode or env.get(LOG_FORMAT_ENV, "").strip().lower() == "json"
    logger = logging.getLogger(logger_name)
    logger.setLevel(numeric)
    handler = _make_handler(
        json_mode=use_json, level=numeric, stream=stream, redactor=Redactor(environ=env)
    )
    _replace_avo_handlers(logger, handler)


__all__ = [
    "LOG_FORMAT_ENV",
    "JsonFormatter",
    "LogLevel",
    "RedactingFilter",
    "configure_logging",
    "install_json_handler",
]
