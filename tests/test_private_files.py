"""Files avo creates are owner-only: 0600 files, 0700 directories (issue #13, item 12).

The event store (with SQLite's -wal and -shm files), the token ledger, job
checkpoints, conversations and the audit log hold prompts, tool outputs and
(redacted) errors. Each is checked under the common umask 022, which would
leave a plainly created file world-readable.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from avo.audit import AuditLog
from avo.models import TokenUsage
from avo_sqlite import CheckpointStore, ConversationStore, SQLiteEventStore, TokenLedger


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_the_event_store_and_its_wal_files_are_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    async def go() -> None:
        async with SQLiteEventStore(db) as store:
            await store.list_runs()
            for suffix in ("", "-wal", "-shm"):
                path = db.with_name(db.name + suffix)
                assert path.exists(), path
                assert _mode(path) == 0o600, (path, oct(_mode(path)))

    asyncio.run(go())
    assert _mode(db) == 0o600


def test_the_side_stores_are_owner_only(tmp_path: Path) -> None:
    with TokenLedger(tmp_path / "ledger.db") as ledger:
        ledger.record("run-1", step=1, usage=TokenUsage(input_tokens=1, output_tokens=2))
    with CheckpointStore(tmp_path / "jobs.db") as jobs:
        jobs.save("run-1", step=1, state={"k": 1})
    with ConversationStore(tmp_path / "chat.db") as chat:
        chat.append("session-1", role="user", content="hi")
    for name in ("ledger.db", "jobs.db", "chat.db"):
        assert _mode(tmp_path / name) == 0o600, name


def test_the_audit_log_and_the_directories_made_for_it_are_owner_only(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit" / "nested" / "audit.jsonl")
    log.record("run.created", run_id="r1", payload={"task": "secret plans"})
    log.record("run.finished", run_id="r1")
    assert _mode(tmp_path / "audit") == 0o700
    assert _mode(tmp_path / "audit" / "nested") == 0o700
    assert _mode(tmp_path / "audit" / "nested" / "audit.jsonl") == 0o600
    assert [event.action for event in log.read()] == ["run.created", "run.finished"]


def test_existing_files_keep_their_mode(tmp_path: Path) -> None:
    """A file the user made (or shared on purpose) is theirs: avo does not chmod it."""
    shared = tmp_path / "shared.jsonl"
    shared.write_text("")
    shared.chmod(0o640)
    AuditLog(shared).record("run.created")
    assert _mode(shared) == 0o640


def test_avo_run_creates_an_owner_only_database(tmp_path: Path) -> None:
    exe = shutil.which("avo", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "avo.cli"]
    env = {key: value for key, value in os.environ.items() if not key.startswith("AVO_")}
    (tmp_path / "avo.toml").write_text(
        '[provider]\nname = "fake"\n[[provider.settings.script]]\ncontent = "done"\n'
    )
    result = subprocess.run(
        [*cmd, "run", "a task", "-d", "new.db"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        preexec_fn=lambda: os.umask(0o022),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert _mode(tmp_path / "new.db") == 0o600
    for suffix in ("-wal", "-shm"):  # present only while a connection was open
        path = tmp_path / f"new.db{suffix}"
        if path.exists():
            assert _mode(path) == 0o600
