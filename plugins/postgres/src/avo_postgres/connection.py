"""Opening the asyncpg pool and turning driver errors into ``StorageError``.

Nothing outside this package ever sees an asyncpg exception: a server that is
down, a wrong password, a missing database or a dropped connection all become a
:class:`avo.exceptions.StorageError` that names the server (never the password)
and says what to check.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from avo.exceptions import StorageError

DEFAULT_CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a connection before reporting the server unreachable."""


@dataclass(frozen=True)
class ServerAddress:
    """Where a DSN points, for error messages (no password)."""

    host: str
    port: int
    database: str
    user: str

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (database {self.database!r}, user {self.user!r})"


def parse_dsn(dsn: str) -> ServerAddress:
    """Read host, port, database and user from a ``postgresql://`` URL.

    ``host``/``port``/``user``/``dbname`` query parameters (a Unix socket
    directory as host, for instance) count when the URL leaves them out.

    Raises StorageError naming the bad value when the DSN is not such a URL.
    """
    try:
        parts = urlsplit(dsn)
        port = parts.port or 5432
    except ValueError as exc:
        raise StorageError(
            f"invalid PostgreSQL DSN {redact_dsn(dsn)!r}: {exc}; "
            "expected postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
        ) from None
    if parts.scheme not in ("postgresql", "postgres"):
        raise StorageError(
            f"invalid PostgreSQL DSN {redact_dsn(dsn)!r}: scheme must be postgresql:// or "
            "postgres://, e.g. postgresql://avo@127.0.0.1:5432/avo"
        )
    query = parse_qs(parts.query)
    host = unquote(parts.hostname or "") or query.get("host", [""])[0] or "localhost"
    if "port" in query and query["port"][0].isdigit():
        port = int(query["port"][0])
    user = unquote(parts.username or "") or query.get("user", [""])[0] or "(default)"
    database = unquote(parts.path.lstrip("/")) or query.get("dbname", [""])[0] or user
    return ServerAddress(host=host, port=port, database=database, user=user)


def redact_dsn(dsn: str) -> str:
    """The DSN with any password replaced by ``***``."""
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return "<unparseable DSN>"
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _connect_failure(address: ServerAddress, exc: BaseException, timeout: float) -> StorageError:
    import asyncpg  # type: ignore[import-untyped]

    where = (
        f"Unix-socket connections in {address.host} (port {address.port})"
        if address.host.startswith("/")
        else f"TCP connections on {address.host}:{address.port}"
    )
    check = (
        f"check that PostgreSQL is running and accepts {where} "
        f"(try: pg_isready -h {address.host} -p {address.port})"
    )
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        reason = f"no answer within {timeout:g} s"
    elif isinstance(exc, ConnectionRefusedError):
        reason = "connection refused"
    elif isinstance(exc, FileNotFoundError):
        reason = "no server socket there"
    elif isinstance(exc, asyncpg.InvalidCatalogNameError):
        reason = f"database {address.database!r} does not exist"
        check = f"create it (createdb -h {address.host} -p {address.port} {address.database})"
    elif isinstance(
        exc, asyncpg.InvalidAuthorizationSpecificationError | asyncpg.InvalidPasswordError
    ):
        reason = f"authentication failed for user {address.user!r}"
        check = "check the user and password in the DSN and the server's pg_hba.conf"
    else:
        reason = f"{type(exc).__name__}: {exc}"
    return StorageError(f"cannot connect to PostgreSQL at {address}: {reason}; {check}")


async def _keep_session(conn: Any) -> None:
    """Pool reset hook: nothing to undo.

    asyncpg already rolls back an open transaction before calling this. The
    store sets no session variables (the schema is a startup setting), takes
    only transaction-scoped advisory locks and never LISTENs, so the default
    reset (RESET ALL, UNLISTEN *, ... : one more round trip per use) is skipped.
    """
    return None


async def open_pool(
    dsn: str,
    address: ServerAddress,
    *,
    connect_timeout: float,
    min_size: int,
    max_size: int,
    command_timeout: float | None,
    schema: str | None = None,
    application_name: str = "avo",
    init: Callable[[Any], Awaitable[None]] | None = None,
) -> Any:
    """Create an asyncpg pool, or raise StorageError saying why the server is unreachable.

    With ``schema``, every connection's search_path is that schema (created on
    migrate), so several stores can share one database. ``application_name``
    shows in ``pg_stat_activity``. ``init`` is awaited with every new
    connection the pool opens (asyncpg's pool ``init``).
    """
    import asyncpg

    server_settings = {"application_name": application_name}
    if schema:
        server_settings["search_path"] = schema

    try:
        return await asyncio.wait_for(
            asyncpg.create_pool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                timeout=connect_timeout,
                command_timeout=command_timeout,
                server_settings=server_settings,
                reset=_keep_session,
                init=init,
            ),
            # The pool opens min_size connections; allow each its own timeout.
            timeout=connect_timeout * max(1, min_size) + 1,
        )
    except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise _connect_failure(address, exc, connect_timeout) from exc


def _from_driver(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] == "asyncpg"


def connection_broken(exc: BaseException) -> bool:
    """True when ``exc`` means the connection is lost or unusable (not a query error)."""
    import asyncpg

    return isinstance(
        exc,
        asyncpg.PostgresConnectionError
        | asyncpg.InterfaceError
        | asyncpg.InternalClientError
        | OSError
        | TimeoutError,
    )


@asynccontextmanager
async def storage_errors(address: ServerAddress, action: str) -> AsyncIterator[None]:
    """Re-raise driver and network errors met while doing ``action`` as StorageError.

    Anything asyncpg raises (including its InternalClientError, which has no
    common base with the rest), socket errors and timeouts are converted.
    """
    try:
        yield
    except Exception as exc:
        if not (isinstance(exc, TimeoutError | OSError) or _from_driver(exc)):
            raise
        if connection_broken(exc):
            hint = "; the connection to the server was lost or broken, check that it is running"
        else:
            hint = ""
        raise StorageError(
            f"PostgreSQL at {address} failed while {action}: {type(exc).__name__}: {exc}{hint}"
        ) from exc
