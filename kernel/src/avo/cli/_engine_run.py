"""``avo run --engine NAME`` for an engine that drives runs elsewhere: submit, then follow.

The run is handed to the engine (its workers compose their own runtime) and
followed in the event store: progress lines as its events appear, the answer
on stdout, the summary on stderr, the same exit codes as a run driven here.
A run that pauses for a person ends the command with exit 3 (the engine keeps
the run waiting: ``avo runs approve|deny|answer`` continue it there). Ctrl-C
stops following; the run goes on. The session flags work as for a run driven
here: the workers' runtime starts the run from the session's transcript.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from avo.cli._run_report import EXIT_INTERRUPTED
from avo.exceptions import AvoError


async def submit_and_follow(args: argparse.Namespace, task: str, config: Any, engine: Any) -> int:
    """Submit ``task`` to ``engine``, follow the run in the store, report it."""
    from avo.cli._context import open_store
    from avo.cli._output import note
    from avo.cli._progress import ProgressPrinter
    from avo.cli._run_report import report
    from avo.cli._session_flags import choose_session
    from avo.engines import RunSubmission
    from avo.models import new_id
    from avo.ops._engine import driver_check, follow

    quiet = args.quiet or args.json
    verbosity = int(getattr(args, "avo_verbose", 0) or 0)
    progress = ProgressPrinter(
        verbosity=verbosity, tools=not quiet and sys.stderr.isatty(), notes=True
    )
    store, location = await open_store(args, must_exist=False)
    try:
        # the answer as it arrives, as a run driven here prints it (not with --json)
        streams = not args.json and callable(getattr(engine, "stream_text", None))
        session_id = await choose_session(args, store, config.config.session.id, location)
        if session_id is not None:
            await _check_session_free(store, session_id)
        run_id = new_id()
        submission = RunSubmission(
            task=task,
            run_id=run_id,
            system_prompt=config.config.system_prompt,
            resolved=config,
            workspace=args.workspace,
            session_id=session_id,
            stream=streams,
        )
        await engine.submit(submission)
        if not quiet:
            print(
                f"avo: run {run_id} submitted to the {engine.name} engine (store {location})",
                file=sys.stderr,
                flush=True,
            )
        shown = _Shown()
        watching = asyncio.create_task(shown.watch(engine, run_id)) if streams else None
        try:
            result = await follow(
                store,
                run_id,
                on_event=progress.avo_event_appended,
                driver=driver_check(engine, run_id),
            )
        except (KeyboardInterrupt, asyncio.CancelledError):
            print(
                f"\navo: stopped following run {run_id}; it goes on on the {engine.name} "
                f"workers (avo runs inspect {run_id}, avo runs cancel {run_id})",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        finally:
            if watching is not None:
                watching.cancel()
                with contextlib.suppress(asyncio.CancelledError, AvoError):
                    await watching
        if result.output and not args.json:
            shown.finish(result.output)
        if session_id is not None and not quiet and (args.session or args.continue_session):
            note(f"avo: session {session_id} (continue it with: avo run --continue)", args=args)
        return await report(args, result, store, location, progress.failures)
    finally:
        await store.close()


class _Shown:
    """The streamed text printed so far, per model call (from the engine's ``stream_text``)."""

    def __init__(self) -> None:
        self.calls: dict[str, str] = {}
        self.last = ""

    def write(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    async def watch(self, engine: Any, run_id: str) -> None:
        async for call, text in engine.stream_text(run_id):
            before = self.calls.get(call)
            if before is None and self.last and not self.last.endswith("\n"):
                self.write("\n")  # a new call's text starts on a line of its own
                before = ""
            before = before or ""
            if text.startswith(before):
                self.write(text[len(before) :])
            self.calls[call] = self.last = text

    def finish(self, output: str) -> None:
        """Print what the stream did not show of the answer (all of it if nothing streamed)."""
        if self.last and output.startswith(self.last):
            rest = output[len(self.last) :]
        else:
            rest = ("\n" if self.last and not self.last.endswith("\n") else "") + output
        self.write(rest if rest.endswith("\n") else rest + "\n")


async def _check_session_free(store: Any, session_id: str) -> None:
    """SessionError when the session's last run has not ended (checked before submitting:
    the workers would refuse the run after the command started following it)."""
    from avo.exceptions import SessionError
    from avo.sessions import session_store_of
    from avo.state import is_terminal

    sessions = session_store_of(store)
    record = await sessions.get_session(session_id) if sessions is not None else None
    last = record.last_run_id if record is not None else None
    head = await store.get_run(last) if last is not None else None
    if head is not None and not is_terminal(head.state):
        raise SessionError(
            f"session {session_id!r} is busy: its run {last} is {head.state.value}; "
            f"resume it (avo runs resume {last}) or cancel it before continuing",
            session_id=session_id,
        )


__all__ = ["submit_and_follow"]
