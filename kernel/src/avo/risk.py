"""ToolRisk and ArgumentKind: how a tool is classified (stdlib only, so plugin specs
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


ARGUMENT_KIND_HINT = "x-avo-kind"
"""The JSON-schema keyword that declares an argument's kind in a tool's input schema
(``{"type": "string", "x-avo-kind": "path"}``); see ``ToolMetadata.argument_kinds``."""


__all__ = ["ARGUMENT_KIND_HINT", "ArgumentKind", "ToolRisk"]
