"""The ``avo`` console script (``avo = "avo.cli:main"``).

Startup stays tiny: ``avo --version`` imports no plugin and not even
argparse. Every subcommand, the kernel's own included, is a ``CommandSpec``
registered through the ``avo.commands`` entry-point group; the parser lists
command names from metadata and imports a command's plugin only when that
command is invoked.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not from typing: `avo --version` must stay tiny
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def _version() -> str:
    version = getattr(sys.modules.get("avo"), "__version__", None)
    if isinstance(version, str):
        return version
    from importlib import metadata

    try:
        return metadata.version("avo-kernel")
    except metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        return "unknown"


def main(argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None) -> int:
    """Run ``avo``; returns the exit code (2 for bad input, printed as one line ``avo: …``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--version"], ["-V"]):
        print(f"avo {_version()}")
        return 0
    import os

    env = os.environ if environ is None else environ
    if env.get("_AVO_COMPLETE"):
        from avo.cli.completion import complete

        return complete(env, args)
    from avo.cli._app import run_cli

    return run_cli(args, environ=environ)


__all__ = ["main"]
