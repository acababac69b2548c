"""The ``mcp`` bundle: MCP servers named in avo.toml start with each run.

Enabled by ``[mcp]`` in avo.toml::

    [mcp]
    user_servers = true                  # also the servers of ~/.avo/mcp.json (avo mcp add)
    [mcp.servers.files]
    command = ["python", "-m", "avo_mcp.servers.filesystem", "--root", "."]
    [mcp.servers.search]
    url = "https://example.com/mcp"
    headers = {Authorization = "Bearer ${SEARCH_TOKEN}"}

For every run (and every resume) the servers start together; their tools join
the run's registry as ``<server>__<tool>`` (stable across runs, so a resumed
run finds the same names). A server that fails to start, or a broken
``mcp.json``, is recorded as a problem of the bundle and the run goes on
without it. When the run ends — however it ends — every started server is
stopped and reaped. An avo.toml server replaces a ``mcp.json`` one of the same
name. ``${VAR}`` in commands, env, urls and headers is expanded from the
runtime's environment when the server starts.

What avo's client offers these servers (declared in ``initialize``):

- roots: the run's workspace;
- sampling, answered by the run's own provider once the run's approval seam
  allows a call named ``mcp_sampling`` (``sampling = false`` turns it off);
  a permission mode that would ask a person pauses the run with a yes/no
  question, as for elicitation, and the call runs again once answered;
- elicitation through the run's durable pause (``elicitation = false`` turns it
  off): a server asking for input mid-call makes the run ask a person and
  pause; the call runs again with the answer (see docs/mcp.md);
- progress: each ``notifications/progress`` of a running call is a line
  ``mcp: server/tool: 3/10 message`` on stderr when stderr is a terminal
  (``avo run``, the chat REPL), else a log record (``progress = "print"`` or
  ``"log"`` chooses).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from avo.bundles import BundleParts, BundleRun
from avo.exceptions import AvoError
from avo.plugins import BundleSpec, provides


class ServerSettings(BaseModel):
    """One ``[mcp.servers.NAME]`` table: a stdio ``command`` or a streamable-HTTP ``url``."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] | str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_transport(self) -> ServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (an HTTP server)")
        if self.command is not None and not (
            self.command if isinstance(self.command, str) else any(self.command)
        ):
            raise ValueError("command must not be empty")
        if self.url is not None and not self.url.startswith(("http://", "https://", "${")):
            raise ValueError(f"url {self.url!r} is not http(s)")
        return self

    def entry(self) -> dict[str, Any]:
        """The ``mcp.json`` shape of this server."""
        if self.url is not None:
            return {"url": self.url, "headers": dict(self.headers)}
        command = [self.command] if isinstance(self.command, str) else list(self.command or [])
        return {"command": [*command, *self.args], "env": dict(self.env)}


class McpSettings(BaseModel):
    """``[mcp]``: the servers to start with each run."""

    model_config = ConfigDict(extra="forbid")

    servers: dict[str, ServerSettings] = Field(default_factory=dict)
    user_servers: bool = True
    """Also start the servers of ``~/.avo/mcp.json`` (or of ``config``)."""
    config: str | None = None
    """Another servers file instead of ``~/.avo/mcp.json``."""
    timeout_seconds: float | None = Field(default=None, gt=0)
    """How long one tool call may take (default: the client's)."""
    trust_annotations: bool = False
    """Take the servers' read-only/destructive hints as the tools' risk classes."""
    elicitation: bool = True
    """Let servers ask a person for input through the run's durable pause."""
    sampling: bool = True
    """Let servers ask the run's model (after the approval seam allows ``mcp_sampling``)."""
    progress: Literal["auto", "print", "log"] = "auto"
    """Where servers' progress goes: stderr lines on a terminal (auto), always, or the log."""


def _sessions(
    entries: Mapping[str, Mapping[str, Any]], run: BundleRun, settings: McpSettings
) -> list[Any]:
    from avo_mcp import MCPHttpServer, MCPServer, resolve_env

    sessions: list[Any] = []
    extra: dict[str, Any] = {"features": _features(run, settings)}
    if settings.timeout_seconds is not None:
        extra["timeout_seconds"] = settings.timeout_seconds
    for name, entry in entries.items():
        resolved = resolve_env(entry, run.environ)
        if "url" in resolved:
            sessions.append(
                MCPHttpServer(url=resolved["url"], headers=resolved["headers"], name=name, **extra)
            )
        else:
            sessions.append(
                MCPServer(
                    command=resolved["command"],
                    env=resolved["env"],
                    name=name,
                    environ=run.environ,
                    cwd=run.workspace,
                    **extra,
                )
            )
    return sessions


def _features(run: BundleRun, settings: McpSettings) -> Any:
    import sys

    from avo_mcp.features import ClientFeatures, ask_person, log_progress, print_progress

    progress = settings.progress
    if progress == "auto":
        try:
            progress = "print" if sys.stderr.isatty() else "log"
        except (AttributeError, ValueError):
            progress = "log"
    sampler = None
    if settings.sampling and run.provider is not None:
        from avo_mcp.features import ProviderSampler

        approve = run.approval_callback or (lambda call: True)
        sampler = ProviderSampler(run.provider, approval_callback=approve)
    return ClientFeatures(
        roots=[run.workspace],
        sampling=sampler,
        elicitation=ask_person if settings.elicitation else None,
        on_progress=print_progress(sys.stderr) if progress == "print" else log_progress,
    )


class McpBundle:
    """Per run: start the configured MCP servers, hand their tools over, stop them after."""

    name = "mcp"

    def __init__(self, settings: McpSettings | Mapping[str, Any] | None = None) -> None:
        if not isinstance(settings, McpSettings):
            settings = McpSettings.model_validate(dict(settings or {}))
        self.settings = settings
        self._toolbox: Any = None

    def entries(self, run: BundleRun) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """The servers to start (name -> mcp.json entry) and the problems found reading them."""
        from avo_mcp.config import load_servers, validate_name

        entries: dict[str, dict[str, Any]] = {}
        problems: dict[str, str] = {}
        if self.settings.user_servers:
            path = Path(self.settings.config).expanduser() if self.settings.config else None
            try:
                entries.update(load_servers(path, environ=run.environ))
            except AvoError as exc:
                problems["mcp.json"] = str(exc)
        for name, server in self.settings.servers.items():
            try:
                validate_name(name)
            except AvoError as exc:
                problems[name] = str(exc)
                continue
            entries[name] = server.entry()
        return entries, problems

    async def setup(self, run: BundleRun) -> BundleParts:
        """Start every server; the tools of those that came up join the run."""
        from avo_mcp import MCPToolbox

        entries, problems = self.entries(run)
        if not entries:
            return BundleParts(problems=problems)
        toolbox = MCPToolbox(
            _sessions(entries, run, self.settings),
            prefix_with_name=True,
            trust_annotations=self.settings.trust_annotations,
        )
        await toolbox.__aenter__()
        self._toolbox = toolbox
        problems.update(
            {name: f"did not start: {reason}" for name, reason in toolbox.failures.items()}
        )
        return BundleParts(tools=toolbox.tools(), problems=problems)

    async def close(self) -> None:
        """Stop (and reap) every server this run started."""
        toolbox, self._toolbox = self._toolbox, None
        if toolbox is not None:
            await toolbox.__aexit__(None, None, None)


def _make(settings: dict[str, Any]) -> McpBundle:
    return McpBundle(settings)


mcp_bundle = provides(
    BundleSpec(
        name="mcp",
        factory=_make,
        description="Starts the MCP servers of [mcp] (and ~/.avo/mcp.json) with each run",
        settings_model=McpSettings,
    )
)
"""The ``avo.bundles`` entry point (imported only when the bundle is used)."""

__all__ = ["McpBundle", "McpSettings", "ServerSettings", "mcp_bundle"]
