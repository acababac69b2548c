"""ToolRisk, ToolEffect and ArgumentKind: how a tool is classified (stdlib only, so plugin specs
import them cheaply).

Also importable from :mod:`avo.models`, where ``ToolMetadata`` uses them.
"""

from __future__ import annotations

from enum import StrEnum


class ToolRisk(StrEnum):
    """How much a tool can change: the permission modes decide by this class.

    A tool that declares no risk is treated as EXECUTE, the most cautious class.
    """

    INSPECT = "inspect"
    MODIFY = "modify"
    EXECUTE = "execute"


class ArgumentKind(StrEnum):
    """What one of a tool's arguments holds, so permission rules can read it.

    - ``path``: a file or directory, relative to the workspace or absolute;
    - ``url``: an http(s) URL (rules match its host);
    - ``command``: a shell command line (rules match its command prefixes);
    - ``text``: free text the model wrote (a commit message, a query, file content).
    """

    PATH = "path"
    URL = "url"
    COMMAND = "command"
    TEXT = "text"


class ToolEffect(StrEnum):
    """What running the same tool call again does to the world outside the run.

    An engine that may dispatch a call twice (a worker died mid-call, a retry)
    reads it to decide whether it may: see ``docs/temporal.md``.

    - ``pure``: no effect besides its result (reads, lookups): running it again
      is harmless;
    - ``idempotent``: an effect, but running it again leaves the world as
      running it once does (write this content to this file, set a key);
    - ``non_idempotent``: every run acts again (append a line, send a mail,
      charge a card): never run twice without someone deciding to.

    A tool that declares none counts as ``pure`` when its risk is ``inspect``
    and ``non_idempotent`` otherwise.
    """

    PURE = "pure"
    IDEMPOTENT = "idempotent"
    NON_IDEMPOTENT = "non_idempotent"


ARGUMENT_KIND_HINT = "x-avo-kind"
"""The JSON-schema keyword that declares an argument's kind in a tool's input schema
(``{"type": "string", "x-avo-kind": "path"}``); see ``ToolMetadata.argument_kinds``."""


__all__ = ["ARGUMENT_KIND_HINT", "ArgumentKind", "ToolEffect", "ToolRisk"]
