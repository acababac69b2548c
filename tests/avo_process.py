"""Helpers of the root tests that drive ``avo`` as a subprocess against a loopback model.

Imported by path (``sys.path`` holds this folder, see each test's imports):
the environment of a run that talks to a :class:`ScriptedHTTPServer` through
the real ``openai`` adapter, the ``avo`` command itself, and the PostgreSQL
test server's DSN and schema clean-up.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from avo.testing.providers import ScriptedHTTPServer

DSN_FILE = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"), "postgres.dsn")


def openai_env(
    home: Path, server: ScriptedHTTPServer, key: str, *, provider: bool = True
) -> dict[str, str]:
    """This process's environment without any ``AVO_`` variable, pointed at ``server``.

    ``provider`` False leaves ``AVO_PROVIDER`` unset (the test's avo.toml names it).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
    env.update(
        {
            "AVO_OPENAI_API_KEY": key,
            "AVO_OPENAI_BASE_URL": server.url + "/v1",
            "AVO_OPENAI_MODEL": "gpt-test",
            "AVO_PLUGINS_CACHE": "0",
            "HOME": str(home),
        }
    )
    if provider:
        env["AVO_PROVIDER"] = "openai"
    return env


def run_avo(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``avo ARGS`` in ``cwd``, its output captured (never raises on a failing exit)."""
    return subprocess.run(
        [sys.executable, "-m", "avo.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def postgres_dsn() -> str | None:
    """The PostgreSQL test server's DSN (AVO_TEST_POSTGRES_DSN or the services file), if any."""
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN", "").strip()
    if dsn:
        return dsn
    return DSN_FILE.read_text().strip() if DSN_FILE.is_file() else None


def postgres_dsn_or_skip() -> str:
    """:func:`postgres_dsn`, or skip the test saying how to start the server."""
    dsn = postgres_dsn()
    if not dsn:
        pytest.skip("no PostgreSQL test server: run scripts/ensure-services.sh")
    return dsn


async def drop_schema_async(dsn: str, schema: str) -> None:
    """Drop a test's PostgreSQL schema and everything in it."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def drop_schema(dsn: str, schema: str) -> None:
    """:func:`drop_schema_async` from synchronous code."""
    asyncio.run(drop_schema_async(dsn, schema))
