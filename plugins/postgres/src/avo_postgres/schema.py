"""The store's tables and the migrations that create them, applied on first connect.

``avo_schema_version`` records every applied migration. Connecting applies the
missing ones in order inside one transaction guarded by an advisory lock, so
several processes starting at once migrate exactly once. A database whose
schema is newer than this package knows is refused with ``StorageError`` and
left untouched.
"""

from __future__ import annotations

from typing import Any

from avo.exceptions import StorageError

# pg_advisory_xact_lock(int4, int4) keys: "avo!" as a number (so unrelated apps
# don't collide) and a hash of the schema name.
MIGRATION_LOCK_KEY = 0x61766F21

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE avo_runs (
            run_id            text PRIMARY KEY,
            insert_order      bigserial NOT NULL,
            state             text NOT NULL,
            created_at        timestamptz NOT NULL,
            updated_at        timestamptz NOT NULL,
            record            json NOT NULL,
            -- RunLogState summary: what the event invariants need, O(1) to update
            log_created       boolean NOT NULL DEFAULT false,
            log_terminal      boolean NOT NULL DEFAULT false,
            log_state         text NOT NULL DEFAULT 'created',
            model_responded   boolean NOT NULL DEFAULT false,
            last_sequence     bigint NOT NULL DEFAULT 0,
            checkpoint_ordinal bigint NOT NULL DEFAULT 0,
            checkpoint_id     text,
            -- one writer per run: the lease and its fencing token (avo_postgres.leases)
            lease_owner       text,
            lease_token       bigint NOT NULL DEFAULT 0,
            lease_expires_at  timestamptz
        );
        CREATE INDEX avo_runs_newest ON avo_runs (created_at DESC, insert_order DESC);

        CREATE TABLE avo_events (
            run_id          text NOT NULL REFERENCES avo_runs (run_id) ON DELETE CASCADE,
            sequence        bigint NOT NULL CHECK (sequence >= 1),
            event_id        text NOT NULL UNIQUE,
            event_type      text NOT NULL,
            created_at      timestamptz NOT NULL,
            payload         json NOT NULL,
            parent_event_id text,
            -- payload's tool_call_id for tool events, so invariant 4 looks up one
            -- call without scanning the log (or parsing payloads server-side)
            tool_call_id    text,
            PRIMARY KEY (run_id, sequence)
        );
        CREATE INDEX avo_events_tool_call ON avo_events (run_id, tool_call_id)
            WHERE tool_call_id IS NOT NULL;

        CREATE TABLE avo_checkpoints (
            run_id        text NOT NULL REFERENCES avo_runs (run_id) ON DELETE CASCADE,
            ordinal       bigint NOT NULL,
            checkpoint_id text NOT NULL UNIQUE,
            created_at    timestamptz NOT NULL,
            head          json NOT NULL,
            lengths       json NOT NULL,
            PRIMARY KEY (run_id, ordinal)
        );

        -- Large values of the checkpoint's dict fields (policy, provider_metadata,
        -- user_state), one row per key, rewritten only when the value changes.
        CREATE TABLE avo_checkpoint_parts (
            run_id text NOT NULL REFERENCES avo_runs (run_id) ON DELETE CASCADE,
            field  text NOT NULL,
            key    text NOT NULL,
            value  json NOT NULL,
            PRIMARY KEY (run_id, field, key)
        );

        -- Leases taken before their run exists; create_run moves one onto the
        -- run row. No foreign key, for that reason.
        CREATE TABLE avo_leases (
            run_id     text PRIMARY KEY,
            owner      text,
            token      bigint NOT NULL DEFAULT 0,
            expires_at timestamptz
        );

        -- The list fields of the latest checkpoint, one row per item: a new
        -- checkpoint writes only the items that changed since the previous one.
        CREATE TABLE avo_checkpoint_items (
            run_id   text NOT NULL REFERENCES avo_runs (run_id) ON DELETE CASCADE,
            field    text NOT NULL,
            position integer NOT NULL,
            value    json NOT NULL,
            PRIMARY KEY (run_id, field, position)
        );
        """,
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The newest schema this package writes."""


async def migrate(conn: Any, where: str, schema: str | None = None) -> int:
    """Bring the database (or ``schema`` in it) to SCHEMA_VERSION; return the version found.

    Raises StorageError when the database was written by a newer avo-postgres.
    """
    async with conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext(coalesce($2::text, '')))",
            MIGRATION_LOCK_KEY,
            schema,
        )
        if schema is not None:
            # schema is a checked plain identifier (PostgresEventStore validates it).
            await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS avo_schema_version ("
            " version integer PRIMARY KEY,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        found = int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM avo_schema_version"))
        if found > SCHEMA_VERSION:
            place = f"{where}, schema {schema!r}" if schema else where
            raise StorageError(
                f"the avo store in PostgreSQL at {place} has schema version {found}, newer "
                f"than the {SCHEMA_VERSION} this avo-postgres understands; upgrade "
                "avo-postgres (nothing was changed in the database)"
            )
        for version, sql in MIGRATIONS:
            if version > found:
                await conn.execute(sql)
                await conn.execute("INSERT INTO avo_schema_version (version) VALUES ($1)", version)
        return found
