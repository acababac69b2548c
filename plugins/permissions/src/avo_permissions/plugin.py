"""Entry points: one permission mode each. A factory returns an approval callback.

``factory(settings, *, environ, tools)``: ``settings`` may list
``require_approval`` tool names (merged with ``AVO_TOOLS_REQUIRE_APPROVAL``)
and carry a ``prompter`` callable (default: the interactive terminal prompter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from avo.plugins import PermissionSpec, provides
from avo_permissions.modes import PermissionMode, PermissionPolicy, parse_tool_list


class PermissionSettings(BaseModel):
    """``[permissions.settings]``."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    require_approval: list[str] = []
    prompter: Any = None


def _factory_for(mode: PermissionMode) -> Any:
    def factory(
        settings: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        tools: Any = (),
    ) -> Any:
        from avo_permissions.callback import build_approval_callback

        parsed = PermissionSettings.model_validate(dict(settings or {}))
        env_list = parse_tool_list((environ or {}).get("AVO_TOOLS_REQUIRE_APPROVAL"))
        policy = PermissionPolicy(
            mode=mode,
            require_approval=tuple(dict.fromkeys([*parsed.require_approval, *env_list])),
        )
        return build_approval_callback(policy, tools=tools, prompter=parsed.prompter)

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
