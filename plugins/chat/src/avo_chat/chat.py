"""One chat: a workspace, its configuration, a session of runs, and the turns typed into it.

Everything here runs on the kernel thread (:mod:`avo_chat.driver`). A turn is
one run of the session (``AgentRuntime.run(task, session_id=...)``) driven
under the run's lease, so ``avo runs``, ``avo cost``, replay and the web UI
see chat turns like any other run. An interrupted turn stays resumable: the
next message continues it (the message joins its transcript before its next
model call), and ``avo resume`` continues it from another process. The chat
keeps no copy of run state: sessions, runs, usage and answers are read from
the event store and written only through the kernel's operations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avo.exceptions import AvoError, SessionError
from avo.models import new_id
from avo.state import RunState, is_terminal
from avo_chat.mentions import Attachment, compose_message, expand
from avo_chat.observer import ChatObserver
from avo_chat.state import Drafts, workspace_dir
from avo_chat.undo import UndoJournal
from avo_chat.usage import Pricer, SessionUsage, fill, money

if TYPE_CHECKING:
    from avo.approval import Answer, HumanRequest
    from avo.models import RunResult
    from avo_chat.screen import Screen
    from avo_chat.slash import CommandRegistry

INTERRUPT_REASON = "interrupted by the user (Ctrl-C in the chat)"


@dataclass
class ChatOptions:
    """How ``avo chat`` / ``avo resume`` were asked to start."""

    workspace: Path
    environ: Mapping[str, str]
    config: str | None = None
    database: str | None = None
    provider: str | None = None
    model: str | None = None
    permission_mode: str | None = None
    session: str | None = None
    latest: bool = False
    resume_paused: bool = True


@dataclass
class Overrides:
    """What the user switched in this chat (``/model``, ``/provider``, ``/permissions``)."""

    provider: str | None = None
    model: str | None = None
    permission_mode: str | None = None
    instructions: list[str] = field(default_factory=list)


class ChatAnswerer:
    """The chat as a run's answerer: asks inline (:meth:`Chat.answer`) and, when the
    question was answered elsewhere first (another shell, the web UI), says in one line
    who answered and how before the run goes on (the kernel withdraws the prompt)."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.asked: dict[str, str] = {}  # call id -> tool name, of the requests asked here

    async def __call__(self, request: HumanRequest) -> Answer | None:
        self.asked[request.tool_call_id] = request.tool_name
        return await self.chat.answer(request)

    def notice(self, text: str) -> None:
        """What happened to the request asked here (``call X was approved by bob via cli``)."""
        for call_id, name in self.asked.items():
            text = text.replace(f"call {call_id} ", f"{name} (call {call_id[:8]}) ", 1)
        if not text.startswith(("not recorded", "run ")):
            text = f"answered elsewhere: {text}"
        self.chat.screen.say(text, style="warn")


class Chat:
    """The state of one chat and the operations its front ends and commands call."""

    def __init__(self, options: ChatOptions, screen: Screen) -> None:
        self.options = options
        self.screen = screen
        self.workspace = options.workspace.resolve()
        self.environ = options.environ
        self.overrides = Overrides(options.provider, options.model, options.permission_mode)
        self.state_dir = workspace_dir(self.environ, self.workspace)
        self.history_path = self.state_dir / "history"
        self.drafts = Drafts(self.state_dir)
        self.journal = UndoJournal(self.state_dir / "undo", self.workspace)
        self.usage = SessionUsage()
        self.attachments: list[Attachment] = []
        self.session_id: str | None = None
        self.composition: Any = None
        self.store: Any = None
        self.commands: CommandRegistry | None = None
        self.quitting = False
        self.always_allowed: set[str] = set()  # tools answered "a" (always) in this chat
        self.current_run: str | None = None
        self._driving: Any = None  # the runtime driving the current run
        self._observed: set[int] = set()
        self._steered: list[Any] = []
        self._next: list[str] = []
        self._pricer: Pricer | None = None
        self.ours: set[str] = set()  # runs the current runtime's provider has driven
        self.answerer = ChatAnswerer(self)

    # -- composition ------------------------------------------------------------------

    @property
    def runtime(self) -> Any:
        """The runtime new turns run on."""
        return self.composition.runtime

    @property
    def manager(self) -> Any:
        """This chat's plugin manager."""
        return self.composition.manager

    @property
    def config(self) -> Any:
        """The resolved ``AvoConfig`` (with this chat's switches applied)."""
        return self.composition.config

    @property
    def busy(self) -> bool:
        """True while a turn is working."""
        return self.current_run is not None

    def _resolve(self) -> Any:
        from avo.compose.resolve import resolve_config

        return resolve_config(
            self.options.config,
            environ=self.environ,
            cwd=self.workspace,
            database=self.options.database,
            provider=self.overrides.provider,
            model=self.overrides.model,
            permission_mode=self.overrides.permission_mode,
        )

    def compose(self) -> None:
        """(Re)build the runtime from the configuration and this chat's switches."""
        from avo.compose import compose

        options: dict[str, Any] = {
            "resolved": self._resolve(),
            "stream_callback": self.screen.stream,
            "workspace": self.workspace,
        }
        if self.store is not None:
            options["event_store"] = self.store
            options["manager"] = self.manager
        options["answerer"] = self.answerer  # a pause for a person is asked here, inline
        composition = compose(**options)
        if self.store is None:
            self.store = composition.event_store
        self.composition = composition
        self.ours = set()
        self._observe(composition.manager)
        self._pricer = Pricer(composition.config.budget or {}, self.environ, composition.manager)

    def _observe(self, manager: Any) -> None:
        if id(manager) in self._observed:
            return
        self._observed.add(id(manager))
        observer = ChatObserver(
            self.screen,
            self.usage,
            self.journal,
            self._metadata,
            self.refresh_status,
            self._delivered,
        )
        manager.register(observer, name=f"avo-chat-observer-{len(self._observed)}")

    def _metadata(self, name: str) -> Any:
        for runtime in (self._driving, self.composition.runtime if self.composition else None):
            if runtime is not None and name in runtime.tools:
                return runtime.tools.get(name).metadata
        return None

    # -- opening and closing ------------------------------------------------------------

    async def open(self) -> None:
        """Compose, open the store, pick the session, continue an interrupted turn."""
        from avo_chat import sessions
        from avo_chat.slash import CommandRegistry

        self.compose()
        self.commands = CommandRegistry.load(self.manager)
        if not self.screen.plain:
            self.screen.say(
                f"avo chat · {self.model_label()} · /help lists commands · Ctrl-D leaves",
                style="dim",
            )
        await sessions.open_session(self)
        self.refresh_status()

    async def close(self) -> None:
        """Close the event store."""
        if self.composition is not None:
            close = getattr(self.store, "close", None)
            if close is not None:
                await close()

    # -- status ---------------------------------------------------------------------

    def model_label(self) -> str:
        """``provider/model`` of the runtime new turns use."""
        runtime = self.composition.runtime
        configured = self.config.provider
        name = configured.name if configured else getattr(runtime.provider, "name", None) or "?"
        model = getattr(runtime.provider, "model", None)
        return f"{name}/{model}" if model and model != name else str(name)

    def cost_text(self) -> str:
        """The session's cost so far (``$?`` when no price is known)."""
        if self._pricer is None or not self.usage.total.total_tokens:
            return ""
        total = self.usage.price(self._pricer)
        return money(total, self.usage.partial)

    def context_text(self) -> str:
        """How full the model's window was at the last call."""
        try:
            window = self.composition.runtime.context_window
            size = getattr(window, "tokens", None) or getattr(window, "size", None)
        except Exception:
            size = None
        return fill(self.usage.last_input, size if isinstance(size, int) else None)

    def refresh_status(self) -> None:
        """Push the status line to the screen."""
        from avo_chat.screen import Status

        mode = self.config.permission.mode if self.config.permission else "default"
        self.screen.set_status(
            Status(
                session=(self.session_id or "")[:8],
                model=self.model_label(),
                tokens=self.usage.total.total_tokens,
                cost=self.cost_text(),
                context=self.context_text(),
                busy="working" if self.busy else "",
                attachments=len(self.attachments),
                mode=mode,
            )
        )

    # -- turns ----------------------------------------------------------------------

    def system_prompt(self) -> str | None:
        """The configured system prompt plus what ``/instructions`` added."""
        parts = [p for p in [self.config.system_prompt, *self.overrides.instructions] if p]
        return "\n\n".join(parts) or None

    def prepare(self, text: str) -> str:
        """The message the model gets: the text, its mentions, then pending attachments."""
        message, mentioned = expand(text, self.workspace)
        attached = [*mentioned, *self.attachments]
        self.attachments = []
        for item in mentioned:
            self.screen.say(f"@ attached {item.label}", style="dim")
        return compose_message(message, attached)

    async def turn(self, text: str) -> RunResult | None:
        """Send ``text`` as the next turn of the session (continuing an interrupted one)."""
        from avo_chat import sessions

        message = self.prepare(text)
        paused = await sessions.unfinished_run(self)
        if paused is not None:
            return await self.continue_run(paused, message)
        await sessions.sync_provider_state(self)
        run_id = new_id()
        return await self._drive(run_id, self._start(run_id, message))

    async def _start(self, run_id: str, message: str) -> RunResult:
        from avo.ops.leases import holding_lease, owner_name

        runtime = self.composition.runtime
        self.ours.add(run_id)
        async with holding_lease(self.store, run_id, owner=owner_name("avo-chat")) as writer:
            runtime.event_store = writer
            self._driving = runtime
            try:
                return await runtime.run(  # type: ignore[no-any-return]
                    message,
                    system_prompt=self.system_prompt(),
                    run_id=run_id,
                    session_id=self.session_id,
                )
            finally:
                runtime.event_store = self.store

    async def continue_run(self, run_id: str, message: str | None = None) -> RunResult | None:
        """Resume an interrupted (or waiting) turn; ``message`` joins it before its next call."""
        from avo.ops import steer
        from avo.ops.leases import owner_name
        from avo.ops.resume import resume

        def composed(composition: Any) -> None:
            self._observe(composition.manager)
            self._driving = composition.runtime
            if message:
                steer(run_id, message, runtime=composition.runtime, source="chat", on_resume=True)

        self.screen.say(f"continuing the interrupted turn {run_id[:8]}", style="dim")
        return await self._drive(
            run_id,
            resume(
                self.store,
                run_id,
                environ=self.environ,
                stream_callback=self.screen.stream,
                owner=owner_name("avo-chat"),
                on_composed=composed,
                answerer=self.answerer,
            ),
        )

    async def _drive(self, run_id: str, work: Any) -> RunResult | None:
        self.current_run = run_id
        self.refresh_status()
        try:
            result: RunResult = await work
        except AvoError as exc:
            self.screen.end_stream()
            self.screen.say(f"error: {exc}", style="error")
            return None
        finally:
            self.current_run = None
            self._driving = None
            self.screen.end_stream()
            self.refresh_status()
        self._report(result)
        await self._send_undelivered()
        return result

    def _report(self, result: RunResult) -> None:
        status = result.status.value
        if status == "completed":
            if not result.output:
                self.screen.say("(the turn ended with no answer)", style="dim")
            return
        if status == "paused":
            self.screen.say(
                f"turn {result.run_id[:8]} paused: type to continue it, or leave and run "
                "`avo resume` later",
                style="warn",
            )
            return
        reason = result.stop_reason.value if result.stop_reason else status
        self.screen.say(
            f"turn {status} ({reason}): {result.error or ''}".rstrip(": "), style="error"
        )

    # -- steering and interrupting ----------------------------------------------------

    def steer(self, text: str) -> None:
        """Queue ``text`` for the working turn; it joins before its next model call."""
        from avo.exceptions import SteeringError
        from avo.ops import steer

        run_id, runtime = self.current_run, self._driving
        if run_id is None or runtime is None:
            self._next.append(text)
            return
        try:
            ticket = steer(run_id, self.prepare(text), runtime=runtime, source="chat")
        except SteeringError:
            self._next.append(text)
            self.screen.say("↳ the turn is ending; sent as your next message", style="dim")
            return
        self._steered.append(ticket)
        self.screen.say("↳ queued: the agent reads it before its next step", style="dim")

    def _delivered(self, message_id: str) -> None:
        self._steered = [t for t in self._steered if t.message_id != message_id]

    async def _send_undelivered(self) -> None:
        waiting = [t.text for t in self._steered if not t.delivered] + self._next
        self._steered, self._next = [], []
        if waiting and not self.quitting:
            self.screen.say(
                "↳ the turn ended before reading your message: sending it now", style="dim"
            )
            await self.turn("\n\n".join(waiting))

    def interrupt(self) -> bool:
        """Interrupt the working turn (it stays resumable); False when none is working."""
        runtime = self._driving
        return bool(runtime is not None and runtime.interrupt(INTERRUPT_REASON))

    # -- approvals ------------------------------------------------------------------

    async def answer(self, request: HumanRequest) -> Answer | None:
        """The runtime paused for a person: ask inline with the diff or command shown.

        A tool the person answered ``a`` (always) for earlier in this chat is
        approved without asking, with that reason recorded on the approval.
        """
        from avo.approval import Answer, RequestKind
        from avo_chat.approvals import ALWAYS_REASON, preview

        self.screen.end_stream()
        approval = request.kind is RequestKind.APPROVAL
        if approval and request.tool_name in self.always_allowed:
            self.screen.say(f"✓ {request.tool_name} allowed: you said always", style="dim")
            return Answer.approve(ALWAYS_REASON, by="chat")
        shown = preview(request, self.workspace, self._metadata(request.tool_name))
        answer = await self.screen.ask_approval(request, shown)
        if approval and answer is not None and answer.reason == ALWAYS_REASON:
            self.always_allowed.add(request.tool_name)
            self.screen.say(
                f"{request.tool_name} is allowed without asking until this chat ends "
                "(/permissions shows it)",
                style="dim",
            )
        return answer

    # -- switching --------------------------------------------------------------------

    def switch(self, **changes: Any) -> None:
        """Apply ``/model``, ``/provider`` or ``/permissions`` for the next turn."""
        before = Overrides(**vars(self.overrides))
        for key, value in changes.items():
            setattr(self.overrides, key, value)
        try:
            self.compose()
        except AvoError:
            self.overrides = before
            raise
        self.refresh_status()

    def attach(self, label: str, text: str) -> None:
        """Offer ``text`` to the next turn (shown as attached in the status line)."""
        self.attachments.append(Attachment(label, text))
        self.refresh_status()


def check_not_busy(chat: Chat, what: str) -> None:
    """Refuse ``what`` while a turn is working."""
    if chat.busy:
        raise SessionError(f"{what} waits for the turn to finish (Ctrl-C interrupts it)")


def last_state(run: Any) -> str:
    """``interrupted`` / ``paused`` / a terminal state, for recaps."""
    if run is None:
        return "?"
    if is_terminal(run.state):
        return str(run.state.value)
    return "paused" if run.state is RunState.PAUSED else "interrupted"


__all__ = ["INTERRUPT_REASON", "Chat", "ChatOptions", "Overrides", "check_not_busy", "last_state"]
