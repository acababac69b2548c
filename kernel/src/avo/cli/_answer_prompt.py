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
  ``avo runs approve|deny|answer`` from any shell, then ``avo runs resume``.

The line is read in a daemon thread, so Ctrl-C is handled at once (the read
is abandoned; nothing waits for it at exit).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import TextIO

from avo.approval import TOOL_INPUT, Answer, HumanRequest, RequestKind

_YES = {"y", "yes"}
_NO = {"", "n", "no"}


async def _read_line(stdin: TextIO) -> str | None:
    """One line from ``stdin`` (None at end of input), without blocking the event loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str | None] = loop.create_future()

    def settle(value: str | None) -> None:
        if not future.done():
            future.set_result(value)

    def read() -> None:
        try:
            line = stdin.readline()
        except (OSError, ValueError):
            line = ""
        loop.call_soon_threadsafe(settle, line if line else None)

    threading.Thread(target=read, name="avo-answer-prompt", daemon=True).start()
    return await future


class TerminalAnswerer:
    """Asks on a terminal; see the module docstring for what each answer means."""

    def __init__(self, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin
        self.stdout = stdout

    def _write(self, text: str) -> None:
        out = self.stdout or sys.stderr
        out.write(text)
        out.flush()

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
