"""The terminal as one way to answer a paused run: ``Approve run_shell({...})? [y/N]:``.

When a run pauses for a person and ``avo run`` / ``avo runs resume`` has a
terminal, :class:`TerminalAnswerer` asks right there. The run is already
paused and durable when the question appears, so nothing is lost whatever
happens at the prompt:

- ``y`` / ``yes`` approves; ``n``, ``no`` or Enter denies; any other text
  denies with that text as the reason the model reads;
- a question takes a line of text (or one of its choices, by number or text);
  a tool's question with a form takes a JSON object (or the value of its one
  open field), checked before it is recorded; ``decline`` declines it;
- Ctrl-C, or the end of input, leaves the run paused: answer it later with
  ``avo runs approve|deny|answer`` from any shell, then ``avo runs resume``;
- while the prompt waits, ``avo runs approve|deny|answer`` from another shell
  answers it too: whichever answer is recorded first wins, and the prompt
  says so (:mod:`avo.runtime_waiting`).

The line is read in a daemon thread, so Ctrl-C is handled at once (the read
is abandoned; nothing waits for it at exit).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import sys
import threading
from typing import TextIO

from avo.approval import TOOL_INPUT, Answer, HumanRequest, RequestKind

_YES = {"y", "yes"}
_NO = {"", "n", "no"}


class _LineReader:
    """One daemon thread reading ``stream`` line by line for whoever waits for a line.

    A line typed before a prompt waits is kept for it (typing ahead works). A
    prompt that is withdrawn (the request was answered from another shell)
    drops what was typed for it, so that text never answers the next prompt;
    and no second thread ever reads the same stream.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[str | None]] | None = None
        self.pending: collections.deque[tuple[int, str]] = collections.deque()
        self.epoch = 0  # bumped when a prompt is withdrawn: older typed-ahead lines are dropped
        self.ended = False
        threading.Thread(target=self._run, name="avo-answer-prompt", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                line = self.stream.readline()
            except (OSError, ValueError):
                line = ""
            with self.lock:
                self.ended = not line
                waiter, self.waiter = self.waiter, None
                if waiter is None and line:
                    self.pending.append((self.epoch, line))
            if waiter is not None:
                loop, future = waiter
                with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                    loop.call_soon_threadsafe(_settle, future, line or None)
            if not line:
                return

    async def read(self) -> str | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str | None] = loop.create_future()
        with self.lock:
            while self.pending:
                epoch, line = self.pending.popleft()
                if epoch == self.epoch:
                    return line
            if self.ended:
                return None
            self.waiter = (loop, future)
        try:
            return await future
        except asyncio.CancelledError:
            with self.lock:
                self.epoch += 1  # withdrawn: what was typed for it answers nothing
            raise
        finally:
            with self.lock:
                if self.waiter is not None and self.waiter[1] is future:
                    self.waiter = None


def _settle(future: asyncio.Future[str | None], value: str | None) -> None:
    if not future.done():
        future.set_result(value)


_READERS: dict[int, _LineReader] = {}


async def _read_line(stdin: TextIO) -> str | None:
    """One line from ``stdin`` (None at end of input), without blocking the event loop."""
    reader = _READERS.get(id(stdin))
    if reader is None or reader.stream is not stdin:
        reader = _READERS[id(stdin)] = _LineReader(stdin)
    return await reader.read()


class TerminalAnswerer:
    """Asks on a terminal; see the module docstring for what each answer means."""

    def __init__(self, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin
        self.stdout = stdout

    def _write(self, text: str) -> None:
        out = self.stdout or sys.stderr
        out.write(text)
        out.flush()

    def notice(self, text: str) -> None:
        """Tell the person at the prompt what happened to the request it asked about."""
        self._write(f"\navo: {text}\n")

    async def __call__(self, request: HumanRequest) -> Answer | None:
        if request.kind is RequestKind.QUESTION:
            return await self._question(request)
        arguments = json.dumps(request.arguments, sort_keys=True, ensure_ascii=False)
        if request.reason:
            self._write(f"\n{request.reason}\n")
        if request.model_reason:
            self._write(f"the model says: {request.model_reason}\n")
        self._write(f"Approve {request.tool_name}({arguments})? [y/N]: ")
        line = await _read_line(self.stdin or sys.stdin)
        if line is None:
            self._write("\n")
            return None
        text = line.strip()
        if text.lower() in _YES:
            return Answer.approve(by="terminal")
        if text.lower() in _NO:
            return Answer.deny("the user said no at the prompt", by="terminal")
        return Answer.deny(text, by="terminal")

    async def _question(self, request: HumanRequest) -> Answer | None:
        self._write(f"\n{request.tool_name} asks: {request.question}\n")
        if request.schema is not None:
            return await self._form(request, request.schema)
        for number, choice in enumerate(request.choices, start=1):
            self._write(f"  {number}. {choice}\n")
        while True:
            self._write("answer: ")
            line = await _read_line(self.stdin or sys.stdin)
            if line is None:
                self._write("\n")
                return None
            text = line.strip()
            if request.choices:
                if text.isdigit() and 1 <= int(text) <= len(request.choices):
                    return Answer.reply(request.choices[int(text) - 1], by="terminal")
                if text in request.choices:
                    return Answer.reply(text, by="terminal")
                self._write(f"pick one of 1-{len(request.choices)} (or type a choice)\n")
                continue
            if text:
                return Answer.reply(text, by="terminal")

    async def _form(self, request: HumanRequest, schema: dict[str, object]) -> Answer | None:
        from avo.forms import describe_form, form_content

        self._write(f"fields: {describe_form(schema)}\n(a JSON object; 'decline' to refuse)\n")
        while True:
            self._write("answer: ")
            line = await _read_line(self.stdin or sys.stdin)
            if line is None:
                self._write("\n")
                return None
            text = line.strip()
            if text.lower() == "decline" and request.rule == TOOL_INPUT:
                return Answer.deny("declined at the prompt", by="terminal")
            try:
                form_content(schema, text)
            except ValueError as exc:
                self._write(f"{exc}\n")
                continue
            return Answer.reply(text, by="terminal")


def terminal_answerer() -> TerminalAnswerer | None:
    """A TerminalAnswerer when stdin is a terminal; None (the run just pauses) otherwise."""
    try:
        interactive = sys.stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    return TerminalAnswerer() if interactive else None


__all__ = ["TerminalAnswerer", "terminal_answerer"]
