"""Plugin discovery and registration (pluggy over entry points).

Entry-point groups, one per plugin kind; the entry point's name is the name the
plugin registers, its value a pluggy plugin object (see :func:`provides`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avo.lazy import lazy_exports
from avo.plugins.specs import (
    HOOK_OF_KIND,
    KIND_OF_SPEC,
    PLUGIN_API_VERSION,
    BundleSpec,
    CommandSpec,
    EngineSpec,
    HookPluginSpec,
    MemorySpec,
    ModelInfo,
    NotifierSpec,
    PermissionSpec,
    ProviderCapabilities,
    ProviderSpec,
    SandboxSpec,
    ShaperSpec,
    SlashCommandSpec,
    Spec,
    StoreSpec,
    ToolSpec,
    lazy_command,
    lazy_slash_command,
    provides,
)

TOOL_GROUP = "avo.tools"
NOTIFIER_GROUP = "avo.notifiers"
PROVIDER_GROUP = "avo.providers"
STORE_GROUP = "avo.stores"
HOOK_GROUP = "avo.hooks"
PERMISSION_GROUP = "avo.permissions"
SANDBOX_GROUP = "avo.sandboxes"
COMMAND_GROUP = "avo.commands"
SHAPER_GROUP = "avo.shapers"
BUNDLE_GROUP = "avo.bundles"
SLASH_COMMAND_GROUP = "avo.slash_commands"
MEMORY_GROUP = "avo.memory"
ENGINE_GROUP = "avo.engines"

GROUP_OF_KIND: dict[str, str] = {
    "provider": PROVIDER_GROUP,
    "tool": TOOL_GROUP,
    "store": STORE_GROUP,
    "notifier": NOTIFIER_GROUP,
    "hook": HOOK_GROUP,
    "permission": PERMISSION_GROUP,
    "sandbox": SANDBOX_GROUP,
    "command": COMMAND_GROUP,
    "shaper": SHAPER_GROUP,
    "bundle": BUNDLE_GROUP,
    "slash_command": SLASH_COMMAND_GROUP,
    "memory": MEMORY_GROUP,
    "engine": ENGINE_GROUP,
}
ALL_GROUPS: tuple[str, ...] = tuple(GROUP_OF_KIND.values())

if TYPE_CHECKING:
    from avo.plugins.discovery import PluginEntry, discover, discover_all, names
    from avo.plugins.manager import PluginManager, PluginProblem

_LAZY = {
    "PluginEntry": "avo.plugins.discovery",
    "discover": "avo.plugins.discovery",
    "discover_all": "avo.plugins.discovery",
    "names": "avo.plugins.discovery",
    "PluginManager": "avo.plugins.manager",
    "PluginProblem": "avo.plugins.manager",
}


__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "ALL_GROUPS",
    "BUNDLE_GROUP",
    "COMMAND_GROUP",
    "ENGINE_GROUP",
    "GROUP_OF_KIND",
    "HOOK_GROUP",
    "HOOK_OF_KIND",
    "KIND_OF_SPEC",
    "MEMORY_GROUP",
    "NOTIFIER_GROUP",
    "PERMISSION_GROUP",
    "PLUGIN_API_VERSION",
    "PROVIDER_GROUP",
    "SANDBOX_GROUP",
    "SHAPER_GROUP",
    "SLASH_COMMAND_GROUP",
    "STORE_GROUP",
    "TOOL_GROUP",
    "BundleSpec",
    "CommandSpec",
    "EngineSpec",
    "HookPluginSpec",
    "MemorySpec",
    "NotifierSpec",
    "PermissionSpec",
    "PluginEntry",
    "PluginManager",
    "PluginProblem",
    "ModelInfo",
    "ProviderCapabilities",
    "ProviderSpec",
    "SandboxSpec",
    "ShaperSpec",
    "SlashCommandSpec",
    "Spec",
    "StoreSpec",
    "ToolSpec",
    "discover",
    "discover_all",
    "names",
    "lazy_command",
    "lazy_slash_command",
    "provides",
]
