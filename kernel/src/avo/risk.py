"""ToolRisk: how much a tool can change (stdlib only, so plugin specs import it cheaply).

Also importable from :mod:`avo.models`, where it is used by ``ToolMetadata``.
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


__all__ = ["ToolRisk"]
