"""Entry points: one permission mode each. A factory returns an approval callback.

``factory(settings, *, environ, tools, workspace)``. ``settings`` is the
``[permission]`` table of avo.toml (its ``settings`` merged in): ``allow`` /
``ask`` / ``deny`` rules (see :mod:`avo_permissions.rules`), ``workspace`` (the
directory relative path rules and path arguments are resolved against;
default: the composition's workspace, else the current directory),
``sensitive_paths`` (globs added to the built-in sensitive list),
``require_approval`` tool names (merged with ``AVO_TOOLS_REQUIRE_APPROVAL``)
and a ``prompter`` callable (default: the interactive terminal prompter).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.plugins import PermissionSpec, provides
from avo_permissions.modes import PermissionMode, PermissionPolicy, parse_tool_list
from avo_permissions.rules import PermissionRule


class PermissionSettings(BaseModel):
    """``[permission]`` settings of the built-in modes."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    require_approval: list[str] = []
    prompter: Any = None
    allow: list[PermissionRule] = Field(default_factory=list)
    ask: list[PermissionRule] = Field(default_factory=list)
    deny: list[PermissionRule] = Field(default_factory=list)
    workspace: str | None = None
    sensitive_paths: list[str] = Field(default_factory=list)


def _factory_for(mode: PermissionMode) -> Any:
    def factory(
        settings: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        tools: Any = (),
        workspace: str | None = None,
    ) -> Any:
        from avo_permissions.callback import build_approval_callback
        from avo_permissions.rules import RuleSet

        parsed = PermissionSettings.model_validate(dict(settings or {}))
        env_list = parse_tool_list((environ or {}).get("AVO_TOOLS_REQUIRE_APPROVAL"))
        policy = PermissionPolicy(
            mode=mode,
            require_approval=tuple(dict.fromkeys([*parsed.require_approval, *env_list])),
        )
        rules = RuleSet(
            allow=parsed.allow,
            ask=parsed.ask,
            deny=parsed.deny,
            workspace=parsed.workspace or workspace or os.getcwd(),
            sensitive_paths=parsed.sensitive_paths,
        )
        return build_approval_callback(policy, tools=tools, prompter=parsed.prompter, rules=rules)

    factory.__name__ = f"build_{mode.value}_callback"
    return factory


_DESCRIPTIONS = {
    PermissionMode.DEFAULT: "Inspect tools run; edits and commands ask first.",
    PermissionMode.ACCEPT_EDITS: "Inspect and edit tools run; commands ask first.",
    PermissionMode.PLAN: "Read-only until a plan is submitted; then edits run, commands ask.",
    PermissionMode.BYPASS_PERMISSIONS: "Everything runs without asking (trusted sandboxes only).",
}


def _spec(mode: PermissionMode) -> Any:
    return provides(
        PermissionSpec(
            name=mode.value,
            factory=_factory_for(mode),
            description=_DESCRIPTIONS[mode],
            settings_model=PermissionSettings,
        )
    )


default = _spec(PermissionMode.DEFAULT)
accept_edits = _spec(PermissionMode.ACCEPT_EDITS)
plan = _spec(PermissionMode.PLAN)
bypass_permissions = _spec(PermissionMode.BYPASS_PERMISSIONS)
