"""Entry-point objects: the docker and bubblewrap sandboxes and the ``sandbox`` command.

Cheap to import: docker-py is imported only when a docker executor first runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from avo.plugins import SandboxSpec, lazy_command, provides


class DockerSettings(BaseModel):
    """``[sandbox.settings]`` for the docker backend."""

    model_config = ConfigDict(extra="forbid")
    image: str | None = None
    language: str | None = None
    mem_limit: str = "256m"
    cpu_quota: int = 50000
    network_mode: str = "none"
    timeout_seconds: float = 30.0


class BubblewrapSettings(BaseModel):
    """``[sandbox.settings]`` for the bubblewrap backend."""

    model_config = ConfigDict(extra="forbid")
    mem_limit: str = "256m"
    timeout_seconds: float = 30.0
    extra_ro_binds: list[str] = []


def _docker_factory(settings: dict[str, Any]) -> Any:
    from avo_sandbox.docker_executor import SandboxExecutor

    return SandboxExecutor(**DockerSettings.model_validate(settings or {}).model_dump())


def _bubblewrap_factory(settings: dict[str, Any]) -> Any:
    from avo_sandbox.bubblewrap import BubblewrapExecutor

    return BubblewrapExecutor(**BubblewrapSettings.model_validate(settings or {}).model_dump())


def _docker_probe(environ: Any) -> str | None:
    from avo_sandbox.detect import docker_problem

    return docker_problem(environ)


def _bubblewrap_probe(environ: Any) -> str | None:
    from avo_sandbox.detect import bubblewrap_problem

    return bubblewrap_problem(environ)


docker = provides(
    SandboxSpec(
        name="docker",
        factory=_docker_factory,
        description="Ephemeral Docker container per command (network none by default).",
        settings_model=DockerSettings,
        probe=_docker_probe,
        priority=20,
    )
)
bubblewrap = provides(
    SandboxSpec(
        name="bubblewrap",
        factory=_bubblewrap_factory,
        description="bwrap: no network, read-only system, workspace the only writable mount.",
        settings_model=BubblewrapSettings,
        probe=_bubblewrap_probe,
        priority=10,
    )
)
sandbox_command = provides(
    lazy_command(
        "sandbox", "avo_sandbox.cli", help="run a command in a docker or bubblewrap sandbox"
    )
)
