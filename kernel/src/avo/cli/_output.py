"""How commands print: data on stdout, progress and notes on stderr, JSON on request.

Tables and colour come from rich when it is installed and stdout is a
terminal (and neither ``NO_COLOR`` nor ``--no-color`` is set); otherwise
output is plain text with aligned columns, so pipes and scripts get stable
lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def rich_wanted(args: Any, stream: TextIO | None = None) -> bool:
    """True when rich may render on ``stream`` (a terminal, colour allowed, rich installed)."""
    target = stream if stream is not None else sys.stdout
    if not getattr(args, "avo_color", True) or not _isatty(target):
        return False
    env: Mapping[str, str] = getattr(args, "avo_environ", None) or {}
    if env.get("TERM") == "dumb":
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout."""
    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Aligned columns; the last column is left unpadded."""
    if not rows:
        return "  ".join(headers)
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers) - 1)]
    lines = []
    for row in [headers, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, str(row[-1])]).rstrip())
    return "\n".join(lines)


def print_table(
    args: Any,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    styles: Mapping[str, str] | None = None,
) -> None:
    """A table on stdout: rich on a terminal, plain columns otherwise.

    ``styles`` maps a cell value to a rich style (e.g. ``{"failed": "red"}``).
    """
    if rich_wanted(args):
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, header_style="bold", show_edge=False, pad_edge=False)
        for header in headers:
            table.add_column(header, overflow="fold")
        for row in rows:
            table.add_row(*[_styled(str(c), styles) for c in row])
        Console().print(table)
        return
    if title:
        print(title)
    print(plain_table(headers, rows))


def _styled(cell: str, styles: Mapping[str, str] | None) -> Any:
    if not styles:
        return cell
    from rich.text import Text

    style = next((s for key, s in styles.items() if cell == key or cell.startswith(key + " ")), "")
    return Text(cell, style=style)


def note(message: str, *, args: Any = None, style: str = "dim") -> None:
    """A line for the person at the terminal, on stderr (never mixed into the data)."""
    if args is not None and rich_wanted(args, sys.stderr):
        from rich.console import Console

        Console(stderr=True, highlight=False).print(message, style=style, markup=False)
        return
    print(message, file=sys.stderr, flush=True)


def short(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters (for table cells, never for errors)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = ["note", "plain_table", "print_json", "print_table", "rich_wanted", "short"]
