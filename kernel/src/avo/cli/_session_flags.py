"""``avo run``'s session flags: ``--session ID``, ``--continue``, ``--no-session``.

Every ``avo run`` belongs to a session, so the next one can continue it:
``--continue`` picks the store's most recently used session, ``--session ID``
a named one (created on first use), and without either a run starts a new
session of its own (``[session] id`` in avo.toml names a default instead).
``--no-session`` runs outside any session, and so does any run whose store
keeps no sessions (unless a flag asked for one: that is an error).
"""

from __future__ import annotations

import argparse
from typing import Any

from avo.exceptions import SessionError


def add_session_flags(parser: argparse.ArgumentParser) -> None:
    """Add the session flags to ``avo run``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--session",
        metavar="ID",
        default=None,
        help="continue session ID (a new ID starts it); see avo sessions list",
    )
    group.add_argument(
        "--continue",
        dest="continue_session",
        action="store_true",
        help="continue the most recent session in this store",
    )
    group.add_argument("--no-session", action="store_true", help="run outside any session")


async def choose_session(
    args: Any, store: Any, configured: str | None, location: str
) -> str | None:
    """The session this ``avo run`` belongs to (None: no session)."""
    from avo.models import new_id
    from avo.sessions import check_session_id, session_store_of

    if getattr(args, "no_session", False):
        return None
    sessions = session_store_of(store)
    wanted = getattr(args, "session", None)
    continuing = getattr(args, "continue_session", False)
    if sessions is None:
        if wanted or continuing:
            flag = f"--session {wanted}" if wanted else "--continue"
            raise SessionError(
                f"{flag}: the event store at {location} does not keep sessions; use a sqlite, "
                "postgres or memory store, or drop the flag"
            )
        return None
    if wanted:
        return check_session_id(wanted)
    if continuing:
        listed = await sessions.list_sessions()
        if not listed:
            raise SessionError(
                f"--continue: there is no session in {location} yet; start one with "
                'avo run "TASK" (or avo run --session NAME "TASK")'
            )
        return listed[0].session_id
    if configured:
        return check_session_id(configured)
    return new_id()


__all__ = ["add_session_flags", "choose_session"]
