"""``avo chat`` on a terminal: prompt_toolkit reads, rich renders, the kernel works on its thread.

The screen is the terminal's scrollback plus a small live area above the
input: finished pieces (your entries, answer blocks, tool calls, notices) are
printed once above it; the part of the answer still streaming, the tools
still running (with their elapsed time) and a spinner are drawn in the live
area; the input line stays active the whole time (type while the agent works
to steer it), with the status line below it.

Keys: Enter sends, Alt-Enter (or Esc Enter) adds a line, pasted text keeps
its lines, Tab completes /commands, @paths and tool names, Up/Down walk this
workspace's history, Ctrl-C interrupts a turn (the run stays resumable) or
clears the input, a second Ctrl-C or Ctrl-D leaves, Ctrl-L clears the screen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prompt_toolkit.application import Application, run_in_terminal
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.filters import Condition, has_completions
from prompt_toolkit.formatted_text import ANSI, FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, merge_key_bindings
from prompt_toolkit.key_binding.defaults import load_key_bindings
from prompt_toolkit.layout import (
    ConditionalContainer,
    Float,
    FloatContainer,
    HSplit,
    Layout,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.layout.processors import BeforeInput
from prompt_toolkit.styles import Style

from avo_chat.approvals import parse_approval, parse_reply
from avo_chat.chat import Chat, ChatOptions
from avo_chat.completion import ChatCompleter
from avo_chat.dispatch import handle, handle_busy
from avo_chat.driver import Driver
from avo_chat.render import MARK, Renderer, running, split_blocks
from avo_chat.screen import Status, ToolView

if TYPE_CHECKING:
    from prompt_toolkit.key_binding import KeyPressEvent

    from avo.approval import Answer, HumanRequest
    from avo_chat.approvals import Preview

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
STYLE = Style.from_dict(
    {
        "status": "reverse",
        "status.busy": "reverse bold",
        "prompt": "bold cyan",
        "question": "bold yellow",
        "live.dim": "#888888",
    }
)


@dataclass
class _Question:
    prompt: str
    future: concurrent.futures.Future[str | None]


class TerminalUI:
    """The prompt_toolkit application and the :class:`Screen` the kernel thread talks to."""

    plain = False

    def __init__(self, options: ChatOptions, driver: Driver) -> None:
        color = not options.environ.get("NO_COLOR") and not options.environ.get("AVO_NO_COLOR")
        self.renderer = Renderer(color=bool(color))
        self.driver = driver
        self.chat = Chat(options, self)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.status = Status()
        self.tool_names: list[str] = []
        self.live_text = ""  # the answer block still streaming
        self._live_ansi: str | None = None
        self._live_width = 0
        self.tools: dict[str, ToolView] = {}
        self.question: _Question | None = None
        self.work: concurrent.futures.Future[Any] | None = None
        self.work_started = 0.0
        self.queued: list[str] = []
        self.ctrl_c = 0
        self._gap = False  # a blank line before the next answer block (after tool lines)
        self._pending: list[str] = []  # committed, waiting for the terminal
        self.opening_error: BaseException | None = None
        self.app = self._build()

    # -- Screen (called from the kernel thread) ------------------------------------

    @property
    def width(self) -> int:
        try:
            return int(self.app.output.get_size().columns)
        except Exception:
            return 80

    def _ui(self, function: Any, *args: Any) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        if self.driver.on_kernel_thread:
            loop.call_soon_threadsafe(function, *args)
        else:
            function(*args)

    def stream(self, text: str) -> None:
        self._ui(self._stream, text)

    def end_stream(self) -> None:
        self._ui(self._flush_live)

    def tool_started(self, view: ToolView) -> None:
        self._ui(self._tool_started, view)

    def tool_finished(self, view: ToolView) -> None:
        self._ui(self._tool_finished, view)

    def tool_paused(self, view: ToolView) -> None:
        self._ui(self._tool_paused, view)

    def say(self, text: str, *, style: str = "") -> None:
        self._ui(self._commit_notice, text, style)

    def markdown(self, text: str) -> None:
        self._ui(lambda: self._commit(self.renderer.markdown(text, self.width)))

    def show(self, renderable: Any) -> None:
        self._ui(lambda: self._commit(self.renderer.ansi(renderable, self.width)))

    def set_status(self, status: Status) -> None:
        self._ui(self._set_status, status)

    def clear(self) -> None:
        self._ui(self.app.renderer.clear)

    async def ask_approval(self, request: HumanRequest, preview: Preview) -> Answer | None:
        self._ui(lambda: self._commit(self.renderer.preview(preview, self.width)))
        if preview.kind == "question":
            while True:
                reply = parse_reply(
                    await self._ask(f"answer (Ctrl-C: later) {MARK} "),
                    preview.choices,
                    preview.form,
                )
                if not isinstance(reply, str):
                    return reply
                self.say(reply, style="warn")
        answer = parse_approval(
            await self._ask(f"approve? y / n / a (always) / a reason to refuse {MARK} ")
        )
        if answer is None:
            self.say(
                "no answer: the turn stays paused (type to continue it, or avo resume)",
                style="warn",
            )
        return answer

    async def ask(self, question: str) -> str | None:
        return await self._ask(f"{question} {MARK} ")

    async def _ask(self, prompt: str) -> str | None:
        future: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        question = _Question(prompt, future)
        self._ui(self._set_question, question)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:  # withdrawn (answered elsewhere): stop asking
            self._ui(self._withdraw_question, question)
            raise

    # -- the UI thread's side -------------------------------------------------------

    def _commit(self, ansi: str) -> None:
        """Print ``ansi`` above the input; until it is printed it shows in the live area."""
        text = ansi if ansi.endswith("\n") else ansi + "\n"

        def write() -> None:
            sys.stdout.write(text)
            sys.stdout.flush()
            if self._pending and self._pending[0] is text:
                self._pending.pop(0)

        if self.app.is_running:
            self._pending.append(text)
            run_in_terminal(write)
        else:
            write()

    def _commit_notice(self, text: str, style: str) -> None:
        self._flush_live()
        self._commit(self.renderer.notice(text, style, self.width))

    def _commit_markdown(self, text: str) -> None:
        gap, self._gap = ("\n" if self._gap else ""), False
        self._commit(gap + self.renderer.markdown(text, self.width))

    def _stream(self, text: str) -> None:
        self.live_text += text
        cut = split_blocks(self.live_text)
        if cut:
            done, self.live_text = self.live_text[:cut], self.live_text[cut:]
            if done.strip():
                self._commit_markdown(done)
        self._live_ansi = None
        self.app.invalidate()

    def _flush_live(self) -> None:
        if self.live_text.strip():
            self._commit_markdown(self.live_text)
        self.live_text = ""
        self._live_ansi = None
        self.app.invalidate()

    def _tool_started(self, view: ToolView) -> None:
        self._flush_live()
        self.tools[view.call_id] = view
        self.app.invalidate()

    def _tool_finished(self, view: ToolView) -> None:
        self.tools.pop(view.call_id, None)
        self._commit(self.renderer.tool(view, self.width))
        self._gap = True
        self.app.invalidate()

    def _tool_paused(self, view: ToolView) -> None:
        self.tools.pop(view.call_id, None)  # its question says what it waits for
        self.app.invalidate()

    def _set_status(self, status: Status) -> None:
        self.status = status
        with contextlib.suppress(Exception):
            self.tool_names = list(self.chat.runtime.tools.names())
        self.app.invalidate()

    def _set_question(self, question: _Question) -> None:
        self.question = question
        self.app.invalidate()

    def _withdraw_question(self, question: _Question) -> None:
        if self.question is question:
            self.question = None
            self.app.invalidate()

    @property
    def busy(self) -> bool:
        return self.work is not None and not self.work.done()

    # -- layout ---------------------------------------------------------------------

    def _live(self) -> Any:
        parts: list[tuple[str, str]] = []
        if self._pending:  # printed once the terminal is free; shown meanwhile
            parts.extend(ANSI("".join(self._pending)).__pt_formatted_text__())
        if self.live_text:
            width = self.width
            if self._live_ansi is None or width != self._live_width:
                self._live_ansi = self.renderer.markdown(self.live_text, width).rstrip("\n")
                self._live_width = width
            rows = max(3, int(self.app.output.get_size().rows) - 6)
            lines = self._live_ansi.split("\n")[-rows:]
            parts.extend(ANSI("\n".join(lines)).__pt_formatted_text__())
            parts.append(("", "\n"))
        frame = SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
        for view in self.tools.values():
            parts.append(("class:live.dim", running(view, frame) + "\n"))
        if self.busy and not self.live_text and not self.tools and self.question is None:
            took = time.monotonic() - self.work_started
            parts.append(
                (
                    "class:live.dim",
                    f"  {frame} working {took:.1f}s · Ctrl-C interrupts · type to steer\n",
                )
            )
        return FormattedText(parts)

    def _prompt(self) -> Any:
        if self.question is not None:
            return [("class:question", self.question.prompt)]
        return [("class:prompt", f"{MARK} ")]

    def _status_line(self) -> Any:
        style = "class:status.busy" if self.busy else "class:status"
        text = self.status.plain()
        if self.busy:
            text = f"● working {time.monotonic() - self.work_started:.0f}s · " + text
        return [(style, " " + text.ljust(max(0, self.width - 1)))]

    def _build(self) -> Application[Any]:
        history: Any = InMemoryHistory()
        with contextlib.suppress(OSError):
            self.chat.state_dir.mkdir(parents=True, exist_ok=True)
            history = FileHistory(str(self.chat.history_path))
        self.buffer = Buffer(
            multiline=True,
            history=history,
            completer=ChatCompleter(self),
            complete_while_typing=Condition(self._completing),
            enable_history_search=False,
        )
        draft = self.chat.drafts.read()
        if draft:
            self.buffer.text = draft
        live = Window(FormattedTextControl(self._live), dont_extend_height=True, wrap_lines=True)
        field = Window(
            BufferControl(self.buffer, input_processors=[BeforeInput(self._prompt)]),
            height=Dimension(min=1, max=12),
            dont_extend_height=True,
            wrap_lines=True,
        )
        status = Window(FormattedTextControl(self._status_line), height=1)
        body = HSplit(
            [
                ConditionalContainer(live, filter=Condition(self._has_live)),
                field,
                status,
            ]
        )
        root = FloatContainer(
            body,
            floats=[Float(xcursor=True, ycursor=True, content=CompletionsMenu(max_height=10))],
        )
        return Application(
            layout=Layout(root, focused_element=field),
            key_bindings=merge_key_bindings([load_key_bindings(), self._keys()]),
            style=STYLE,
            full_screen=False,
            mouse_support=False,
            erase_when_done=False,
        )

    def _has_live(self) -> bool:
        return bool(
            self._pending or self.live_text or self.tools or (self.busy and self.question is None)
        )

    def _completing(self) -> bool:
        text = self.buffer.document.text_before_cursor
        return (
            text.startswith("/") and " " not in text
        ) or self.buffer.document.get_word_before_cursor(WORD=True).startswith("@")

    # -- keys -------------------------------------------------------------------------

    def _keys(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("enter", filter=has_completions & Condition(self._completion_chosen))
        def _choose(event: KeyPressEvent) -> None:
            self.buffer.complete_state = None

        @keys.add("enter")
        def _send(event: KeyPressEvent) -> None:
            self._submit()

        @keys.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            self.buffer.insert_text("\n")

        @keys.add("c-c")
        def _interrupt(event: KeyPressEvent) -> None:
            self._ctrl_c()

        @keys.add("c-d")
        def _leave(event: KeyPressEvent) -> None:
            if self.question is not None:
                self._answer(None)
            elif not self.buffer.text:
                self._exit()
            else:
                self.buffer.delete()

        @keys.add("c-l")
        def _clear(event: KeyPressEvent) -> None:
            self.app.renderer.clear()

        return keys

    def _completion_chosen(self) -> bool:
        state = self.buffer.complete_state
        return state is not None and state.current_completion is not None

    def _answer(self, text: str | None) -> None:
        question, self.question = self.question, None
        if question is not None and not question.future.done():
            question.future.set_result(text)
        self.app.invalidate()

    def _submit(self) -> None:
        text = self.buffer.text
        if self.question is not None:
            self.buffer.reset()
            self._commit(self.renderer.entry(text or "(no)", self.width))
            self._answer(text)
            return
        if not text.strip():
            return
        self.ctrl_c = 0
        self.buffer.append_to_history()
        self.buffer.reset()
        if not self.busy:
            self._start(text)  # first, so the kernel thread works while the entry is printed
        elif self.chat.current_run is not None:
            self.driver.submit(handle_busy(self.chat, text))
        else:
            self.queued.append(text)
        self._commit(self.renderer.entry(text, self.width))

    def _start(self, text: str) -> None:
        self.work_started = time.monotonic()
        self.work = self.driver.submit(handle(self.chat, text))
        self.work.add_done_callback(lambda _: self._ui(self._work_done))
        self.app.invalidate()

    def _work_done(self) -> None:
        work = self.work
        if work is not None and work.exception() is not None:
            error = work.exception()
            self._commit_notice(f"error: {type(error).__name__}: {error}", "error")
        self.ctrl_c = 0
        if self.chat.quitting:
            self._exit()
            return
        if self.queued:
            self._start(self.queued.pop(0))
        self.app.invalidate()

    def _ctrl_c(self) -> None:
        if self.question is not None:
            self.buffer.reset()
            self._answer(None)
            return
        self.ctrl_c += 1
        if self.busy:
            if self.ctrl_c > 1:
                self._commit_notice(
                    "leaving; the interrupted turn stays resumable (avo resume)", "warn"
                )
                self._exit()
                return
            if self.chat.current_run is not None:
                self.driver.call_soon(self.chat.interrupt)
                self._commit_notice("interrupting the turn… (Ctrl-C again leaves)", "warn")
            else:
                self._commit_notice("a command is working; Ctrl-C again leaves", "warn")
            return
        if self.buffer.text:
            self.buffer.reset()
            self.ctrl_c = 0
            return
        if self.ctrl_c > 1:
            self._exit()
            return
        self._commit_notice("press Ctrl-C again or Ctrl-D to leave", "dim")

    def _exit(self) -> None:
        self._flush_live()  # what is still streaming goes to the scrollback, once
        self.tools.clear()
        if self.app.is_running:
            with contextlib.suppress(Exception):  # already leaving
                self.app.exit()

    # -- running ----------------------------------------------------------------------

    async def main(self) -> int:
        """Open the chat, run the application until the user leaves, close the chat."""
        self.loop = asyncio.get_running_loop()
        opening = self.driver.submit(self.chat.open())
        self.work, self.work_started = opening, time.monotonic()
        opening.add_done_callback(lambda _: self._ui(self._opened))
        ticker = asyncio.ensure_future(self._tick())
        try:
            await self.app.run_async()
        finally:
            ticker.cancel()
        if self.chat.current_run is not None:  # leaving mid-turn: pause it durably first
            self.driver.call_soon(self.chat.interrupt)
        if self.work is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.wrap_future(self.work), 10)
        return 0

    async def _tick(self) -> None:
        """Redraw ten times a second while something moves (spinners, elapsed times)."""
        while True:
            await asyncio.sleep(0.1)
            if self.busy or self.tools:
                self.app.invalidate()

    def _opened(self) -> None:
        work = self.work
        error = work.exception() if work is not None else None
        if error is not None:
            self.opening_error = error
            self.app.erase_when_done = True  # the error alone is shown (one line on stderr)
            self._exit()
            return
        self._work_done()


def run_tty(options: ChatOptions) -> int:
    """``avo chat`` on a terminal; returns the exit status."""
    driver = Driver().start()
    ui = TerminalUI(options, driver)
    try:
        code = asyncio.run(ui.main())
        if ui.opening_error is not None:
            raise ui.opening_error
        return code
    finally:
        with contextlib.suppress(Exception):
            driver.run(ui.chat.close())
        driver.stop()


__all__ = ["TerminalUI", "run_tty"]
