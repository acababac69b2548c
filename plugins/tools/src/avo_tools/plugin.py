"""Entry points: one ``ToolSpec`` per tool, each with the risk its metadata declares.

Importing this module is cheap: builders (and httpx, for web_fetch) are
imported inside the factories. Workspace tools take ``settings.workspace`` (the
directory used when no ``bind_workspace`` is active); run_shell / lint /
test_runner also take ``settings.sandbox`` (an ``avo.sandboxes`` plugin name)
and ``settings.sandbox_settings``, e.g. in ``avo.toml``::

    tools = [
        {name = "read_file", settings = {workspace = "."}},
        {name = "run_shell", settings = {workspace = ".", sandbox = "bubblewrap"}},
    ] ``task`` has no entry point: it needs its
parent runtime, so build it with :func:`avo_tools.task_tool.task_tool`.
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel, ConfigDict

from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides


class WebFetchSettings(BaseModel):
    """``[tools.web_fetch.settings]``: addresses explicitly allowed (literal IPs only)."""

    model_config = ConfigDict(extra="forbid")
    allow_networks: list[str] = []
    max_redirects: int = 5


class WorkspaceToolSettings(BaseModel):
    """Settings of a workspace tool: the workspace used when none is bound."""

    model_config = ConfigDict(extra="forbid")
    workspace: str | None = None


class ShellToolSettings(WorkspaceToolSettings):
    """Settings of run_shell / lint / test_runner: also the sandbox (an ``avo.sandboxes`` name).

    Without one, the working sandbox with the highest priority is used
    (Docker when an engine answers, else bubblewrap).
    """

    sandbox: str | None = None
    sandbox_settings: dict[str, Any] = {}


def _sandbox(name: str | None, settings: dict[str, Any], environ: Any = None) -> Any:
    """The named sandbox, or (``None``) the working one with the highest priority."""
    from avo.exceptions import ConfigError
    from avo.plugins.manager import PluginManager

    manager = PluginManager(environ=environ)
    if name is None:
        manager.load_kind("sandbox")
        candidates = sorted(
            manager.specs("sandbox").values(),
            key=lambda spec: (-getattr(spec, "priority", 0), spec.name),
        )
        reasons = []
        for candidate in candidates:
            probe = getattr(candidate, "probe", None)
            problem = probe(environ if environ is not None else {}) if probe else None
            if problem is None:
                spec = candidate
                break
            reasons.append(f"{candidate.name}: {problem}")
        else:
            found = "; ".join(reasons) or "no avo.sandboxes plugin is installed (avo-sandbox)"
            raise ConfigError(
                f"shell tools need a sandbox and none works here ({found}); install one, "
                'or name it in the tool\'s settings (sandbox = "bubblewrap")',
                key="sandbox",
            )
    else:
        spec = manager.get("sandbox", name)
    if spec.settings_model is not None:
        settings = spec.settings_model.model_validate(settings).model_dump()
    return spec.factory(settings)


def _builder(module: str, function: str, settings_model: type[BaseModel] | None) -> Any:
    def factory(
        settings: dict[str, Any] | None = None,
        *,
        environ: Any = None,
        workspace: str | None = None,
    ) -> Any:
        """Build the tool; ``workspace`` (the composition's directory) is the default workspace."""
        builder = getattr(importlib.import_module(f"avo_tools.{module}"), function)
        if settings_model is None:
            return builder()
        parsed = settings_model.model_validate(settings or {})
        kwargs: dict[str, Any] = {"workspace": getattr(parsed, "workspace", None) or workspace}
        if isinstance(parsed, ShellToolSettings):
            kwargs["sandbox"] = _sandbox(parsed.sandbox, parsed.sandbox_settings, environ)
        return builder(**kwargs)

    factory.__name__ = f"build_{function}"
    return factory


def _web_fetch_factory(settings: dict[str, Any] | None = None) -> Any:
    from avo_tools.egress import EgressPolicy
    from avo_tools.web_tools import web_fetch_tool

    parsed = WebFetchSettings.model_validate(settings or {})
    policy = EgressPolicy(
        allow_networks=tuple(parsed.allow_networks), max_redirects=parsed.max_redirects
    )
    return web_fetch_tool(policy=policy)


_CATALOG: tuple[tuple[str, str, str, ToolRisk, str], ...] = (
    ("read_file", "file_tools", "read_file_tool", ToolRisk.INSPECT, "Read a workspace file."),
    ("write_file", "file_tools", "write_file_tool", ToolRisk.MODIFY, "Write a workspace file."),
    ("edit_file", "file_tools", "edit_file_tool", ToolRisk.MODIFY, "Exact-string file edit."),
    ("batch_replace", "file_tools", "batch_replace_tool", ToolRisk.MODIFY, "Multi-file edits."),
    ("glob", "search_tools", "glob_tool", ToolRisk.INSPECT, "Find files by glob."),
    ("grep", "search_tools", "grep_tool", ToolRisk.INSPECT, "Regex search in files."),
    ("symbols", "search_tools", "symbols_tool", ToolRisk.INSPECT, "Python symbol index."),
    ("workspace_map", "search_tools", "workspace_map_tool", ToolRisk.INSPECT, "Workspace map."),
    ("git_status", "git_tools", "git_status_tool", ToolRisk.INSPECT, "git status."),
    ("git_diff", "git_tools", "git_diff_tool", ToolRisk.INSPECT, "git diff."),
    ("git_commit", "git_tools", "git_commit_tool", ToolRisk.MODIFY, "git commit."),
    ("lint", "shell_tool", "lint_tool", ToolRisk.INSPECT, "Lint in the sandbox."),
    ("test_runner", "shell_tool", "test_runner_tool", ToolRisk.INSPECT, "pytest in the sandbox."),
    ("run_shell", "shell_tool", "run_shell_tool", ToolRisk.EXECUTE, "Shell in the sandbox."),
    ("submit_plan", "plan_tools", "submit_plan_tool", ToolRisk.INSPECT, "Submit a plan."),
    ("plan_tasks", "plan_tools", "plan_tasks_tool", ToolRisk.INSPECT, "Task list."),
    ("ask_user", "ask_tool", "ask_user_tool", ToolRisk.INSPECT, "Ask the user a question."),
    ("web_search", "web_tools", "web_search_tool", ToolRisk.EXECUTE, "Web search."),
)

_SHELL = frozenset({"run_shell", "lint", "test_runner"})
_WORKSPACE = frozenset(
    {
        "read_file",
        "write_file",
        "edit_file",
        "batch_replace",
        "glob",
        "grep",
        "symbols",
        "workspace_map",
        "git_status",
        "git_diff",
        "git_commit",
    }
)


def _settings_model(name: str) -> type[BaseModel] | None:
    if name in _SHELL:
        return ShellToolSettings
    return WorkspaceToolSettings if name in _WORKSPACE else None


SPECS: dict[str, ToolSpec] = {
    name: ToolSpec(
        name=name,
        factory=_builder(module, fn, _settings_model(name)),
        risk=risk,
        description=desc,
        settings_model=_settings_model(name),
    )
    for name, module, fn, risk, desc in _CATALOG
}
SPECS["web_fetch"] = ToolSpec(
    name="web_fetch",
    factory=_web_fetch_factory,
    risk=ToolRisk.EXECUTE,
    description="Fetch a public URL through the egress policy.",
    settings_model=WebFetchSettings,
)

read_file = provides(SPECS["read_file"])
write_file = provides(SPECS["write_file"])
edit_file = provides(SPECS["edit_file"])
batch_replace = provides(SPECS["batch_replace"])
glob = provides(SPECS["glob"])
grep = provides(SPECS["grep"])
symbols = provides(SPECS["symbols"])
workspace_map = provides(SPECS["workspace_map"])
git_status = provides(SPECS["git_status"])
git_diff = provides(SPECS["git_diff"])
git_commit = provides(SPECS["git_commit"])
lint = provides(SPECS["lint"])
test_runner = provides(SPECS["test_runner"])
run_shell = provides(SPECS["run_shell"])
submit_plan = provides(SPECS["submit_plan"])
plan_tasks = provides(SPECS["plan_tasks"])
ask_user = provides(SPECS["ask_user"])
web_fetch = provides(SPECS["web_fetch"])
web_search = provides(SPECS["web_search"])
