"""A read-only avo database can be listed and inspected; writing says "read-only" (#13, item 4).

Run as a user would: the real ``avo`` CLI in a subprocess, against a real
SQLite file that cannot be written, made so in two ways:

- **file permissions**: the file ``0444`` in a ``0555`` directory. Root ignores
  permissions, so as root the CLI runs with ``CAP_DAC_OVERRIDE`` and
  ``CAP_DAC_READ_SEARCH`` dropped from its capability bounding set (then root
  is held to the permission bits like anyone else);
- **a read-only filesystem**: a tmpfs mounted, filled and remounted read-only
  (root only: mounting needs it; skipped otherwise, saying why).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from avo import AgentRuntime, FakeProvider, FunctionTool, ModelResponse, ToolCall
from avo.events import EventType
from avo.exceptions import StorageError
from avo_sqlite import SQLiteEventStore

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


class Args(BaseModel):
    n: int = 0


class _BreaksOnResponse:
    """The store, but a model response cannot be written: the run stops mid-way, resumable."""

    def __init__(self, store: SQLiteEventStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def append_batch(self, run: Any, events: Any, checkpoint: Any = None) -> Any:
        if any(event.event_type is EventType.MODEL_RESPONDED for event in events):
            raise StorageError("disk unplugged")
        return await self._store.append_batch(run, events, checkpoint)


def _make_database(db: Path) -> tuple[str, str]:
    """A finished run, and one interrupted before its model's answer was stored."""
    tool = FunctionTool(
        name="echo", description="echo", arguments_model=Args, function=lambda a: a.n
    )
    call = ModelResponse(tool_call=ToolCall(name="echo", arguments={"n": 1}))

    async def go() -> tuple[str, str]:
        async with SQLiteEventStore(db) as store:
            done = await AgentRuntime(
                provider=FakeProvider([call, ModelResponse(content="finished")]),
                tools=[tool],
                event_store=store,
            ).run("finished task")
            with pytest.raises(StorageError, match="disk unplugged"):
                await AgentRuntime(
                    provider=FakeProvider([ModelResponse(content="later")]),
                    event_store=_BreaksOnResponse(store),
                ).run("interrupted task", run_id="interrupted-run")
            return done.run_id, "interrupted-run"

    return asyncio.run(go())


def _drop_dac() -> None:  # runs in the child, before exec
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _avo_runner(cwd: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    exe = shutil.which("avo", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "avo.cli"]
    env = {key: value for key, value in os.environ.items() if not key.startswith("AVO_")}
    preexec = _drop_dac if os.geteuid() == 0 else None

    def avo(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cmd, *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            check=False,
            preexec_fn=preexec,
        )

    return avo


def _check_cli(directory: Path, done: str, stopped: str, why: str) -> None:
    avo = _avo_runner(directory)
    listing = avo("runs", "list", "-d", "runs.db")
    assert listing.returncode == 0, listing.stderr
    assert done in listing.stdout and stopped in listing.stdout
    inspected = avo("runs", "inspect", stopped, "-d", "runs.db")
    assert inspected.returncode == 0, inspected.stderr
    assert "checkpoint_created" in inspected.stdout
    for command in (
        ("runs", "resume", stopped, "-d", "runs.db"),
        ("run", "more", "--provider", "fake", "-d", "runs.db"),
    ):
        refused = avo(*command)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "read-only" in refused.stderr and why in refused.stderr, refused.stderr
        assert "corrupt" not in refused.stderr
        assert "Traceback" not in refused.stderr
    assert avo("runs", "list", "-d", "runs.db").stdout == listing.stdout  # nothing written


@pytest.fixture
def read_only_permissions(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "ro"
    directory.mkdir()
    yield directory
    directory.chmod(0o755)
    for child in directory.iterdir():
        child.chmod(0o644)


def test_a_database_readable_but_not_writable_by_permissions(read_only_permissions: Path) -> None:
    if os.geteuid() == 0:
        probe = subprocess.run(["true"], preexec_fn=_drop_dac, check=False)
        if probe.returncode != 0:
            pytest.skip("running as root without CAP_SETPCAP: cannot drop CAP_DAC_OVERRIDE")
    db = read_only_permissions / "runs.db"
    done, stopped = _make_database(db)
    db.chmod(0o444)
    read_only_permissions.chmod(0o555)
    _check_cli(read_only_permissions, done, stopped, "permissions")


def test_a_read_only_file_in_a_writable_directory(tmp_path: Path) -> None:
    """SQLite may add its -wal/-shm files next to it, but the file itself stays unwritten."""
    if os.geteuid() == 0:
        probe = subprocess.run(["true"], preexec_fn=_drop_dac, check=False)
        if probe.returncode != 0:
            pytest.skip("running as root without CAP_SETPCAP: cannot drop CAP_DAC_OVERRIDE")
    db = tmp_path / "runs.db"
    done, stopped = _make_database(db)
    before = db.read_bytes()
    db.chmod(0o444)
    try:
        _check_cli(tmp_path, done, stopped, "permissions")
    finally:
        db.chmod(0o644)
    assert db.read_bytes() == before


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root; run the suite as root (CI does)")
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) on this machine to mount a read-only tmpfs")
    mount = tmp_path / "mnt"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (no CAP_SYS_ADMIN?): {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_database_on_a_read_only_filesystem(read_only_mount: Path) -> None:
    done, stopped = _make_database(read_only_mount / "runs.db")
    remount = subprocess.run(
        ["mount", "-o", "remount,ro", str(read_only_mount)], capture_output=True, text=True
    )
    assert remount.returncode == 0, remount.stderr
    _check_cli(read_only_mount, done, stopped, "filesystem is mounted read-only")

    async def in_python() -> None:  # the store API says the same
        async with SQLiteEventStore(read_only_mount / "runs.db") as store:
            assert len(await store.list_runs()) == 2
            assert await store.get_latest_checkpoint(stopped) is not None
            run = await store.get_run(stopped)
            assert run is not None
            with pytest.raises(StorageError, match="read-only"):
                await store.update_run(run)

    asyncio.run(in_python())
