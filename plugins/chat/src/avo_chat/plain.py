"""``avo chat`` over pipes (no terminal): a line in, the answer out, no colours.

Each line read from stdin is one entry (a message, ``/command`` or
``!command``). Answers and command output go to stdout as plain text (the
Markdown as the model wrote it); tool calls, notices and questions go to
stderr, so ``printf 'fix the test\\n/cost\\n' | avo chat > answers.txt`` keeps
the answers apart. An approval reads its answer from the next input line
(``y``, ``n``, or a reason); at the end of input it stays paused for
``avo resume``. Ctrl-C (SIGINT) interrupts the turn, a second one quits.
"""

from __future__ import annotations

import asyncio
import io
import json
import queue
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from avo_chat.approvals import parse_approval, parse_reply
from avo_chat.render import took as took_text

if TYPE_CHECKING:
    from avo.approval import Answer, HumanRequest
    from avo_chat.approvals import Preview
    from avo_chat.screen import Status, ToolView


class LineReader:
    """Reads stdin lines on a daemon thread; :meth:`get` returns None at end of input."""

    def __init__(self, stream: TextIO) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stream = stream
        threading.Thread(target=self._read, name="avo-chat-stdin", daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self._stream:
                self._lines.put(line.rstrip("\n"))
        except (OSError, ValueError):
            pass
        self._lines.put(None)

    def get(self) -> str | None:
        """The next line (None once input ended)."""
        line = self._lines.get()
        if line is None:
            self._lines.put(None)  # every later call sees the end too
        return line

    async def next_line(self, poll: float = 0.05) -> str | None:
        """The next line, awaited without a thread of its own: a wait that is cancelled (a
        prompt withdrawn because someone answered elsewhere) takes no line from the next."""
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                await asyncio.sleep(poll)
                continue
            if line is None:
                self._lines.put(None)
            return line


class PlainScreen:
    """A :class:`~avo_chat.screen.Screen` for pipes."""

    plain = True
    width = 100

    def __init__(self, reader: LineReader, out: TextIO | None = None, err: TextIO | None = None):
        self.reader = reader
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._lock = threading.Lock()
        self._open_line = False
        self.errors = 0

    def _write(self, stream: TextIO, text: str) -> None:
        with self._lock:
            if stream is self.err and self._open_line:
                self.out.write("\n")
                self.out.flush()
                self._open_line = False
            stream.write(text)
            stream.flush()

    def stream(self, text: str) -> None:
        with self._lock:
            self.out.write(text)
            self.out.flush()
            self._open_line = not text.endswith("\n") if text else self._open_line

    def end_stream(self) -> None:
        with self._lock:
            if self._open_line:
                self.out.write("\n")
                self.out.flush()
                self._open_line = False

    def tool_started(self, view: ToolView) -> None:
        self._write(self.err, f"→ {view.name} {view.summary}".rstrip() + "\n")

    def tool_paused(self, view: ToolView) -> None:
        """Nothing to take back on a pipe: the question follows the call's start line."""

    def tool_finished(self, view: ToolView) -> None:
        took = f" ({took_text(view.elapsed)})" if view.duration_ms is not None else ""
        if view.ok:
            lines = [f"✓ {view.name}{took}"]
        else:
            lines = [f"✗ {view.name} failed{took}: {view.error}"]
        if view.ok:
            lines += [f"  │ {line}" for line in view.output]
            if view.more_lines:
                lines.append(f"  … {view.more_lines} more lines")
        self._write(self.err, "\n".join(lines) + "\n")

    def say(self, text: str, *, style: str = "") -> None:
        if style == "error":
            self.errors += 1
        stream = self.err if style in ("dim", "warn", "error") else self.out
        self._write(stream, text + "\n")

    def markdown(self, text: str) -> None:
        self._write(self.out, text.rstrip("\n") + "\n")

    def show(self, renderable: Any) -> None:
        from rich.console import Console

        buffer = io.StringIO()
        console = Console(file=buffer, no_color=True, color_system=None, width=self.width)
        console.print(renderable)
        text = "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())
        self._write(self.out, text + "\n")

    def set_status(self, status: Status) -> None:
        return None

    async def _line(self) -> str | None:
        return await self.reader.next_line()

    async def ask_approval(self, request: HumanRequest, preview: Preview) -> Answer | None:
        if preview.kind == "question":
            self._write(self.err, f"{preview.title}: {preview.body}\n")
            for number, choice in enumerate(preview.choices, start=1):
                self._write(self.err, f"  {number}. {choice}\n")
            while True:
                self._write(self.err, "answer: ")
                reply = parse_reply(await self._line(), preview.choices, preview.form)
                if not isinstance(reply, str):
                    return reply
                self._write(self.err, reply + "\n")
        lines = [f"approve {preview.title}?"]
        if preview.reason:
            lines.append(f"  why: {preview.reason}")
        if preview.model_reason:
            lines.append(f"  the model says: {preview.model_reason}")
        lines += [f"  {line}" for line in preview.body.rstrip("\n").splitlines()]
        self._write(self.err, "\n".join(lines) + "\n[y/N/a=always] ")
        line = await self._line()
        self._write(self.err, f"{line}\n" if line is not None else "")
        if line is None:
            self._write(self.err, "\n(no answer: the turn stays paused; avo resume asks again)\n")
        return parse_approval(line)

    async def ask(self, question: str) -> str | None:
        self._write(self.err, question + " ")
        return await self._line()


def dumps(value: Any) -> str:
    """JSON for data commands on a pipe."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


__all__ = ["LineReader", "PlainScreen"]
