"""The bubblewrap executor runs for real (``bwrap`` from the Debian package)."""

from __future__ import annotations

import asyncio
import io
import shutil
import socket
from pathlib import Path

import pytest

from avo.exceptions import SandboxError
from avo_sandbox import BubblewrapExecutor, SandboxTimeoutError
from avo_sandbox.cli import configure, run

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap not installed")


@pytest.fixture
def executor() -> BubblewrapExecutor:
    return BubblewrapExecutor(timeout_seconds=20)


async def test_runs_in_workspace_which_is_writable(
    executor: BubblewrapExecutor, tmp_path: Path
) -> None:
    (tmp_path / "in.txt").write_text("hello")
    result = await executor.run("pwd; cat in.txt; echo made > out.txt", workspace_dir=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "/workspace\nhello"
    assert (tmp_path / "out.txt").read_text() == "made\n"
    assert result.network_mode == "none"


async def test_system_is_read_only_and_host_is_hidden(
    executor: BubblewrapExecutor, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = await executor.run(
        f"touch /usr/avo-x; echo usr=$?; touch /etc/avo-x; echo etc=$?; "
        f"cat {outside}/secret.txt; echo outside=$?; ls /home /root/.ssh 2>/dev/null; "
        f"echo tmp > /tmp/t && cat /tmp/t",
        workspace_dir=workspace,
    )
    assert "usr=1" in result.stdout and "etc=1" in result.stdout
    assert "outside=1" in result.stdout and "s3cret" not in result.stdout
    assert not Path("/usr/avo-x").exists()
    assert result.stdout.endswith("tmp\n")


async def test_no_network(executor: BubblewrapExecutor, tmp_path: Path) -> None:
    # A listener on the host's loopback is unreachable: the sandbox has its own netns.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        result = await executor.run(
            'python3 -c "import socket; print(socket.if_nameindex()); '
            f"socket.create_connection(('127.0.0.1', {port}), timeout=2)\"",
            workspace_dir=tmp_path,
        )
    finally:
        listener.close()
    assert result.stdout.strip() == "[(1, 'lo')]"
    assert result.exit_code != 0
    assert "ConnectionRefusedError" in result.stderr or "unreachable" in result.stderr


async def test_environment_is_cleared(
    executor: BubblewrapExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AVO_HOST_SECRET", "leak")
    result = await executor.run(
        "echo [$AVO_HOST_SECRET] [$GIVEN]", workspace_dir=tmp_path, env={"GIVEN": "yes"}
    )
    assert result.stdout == "[] [yes]\n"


async def test_memory_limit(tmp_path: Path) -> None:
    executor = BubblewrapExecutor(mem_limit="128m", timeout_seconds=20)
    result = await executor.run(
        "python3 -c 'x = bytearray(300 * 1024 * 1024); print(len(x))'", workspace_dir=tmp_path
    )
    assert result.exit_code != 0
    assert "MemoryError" in result.stderr


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    executor = BubblewrapExecutor(timeout_seconds=20)
    with pytest.raises(SandboxTimeoutError, match=r"exceeded the timeout of 1\.0 seconds"):
        await executor.run(
            "(sleep 59.317; echo late > late.txt) & sleep 59.317 & "
            "echo started > started.txt; wait",
            workspace_dir=tmp_path,
            timeout_seconds=1.0,
        )
    assert (tmp_path / "started.txt").exists()
    await asyncio.sleep(0.2)
    proc = await asyncio.create_subprocess_exec(
        "pgrep", "-f", "sleep 59.317", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert out.strip() == b"", "sandboxed processes survived the timeout"
    assert not (tmp_path / "late.txt").exists()


async def test_output_is_capped_head_and_tail(tmp_path: Path) -> None:
    executor = BubblewrapExecutor(max_output_bytes=1000)
    result = await executor.run(
        "echo FIRST; yes middle | head -n 100000; echo LAST", workspace_dir=tmp_path
    )
    assert result.stdout.startswith("FIRST")
    assert result.stdout.rstrip().endswith("LAST")
    assert "avo cut" in result.stdout and len(result.stdout) < 1200


async def test_missing_bwrap_binary(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="requires the `bwrap` binary"):
        await BubblewrapExecutor(bwrap="no-such-bwrap-binary").run("true", workspace_dir=tmp_path)


def _cli(argv: list[str]) -> tuple[int, str, str]:
    import argparse

    parser = argparse.ArgumentParser(prog="avo sandbox")
    configure(parser)
    out, err = io.StringIO(), io.StringIO()
    code = run(parser.parse_args(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_cli_sandbox_run_bubblewrap(tmp_path: Path) -> None:
    code, out, _ = _cli(
        [
            "run",
            "--backend",
            "bubblewrap",
            "--workspace",
            str(tmp_path),
            "--env",
            "X=1",
            "sh",
            "-c",
            "echo $X; exit 3",
        ]
    )
    assert (code, out) == (3, "1\n")
    code, out, _ = _cli(
        ["run", "--backend", "bubblewrap", "--workspace", str(tmp_path), "--json", "true"]
    )
    assert code == 0 and '"network_mode": "none"' in out


def test_cli_errors_are_reported(tmp_path: Path) -> None:
    code, _, err = _cli(["run", "--backend", "bubblewrap", "--env", "bad", "true"])
    assert code == 2 and "avo: --env expects KEY=VALUE, got 'bad'" in err
    code, _, err = _cli(["run", "--backend", "bubblewrap"])
    assert code == 2 and "needs a command" in err


def test_through_the_avo_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from avo.cli import main

    code = main(
        [
            "sandbox",
            "run",
            "--backend",
            "bubblewrap",
            "--workspace",
            str(tmp_path),
            "--",
            "sh",
            "-c",
            "echo hi > made.txt; echo done",
        ],
        environ={},
    )
    assert code == 0
    assert capsys.readouterr().out == "done\n"
    assert (tmp_path / "made.txt").read_text() == "hi\n"
