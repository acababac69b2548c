"""Rendering for the terminal: Markdown, tool lines, notices and approvals as ANSI text (rich).

The terminal front end prints finished pieces above its input (the
scrollback) and keeps the piece still streaming in a live area; both are
rendered here, to ANSI strings, at the terminal's width. Streaming Markdown
is cut at block boundaries (a blank line outside a code fence): finished
blocks go to the scrollback once, only the block still growing is drawn
again as tokens arrive, so long answers cost the same per token as short ones.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from avo_chat.approvals import Preview
    from avo_chat.screen import ToolView

MARK = "\u276f"
"""The prompt's mark (and what marks your entries in the scrollback)."""

STYLES = {"dim": "dim", "warn": "yellow", "error": "bold red", "ok": "green", "": ""}


class Renderer:
    """rich to ANSI at a given width (colour off with ``NO_COLOR`` / ``--no-color``)."""

    def __init__(self, *, color: bool = True) -> None:
        self.color = color

    def ansi(self, renderable: Any, width: int) -> str:
        """``renderable`` rendered to an ANSI string ``width`` columns wide."""
        from rich.console import Console

        buffer = io.StringIO()
        console = Console(
            file=buffer,
            force_terminal=True,
            width=max(20, width),
            color_system="256" if self.color else None,
            no_color=not self.color,
            highlight=False,
            emoji=False,
            legacy_windows=False,
        )
        console.print(renderable)
        return buffer.getvalue()

    def markdown(self, text: str, width: int) -> str:
        """Markdown as the terminal shows it (code highlighted, lists, tables)."""
        from rich.markdown import Markdown

        return self.ansi(Markdown(text, code_theme="ansi_dark", hyperlinks=False), width)

    def notice(self, text: str, style: str, width: int) -> str:
        """A notice line in its style."""
        from rich.text import Text

        return self.ansi(Text(text, style=STYLES.get(style, style)), width)

    def entry(self, text: str, width: int) -> str:
        """What the user typed, as the conversation shows it."""
        from rich.text import Text

        line = Text(MARK + " ", style="bold cyan")
        line.append(text)
        return "\n" + self.ansi(line, width)

    def tool(self, view: ToolView, width: int) -> str:
        """A finished tool call: ✓/✗, name, key arguments, time, folded output."""
        from rich.text import Text

        line = Text("  ")
        if view.ok:
            line.append("✓ ", style="green")
        else:
            line.append("✗ ", style="bold red")
        line.append(view.name, style="bold")
        if view.summary:
            line.append(" " + view.summary, style="cyan")
        line.append(f"  {took(view.elapsed)}", style="dim")
        if not view.ok and view.error:
            line.append(f"\n    {view.error}", style="red")
        else:
            for output in view.output:
                line.append(f"\n    │ {output}", style="dim")
            if view.more_lines:
                line.append(
                    f"\n    … {view.more_lines} more lines (/inspect shows all)", style="dim"
                )
        return self.ansi(line, width)

    def preview(self, preview: Preview, width: int) -> str:
        """An approval: what would happen, why it asks, the diff or command."""
        from rich.console import Group
        from rich.panel import Panel
        from rich.syntax import Syntax
        from rich.text import Text

        parts: list[Any] = []
        if preview.reason:
            parts.append(Text(f"why: {preview.reason}", style="yellow"))
        if preview.model_reason:
            parts.append(Text(f"the model says: {preview.model_reason}", style="dim"))
        if preview.kind == "diff":
            parts.append(
                Syntax(
                    preview.body.rstrip("\n"),
                    "diff",
                    theme="ansi_dark",
                    background_color="default",
                    word_wrap=True,
                )
            )
        elif preview.kind == "command":
            parts.append(
                Syntax(
                    preview.body,
                    "bash",
                    theme="ansi_dark",
                    background_color="default",
                    word_wrap=True,
                )
            )
        elif preview.kind == "question":
            parts.append(Text(preview.body))
            for number, choice in enumerate(preview.choices, start=1):
                parts.append(Text(f"  {number}. {choice}"))
        else:
            parts.append(
                Syntax(
                    preview.body,
                    "json",
                    theme="ansi_dark",
                    background_color="default",
                    word_wrap=True,
                )
            )
        title = preview.title if preview.kind == "question" else f"approve {preview.title}?"
        return self.ansi(
            Panel(Group(*parts), title=title, title_align="left", border_style="yellow"), width
        )


def took(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def running(view: ToolView, frame: str) -> str:
    """The live line of a tool still running."""
    summary = f" {view.summary}" if view.summary else ""
    return f"  {frame} {view.name}{summary}  {took(view.elapsed)}"


def split_blocks(text: str) -> int:
    """Where the finished Markdown blocks of ``text`` end (0: none finished yet).

    A block ends at a blank line outside a fenced code block; the text after
    the last such line is still growing.
    """
    fence: str | None = None
    cut = 0
    position = 0
    lines = text.split("\n")
    for index, line in enumerate(lines[:-1]):  # the last line is not finished
        position += len(line) + 1
        stripped = line.strip()
        marker = stripped[:3]
        if marker in ("```", "~~~"):
            if fence is None:
                fence = marker
            elif marker == fence:
                fence = None
                cut = position
            continue
        if fence is None and stripped == "" and index > 0:
            cut = position
    return cut


__all__ = ["MARK", "Renderer", "running", "split_blocks", "took"]
