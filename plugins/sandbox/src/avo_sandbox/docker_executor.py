"""The Docker sandbox: one ephemeral container per command, no network by default.

The container is created with exactly the executor's specified create call, the workspace is copied
in (``put_archive``) before it starts and copied back (``get_archive``,
extracted with tarfile's ``data`` filter so nothing lands outside the
workspace) after it exits, and ``container.remove(force=True)`` always runs in
``finally``. docker-py is imported only when no client was injected.
"""

from __future__ import annotations

import asyncio
import io
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from avo.exceptions import SandboxError
from avo_sandbox.result import SandboxResult, SandboxTimeoutError

_IN_CONTAINER_WORKDIR = "/workspace"
_DEFAULT_IMAGE = "python:3.12-slim"
_LANGUAGE_IMAGES: dict[str, str] = {
    "python": "python:3.12-slim",
    "node": "node:20-alpine",
    "typescript": "node:20-alpine",
    "go": "golang:1.22-alpine",
    "rust": "rust:1.80-slim",
    "ruby": "ruby:3.3-slim",
    "java": "eclipse-temurin:21-jre-alpine",
    "bash": "alpine:3.20",
    "sh": "alpine:3.20",
    "generic": "alpine:3.20",
}
_PATH_LANGUAGE_HINTS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "node",
    ".mjs": "node",
    ".cjs": "node",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".rb": "ruby",
    ".java": "java",
    ".sh": "bash",
    ".bash": "bash",
}
_MISSING_DOCKER = (
    "SandboxExecutor requires the `docker` package: pip install 'avo-sandbox[docker]' "
    "(or use the bubblewrap backend, which needs no Docker)"
)


def language_from_path(path: str | Path) -> str | None:
    """The language a file's extension suggests, or None."""
    return _PATH_LANGUAGE_HINTS.get(Path(path).suffix.lower())


def resolve_image(language: str | None = None, *, explicit_image: str | None = None) -> str:
    """Pick the image: explicit > language default > python:3.12-slim."""
    if explicit_image:
        return explicit_image
    if language is None:
        return _DEFAULT_IMAGE
    key = language.strip().lower()
    if key not in _LANGUAGE_IMAGES:
        known = ", ".join(sorted(_LANGUAGE_IMAGES))
        raise SandboxError(f"unknown sandbox language {language!r}; choose one of: {known}")
    return _LANGUAGE_IMAGES[key]


class _DockerPyContainers:
    """Adapts docker-py's ``containers.create`` to the executor's create call.

    The reference's create call passes ``remove``, ``stdout`` and ``stderr``,
    which docker-py accepts only on ``run()`` — ``create()`` raises TypeError
    for them. They are dropped here: output is read with ``logs(stdout=...,
    stderr=...)`` and the container is always removed with
    ``remove(force=True)`` in ``finally`` (``auto_remove`` would delete it
    before its logs and workspace could be read back).
    """

    _RUN_ONLY = ("remove", "stdout", "stderr")

    def __init__(self, containers: Any) -> None:
        self._containers = containers

    def create(self, **kwargs: Any) -> Any:
        for key in self._RUN_ONLY:
            kwargs.pop(key, None)
        return self._containers.create(**kwargs)


class _DockerPyClient:
    def __init__(self, client: Any) -> None:
        self._client = client
        self.containers = _DockerPyContainers(client.containers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _adapt(client: Any) -> Any:
    if type(client).__module__.startswith("docker."):
        return _DockerPyClient(client)
    return client


def _default_client() -> Any:
    try:
        import docker  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise SandboxError(_MISSING_DOCKER) from None
    try:
        return docker.from_env()
    except docker.errors.DockerException as exc:
        raise SandboxError(
            f"cannot reach the Docker engine ({exc}); start Docker or use the bubblewrap backend"
        ) from exc


def _tar_directory(root: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_symlink():
                continue  # links could point outside the workspace
            archive.add(path, arcname=path.relative_to(root).as_posix(), recursive=False)
    return buffer.getvalue()


def _untar_into(chunks: Any, root: Path) -> None:
    data = b"".join(chunks)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        members = []
        for member in archive.getmembers():
            parts = PurePosixPath(member.name).parts
            if not parts or parts[0] != PurePosixPath(_IN_CONTAINER_WORKDIR).name:
                continue
            if len(parts) == 1:
                continue
            member.name = str(PurePosixPath(*parts[1:]))
            try:  # the data filter refuses links out, absolute and ../ names, devices
                members.append(tarfile.data_filter(member, str(root)))
            except tarfile.FilterError:
                continue
        archive.extractall(root, members=members, filter="data")


class SandboxExecutor:
    """Run shell commands in an ephemeral Docker container (default: no network)."""

    def __init__(
        self,
        *,
        client: Any = None,
        image: str | None = None,
        language: str | None = None,
        mem_limit: str = "256m",
        cpu_quota: int = 50000,
        network_mode: str = "none",
        timeout_seconds: float = 30.0,
    ) -> None:
        self._client = client
        self.image = resolve_image(language, explicit_image=image)
        self.language = language
        self.mem_limit = mem_limit
        self.cpu_quota = cpu_quota
        self.network_mode = network_mode
        self.timeout_seconds = timeout_seconds

    @classmethod
    def for_language(cls, language: str, *, client: Any = None, **kwargs: Any) -> SandboxExecutor:
        """An executor using ``language``'s default image."""
        return cls(client=client, language=language, **kwargs)

    @property
    def client(self) -> Any:
        """The docker client (created from the environment on first use)."""
        if self._client is None:
            self._client = _default_client()
        return _adapt(self._client)

    async def run(
        self,
        command: str,
        *,
        workspace_dir: Path,
        env: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
    ) -> SandboxResult:
        """Run ``command`` with ``sh -c`` in a fresh container; the workspace is synced."""
        timeout = timeout_seconds or self.timeout_seconds
        try:
            return await asyncio.to_thread(
                self._run_blocking, command, Path(workspace_dir), env, timeout
            )
        except SandboxError:
            raise
        except Exception as exc:
            if type(exc).__module__.split(".")[0] in {"docker", "requests", "urllib3"}:
                raise SandboxError(f"Docker engine error: {type(exc).__name__}: {exc}") from exc
            raise

    def _run_blocking(
        self, command: str, workspace_dir: Path, env: Mapping[str, str] | None, timeout: float
    ) -> SandboxResult:
        client = self.client
        started = time.perf_counter()
        container = client.containers.create(
            image=self.image,
            command=["sh", "-c", command],
            environment=dict(env or {}),
            network_mode=self.network_mode,
            mem_limit=self.mem_limit,
            cpu_quota=self.cpu_quota,
            working_dir=_IN_CONTAINER_WORKDIR,
            remove=True,
            detach=True,
            stdout=True,
            stderr=True,
        )
        try:
            container.put_archive(_IN_CONTAINER_WORKDIR, _tar_directory(workspace_dir))
            container.start()
            try:
                status = container.wait(timeout=timeout)
            except Exception as exc:  # docker-py raises requests' ReadTimeout/ConnectionError
                container.kill()
                raise SandboxTimeoutError(
                    f"sandboxed command exceeded the timeout of {timeout} seconds "
                    f"({type(exc).__name__})",
                    timeout_seconds=timeout,
                ) from exc
            stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            chunks, _stat = container.get_archive(_IN_CONTAINER_WORKDIR)
            _untar_into(chunks, workspace_dir)
        finally:
            container.remove(force=True)
        return SandboxResult(
            exit_code=int(status.get("StatusCode", -1)),
            stdout=stdout,
            stderr=stderr,
            duration_ms=(time.perf_counter() - started) * 1000,
            image=self.image,
            network_mode=self.network_mode,
            mem_limit=self.mem_limit,
        )


__all__ = ["SandboxExecutor", "language_from_path", "resolve_image"]
