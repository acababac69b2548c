"""PostgresEventStore beyond the shared suite: errors, migrations, delta checkpoints, plugin."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from importlib.metadata import entry_points
from typing import Any

import pytest

from avo.events import EventType
from avo.exceptions import ConfigError, EventInvariantError, StorageError
from avo.models import ModelResponse, ToolCall
from avo.plugins import StoreSpec
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.state import RunState
from avo.testing.stores import checkpoint, checkpointed, event, moved, start_run
from avo_postgres import SCHEMA_VERSION, PostgresEventStore
from avo_postgres.plugin import store_from_settings

pytestmark = pytest.mark.postgres


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _sql(dsn: str, schema: str, query: str, *args: Any) -> Any:
    import asyncpg

    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        return await conn.fetch(query, *args)
    finally:
        await conn.close()


async def _exec(dsn: str, schema: str, script: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        await conn.execute(script)
    finally:
        await conn.close()


# ------------------------------------------------------------------ unreachable servers
async def test_server_down_gives_a_clear_storage_error() -> None:
    port = _closed_port()
    store = PostgresEventStore(f"postgresql://avo:s3cret@127.0.0.1:{port}/avo", connect_timeout=2)
    with pytest.raises(StorageError) as caught:
        await store.get_run("any")
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message
    assert "connection refused" in message
    assert f"pg_isready -h 127.0.0.1 -p {port}" in message
    assert "s3cret" not in message
    assert type(caught.value) is StorageError  # not a driver exception in disguise
    with pytest.raises(StorageError, match="connection refused"):  # and again, not cached
        async with store:
            pass


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A loopback TCP server that accepts connections and never says a word."""
    held: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_unresponsive_server_times_out_with_a_storage_error(silent_server: int) -> None:
    store = PostgresEventStore(
        f"postgresql://avo@127.0.0.1:{silent_server}/avo", connect_timeout=0.3
    )
    with pytest.raises(StorageError) as caught:
        await store.list_runs()
    assert f"127.0.0.1:{silent_server}" in str(caught.value)
    assert "no answer within 0.3 s" in str(caught.value)


async def test_missing_database_is_named(pg_dsn: str) -> None:
    dsn = pg_dsn.rsplit("/", 1)[0] + "/avo_no_such_database"
    with pytest.raises(StorageError, match="database 'avo_no_such_database' does not exist"):
        async with PostgresEventStore(dsn):
            pass


@pytest.mark.parametrize(
    ("dsn", "fragment"),
    [
        ("mysql://u@h/db", "scheme must be postgresql://"),
        ("postgresql://u@h:notaport/db", "invalid PostgreSQL DSN"),
    ],
)
def test_bad_dsn_is_refused_up_front(dsn: str, fragment: str) -> None:
    with pytest.raises(StorageError, match=fragment):
        PostgresEventStore(dsn)


async def test_unix_socket_dsn_names_the_socket(tmp_path: Any) -> None:
    store = PostgresEventStore(f"postgresql://avo@/avo?host={tmp_path}&port=5999")
    with pytest.raises(StorageError) as caught:
        await store.get_run("any")
    assert f"at {tmp_path}:5999 (database 'avo', user 'avo')" in str(caught.value)


def test_bad_schema_name_is_refused() -> None:
    with pytest.raises(StorageError, match="not a plain identifier"):
        PostgresEventStore("postgresql://u@h/db", schema="x; DROP TABLE y")


def test_repr_hides_the_password() -> None:
    assert "hunter2" not in repr(PostgresEventStore("postgresql://u:hunter2@h/db"))


# ------------------------------------------------------------------ migrations
async def test_concurrent_first_connects_migrate_once(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    stores = [PostgresEventStore(dsn, schema=schema) for _ in range(6)]
    try:
        await asyncio.gather(*(store.connect() for store in stores))
    finally:
        await asyncio.gather(*(store.close() for store in stores))
    rows = await _sql(dsn, schema, "SELECT version FROM avo_schema_version ORDER BY version")
    assert [row["version"] for row in rows] == list(range(1, SCHEMA_VERSION + 1))


async def test_newer_schema_is_refused_and_left_untouched(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    async with PostgresEventStore(dsn, schema=schema) as store:
        run_id = await start_run(store)
    await _sql(dsn, schema, "INSERT INTO avo_schema_version (version) VALUES ($1)", 99)
    before = await _sql(dsn, schema, "SELECT * FROM avo_events ORDER BY sequence")

    with pytest.raises(StorageError) as caught:
        async with PostgresEventStore(dsn, schema=schema):
            pass
    message = str(caught.value)
    assert "schema version 99" in message
    assert f"the {SCHEMA_VERSION} this avo-postgres understands" in message
    assert "upgrade avo-postgres" in message
    assert await _sql(dsn, schema, "SELECT * FROM avo_events ORDER BY sequence") == before
    versions = await _sql(dsn, schema, "SELECT version FROM avo_schema_version ORDER BY 1")
    assert [row["version"] for row in versions] == [*range(1, SCHEMA_VERSION + 1), 99]
    assert len(before) == 4 and before[0]["run_id"] == run_id


# ------------------------------------------------------------------ delta checkpoints
async def test_checkpoints_write_only_what_changed(pg_schema: tuple[str, str]) -> None:
    """Each checkpoint writes its new items only, so checkpoint I/O per step is constant."""
    import asyncpg

    dsn, schema = pg_schema
    async with PostgresEventStore(dsn, schema=schema) as store:
        run_id = await start_run(store)
        probe = await asyncpg.connect(dsn, server_settings={"search_path": schema})
        try:
            # Count every row written to the item table with a trigger in this test's schema.
            await probe.execute(
                "CREATE TABLE item_writes (n bigint NOT NULL); INSERT INTO item_writes VALUES (0);"
                "CREATE FUNCTION count_item_write() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN UPDATE item_writes SET n = n + 1; RETURN NEW; END $$;"
                "CREATE TRIGGER count_item_write AFTER INSERT OR UPDATE ON avo_checkpoint_items "
                "FOR EACH ROW EXECUTE FUNCTION count_item_write();"
                "CREATE TABLE part_writes (n bigint NOT NULL); INSERT INTO part_writes VALUES (0);"
                "CREATE FUNCTION count_part_write() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN UPDATE part_writes SET n = n + 1; RETURN NEW; END $$;"
                "CREATE TRIGGER count_part_write AFTER INSERT OR UPDATE ON avo_checkpoint_parts "
                "FOR EACH ROW EXECUTE FUNCTION count_part_write();"
            )
            # A provider snapshot with a large script shared between checkpoints
            # (as FakeProvider's is) and a small cursor that changes every step.
            script = [{"content": f"answer {i}", "pad": "y" * 50} for i in range(100)]
            part_writes = []
            messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
            completed: set[str] = set()
            writes_per_step = []
            head_sizes = []
            for step in range(1, 61):
                messages = [*messages, {"role": "assistant", "content": f"call {step}"}]
                messages = [*messages, {"role": "tool", "content": {"n": step, "pad": "x" * 200}}]
                completed = {*completed, f"call-{step}"}
                if step == 40:  # the script changes once: written once more
                    script = [*script, {"content": "late", "pad": ""}]
                cp = checkpoint(run_id, messages=messages, next_step=2, completed=completed)
                cp = cp.model_copy(
                    update={"provider_metadata": {"type": "fake", "cursor": step, "script": script}}
                )
                before = await probe.fetchval("SELECT n FROM item_writes")
                parts_before = await probe.fetchval("SELECT n FROM part_writes")
                await store.save_checkpoint(cp, checkpointed(run_id, cp))
                writes_per_step.append(await probe.fetchval("SELECT n FROM item_writes") - before)
                part_writes.append(await probe.fetchval("SELECT n FROM part_writes") - parts_before)
                head_sizes.append(
                    await probe.fetchval(
                        "SELECT octet_length(head::text) FROM avo_checkpoints "
                        "WHERE run_id = $1 ORDER BY ordinal DESC LIMIT 1",
                        run_id,
                    )
                )
        finally:
            await probe.close()
        # The first checkpoint writes every item (3 messages, 1 call id, 2 observation
        # fingerprints, 1 progress marker); each later one only 2 messages + 1 call id.
        assert writes_per_step[0] == 7
        assert set(writes_per_step[1:]) == {3}
        assert part_writes == [1] + [0] * 38 + [1] + [0] * 20
        assert max(head_sizes) - min(head_sizes) <= 1  # constant (the cursor 9 -> 10 -> ...)
        latest = await store.get_latest_checkpoint(run_id)
        assert latest is not None
        assert latest.messages == messages and latest.completed_tool_call_ids == completed
        assert latest.provider_metadata == {"type": "fake", "cursor": 60, "script": script}
    async with PostgresEventStore(dsn, schema=schema) as cold:  # no cache: read back
        assert await cold.get_latest_checkpoint(run_id) == latest


_CRASHING_CHILD = """
import asyncio, os, signal, sys
from pathlib import Path
from pydantic import BaseModel
from avo.models import ModelResponse, ToolCall
from avo.providers.fake import FakeProvider
from avo.runtime import AgentRuntime
from avo.tools import FunctionTool
from avo_postgres import PostgresEventStore

dsn, schema, marker = sys.argv[1:]

class Args(BaseModel):
    text: str

def effect(args):
    with open(marker, "a") as fh:
        fh.write(args.text + "\\n")
    return {"ok": True}

class CrashOnSecondCall(FakeProvider):
    async def generate(self, request):
        if self.cursor == 1:  # the tool ran and was checkpointed: die without cleanup
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().generate(request)

SCRIPT = [
    ModelResponse(tool_call=ToolCall(tool_call_id="c1", name="effect", arguments={"text": "x"})),
    ModelResponse(content="finished"),
]

async def main():
    store = PostgresEventStore(dsn, schema=schema)
    tool = FunctionTool(name="effect", description="Side effect.", arguments_model=Args,
                        function=effect)
    runtime = AgentRuntime(provider=CrashOnSecondCall(SCRIPT), tools=[tool], event_store=store)
    await runtime.run("crash me", run_id="crashed")

asyncio.run(main())
"""


async def test_run_killed_mid_loop_resumes_on_another_store_instance(
    pg_schema: tuple[str, str], tmp_path: Any
) -> None:
    """SIGKILL after a checkpointed tool result; a fresh store (another host) resumes it."""
    from pydantic import BaseModel

    from avo.tools import FunctionTool

    dsn, schema = pg_schema
    marker = tmp_path / "effects.txt"
    child = subprocess.run(
        [sys.executable, "-c", _CRASHING_CHILD, dsn, schema, str(marker)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -9, child.stderr[-2000:]
    assert marker.read_text() == "x\n"

    class Args(BaseModel):
        text: str

    def effect(args: Args) -> dict[str, bool]:
        with marker.open("a") as fh:
            fh.write(args.text + "\n")
        return {"ok": True}

    script = [
        ModelResponse(
            tool_call=ToolCall(tool_call_id="c1", name="effect", arguments={"text": "x"})
        ),
        ModelResponse(content="finished"),
    ]
    async with PostgresEventStore(dsn, schema=schema) as store:
        assert await store.is_terminal_run("crashed") is False
        tool = FunctionTool(
            name="effect", description="Side effect.", arguments_model=Args, function=effect
        )
        runtime = AgentRuntime(provider=FakeProvider(script), tools=[tool], event_store=store)
        result = await runtime.resume("crashed")
        assert result.status.value == "completed" and result.output == "finished"
        events = await store.get_events("crashed")
    assert marker.read_text() == "x\n"  # the tool's effect did not run twice
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    kinds = [e.event_type.value for e in events]
    assert kinds.count("tool_started") == 1 and "run_resumed" in kinds
    assert kinds[-1] == "run_completed"


# ------------------------------------------------------------------ the plugin
def test_entry_point_registers_the_postgres_store() -> None:
    (ep,) = [ep for ep in entry_points(group="avo.stores") if ep.name == "postgres"]
    plugin = ep.load()
    registered: list[Any] = []
    plugin.avo_register_stores(register=registered.append)
    (spec,) = registered
    assert isinstance(spec, StoreSpec)
    assert spec.name == "postgres"
    assert spec.schemes == ("postgresql", "postgres")
    store = spec.factory("postgresql://u@127.0.0.1/db", {"connect_timeout": 1, "schema": "s1"})
    assert isinstance(store, PostgresEventStore)


def test_importing_the_plugin_does_not_import_asyncpg() -> None:
    code = "import sys, avo_postgres.plugin; print('asyncpg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"pool_size": 3}, "unknown postgres store setting(s) pool_size"),
        ({"connect_timeout": 0}, "connect_timeout=0 must be a positive number"),
        ({"pool_max_size": "many"}, "pool_max_size='many' must be an integer"),
        ({"concurrency": 0}, "concurrency=0 must be an integer >= 1"),
    ],
)
def test_bad_settings_name_the_key(settings: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        store_from_settings("postgresql://u@h/db", settings)
    assert fragment in str(caught.value)


def test_the_pool_is_sized_from_the_expected_concurrency() -> None:
    from avo_postgres.store import pool_size_for

    assert [pool_size_for(n) for n in (None, 1, 5, 6, 15, 100, 1000)] == [5, 5, 5, 6, 6, 15, 20]
    store = store_from_settings("postgresql://u@h/db", {"concurrency": 100})
    assert store._pool_max_size == 15
    assert store._group.parallel == 7
    pinned = store_from_settings("postgresql://u@h/db", {"concurrency": 100, "pool_max_size": 3})
    assert pinned._pool_max_size == 3


async def test_store_opens_by_url_through_the_registry(pg_schema: tuple[str, str]) -> None:
    from avo.compose import open_store

    dsn, schema = pg_schema
    store = open_store(dsn, settings={"schema": schema}, environ={})
    assert isinstance(store, PostgresEventStore)
    async with store:
        run_id = await start_run(store)
        assert (await store.get_run(run_id)) is not None


async def test_concurrent_first_use_opens_one_pool(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    async with PostgresEventStore(dsn, schema=schema) as setup:
        run_id = await start_run(setup)
    store = PostgresEventStore(dsn, schema=schema)
    try:
        results = await asyncio.gather(*(store.get_events(run_id) for _ in range(10)))
        assert all(len(events) == 4 for events in results)
    finally:
        await store.close()
    with pytest.raises(StorageError, match="is closed"):
        await store.get_run(run_id)


# ------------------------------------------------------------------ leases beyond the suite
async def test_lease_taken_before_the_run_exists(pg_schema: tuple[str, str]) -> None:
    from avo.exceptions import LeaseError
    from avo.testing.stores import created, run_record

    dsn, schema = pg_schema
    async with PostgresEventStore(dsn, schema=schema) as store:
        lease = await store.acquire_lease("future-run", "worker-a", 30)
        with pytest.raises(LeaseError, match="leased by 'worker-a'"):
            await store.acquire_lease("future-run", "worker-b", 30)
        with pytest.raises(LeaseError):  # an unleased creator may not take the run
            await store.create_run(run_record("future-run"), created("future-run"))
        assert await store.get_run("future-run") is None
        writer = store.fenced(lease)
        await writer.create_run(run_record("future-run"), created("future-run"))
        renewed = await store.renew_lease(lease, 60)  # the lease moved onto the run
        assert renewed.token == lease.token
        newer = await store.acquire_lease("future-run", "worker-a", 30)  # same owner again
        assert newer.token == lease.token + 1
        with pytest.raises(LeaseError, match="stale"):
            await writer.append_event(moved("future-run", RunState.CREATED, RunState.MODEL_PENDING))
        assert len(await store.get_events("future-run")) == 1


async def test_released_lease_writes_no_more(pg_schema: tuple[str, str]) -> None:
    from avo.exceptions import LeaseError

    dsn, schema = pg_schema
    async with PostgresEventStore(dsn, schema=schema) as store:
        run_id = await start_run(store)
        lease = await store.acquire_lease(run_id, "worker-a", 30)
        writer = store.fenced(lease)
        await store.release_lease(lease)
        with pytest.raises(LeaseError, match="released"):
            await writer.append_event(moved(run_id, RunState.DECISION_RECEIVED, RunState.PAUSED))
        with pytest.raises(LeaseError, match="released"):
            await store.renew_lease(lease, 30)
        # Unleased writes work again, and another owner can take the run at once.
        await store.append_event(moved(run_id, RunState.DECISION_RECEIVED, RunState.PAUSED))
        assert (await store.acquire_lease(run_id, "worker-b", 30)).token == lease.token + 1


async def test_awkward_text_round_trips(pg_schema: tuple[str, str]) -> None:
    """NUL characters (binary tool output) and lone surrogates are stored and read back."""
    dsn, schema = pg_schema
    async with PostgresEventStore(dsn, schema=schema) as store:
        run_id = await start_run(store)
        await store.append_event(
            event(run_id, EventType.TOOL_STARTED, tool_call_id="c\x001", raw="a\x00b", s="\ud800")
        )
        async with PostgresEventStore(dsn, schema=schema) as other:  # checks via the database
            await other.append_event(
                event(run_id, EventType.TOOL_COMPLETED, tool_call_id="c\x001", out="\x00")
            )
            with pytest.raises(EventInvariantError, match="already has a result"):
                await other.append_event(
                    event(run_id, EventType.TOOL_FAILED, tool_call_id="c\x001", error="x")
                )
            cp = checkpoint(run_id, messages=[{"role": "tool", "content": "bin\x00ary"}])
            cp = cp.model_copy(update={"user_state": {"blob": "\x00" * 300}})
            await other.save_checkpoint(cp, checkpointed(run_id, cp))
        events = await store.get_events(run_id)
        assert events[4].payload == {"tool_call_id": "c\x001", "raw": "a\x00b", "s": "\ud800"}
        assert events[5].payload["out"] == "\x00"
        assert await store.get_latest_checkpoint(run_id) == cp


async def test_dropped_connections_give_storage_errors_and_the_store_recovers(
    pg_schema: tuple[str, str],
) -> None:
    """The server kills the store's connections (as a restart or failover would), repeatedly.

    Each write right after a kill either succeeds on a fresh connection or fails
    with a plain StorageError; never a driver exception, never a half write.
    """
    import uuid

    import asyncpg

    dsn, schema = pg_schema
    name = f"avo-test-{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(dsn)
    failures = 0
    try:
        async with PostgresEventStore(dsn, schema=schema, application_name=name) as store:
            run_id = await start_run(store)
            acknowledged = 4
            for n in range(10):
                await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = $1",
                    name,
                )
                try:
                    await store.append_event(event(run_id, EventType.MODEL_REQUESTED, n=n))
                except StorageError as exc:
                    assert type(exc) is StorageError and "127.0.0.1" in str(exc)
                    failures += 1
                else:
                    acknowledged += 1
            events = await store.get_events(run_id)
            assert [e.sequence for e in events] == list(range(1, acknowledged + 1))
            stored = await store.append_event(event(run_id, EventType.MODEL_REQUESTED, n=99))
            assert stored.sequence == acknowledged + 1
    finally:
        await admin.close()
