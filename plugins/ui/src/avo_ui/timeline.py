"""A run's events as timeline items: what each one says, ready for the templates.

One :class:`Item` per event worth a row. Quiet bookkeeping (state changes,
checkpoints, approval plumbing) becomes a small marker row; messages,
tool calls, results, failures, approvals and answers become cards. Results
are folded; a file edit's result shows the diff it made (from the content
the run last read or wrote at that path, or the edit's old and new text).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup

from avo.events import AgentEvent, EventType

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
RESULT_LIMIT = 4000


def usd(amount: Decimal | None) -> str:
    """``$0.0123`` (four significant places for small amounts), ``—`` for None."""
    if amount is None:
        return "—"
    if amount >= 1:
        return f"${amount:,.2f}"
    return f"${amount:.4f}" if amount >= Decimal("0.0001") else f"${amount:.6f}"


def markdown(text: str) -> Markup:
    """``text`` rendered as Markdown (raw HTML in it is escaped, not rendered)."""
    return Markup(_MD.render(text))


def short_json(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pretty_json(value: Any, limit: int = RESULT_LIMIT) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    return (
        text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"
    )


@dataclass
class Item:
    """One row of a timeline."""

    sequence: int
    kind: str  # css class and template branch
    title: str
    at: str
    step: int | None = None
    body: Markup | None = None
    text: str | None = None
    diff: list[tuple[str, str]] = field(default_factory=list)
    details: str | None = None
    meta: list[str] = field(default_factory=list)
    call_id: str | None = None
    open_request: bool = False
    question: bool = False
    choices: list[str] = field(default_factory=list)
    form: list[Any] = field(default_factory=list)
    """A tool's question with a form: its fields (``avo_ui.forms.FormField``)."""
    declinable: bool = False
    """A tool's question (rule ``tool_input``): it may be declined."""


@dataclass
class Timeline:
    """A run's items plus what its header shows."""

    items: list[Item]
    provider: str | None = None
    model: str | None = None
    plugins: list[tuple[str, str]] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    last_sequence: int = 0
    open_calls: list[str] = field(default_factory=list)
    cost: Decimal | None = None
    """USD of the priced model calls (None when none was priced)."""
    unpriced: int = 0
    """Model calls without a price."""


def _diff_lines(before: str, after: str, path: str) -> list[tuple[str, str]]:
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=2
    )
    out = []
    for line in lines:
        kind = "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx"
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        out.append((kind, line))
    return out


class Builder:
    """Folds events into items, remembering what it needs across events (file contents)."""

    def __init__(
        self, open_calls: Iterable[str] = (), *, quiet: bool = False, prices: Any = None
    ) -> None:
        self.quiet = quiet
        self.prices = prices
        self.files: dict[str, str] = {}
        self.calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self.open_calls = set(open_calls)
        self.timeline = Timeline(items=[])

    def add_all(self, events: Iterable[AgentEvent]) -> Timeline:
        for event in events:
            self.add(event)
        self.timeline.open_calls = sorted(self.open_calls)
        return self.timeline

    def add(self, event: AgentEvent) -> Item | None:
        self.timeline.last_sequence = max(self.timeline.last_sequence, event.sequence)
        item = self._item(event)
        if item is not None:
            self.timeline.items.append(item)
        return item

    def _item(self, event: AgentEvent) -> Item | None:
        kind, p = event.event_type, event.payload
        at = event.created_at.strftime("%H:%M:%S.%f")[:-3]
        base = {"sequence": event.sequence, "at": at}
        handler = _HANDLERS.get(kind)
        if handler is not None:
            return handler(self, p, base)
        if kind in (EventType.STATE_CHANGED, EventType.CHECKPOINT_CREATED) and not self.quiet:
            return None
        if kind is EventType.STATE_CHANGED:
            reason = f" ({p['reason']})" if p.get("reason") else ""
            return Item(
                kind="state", title=f"{p.get('from_state')} → {p.get('to_state')}{reason}", **base
            )
        if kind is EventType.CHECKPOINT_CREATED:
            return Item(
                kind="checkpoint", title=f"checkpoint · next step {p.get('next_step')}", **base
            )
        if kind in (EventType.TOOL_APPROVAL_REQUESTED, EventType.MODEL_REQUESTED):
            return None  # the plumbing before a decision; the decision is shown
        return Item(kind="other", title=kind.value, text=short_json(p, 300), **base)

    # -- handlers --------------------------------------------------------------------

    def created(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        record = p.get("composition") if isinstance(p.get("composition"), Mapping) else {}
        config = record.get("config") if isinstance(record.get("config"), Mapping) else {}
        provider = config.get("provider") if isinstance(config.get("provider"), Mapping) else {}
        settings = provider.get("settings") if isinstance(provider.get("settings"), Mapping) else {}
        self.timeline.provider = provider.get("name")
        self.timeline.model = settings.get("model")
        for entry in p.get("plugins") or []:
            if isinstance(entry, Mapping):
                label = f"{entry.get('kind', '?')}: {entry.get('name', '?')}"
                self.timeline.plugins.append(
                    (label, f"{entry.get('package', '')} {entry.get('version', '')}")
                )
        tools = p.get("tools") or config.get("tools") or []
        self.timeline.tools = [t if isinstance(t, str) else str(t.get("name", t)) for t in tools]
        return Item(kind="task", title="task", body=markdown(str(p.get("task", ""))), **base)

    def responded(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        response = p.get("response") if isinstance(p.get("response"), Mapping) else {}
        usage = p.get("usage") or response.get("usage") or {}
        content = response.get("content") or ""
        calls = response.get("tool_calls") or []
        meta = [f"{p.get('provider', '?')}/{p.get('model', '?')}"]
        meta.append(f"{usage.get('input_tokens', 0)} in · {usage.get('output_tokens', 0)} out")
        if p.get("duration_ms") is not None:
            meta.append(f"{float(p['duration_ms']):.0f} ms")
        cost = self._cost(p, usage)
        if cost is not None:
            meta.append(usd(cost))
        if response.get("finish_reason"):
            meta.append(str(response["finish_reason"]))
        if p.get("attempt"):
            meta.append(f"attempt {p['attempt']}")
        if p.get("model"):
            self.timeline.provider = self.timeline.provider or p.get("provider")
            self.timeline.model = str(p["model"])
        names = ", ".join(f"{c.get('name')}" for c in calls if isinstance(c, Mapping))
        title = "assistant" if content else f"assistant → {names}" if names else "assistant"
        return Item(
            kind="message",
            title=title,
            step=p.get("step"),
            body=markdown(str(content)) if content else None,
            meta=meta,
            **base,
        )

    def _cost(self, p: Mapping[str, Any], usage: Mapping[str, Any]) -> Decimal | None:
        if self.prices is None or not isinstance(usage, Mapping):
            return None
        from avo.models import TokenUsage

        try:
            tokens = TokenUsage.model_validate(dict(usage))
        except ValueError:
            return None
        priced = self.prices.cost(p.get("provider"), p.get("model"), tokens)
        if priced is None:
            self.timeline.unpriced += 1
            return None
        total = self.timeline.cost
        self.timeline.cost = priced.total if total is None else total + priced.total
        return Decimal(priced.total)

    def failed_model(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        meta = [f"attempt {p['attempt']}"] if p.get("attempt") else []
        if p.get("retryable") is not None:
            meta.append("will retry" if p.get("retryable") else "not retryable")
        return Item(
            kind="error",
            title="model call failed",
            text=str(p.get("error", "")),
            meta=meta,
            step=p.get("step"),
            **base,
        )

    def requested(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        name, args = str(p.get("name")), p.get("arguments") or {}
        call_id = str(p.get("tool_call_id"))
        self.calls[call_id] = (name, args if isinstance(args, Mapping) else {})
        return Item(kind="call", title=name, text=short_json(args, 400), call_id=call_id, **base)

    def decided(self, p: Mapping[str, Any], base: dict[str, Any], approved: bool) -> Item:
        who = p.get("decided_by") or ""
        who = "rule" if who == "approval" and p.get("rule") else who
        reason = p.get("reason") or p.get("rule") or ""
        return Item(
            kind="approved" if approved else "denied",
            title=f"{p.get('name')} {'approved' if approved else 'denied'}"
            + (f" by {who}" if who else ""),
            text=str(reason),
            call_id=str(p.get("tool_call_id")),
            **base,
        )

    def started(self, p: Mapping[str, Any], base: dict[str, Any]) -> None:
        return None  # the call row already says it; the result follows

    def completed(self, p: Mapping[str, Any], base: dict[str, Any], ok: bool) -> Item:
        call_id = str(p.get("tool_call_id"))
        name, args = self.calls.get(call_id, (str(p.get("name")), {}))
        result = p.get("result") if isinstance(p.get("result"), Mapping) else {}
        output = result.get("output", p.get("output"))
        error = result.get("error") or p.get("error")
        meta = []
        if p.get("duration_ms") is not None:
            meta.append(f"{float(p['duration_ms']):.0f} ms")
        diff = self._file_effect(name, args, output) if ok else []
        if isinstance(output, str):
            details = output if len(output) <= RESULT_LIMIT else output[:RESULT_LIMIT] + "…"
        else:
            details = pretty_json(output)
        return Item(
            kind="result" if ok else "error",
            title=f"{name} {'→ result' if ok else 'failed'}",
            text=str(error) if error else None,
            details=None if error and output is None else details,
            diff=diff,
            meta=meta,
            call_id=call_id,
            **base,
        )

    def _file_effect(
        self, name: str, args: Mapping[str, Any], output: Any
    ) -> list[tuple[str, str]]:
        path = str(args.get("path", ""))
        if isinstance(output, Mapping) and isinstance(output.get("content"), str) and path:
            self.files[path] = output["content"]  # a read: what the file held
            return []
        if "content" in args and isinstance(args.get("content"), str) and path:
            before = self.files.get(path, "")
            self.files[path] = args["content"]
            return _diff_lines(before, args["content"], path)
        old, new = args.get("old_string"), args.get("new_string")
        if isinstance(old, str) and isinstance(new, str) and path:
            if path in self.files:
                before = self.files[path]
                after = (
                    before.replace(old, new)
                    if args.get("replace_all")
                    else before.replace(old, new, 1)
                )
                self.files[path] = after
                return _diff_lines(before, after, path)
            return _diff_lines(old, new, path)
        return []

    def human_request(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        call_id = str(p.get("tool_call_id"))
        question = p.get("kind") == "question"
        args = p.get("arguments") or {}
        name = str(p.get("name"))
        diff = []
        if not question and isinstance(args, Mapping):
            diff = self._preview(name, args)
        meta = [str(p.get("risk"))] if p.get("risk") else []
        if p.get("expires_at"):
            meta.append(f"expires {p['expires_at']}")
        text = str(p.get("question") or p.get("reason") or "")
        form = []
        if question and isinstance(p.get("schema"), Mapping):  # a tool's form (MCP elicitation)
            from avo_ui.forms import form_fields

            form = form_fields(p["schema"])
        return Item(
            kind="ask",
            title=(f"question from {name}" if question else f"approve {name}?"),
            text=text,
            details=None if form else short_json(args, 600),  # a form asks its own question
            form=form,
            declinable=p.get("rule") == "tool_input",
            diff=diff,
            meta=meta,
            call_id=call_id,
            open_request=call_id in self.open_calls,
            question=question,
            choices=[str(c) for c in p.get("choices") or []],
            **base,
        )

    def _preview(self, name: str, args: Mapping[str, Any]) -> list[tuple[str, str]]:
        saved = dict(self.files)
        try:
            return self._file_effect(name, args, None)
        finally:
            self.files = saved  # a preview changes nothing

    def human_answer(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        decision = str(p.get("decision", "?"))
        who = f" by {p['by']}" if p.get("by") else ""
        via = f" via {p['via']}" if p.get("via") else ""
        text = p.get("reason") or p.get("text") or ""
        kind = {"approve": "approved", "deny": "denied"}.get(decision, "answer")
        said = _SAID.get(decision, decision)
        return Item(
            kind=kind,
            title=f"{said}{who}{via}",
            text=str(text),
            call_id=str(p.get("tool_call_id")),
            **base,
        )

    def policy(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        return Item(
            kind="policy",
            title=f"policy: {p.get('policy') or p.get('stop_reason') or ''}",
            text=short_json(p, 300),
            **base,
        )

    def compacted(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        return Item(kind="compact", title="context compacted", text=short_json(p, 300), **base)

    def steered(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        who = f" ({p['source']})" if p.get("source") else ""
        return Item(
            kind="steer",
            title=f"steered{who}",
            body=markdown(str(p.get("message") or p.get("content") or "")),
            **base,
        )

    def resumed(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        return Item(kind="marker", title="resumed", text=short_json(p, 200), **base)

    def finished(self, p: Mapping[str, Any], base: dict[str, Any], label: str) -> Item:
        out = p.get("output")
        text = p.get("error") or p.get("stop_reason") or ""
        return Item(
            kind="end",
            title=f"run {label}" + (f" · {p['stop_reason']}" if p.get("stop_reason") else ""),
            body=markdown(str(out)) if isinstance(out, str) and out else None,
            text=str(text) if text and not out else None,
            **base,
        )

    def progress(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        done, total, note = p.get("progress"), p.get("total"), p.get("message")
        amount = f"{done:g}" if isinstance(done, int | float) else "?"
        amount += f"/{total:g}" if isinstance(total, int | float) else ""
        note = f" · {note}" if note else ""
        return Item(kind="marker", title=f"{p.get('name')} progress {amount}{note}", **base)

    def hook_failed(self, p: Mapping[str, Any], base: dict[str, Any]) -> Item:
        return Item(
            kind="error", title=f"hook {p.get('hook')} failed", text=str(p.get("error", "")), **base
        )


_SAID = {"approve": "approved", "deny": "denied", "reply": "answered"}

_HANDLERS: dict[EventType, Any] = {
    EventType.RUN_CREATED: Builder.created,
    EventType.MODEL_RESPONDED: Builder.responded,
    EventType.MODEL_FAILED: Builder.failed_model,
    EventType.TOOL_REQUESTED: Builder.requested,
    EventType.TOOL_APPROVED: lambda b, p, base: b.decided(p, base, True),
    EventType.TOOL_DENIED: lambda b, p, base: b.decided(p, base, False),
    EventType.TOOL_STARTED: Builder.started,
    EventType.TOOL_COMPLETED: lambda b, p, base: b.completed(p, base, True),
    EventType.TOOL_FAILED: lambda b, p, base: b.completed(p, base, False),
    EventType.HUMAN_INPUT_REQUESTED: Builder.human_request,
    EventType.HUMAN_INPUT_RECEIVED: Builder.human_answer,
    EventType.POLICY_TRIGGERED: Builder.policy,
    EventType.CONTEXT_COMPACTED: Builder.compacted,
    EventType.RUN_STEERED: Builder.steered,
    EventType.RUN_RESUMED: Builder.resumed,
    EventType.RUN_COMPLETED: lambda b, p, base: b.finished(p, base, "completed"),
    EventType.RUN_FAILED: lambda b, p, base: b.finished(p, base, "failed"),
    EventType.RUN_STOPPED: lambda b, p, base: b.finished(p, base, "stopped"),
    EventType.RUN_CANCELLED: lambda b, p, base: b.finished(p, base, "cancelled"),
    EventType.HOOK_FAILED: Builder.hook_failed,
    EventType.TOOL_PROGRESS: Builder.progress,
}


def build(
    events: Iterable[AgentEvent],
    open_calls: Iterable[str] = (),
    *,
    quiet: bool = False,
    prices: Any = None,
) -> Timeline:
    """The timeline of ``events`` (``open_calls``: requests still waiting for a person).

    ``quiet``: also rows for state changes and checkpoints (left out by default).
    """
    return Builder(open_calls, quiet=quiet, prices=prices).add_all(events)


__all__ = ["Builder", "Item", "Timeline", "build", "markdown", "pretty_json", "short_json", "usd"]
