"""Approval verdicts, requests for a person, and their answers.

The approval seam (``AgentRuntime(approval_callback=...)``) is asked about
each tool call and answers with a bool or an :class:`Approval`:

- ``Approval.allow(...)`` / ``True``: the call runs;
- ``Approval.deny(reason)`` / ``False``: the call is denied; by default the
  reason goes back to the model as the call's result and the run goes on
  (``LoopPolicy.on_tool_denied = "stop"`` ends the run instead);
- ``Approval.ask(reason)``: a person must decide. The run records a
  :class:`HumanRequest` (a HUMAN_INPUT_REQUESTED event: tool, arguments with
  secrets masked, risk, why it asks, the model's own words), checkpoints and
  **pauses**; the process may exit. Anyone sharing the store answers it later
  (:mod:`avo.ops.approval`, ``avo runs approve|deny|answer``), and
  ``AgentRuntime.resume`` continues with the :class:`Answer`.

A tool whose metadata says ``asks_human`` (``ask_user``) makes the same kind
of request with a question; the answer's text becomes the call's result.

A tool that needs a person's answer *while it runs* (an MCP server's
elicitation) raises :class:`~avo.exceptions.ToolInputRequiredError`: the run
records a question (rule ``tool_input``, with the form's ``schema`` if any),
pauses, and once someone answered runs the call again; the tool reads the
answer with :func:`tool_input` (accept with the content, decline when the
person refused, cancel when nobody answered in time).

A callback that keeps per-run memory (plan mode remembers a submitted plan)
reads :func:`deciding_run_id` while it decides, and may offer
``restore_run(run_id, events)``: ``AgentRuntime.resume`` calls it with the
run's stored log before the first decision, so what the callback remembers is
rebuilt from the log in whichever process resumes the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import JsonValue


class Verdict(StrEnum):
    """What an approval callback can say about one call."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True)
class Approval:
    """An approval callback's decision, with the rule and reason behind it.

    ``rule`` and ``reason`` are recorded on the TOOL_APPROVED / TOOL_DENIED
    event (and on the request, for ``ask``); ``expires_in`` (seconds) bounds
    how long a person has to answer an ``ask`` (None: the run's policy).
    """

    verdict: Verdict
    reason: str = ""
    rule: str | None = None
    expires_in: float | None = None

    @classmethod
    def allow(cls, reason: str = "", *, rule: str | None = None) -> Approval:
        """The call runs."""
        return cls(Verdict.ALLOW, reason, rule)

    @classmethod
    def deny(cls, reason: str, *, rule: str | None = None) -> Approval:
        """The call is denied with ``reason`` (what the model is told)."""
        return cls(Verdict.DENY, reason, rule)

    @classmethod
    def ask(
        cls, reason: str = "", *, rule: str | None = None, expires_in: float | None = None
    ) -> Approval:
        """A person decides; the run pauses until someone answers."""
        return cls(Verdict.ASK, reason, rule, expires_in)


DEFAULT_DENIAL = "the approval callback denied the tool call"


def as_approval(value: Any) -> Approval:
    """An approval callback's return value as an :class:`Approval` (bools accepted)."""
    if isinstance(value, Approval):
        return value
    if value is True:
        return Approval.allow()
    if value is False or value is None:
        return Approval.deny(DEFAULT_DENIAL)
    raise TypeError(
        f"an approval callback returned {type(value).__name__}; return True, False or an "
        "avo.approval.Approval (allow / deny / ask)"
    )


class AnswerKind(StrEnum):
    """What a person answered."""

    APPROVE = "approve"
    DENY = "deny"
    REPLY = "reply"


@dataclass(frozen=True)
class Answer:
    """A person's answer to a :class:`HumanRequest`.

    Approvals take :meth:`approve` or :meth:`deny` (whose reason the model is
    told); questions take :meth:`reply` (the text is the call's result).
    """

    kind: AnswerKind
    reason: str | None = None
    text: str | None = None
    by: str | None = None

    @classmethod
    def approve(cls, reason: str | None = None, *, by: str | None = None) -> Answer:
        """Let the call run."""
        return cls(AnswerKind.APPROVE, reason, None, by)

    @classmethod
    def deny(cls, reason: str | None = None, *, by: str | None = None) -> Answer:
        """Refuse the call; ``reason`` goes back to the model."""
        return cls(AnswerKind.DENY, reason, None, by)

    @classmethod
    def reply(cls, text: str, *, by: str | None = None) -> Answer:
        """Answer a question."""
        return cls(AnswerKind.REPLY, None, text, by)

    @classmethod
    def coerce(cls, value: Any) -> Answer:
        """``True`` / ``False`` / a string (a reply) / an Answer, as an Answer."""
        if isinstance(value, Answer):
            return value
        if value is True:
            return cls.approve()
        if value is False:
            return cls.deny()
        if isinstance(value, str):
            return cls.reply(value)
        raise TypeError(
            f"an answer must be True, False, a string or an avo.approval.Answer, "
            f"got {type(value).__name__}"
        )


class RequestKind(StrEnum):
    """Why a call waits for a person."""

    APPROVAL = "approval"
    QUESTION = "question"


@dataclass(frozen=True)
class HumanRequest:
    """A tool call waiting for a person, as its HUMAN_INPUT_REQUESTED event records it."""

    run_id: str
    tool_call_id: str
    kind: RequestKind
    tool_name: str
    arguments: dict[str, JsonValue] = field(default_factory=dict)
    risk: str | None = None
    reason: str = ""
    rule: str | None = None
    model_reason: str | None = None
    question: str | None = None
    choices: tuple[str, ...] = ()
    requested_at: datetime | None = None
    expires_at: datetime | None = None
    schema: dict[str, Any] | None = None
    """For a question: the JSON-schema object (a form) the answer must fit, if any."""

    @classmethod
    def from_payload(
        cls, run_id: str, payload: Mapping[str, Any], *, requested_at: datetime | None = None
    ) -> HumanRequest:
        """Rebuild a request from its event payload."""
        expires = payload.get("expires_at")
        choices = payload.get("choices")
        return cls(
            run_id=run_id,
            tool_call_id=str(payload["tool_call_id"]),
            kind=RequestKind(str(payload.get("kind", "approval"))),
            tool_name=str(payload.get("name", "")),
            arguments=dict(payload.get("arguments") or {}),
            risk=_text(payload.get("risk")),
            reason=str(payload.get("reason") or ""),
            rule=_text(payload.get("rule")),
            model_reason=_text(payload.get("model_reason")),
            question=_text(payload.get("question")),
            choices=tuple(str(c) for c in choices) if isinstance(choices, list) else (),
            requested_at=requested_at,
            expires_at=datetime.fromisoformat(expires) if isinstance(expires, str) else None,
            schema=dict(payload["schema"]) if isinstance(payload.get("schema"), dict) else None,
        )

    def payload(self) -> dict[str, JsonValue]:
        """The event payload of this request."""
        data: dict[str, JsonValue] = {
            "tool_call_id": self.tool_call_id,
            "kind": self.kind.value,
            "name": self.tool_name,
            "arguments": dict(self.arguments),
            "risk": self.risk,
            "reason": self.reason,
            "rule": self.rule,
            "model_reason": self.model_reason,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }
        if self.kind is RequestKind.QUESTION:
            data["question"] = self.question
            data["choices"] = list(self.choices)
            if self.schema is not None:
                data["schema"] = self.schema
        return data

    def expired(self, now: datetime) -> bool:
        """True once ``expires_at`` has passed."""
        return self.expires_at is not None and now >= self.expires_at

    def summary(self) -> str:
        """One line: ``run_shell {"command": "git push"} (execute): why``.

        A question of several lines keeps them, with its choices or form on a line after.
        """
        import json

        if self.kind is RequestKind.QUESTION:
            text = f"question from {self.tool_name}: {self.question}"
            # After a question of several lines, the choices and the form go on a line
            # of their own instead of trailing its last line.
            gap = "\n" if "\n" in (self.question or "") else " "
            if self.choices:
                text += f"{gap}[{' / '.join(self.choices)}]"
            if self.schema is not None:
                from avo.forms import describe_form

                text += f"{gap}(answer a JSON object: {describe_form(self.schema)})"
            return text
        arguments = json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)
        if len(arguments) > 200:
            arguments = arguments[:199] + "…"
        risk = f" ({self.risk})" if self.risk else ""
        why = f": {self.reason}" if self.reason else ""
        return f"{self.tool_name} {arguments}{risk}{why}"


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str) and value else None


TOOL_INPUT = "tool_input"
"""The ``rule`` of a question a tool asked mid-call (``ToolInputRequiredError``).

It also takes a denial (the person declines to answer); the call runs again either way."""


@dataclass(frozen=True)
class ToolInput:
    """A person's answer to the question a tool raised, for the call's next run.

    ``action``: ``accept`` (``content`` holds the form's values, or ``{"answer": text}``
    without a form), ``decline`` (the person refused; ``reason`` says why), or
    ``cancel`` (nobody answered before the request expired). ``schema``: the
    form the question carried, as recorded with it, so a tool can check that the
    answer is about what it asks now (an MCP sampling approval names its request).
    """

    action: str
    content: dict[str, JsonValue] | None = None
    reason: str | None = None
    by: str | None = None
    schema: dict[str, JsonValue] | None = None


_TOOL_INPUT: ContextVar[ToolInput | None] = ContextVar("avo_tool_input", default=None)


def tool_input() -> ToolInput | None:
    """The answer to the question the running tool call raised before (None: it asked none)."""
    return _TOOL_INPUT.get()


def given_tool_input(value: ToolInput | None) -> Token[ToolInput | None]:
    """Set :func:`tool_input` for the call about to run (the runtime does this)."""
    return _TOOL_INPUT.set(value)


def reset_tool_input(token: Token[ToolInput | None]) -> None:
    """Undo :func:`given_tool_input`."""
    _TOOL_INPUT.reset(token)


Answerer = Callable[[HumanRequest], "Answer | Awaitable[Answer | None] | None"]
"""Asks a person right away (a terminal prompt, a chat UI); None means no answer now.

``AgentRuntime(answerer=...)`` calls it for each request once the run has
paused durably; an answer continues the run in place, None (or Ctrl-C) leaves
it paused for anyone else to answer."""


_DECIDING: ContextVar[str | None] = ContextVar("avo_deciding_run", default=None)


def deciding_run_id() -> str | None:
    """The id of the run whose tool call the approval callback is deciding (None outside)."""
    return _DECIDING.get()


__all__ = [
    "DEFAULT_DENIAL",
    "Answer",
    "AnswerKind",
    "Answerer",
    "Approval",
    "HumanRequest",
    "RequestKind",
    "TOOL_INPUT",
    "ToolInput",
    "Verdict",
    "as_approval",
    "given_tool_input",
    "reset_tool_input",
    "tool_input",
    "deciding_run_id",
]
