"""The env-gated approval callback (v0.1 behaviour).

Tools listed in ``AVO_TOOLS_REQUIRE_APPROVAL`` (comma / whitespace / newline
separated) make the callback return False — the runtime then stops the run
with POLICY_DENIED while an operator gates the real decision outside the loop
(``on_require`` is called first). Every other tool is approved immediately.
The richer interactive callback is :func:`avo_permissions.build_approval_callback`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from avo.models import ToolCall
from avo_permissions.modes import parse_tool_list


def required_tool_names(environ: Mapping[str, str] | None = None) -> set[str]:
    """The tool names ``AVO_TOOLS_REQUIRE_APPROVAL`` lists."""
    env = os.environ if environ is None else environ
    return set(parse_tool_list(env.get("AVO_TOOLS_REQUIRE_APPROVAL")))


def build_env_approval_callback(
    environ: Mapping[str, str] | None = None,
    *,
    on_require: Callable[[ToolCall], None] | None = None,
) -> Callable[[ToolCall], bool]:
    """Deny (after ``on_require``) the listed tools; approve the rest."""
    required = required_tool_names(environ)

    def approve(call: ToolCall) -> bool:
        if call.name not in required:
            return True
        if on_require is not None:
            on_require(call)
        return False

    return approve


__all__ = ["build_env_approval_callback", "required_tool_names"]
