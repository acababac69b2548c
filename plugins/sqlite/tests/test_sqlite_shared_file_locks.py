"""Two connections of one process to one avo.db (the event store and the token ledger)
keep their locks: opening the second must not drop the first's POSIX locks.

Closing any descriptor of a file releases every POSIX lock the process holds on it.
When the second open read the file's header with open()/close(), the first
connection's shared lock vanished; another process closing its connection then
believed it was the last one, checkpointed and deleted the WAL under the first,
and concurrent eval trials corrupted the database ("database disk image is
malformed"). A real second process checks that the lock is still held.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from avo import AgentRuntime, FakeProvider, ModelResponse
from avo_sqlite import SQLiteEventStore, TokenLedger

OTHER_PROCESS = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("select count(*) from runs").fetchall()
conn.close()  # the last connection, if it believes so, checkpoints and deletes the WAL
"""


async def test_second_connection_keeps_the_first_ones_lock(tmp_path: Path) -> None:
    db = tmp_path / "avo.db"
    async with SQLiteEventStore(db) as store:
        runtime = AgentRuntime(
            provider=FakeProvider([ModelResponse(content="a")]), event_store=store
        )
        await runtime.run("first")
        ledger = TokenLedger(db)  # a second open of the same file in this process
        try:
            wal = Path(f"{db}-wal")
            assert wal.exists()
            subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(db)], check=True)
            assert wal.exists(), "another process deleted the WAL this process still uses"
            again = AgentRuntime(
                provider=FakeProvider([ModelResponse(content="b")]), event_store=store
            )
            await again.run("second")
        finally:
            ledger.close()
        assert len(await store.list_runs()) == 2
