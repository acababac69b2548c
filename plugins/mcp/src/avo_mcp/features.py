"""What avo's MCP client offers a server: roots, sampling, progress, logging.

A :class:`ClientFeatures` is given to a server connection (``MCPServer``,
``MCPHttpServer``, ``MCPToolbox`` or ``servers_from_config``). Each feature is
declared in the ``initialize`` capabilities only when it is configured:

- ``roots``: directories the server may work in (avo passes the workspace);
  ``roots/list`` answers them as ``file://`` URIs.
- ``sampling``: a handler for ``sampling/createMessage``;
  :class:`ProviderSampler` answers with an avo model provider (the run's own)
  after the approval callback allowed it. When the callback says a person must
  decide (``ask``), the request goes through the run's durable pause like an
  elicitation: the server gets an error for now, the tool raises
  ``ToolInputRequiredError`` with a yes/no form, the run pauses, and the call
  runs again once someone answered; that call's sampling request runs on the
  model if the answer allowed it. The question shows what the model would
  read (system prompt and messages, in full) and its form records the
  request's digest: an answer applies to that request only, so a rerun whose
  server asks something else is refused.
- ``on_progress``: receives the server's ``notifications/progress`` for a
  running tool call (avo sends a ``progressToken`` with every ``tools/call``
  when it is set).

- ``elicitation``: a handler for ``elicitation/create`` (a server asking the
  user for input). :data:`ask_person` asks through the run's durable pause
  (what composed runs use): during a tool call with no answer yet it answers
  ``cancel``, and the tool raises ``ToolInputRequiredError`` once the call
  returned, so the run records the question (with the server's form), pauses,
  and calls the tool again once someone answered; that call's elicitation
  gets the answer (accept with the form's values, decline, or cancel when
  nobody answered in time). :class:`ReplyElicitation` answers in place from a
  function (a test, a UI that can ask right away). Undeclared (the default), a
  server that asks anyway gets "method not found".
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avo.approval import ToolInput
from avo.exceptions import MCPError
from avo.models import ModelRequest, ToolCall
from avo_mcp.framing import JsonDict
from avo_mcp.results import MediaPart, ResourceTextPart, TextPart, convert_item

logger = logging.getLogger("avo_mcp")


@dataclass(frozen=True)
class ProgressUpdate:
    """One ``notifications/progress`` for a tool call."""

    server: str
    tool: str
    progress: float
    total: float | None = None
    message: str | None = None

    def describe(self) -> str:
        """``server/tool: 3/10 message`` for a status line."""
        amount = f"{self.progress:g}" + (f"/{self.total:g}" if self.total is not None else "")
        return f"{self.server}/{self.tool}: {amount}" + (f" {self.message}" if self.message else "")


@dataclass(frozen=True)
class SamplingRequest:
    """A server's ``sampling/createMessage``, as avo reads it."""

    server: str
    messages: tuple[dict[str, Any], ...]
    system_prompt: str | None = None
    max_tokens: int | None = None
    params: JsonDict = field(default_factory=dict)
    call: PendingCall | None = field(default=None, compare=False, repr=False)
    """The tool call it arrived during (None: outside a call, or several were running)."""

    def excerpt(self, limit: int = 200) -> str:
        """The last message's text, cut at ``limit`` characters (for a person deciding)."""
        text = ""
        for message in reversed(self.messages):
            content = message.get("content")
            items = content if isinstance(content, list) else [content]
            texts = [item.get("text") for item in items if isinstance(item, dict)]
            text = " ".join(str(t) for t in texts if t)
            if text:
                break
        text = " ".join(text.split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def digest(self) -> str:
        """``sha256:...`` of the server's name and the request's params (``_meta`` aside):
        what a person's answer to its question is tied to."""
        params = {k: v for k, v in self.params.items() if k != "_meta"}
        if not params:  # built without params: what was read from them
            params = {"messages": list(self.messages), "systemPrompt": self.system_prompt}
            params["maxTokens"] = self.max_tokens
        body = json.dumps([self.server, params], sort_keys=True, ensure_ascii=False, default=str)
        return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


SAMPLING_REQUEST_KEY = "x-avo-sampling-request"
"""The key of a sampling question's form that holds its request's digest
(:meth:`SamplingRequest.digest`); the answer applies only to that request."""

SAMPLING_FORM: JsonDict = {
    "type": "object",
    "properties": {
        "allow": {
            "type": "boolean",
            "title": "Allow",
            "description": "run the server's request on the run's model",
        }
    },
    "required": ["allow"],
}
"""The form of the question a sampling request needing a person asks: one yes/no field."""


@dataclass
class PendingCall:
    """One ``tools/call`` in flight, as elicitation sees it.

    ``given``: a person's answer to the question this call's tool raised on an
    earlier run (:func:`avo.approval.tool_input`); ``asked``: the elicitation
    (or the sampling request's yes/no question) that found no answer (the tool
    then raises ``ToolInputRequiredError``).
    """

    tool: str
    given: ToolInput | None = None
    used: bool = False
    asked: ElicitationRequest | None = None


@dataclass(frozen=True)
class ElicitationRequest:
    """A server's ``elicitation/create``: a message and the schema of what it wants."""

    server: str
    message: str
    requested_schema: JsonDict
    params: JsonDict = field(default_factory=dict)
    call: PendingCall | None = field(default=None, compare=False, repr=False)
    """The tool call it arrived during (None: outside a call, or several were running)."""

    def defaults(self) -> JsonDict:
        """The schema's default values (what a form would start from)."""
        properties = self.requested_schema.get("properties")
        if not isinstance(properties, dict):
            return {}
        return {
            key: spec["default"]
            for key, spec in properties.items()
            if isinstance(spec, dict) and "default" in spec
        }


ProgressCallback = Callable[[ProgressUpdate], None]
SamplingHandler = Callable[[SamplingRequest], Awaitable[JsonDict]]
ElicitationHandler = Callable[[ElicitationRequest], Awaitable[JsonDict]]
"""Returns an ``ElicitResult``: ``{"action": "accept", "content": {...}}``, or
``{"action": "decline"}`` / ``{"action": "cancel"}``."""
ApprovalCallback = Callable[[ToolCall], Any]
"""The approval seam: returns a bool or an ``avo.approval.Approval``, maybe awaitable."""


@dataclass
class ClientFeatures:
    """The client-side MCP features one connection offers (all off by default)."""

    roots: Sequence[str | Path] | None = None
    sampling: SamplingHandler | None = None
    on_progress: ProgressCallback | None = None
    elicitation: ElicitationHandler | None = None

    def capabilities(self) -> JsonDict:
        """The ``capabilities`` object of ``initialize``: only what is configured."""
        capabilities: JsonDict = {}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": False}
        if self.sampling is not None:
            capabilities["sampling"] = {}
        if self.elicitation is not None:
            capabilities["elicitation"] = {"form": {}}
        return capabilities

    def root_list(self) -> list[JsonDict]:
        """``roots/list`` entries: ``file://`` URIs of the configured directories."""
        roots = []
        for root in self.roots or ():
            path = Path(root).expanduser().resolve()
            roots.append({"uri": path.as_uri(), "name": path.name or str(path)})
        return roots


def _content(schema: JsonDict, reply: str) -> JsonDict:
    from avo.forms import form_content

    try:
        return dict(form_content(schema, reply))
    except ValueError as exc:
        raise MCPError(f"the answer does not fit the server's form: {exc}") from None


async def _ask_person(request: ElicitationRequest) -> JsonDict:
    call = request.call
    if call is None:  # nobody can be asked outside a tool call of a run
        logger.warning(
            "MCP server %r asked for input outside a tool call: cancelled", request.server
        )
        return {"action": "cancel"}
    given = call.given
    if given is not None and not call.used:
        call.used = True
        if given.action != "accept":
            return {"action": given.action}
        reply = json.dumps(given.content or {})
        try:
            return {"action": "accept", "content": _content(request.requested_schema, reply)}
        except MCPError:
            pass  # the form changed since: ask again (the tool call fails, saying why)
    if call.asked is None:
        call.asked = request
    return {"action": "cancel"}


ask_person: ElicitationHandler = _ask_person
"""Elicitation through the run's durable pause (see the module docstring)."""


class ReplyElicitation:
    """Answer ``elicitation/create`` in place: ``reply(request)`` returns a person's text.

    The text is read against the server's form (:func:`avo.forms.form_content`:
    a JSON object, or the one open field's value; missing fields take their
    defaults); None declines. A reply that does not fit answers an error.
    """

    def __init__(self, reply: Callable[[ElicitationRequest], str | Awaitable[str | None] | None]):
        self.reply = reply

    async def __call__(self, request: ElicitationRequest) -> JsonDict:
        text = self.reply(request)
        if inspect.isawaitable(text):
            text = await text
        if text is None:
            return {"action": "decline"}
        return {"action": "accept", "content": _content(request.requested_schema, text)}


class ProviderSampler:
    """Answer ``sampling/createMessage`` with an avo model provider, after approval.

    ``approval_callback`` is the runtime's approval seam: it receives a
    ``ToolCall`` named ``mcp_sampling`` whose arguments name the server and
    carry the messages, so a permission mode (or a person at a prompt) decides
    as for any tool call. A refusal answers the server with an error.

    A verdict of ``ask`` pauses the run: during a tool call with no answer yet,
    the server gets an error and the call's tool asks a person a yes/no
    question (:data:`SAMPLING_FORM`) through the run's durable pause; the rerun's
    sampling request runs on the model when the answer allowed it (``yes``),
    and is refused when it did not (``no``, a denial, or nobody answering in time).
    Outside a tool call nobody can be asked: an ``ask`` is refused.
    """

    def __init__(self, provider: Any, *, approval_callback: ApprovalCallback) -> None:
        self.provider = provider
        self.approval_callback = approval_callback
        self._ids = itertools.count(1)

    async def __call__(self, request: SamplingRequest) -> JsonDict:
        """Approve, ask the provider, answer a ``CreateMessageResult``."""
        messages = _provider_messages(request)
        call = ToolCall(
            name="mcp_sampling",
            arguments={
                "server": request.server,
                "messages": messages,
                "max_tokens": request.max_tokens,
            },
        )
        approved = self.approval_callback(call)
        if inspect.isawaitable(approved):
            approved = await approved
        _check_approved(request, approved)
        model_request = ModelRequest(
            run_id=f"mcp-sampling-{request.server}-{next(self._ids)}", step=1, messages=messages
        )
        response = await self.provider.generate(model_request)
        if response.content is None:
            raise MCPError("the model answered the sampling request with a tool call")
        model = getattr(self.provider, "model", None) or getattr(self.provider, "name", "avo")
        return {
            "role": "assistant",
            "content": {"type": "text", "text": response.content},
            "model": str(model),
            "stopReason": "endTurn",
        }


def _check_approved(request: SamplingRequest, verdict: Any) -> None:
    """Raise MCPError unless the approval seam (or a person, for ``ask``) allowed it."""
    from avo.approval import Verdict, as_approval

    server = request.server
    approval = as_approval(verdict)
    if approval.verdict is Verdict.ALLOW:
        return
    if approval.verdict is Verdict.ASK:
        _ask_about_sampling(request)
        return
    reason = f": {approval.reason}" if approval.reason else ""
    raise MCPError(f"sampling request from MCP server {server!r} was not approved{reason}")


def _ask_about_sampling(request: SamplingRequest) -> None:
    """Return when a person allowed this call's sampling; else note the question and raise."""
    server, call = request.server, request.call
    if call is None:  # nobody can be asked outside a tool call of a run
        raise MCPError(
            f"sampling request from MCP server {server!r} needs a person's approval, which "
            "can only be asked during a tool call of a run; allow it with a [permission] rule "
            "for the tool 'mcp_sampling' (or a mode that allows it)"
        )
    given = call.given
    if given is not None and not call.used:
        call.used = True
        answered = (given.schema or {}).get(SAMPLING_REQUEST_KEY)
        if answered != request.digest():
            shown = f" ({answered[:19]})" if isinstance(answered, str) else ""
            raise MCPError(
                f"sampling request from MCP server {server!r} is not the one the person "
                f"answered{shown}: refused, as an answer covers only the request it showed "
                f"(this one is {request.digest()[:19]}); call the tool again to be asked"
            )
        content = given.content or {}
        if given.action == "accept" and content.get("allow") is True:
            return
        who = {"accept": "the person said no", "decline": "the person declined"}.get(
            given.action, "nobody answered in time"
        )
        why = f": {given.reason}" if given.reason else ""
        raise MCPError(f"sampling request from MCP server {server!r} was not approved ({who}{why})")
    if call.asked is None:
        call.asked = ElicitationRequest(
            server,
            _sampling_question(request),
            {**SAMPLING_FORM, SAMPLING_REQUEST_KEY: request.digest()},
        )
    raise MCPError(
        f"sampling request from MCP server {server!r} waits for a person's approval; "
        "the call runs again once they answered"
    )


def _sampling_question(request: SamplingRequest) -> str:
    """The question: what the model would read (system prompt, messages), in full."""
    tokens = f", up to {request.max_tokens} tokens" if request.max_tokens else ""
    count = len(request.messages)
    lines = [
        f"may it use the run's model to answer {request.excerpt()!r} ({count} message"
        f"{'s' if count != 1 else ''}{tokens})? (yes/no)",
        "what the model would read:",
    ]
    for message in _provider_messages(request):
        text = str(message["content"]).strip().replace("\n", "\n    ")
        lines.append(f"  {message['role']}: {text}")
    lines.append(f"request {request.digest()[:19]} (the answer covers this request only)")
    return "\n".join(lines)


def _provider_messages(request: SamplingRequest) -> list[Any]:
    """Sampling messages as the kernel's text messages (media described, not sent)."""
    messages: list[Any] = []
    if request.system_prompt:
        messages.append({"role": "system", "content": request.system_prompt})
    for message in request.messages:
        role = message.get("role") if message.get("role") in ("user", "assistant") else "user"
        content = message.get("content")
        items = content if isinstance(content, list) else [content]
        texts = []
        for item in items:
            part = convert_item(item)
            if isinstance(part, TextPart | ResourceTextPart):
                texts.append(part.text)
            elif isinstance(part, MediaPart):
                texts.append(part.placeholder())
        messages.append({"role": role, "content": "\n".join(texts)})
    return messages


def sampling_request(
    server: str, params: Mapping[str, Any], call: PendingCall | None = None
) -> SamplingRequest:
    """Read ``sampling/createMessage`` params; MCPError when they are malformed."""
    messages = params.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise MCPError("sampling/createMessage needs a list of messages")
    system = params.get("systemPrompt")
    max_tokens = params.get("maxTokens")
    return SamplingRequest(
        server=server,
        messages=tuple(messages),
        system_prompt=system if isinstance(system, str) else None,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        params=dict(params),
        call=call,
    )


def elicitation_request(
    server: str, params: Mapping[str, Any], call: PendingCall | None = None
) -> ElicitationRequest:
    """Read ``elicitation/create`` params; MCPError when they are malformed."""
    message = params.get("message")
    schema = params.get("requestedSchema")
    if not isinstance(message, str) or not isinstance(schema, dict):
        raise MCPError("elicitation/create needs a message and a requestedSchema object")
    return ElicitationRequest(server, message, dict(schema), dict(params), call)


def print_progress(stream: Any = None) -> ProgressCallback:
    """A progress sink for a terminal front end: one ``mcp: server/tool: 2/3 ...`` line each."""
    import sys

    out = stream or sys.stderr

    def show(update: ProgressUpdate) -> None:
        print(f"mcp: {update.describe()}", file=out, flush=True)

    return show


def log_progress(update: ProgressUpdate) -> None:
    """A progress sink that logs each update (``avo_mcp`` logger, INFO)."""
    logger.info("MCP progress %s", update.describe())


__all__ = [
    "ApprovalCallback",
    "ClientFeatures",
    "ElicitationHandler",
    "ElicitationRequest",
    "PendingCall",
    "ProgressCallback",
    "ProgressUpdate",
    "ProviderSampler",
    "ReplyElicitation",
    "SAMPLING_FORM",
    "SAMPLING_REQUEST_KEY",
    "ask_person",
    "SamplingHandler",
    "SamplingRequest",
    "elicitation_request",
    "log_progress",
    "print_progress",
    "sampling_request",
]
