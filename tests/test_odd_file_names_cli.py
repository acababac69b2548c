"""`avo run` in a directory holding a file name that is not UTF-8 (issue #13, item 2).

``os.fsdecode`` turns the name's undecodable bytes into lone surrogates, so the
real ``glob`` tool returns text UTF-8 cannot encode. The SQLite store keeps it
losslessly (as JSON escapes): the run completes, and the stored tool result
reads back with the exact name the tool returned.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from avo.events import EventType
from avo_sqlite import SQLiteEventStore

CONFIG = """
tools = [{ name = "glob", settings = { workspace = "." } }]

[provider]
name = "fake"

[[provider.settings.script]]
tool_call = { name = "glob", arguments = { pattern = "*.txt" } }

[[provider.settings.script]]
content = "listed"
"""

RAW_NAME = b"report-\xff\xfe.txt"


def _avo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("avo", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "avo.cli"]
    env = {key: value for key, value in os.environ.items() if not key.startswith("AVO_")}
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )


def test_a_tool_output_with_an_undecodable_file_name_is_stored(tmp_path: Path) -> None:
    try:
        (tmp_path / os.fsdecode(RAW_NAME)).write_text("x")
    except (OSError, UnicodeEncodeError) as exc:  # a filesystem that insists on UTF-8 names
        pytest.skip(f"this filesystem refuses the non-UTF-8 name {RAW_NAME!r}: {exc}")
    (tmp_path / "avo.toml").write_text(CONFIG)
    result = _avo("run", "list the reports", "-d", "runs.db", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "status:      completed" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    run_id = next(
        line.split()[-1] for line in result.stderr.splitlines() if line.startswith("run id:")
    )

    async def stored_matches() -> list[str]:
        async with SQLiteEventStore(tmp_path / "runs.db") as store:
            events = await store.get_events(run_id)
        (done,) = [e for e in events if e.event_type is EventType.TOOL_COMPLETED]
        result: dict = done.payload["result"]  # type: ignore[assignment]
        return list(result["output"]["matches"])

    assert asyncio.run(stored_matches()) == [os.fsdecode(RAW_NAME)]
    listing = _avo("runs", "inspect", run_id, "-d", "runs.db", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert "tool_completed" in listing.stdout
