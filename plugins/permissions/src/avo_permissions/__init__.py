"""avo permission modes and rules: approval callbacks that read each call's arguments."""

from __future__ import annotations

from avo_permissions.approval import build_env_approval_callback, required_tool_names
from avo_permissions.callback import (
    ApprovalRecord,
    InteractivePrompter,
    PermissionCallback,
    approval_callback_from_env,
    build_approval_callback,
    build_mode_callback,
)
from avo_permissions.modes import (
    PLAN_TOOL_NAME,
    Decision,
    PermissionMode,
    PermissionPolicy,
    decide,
    parse_tool_list,
    permission_policy_from_env,
    should_require_approval,
)
from avo_permissions.paths import SENSITIVE_EXEMPT, SENSITIVE_PATTERNS
from avo_permissions.rules import PermissionDecision, PermissionRule, RuleSet

__all__ = [
    "PLAN_TOOL_NAME",
    "SENSITIVE_EXEMPT",
    "SENSITIVE_PATTERNS",
    "PermissionDecision",
    "PermissionRule",
    "RuleSet",
    "ApprovalRecord",
    "approval_callback_from_env",
    "Decision",
    "InteractivePrompter",
    "PermissionCallback",
    "PermissionMode",
    "PermissionPolicy",
    "build_approval_callback",
    "build_env_approval_callback",
    "build_mode_callback",
    "decide",
    "parse_tool_list",
    "permission_policy_from_env",
    "required_tool_names",
    "should_require_approval",
]
