"""The built-in servers, each driven over stdio by avo's client."""

from __future__ import annotations

import http.server
import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from avo.models import ToolCall
from avo.tools import ToolRegistry
from avo_mcp import MCPClient, MCPServer


def _server(module: str, *args: str) -> MCPServer:
    return MCPServer(command=[sys.executable, "-m", f"avo_mcp.servers.{module}", *args])


async def _call(registry: ToolRegistry, name: str, **arguments):
    return await registry.invoke(
        ToolCall(name=name, arguments=arguments), completed_tool_call_ids=set()
    )


async def test_filesystem_server_is_workspace_bounded(tmp_path: Path, assert_reaped) -> None:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("alpha\n")
    (tmp_path / "secret.txt").write_text("outside")
    server = _server("filesystem", "--root", str(root))
    async with MCPClient(server) as client:
        assert server.server_info["name"] == "avo-filesystem"
        registry = ToolRegistry(client.tools())
        assert set(registry.names()) >= {"read_file", "write_file", "list_directory", "grep"}
        listing = await _call(registry, "list_directory", path="docs")
        assert listing.success, listing.error
        assert json.loads(listing.output)["entries"] == [{"name": "a.md", "type": "file"}]
        written = await _call(registry, "write_file", path="docs/b.md", content="beta")
        assert written.success, written.error
        assert (root / "docs" / "b.md").read_text() == "beta"
        escape = await _call(registry, "read_file", path="../secret.txt")
        assert not escape.success
        assert "escapes workspace root" in escape.error
        resources = await server.request("resources/list")
        assert {r["uri"] for r in resources["resources"]} == {
            "avo://workspace/docs/a.md",
            "avo://workspace/docs/b.md",
        }
    assert_reaped(server.pid)


async def test_git_server(tmp_path: Path, assert_reaped) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "GIT_AUTHOR_NAME": "T",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@x",
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    for argv in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(["git", *argv], cwd=repo, env=env, check=True)
    (repo / "new.txt").write_text("x")
    server = _server("git", "--repo", str(repo))
    async with MCPClient(server) as client:
        registry = ToolRegistry(client.tools())
        log = await _call(registry, "git_log", max_count=5)
        assert log.success, log.error
        (commit,) = json.loads(log.output)["commits"]
        assert commit["subject"] == "first" and commit["author"] == "T"
        status = await _call(registry, "git_status")
        assert status.success, status.error
        files = json.loads(status.output)["files"]
        assert {"status": "??", "path": "new.txt"} in files
        bad = await _call(registry, "git_log", path="../../etc")
        assert not bad.success
    assert_reaped(server.pid)


async def test_sqlite_server_is_read_only_and_parameterized(tmp_path: Path, assert_reaped) -> None:
    database = tmp_path / "data.db"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        connection.executemany("INSERT INTO users (name) VALUES (?)", [("ann",), ("bob",)])
    connection.close()
    server = _server("sqlite", "--database", str(database))
    async with MCPClient(server) as client:
        registry = ToolRegistry(client.tools())
        tables = await _call(registry, "list_tables")
        assert json.loads(tables.output) == {"tables": ["users"]}
        described = await _call(registry, "describe_table", table="users")
        assert described.success, described.error
        columns = json.loads(described.output)["columns"]
        assert [(c["name"], c["pk"]) for c in columns] == [("id", True), ("name", False)]
        missing = await _call(registry, "describe_table", table='users"; DROP TABLE users; --')
        assert not missing.success and "no table named" in missing.error
        rows = await _call(
            registry, "query", sql="SELECT id, name FROM users WHERE name = ?", params=["bob"]
        )
        assert json.loads(rows.output)["rows"] == [[2, "bob"]]
        # an injection attempt is just a value when bound
        injected = await _call(
            registry,
            "query",
            sql="SELECT * FROM users WHERE name = :n",
            params={"n": "x' OR '1'='1"},
        )
        assert json.loads(injected.output)["rows"] == []
        for sql in (
            "DELETE FROM users",
            "INSERT INTO users (name) VALUES ('eve')",
            "DROP TABLE users",
            "ATTACH DATABASE '/tmp/x.db' AS x",
            "PRAGMA writable_schema = ON",
            "SELECT 1; DELETE FROM users",
        ):
            refused = await _call(registry, "query", sql=sql)
            assert not refused.success, sql
        capped = await _call(registry, "query", sql="SELECT * FROM users", max_rows=1)
        assert json.loads(capped.output)["truncated"] is True
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT count(*) FROM users").fetchone() == (2,)
    connection.close()
    assert_reaped(server.pid)


@pytest.fixture
def local_site() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"hello from loopback"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/page"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


async def test_http_fetch_server_uses_egress_policy(local_site: str, assert_reaped) -> None:
    default = _server("http_fetch")
    async with MCPClient(default) as client:
        registry = ToolRegistry(client.tools())
        refused = await _call(registry, "fetch", url=local_site)
        assert not refused.success
        assert "egress refused" in refused.error
        scheme = await _call(registry, "fetch", url="file:///etc/passwd")
        assert not scheme.success
    allowed = _server("http_fetch", "--allow-network", "127.0.0.1/32")
    async with MCPClient(allowed) as client:
        registry = ToolRegistry(client.tools())
        fetched = await _call(registry, "fetch", url=local_site)
        assert fetched.success, fetched.error
        body = json.loads(fetched.output)
        assert body["status_code"] == 200 and body["text"] == "hello from loopback"
    assert_reaped(default.pid)
    assert_reaped(allowed.pid)
