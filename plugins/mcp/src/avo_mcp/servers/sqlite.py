"""``python -m avo_mcp.servers.sqlite --database FILE``: read-only SQL.

Three layers keep it read-only: the file is opened ``mode=ro``, the connection
sets ``PRAGMA query_only``, and an authorizer allows only reads (SELECT, READ,
FUNCTION, RECURSIVE). Values are always bound as parameters, one statement per
call, and results are capped at ``max_rows``.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from avo.exceptions import ToolExecutionError
from avo.models import ToolRisk
from avo.tools import FunctionTool, ToolRegistry

_ALLOWED_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_ALLOWED_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info"})


class QueryArguments(BaseModel):
    """Arguments of ``query``."""

    model_config = ConfigDict(extra="forbid")
    sql: str = Field(min_length=1, description="one SELECT statement with ? or :name placeholders")
    params: list[Any] | dict[str, Any] = Field(default_factory=list)
    max_rows: int = Field(default=200, gt=0, le=10_000)


class NoArguments(BaseModel):
    """No arguments."""

    model_config = ConfigDict(extra="forbid")


class DescribeArguments(BaseModel):
    """Arguments of ``describe_table``."""

    model_config = ConfigDict(extra="forbid")
    table: str = Field(min_length=1)


def _authorizer(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _ALLOWED_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def connect_read_only(database: Path) -> sqlite3.Connection:
    """Open ``database`` read-only with the read-only authorizer installed."""
    if not database.is_file():
        raise ToolExecutionError(f"SQLite database {database} does not exist")
    uri = f"file:{quote(str(database.resolve()))}?mode=ro"
    connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")
    # Load the schema before the authorizer: SQLite reports its internal schema
    # parse as an UPDATE of sqlite_master, which the authorizer would refuse.
    connection.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    connection.set_authorizer(_authorizer)
    return connection


class ReadOnlyDatabase:
    """One read-only connection; queries run in a worker thread, one at a time."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self._connection = connect_read_only(database)
        self._lock = asyncio.Lock()

    def _run(self, sql: str, params: Any, max_rows: int) -> dict[str, Any]:
        try:
            cursor = self._connection.execute(sql, params)
            rows = cursor.fetchmany(max_rows + 1)
        except (sqlite3.Error, sqlite3.Warning) as exc:
            raise ToolExecutionError(f"query refused or failed: {exc}") from None
        columns = [d[0] for d in cursor.description or ()]
        return {
            "columns": columns,
            "rows": [list(row) for row in rows[:max_rows]],
            "truncated": len(rows) > max_rows,
        }

    async def query(self, sql: str, params: Any = (), max_rows: int = 200) -> dict[str, Any]:
        """Run one read-only statement with bound parameters."""
        async with self._lock:
            return await asyncio.to_thread(self._run, sql, params, max_rows)


def build_registry(database: Path) -> ToolRegistry:
    """query, list_tables and describe_table over ``database``."""
    db = ReadOnlyDatabase(database)

    async def query(args: QueryArguments) -> dict[str, Any]:
        return await db.query(args.sql, args.params, args.max_rows)

    async def list_tables(_: NoArguments) -> dict[str, Any]:
        result = await db.query(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
        return {"tables": [row[0] for row in result["rows"]]}

    async def describe_table(args: DescribeArguments) -> dict[str, Any]:
        known = await db.query(
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name = ?",
            [args.table],
        )
        if not known["rows"]:
            raise ToolExecutionError(f"no table named {args.table!r}; see list_tables")
        # Identifiers cannot be bound; the name was just matched exactly, and is quoted.
        quoted = '"' + args.table.replace('"', '""') + '"'
        info = await db.query(f"PRAGMA table_info({quoted})")
        columns = [
            {"name": row[1], "type": row[2], "notnull": bool(row[3]), "pk": bool(row[5])}
            for row in info["rows"]
        ]
        return {"table": args.table, "columns": columns}

    return ToolRegistry(
        [
            FunctionTool(
                name="query",
                description="Run one read-only SQL SELECT with bound "
                "parameters (? or :name) and return columns and rows.",
                arguments_model=QueryArguments,
                function=query,
                risk=ToolRisk.INSPECT,
            ),
            FunctionTool(
                name="list_tables",
                description="Names of the database's tables.",
                arguments_model=NoArguments,
                function=list_tables,
                risk=ToolRisk.INSPECT,
            ),
            FunctionTool(
                name="describe_table",
                description="Columns of one table.",
                arguments_model=DescribeArguments,
                function=describe_table,
                risk=ToolRisk.INSPECT,
            ),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Serve the read-only SQLite tools for ``--database`` on stdio."""
    parser = argparse.ArgumentParser(prog="python -m avo_mcp.servers.sqlite")
    parser.add_argument("--database", type=Path, required=True, help="SQLite database file")
    args = parser.parse_args(argv)
    if not args.database.is_file():
        parser.error(f"--database {args.database} does not exist")
    from avo_mcp.servers._stdio import serve

    return serve(build_registry(args.database), name="sqlite")


if __name__ == "__main__":
    raise SystemExit(main())
