"""Fixtures for the avo-mcp tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
ROOT = TESTS_DIR.parents[2]
sys.path.insert(0, str(TESTS_DIR))  # mcp_cli_kit


def _assert_reaped(pid: int | None) -> None:
    """The child has been waited for: waitpid finds no child, /proc shows no zombie."""
    assert pid is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():  # pid reused by an unrelated process, or still exiting
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
        assert state != "Z", f"process {pid} is a zombie"


@pytest.fixture
def assert_reaped() -> Callable[[int | None], None]:
    return _assert_reaped


@pytest.fixture
def sdk_server_command() -> list[str]:
    """Command line of the SDK-written MCP server (stdio)."""
    return [sys.executable, str(TESTS_DIR / "sdk_server.py")]


@pytest.fixture(scope="session")
def interop_dir() -> Path:
    """The pinned npm MCP packages, installed by scripts/ensure-mcp-interop.sh.

    Skips (saying why) only when node or npm is absent; a failed install fails.
    """
    script = ROOT / "scripts" / "ensure-mcp-interop.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600)
    if done.returncode == 3:
        pytest.skip("node/npm are not installed: the MCP interop and conformance tests need them")
    assert done.returncode == 0, f"{script} failed:\n{done.stderr}"
    return Path(done.stdout.strip())


@pytest.fixture(scope="session")
def everything_js(interop_dir: Path) -> Path:
    """The entry point of @modelcontextprotocol/server-everything."""
    return interop_dir / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen, what: str, seconds: float = 60) -> None:
    """Wait until something accepts connections on ``port`` (or ``process`` died)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start on port {port}") from None
            time.sleep(0.1)


def stop_process(process: subprocess.Popen) -> None:
    """Terminate, then kill after 5 s; always reaped."""
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def everything_http_url(everything_js: Path) -> Iterator[str]:
    """server-everything in streamableHttp mode on a free loopback port."""
    port = free_port()
    process = subprocess.Popen(
        ["node", str(everything_js), "streamableHttp"],
        env={"PATH": os.environ.get("PATH", ""), "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process, "server-everything (streamableHttp)")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)
