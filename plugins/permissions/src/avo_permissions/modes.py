"""Permission modes: who decides whether a tool call may run.

Decisions come from each tool's **declared risk** (``ToolMetadata.risk``,
``inspect`` / ``modify`` / ``execute``), so a third-party tool is classified by
its own package; a tool that declares nothing, or that the callback was not
told about, is treated as ``execute`` — the most cautious class.

Decision table (``decide``), mirroring the reference's name tables with risk
classes in place of names (read-only = inspect, mutating = modify, shell =
execute):

=====================  =========  ==========================  =========
mode                   inspect    modify                      execute
=====================  =========  ==========================  =========
bypass_permissions     approve    approve                     approve
default                approve    ask                         ask
accept_edits           approve    approve                     ask
plan                   approve    deny until plan submitted,  ask
                                  then approve
=====================  =========  ==========================  =========

A tool named in ``require_approval`` (``AVO_TOOLS_REQUIRE_APPROVAL``) is always
asked, except under ``bypass_permissions``. ``submit_plan`` is approved
automatically and marks the plan as submitted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from avo.exceptions import ConfigError
from avo.models import ToolRisk

PLAN_TOOL_NAME = "submit_plan"


class PermissionMode(StrEnum):
    """The four permission modes."""

    DEFAULT = "default"
    ACCEPT_EDITS = "accept_edits"
    PLAN = "plan"
    BYPASS_PERMISSIONS = "bypass_permissions"


class Decision(StrEnum):
    """What a mode says about one call."""

    APPROVE = "approve"
    ASK = "ask"
    DENY = "deny"


class PermissionPolicy(BaseModel):
    """A mode plus the tools that always need a human's yes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: PermissionMode = PermissionMode.DEFAULT
    require_approval: tuple[str, ...] = ()


def decide(
    tool_name: str,
    mode: PermissionMode,
    *,
    risk: ToolRisk | None = None,
    plan_submitted: bool = False,
    require_approval: Iterable[str] = (),
) -> Decision:
    """The decision table above. ``risk=None`` means undeclared: treated as EXECUTE."""
    mode = PermissionMode(mode)
    effective = risk or ToolRisk.EXECUTE
    if mode is PermissionMode.BYPASS_PERMISSIONS:
        return Decision.APPROVE
    if tool_name in set(require_approval):
        return Decision.ASK
    if tool_name == PLAN_TOOL_NAME and mode is PermissionMode.PLAN:
        return Decision.APPROVE
    if effective is ToolRisk.EXECUTE:
        return Decision.ASK
    if effective is ToolRisk.INSPECT:
        return Decision.APPROVE
    # MODIFY
    if mode is PermissionMode.ACCEPT_EDITS:
        return Decision.APPROVE
    if mode is PermissionMode.PLAN:
        return Decision.APPROVE if plan_submitted else Decision.DENY
    return Decision.ASK


def should_require_approval(
    tool_name: str,
    mode: PermissionMode,
    *,
    plan_submitted: bool = False,
    require_approval: Iterable[str] = (),
    risk: ToolRisk | None = None,
) -> bool:
    """True when the call cannot be approved automatically (ask or deny)."""
    decision = decide(
        tool_name,
        mode,
        risk=risk,
        plan_submitted=plan_submitted,
        require_approval=require_approval,
    )
    return decision is not Decision.APPROVE


_SPLIT = re.compile(r"[\s,]+")


def parse_tool_list(text: str | None) -> tuple[str, ...]:
    """Names separated by commas, whitespace or newlines (duplicates dropped, order kept)."""
    names = [name for name in _SPLIT.split(text or "") if name]
    return tuple(dict.fromkeys(names))


def permission_policy_from_env(environ: Mapping[str, str] | None = None) -> PermissionPolicy:
    """``AVO_PERMISSION_MODE`` + ``AVO_TOOLS_REQUIRE_APPROVAL`` → PermissionPolicy."""
    import os

    env = os.environ if environ is None else environ
    raw = env.get("AVO_PERMISSION_MODE", "").strip().lower()
    try:
        mode = PermissionMode(raw) if raw else PermissionMode.DEFAULT
    except ValueError:
        choices = ", ".join(m.value for m in PermissionMode)
        raise ConfigError(
            f"AVO_PERMISSION_MODE={raw!r} is not a permission mode; choose one of: {choices}",
            key="AVO_PERMISSION_MODE",
        ) from None
    return PermissionPolicy(
        mode=mode, require_approval=parse_tool_list(env.get("AVO_TOOLS_REQUIRE_APPROVAL"))
    )


__all__ = [
    "PLAN_TOOL_NAME",
    "Decision",
    "PermissionMode",
    "PermissionPolicy",
    "decide",
    "parse_tool_list",
    "permission_policy_from_env",
    "should_require_approval",
]
