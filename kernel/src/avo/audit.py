"""An append-only JSONL audit trail with secrets redacted.

Each line is one :class:`AuditEvent`: when, who, what, on which run, with a
payload passed through :func:`redact` first, so an API key or bearer token
handed to an audit call never lands on disk.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from avo.exceptions import AvoError
from avo.hookspecs import hookimpl
from avo.models import utc_now
from avo.private_files import make_private_dirs, open_private_append
from avo.redaction import Redactor


class AuditError(AvoError):
    """The audit log could not be written or read."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


def redact(payload: Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of ``payload`` with secret-looking keys masked and secret text scrubbed."""
    return Redactor(environ=environ).value(dict(payload))


@dataclass(frozen=True)
class AuditEvent:
    """One audited action."""

    action: str
    actor: str | None = None
    run_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    timestamp: datetime = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (timestamp as ISO-8601)."""
        return {
            "timestamp": self.timestamp.isoformat(),
            "action": self.action,
            "actor": self.actor,
            "run_id": self.run_id,
            "payload": self.payload,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditEvent:
        """Parse a line written by :meth:`to_dict`."""
        return cls(
            action=str(data["action"]),
            actor=data.get("actor"),
            run_id=data.get("run_id"),
            payload=dict(data.get("payload") or {}),
            timestamp=datetime.fromisoformat(str(data["timestamp"])),
        )


class AuditLog:
    """Appends redacted :class:`AuditEvent` lines to ``path`` (created on first write).

    The file is created owner-only (``0600``), and so are the directories
    created for it (``0700``): audit lines hold tasks and tool arguments.
    """

    def __init__(self, path: str | Path, *, environ: Mapping[str, str] | None = None) -> None:
        self.path = Path(path)
        self._redactor = Redactor(environ=environ)
        self._lock = threading.Lock()

    def record(
        self,
        action: str,
        *,
        actor: str | None = None,
        run_id: str | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        """Build, redact and append one event; return what was written."""
        if not action or not action.strip():
            raise AuditError("an audit event needs a non-empty action", path=str(self.path))
        return self.append(
            AuditEvent(action=action, actor=actor, run_id=run_id, payload=dict(payload or {}))
        )

    def append(self, event: AuditEvent) -> AuditEvent:
        """Redact and append ``event``; the line is flushed and fsynced before returning."""
        clean = AuditEvent(
            action=self._redactor.text(event.action),
            actor=self._redactor.text(event.actor) if event.actor else event.actor,
            run_id=event.run_id,
            payload=self._redactor.value(event.payload),
            timestamp=event.timestamp,
        )
        line = json.dumps(clean.to_dict(), default=str, ensure_ascii=False, sort_keys=True)
        line = self._redactor.text(line)
        with self._lock:
            try:
                make_private_dirs(self.path.parent)  # owner-only, as is the file
                with open(open_private_append(self.path), "a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:
                raise AuditError(
                    f"cannot append to audit log {self.path}: {exc.strerror or exc}",
                    path=str(self.path),
                ) from exc
        return clean

    def __iter__(self) -> Iterator[AuditEvent]:
        return iter(self.read())

    def read(self) -> list[AuditEvent]:
        """Every event in the log, oldest first (empty when the file does not exist)."""
        if not self.path.exists():
            return []
        events: list[AuditEvent] = []
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AuditError(
                f"cannot read audit log {self.path}: {exc}", path=str(self.path)
            ) from exc
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                events.append(AuditEvent.from_dict(json.loads(raw)))
            except (ValueError, KeyError, TypeError) as exc:
                raise AuditError(
                    f"audit log {self.path} line {number} is not a valid audit event: {exc}",
                    path=str(self.path),
                ) from exc
        return events


_AUDITED: dict[str, tuple[str, tuple[str, ...]]] = {
    # event type -> (audit action, payload keys kept)
    "run_created": ("run.created", ("task",)),
    "run_resumed": ("run.resumed", ("checkpoint_id", "state")),
    "tool_approval_requested": ("tool.approval_requested", ("tool_call_id", "name")),
    "tool_approved": ("tool.approved", ("tool_call_id", "name")),
    "tool_denied": ("tool.denied", ("tool_call_id", "name", "reason", "blocked_by")),
    "tool_started": ("tool.started", ("tool_call_id", "name", "arguments")),
    "tool_completed": ("tool.completed", ("tool_call_id", "name", "duration_ms")),
    "tool_failed": ("tool.failed", ("tool_call_id", "name", "error")),
    "policy_triggered": ("policy.triggered", ("policy", "stop_reason", "steps")),
    "run_completed": ("run.finished", ("state", "stop_reason", "steps", "token_usage")),
    "run_failed": ("run.finished", ("state", "stop_reason", "steps", "error")),
    "run_stopped": ("run.finished", ("state", "stop_reason", "steps", "error")),
    "run_cancelled": ("run.finished", ("state", "stop_reason", "steps")),
}


class AuditObserver:
    """A pluggy plugin that writes the security-relevant events of runs to an AuditLog.

    Register it on the runtime's plugin manager
    (``manager.register(AuditObserver(AuditLog("audit.jsonl")), "audit")``): run
    start/resume/finish, every tool approval request, approval, denial, start and
    result, and every policy stop become one redacted JSONL line each.
    """

    def __init__(self, log: AuditLog, *, actor: str | None = None) -> None:
        self.log = log
        self.actor = actor

    @hookimpl
    def avo_event_appended(self, event: Any) -> None:
        """Append an audit line for an audited event type."""
        kind = str(getattr(event.event_type, "value", event.event_type))
        audited = _AUDITED.get(kind)
        if audited is None:
            return
        action, keys = audited
        payload = {key: event.payload[key] for key in keys if key in event.payload}
        payload["event_sequence"] = event.sequence
        self.log.record(action, actor=self.actor, run_id=event.run_id, payload=payload)


__all__ = ["AuditError", "AuditEvent", "AuditLog", "AuditObserver", "redact"]
