"""The one top-level error handler of ``avo``: every failure is one line on stderr.

* an :class:`~avo.exceptions.AvoError` (bad input, a refused operation): ``avo:
  {message}``, exit 2;
* Ctrl-C outside a run: ``avo: interrupted``, exit 130;
* a closed pipe (``avo plugin show x | head``): silence, exit 141;
* standard input closed while a prompt waits: one line saying so, exit 2;
* an operating-system error (a missing file, a read-only directory): its
  message and the path, exit 2;
* anything else is a bug: ``avo: internal error: …`` and a hint to re-run with
  ``--debug``, exit 1.

``--debug`` (or ``AVO_DEBUG=1``) prints the traceback before that line.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Mapping

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def one_line(text: str) -> str:
    """``text`` with its lines joined, so an error never spills over several lines."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def say(message: str) -> None:
    """Print ``avo: {message}`` (one line) on stderr."""
    with contextlib.suppress(BrokenPipeError, ValueError):  # stderr itself may be gone
        print(f"avo: {one_line(message)}", file=sys.stderr, flush=True)


def debug_requested(argv: list[str], environ: Mapping[str, str]) -> bool:
    """``--debug`` anywhere before ``--``, or ``AVO_DEBUG`` set to a true value."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    flag = environ.get("AVO_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")
    return "--debug" in words or flag


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or str(exc) or type(exc).__name__
    where = exc.filename if exc.filename is not None else None
    return f"{reason}: {where}" if where is not None else reason


def guarded(body: Callable[[], int], *, debug: bool) -> int:
    """Run ``body`` and turn every failure into one line on stderr and an exit code."""
    from avo.exceptions import AvoError

    try:
        return body()
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_USAGE)
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        say("interrupted")
        return EXIT_INTERRUPTED
    except AvoError as exc:
        if debug:
            traceback.print_exc()
        say(str(exc) or type(exc).__name__)
        return EXIT_USAGE
    except EOFError:
        if debug:
            traceback.print_exc()
        say(
            "standard input ended while waiting for an answer; answer on a terminal, "
            "or pass the option that skips the question (e.g. --yes)"
        )
        return EXIT_USAGE
    except OSError as exc:
        if debug:
            traceback.print_exc()
        say(_os_error(exc))
        return EXIT_USAGE
    except Exception as exc:
        if debug:
            traceback.print_exc()
            say(f"internal error: {type(exc).__name__}: {exc}")
        else:
            say(
                f"internal error: {type(exc).__name__}: {exc} "
                "(run again with --debug to see the traceback, and please report it)"
            )
        return 1


__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "debug_requested",
    "guarded",
    "one_line",
    "say",
]
