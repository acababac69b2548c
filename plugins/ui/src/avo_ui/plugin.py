"""Entry point: the ``avo ui`` command (its code is imported only when it runs)."""

from __future__ import annotations

from avo.plugins import lazy_command, provides

ui_command = provides(
    lazy_command(
        "ui",
        "avo_ui.cli",
        help="see, follow, approve and compare runs in the browser (127.0.0.1 by default)",
        configure="configure",
        run="run",
    )
)
