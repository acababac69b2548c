"""Docker SandboxExecutor tests.

No Docker engine runs on these machines, so these tests inject a fake docker
client that records every call (the contract is the exact create call,
the copy-in/out and the forced remove). The real-engine test is behind the
``live`` marker and skips when no engine answers.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from avo.exceptions import AvoError, SandboxError
from avo_sandbox import SandboxExecutor, SandboxTimeoutError, language_from_path, resolve_image


class FakeContainer:
    def __init__(
        self,
        *,
        exit_code: int = 0,
        wait_error: Exception | None = None,
        files: dict[str, bytes] | None = None,
    ) -> None:
        self.calls: list[str] = []
        self.exit_code = exit_code
        self.wait_error = wait_error
        self.files = files or {}
        self.uploaded: dict[str, bytes] = {}

    def put_archive(self, path: str, data: bytes) -> bool:
        self.calls.append(f"put_archive:{path}")
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            for member in archive.getmembers():
                if member.isfile():
                    handle = archive.extractfile(member)
                    assert handle is not None
                    self.uploaded[member.name] = handle.read()
        return True

    def start(self) -> None:
        self.calls.append("start")

    def wait(self, timeout: float) -> dict[str, int]:
        self.calls.append(f"wait:{timeout}")
        if self.wait_error:
            raise self.wait_error
        return {"StatusCode": self.exit_code}

    def kill(self) -> None:
        self.calls.append("kill")

    def logs(self, *, stdout: bool, stderr: bool) -> bytes:
        return b"out\n" if stdout else b"err\n"

    def get_archive(self, path: str) -> tuple[list[bytes], dict[str, Any]]:
        self.calls.append(f"get_archive:{path}")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for name, data in self.files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return [buffer.getvalue()], {}

    def remove(self, *, force: bool) -> None:
        self.calls.append(f"remove:force={force}")


class FakeContainers:
    def __init__(self, container: FakeContainer) -> None:
        self.container = container
        self.create_calls: list[dict[str, Any]] = []

    def create(self, **kwargs: Any) -> FakeContainer:
        self.create_calls.append(kwargs)
        return self.container


class FakeClient:
    def __init__(self, container: FakeContainer) -> None:
        self.containers = FakeContainers(container)


async def test_exact_container_create_call_and_forced_remove(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("print('hi')\n")
    container = FakeContainer(
        files={"workspace/out.txt": b"made in container", "workspace/../../escape": b"x"}
    )
    client = FakeClient(container)
    executor = SandboxExecutor(client=client)
    result = await executor.run("python main.py", workspace_dir=tmp_path, env={"A": "1"})
    assert client.containers.create_calls == [
        {
            "image": "python:3.12-slim",
            "command": ["sh", "-c", "python main.py"],
            "environment": {"A": "1"},
            "network_mode": "none",
            "mem_limit": "256m",
            "cpu_quota": 50000,
            "working_dir": "/workspace",
            "remove": True,
            "detach": True,
            "stdout": True,
            "stderr": True,
        }
    ]
    assert container.calls == [
        "put_archive:/workspace",
        "start",
        "wait:30.0",
        "get_archive:/workspace",
        "remove:force=True",
    ]
    assert container.uploaded == {"main.py": b"print('hi')\n"}
    assert (tmp_path / "out.txt").read_text() == "made in container"
    assert not (tmp_path.parent / "escape").exists()
    assert (result.exit_code, result.stdout, result.stderr) == (0, "out\n", "err\n")
    assert (result.image, result.network_mode, result.mem_limit) == (
        "python:3.12-slim",
        "none",
        "256m",
    )


async def test_container_removed_even_on_timeout(tmp_path: Path) -> None:
    container = FakeContainer(wait_error=TimeoutError("read timed out"))
    executor = SandboxExecutor(client=FakeClient(container), timeout_seconds=3)
    with pytest.raises(SandboxTimeoutError, match="exceeded the timeout of 3"):
        await executor.run("sleep 100", workspace_dir=tmp_path)
    assert container.calls[-2:] == ["kill", "remove:force=True"]


def test_real_docker_py_create_accepts_the_adapted_call() -> None:
    # docker-py's create() rejects run()-only kwargs of the specified create call; the
    # adapter drops them for a real docker-py client (no engine needed here).
    docker = pytest.importorskip("docker")
    from docker.models.containers import _create_container_args

    from avo_sandbox.docker_executor import _adapt

    seen: dict[str, Any] = {}

    class Containers:
        def create(self, **kwargs: Any) -> None:
            seen.update(_create_container_args({**kwargs, "version": "1.41"}))

    real = docker.DockerClient.__new__(docker.DockerClient)
    adapted = _adapt(real)
    adapted.containers._containers = Containers()
    adapted.containers.create(
        image="python:3.12-slim",
        command=["sh", "-c", "true"],
        environment={},
        network_mode="none",
        mem_limit="256m",
        cpu_quota=50000,
        working_dir="/workspace",
        remove=True,
        detach=True,
        stdout=True,
        stderr=True,
    )
    assert seen["image"] == "python:3.12-slim"
    assert seen["host_config"]["NetworkMode"] == "none"
    assert seen["host_config"]["Memory"] == 256 * 1024 * 1024


def test_cli_docker_backend_with_injected_client(tmp_path: Path) -> None:
    import argparse

    from avo_sandbox.cli import configure, run

    parser = argparse.ArgumentParser(prog="avo sandbox")
    configure(parser)
    container = FakeContainer(exit_code=7)
    client = FakeClient(container)
    args = parser.parse_args(
        [
            "run",
            "--workspace",
            str(tmp_path),
            "--image",
            "alpine:3.20",
            "--memory",
            "64m",
            "--env",
            "K=V",
            "--",
            "echo",
            "a b",
        ]
    )
    out, err = io.StringIO(), io.StringIO()
    assert run(args, stdout=out, stderr=err, docker_client=client) == 7
    (call,) = client.containers.create_calls
    assert call["command"] == ["sh", "-c", "echo 'a b'"]
    assert (call["image"], call["mem_limit"], call["environment"]) == (
        "alpine:3.20",
        "64m",
        {"K": "V"},
    )
    assert out.getvalue() == "out\n" and err.getvalue() == "err\n"


async def test_engine_errors_become_sandbox_errors(tmp_path: Path) -> None:
    class EngineDown(Exception):
        pass

    EngineDown.__module__ = "docker.errors"

    class BrokenContainers:
        def create(self, **kwargs: Any) -> None:
            raise EngineDown("connection refused")

    class BrokenClient:
        containers = BrokenContainers()

    with pytest.raises(SandboxError, match="Docker engine error: EngineDown"):
        await SandboxExecutor(client=BrokenClient()).run("true", workspace_dir=tmp_path)


def test_language_images() -> None:
    assert SandboxExecutor.for_language("node", client=object()).image == "node:20-alpine"
    assert resolve_image() == "python:3.12-slim"
    assert resolve_image("rust") == "rust:1.80-slim"
    assert resolve_image("go", explicit_image="custom:1") == "custom:1"
    assert resolve_image("bash") == "alpine:3.20"
    assert language_from_path("a/b.tsx") == "typescript"
    assert language_from_path("x.unknown") is None
    with pytest.raises(SandboxError, match="unknown sandbox language 'cobol'"):
        resolve_image("cobol")


async def test_exact_error_without_docker_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_docker(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "docker":
            raise ImportError("No module named 'docker'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "docker", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_docker)
    with pytest.raises(SandboxError) as info:
        await SandboxExecutor().run("true", workspace_dir=tmp_path)
    assert str(info.value) == (
        "SandboxExecutor requires the `docker` package: pip install 'avo-sandbox[docker]' "
        "(or use the bubblewrap backend, which needs no Docker)"
    )
    assert isinstance(info.value, AvoError)


@pytest.mark.live
async def test_live_docker_engine(tmp_path: Path) -> None:
    docker = pytest.importorskip("docker")
    if not os.environ.get("DOCKER_HOST") and not os.path.exists("/var/run/docker.sock"):
        pytest.skip("no Docker engine socket on this machine")
    try:
        client = docker.from_env()
    except Exception as exc:  # no engine on this machine
        pytest.skip(f"no Docker engine: {exc}")
    try:
        client.ping()
    except Exception as exc:
        client.close()
        pytest.skip(f"no Docker engine: {exc}")
    (tmp_path / "in.txt").write_text("x")
    result = await SandboxExecutor(client=client, image="alpine:3.20").run(
        "cat in.txt && echo y > out.txt", workspace_dir=tmp_path
    )
    assert result.exit_code == 0 and result.stdout == "x"
    assert (tmp_path / "out.txt").read_text() == "y\n"
    client.close()
