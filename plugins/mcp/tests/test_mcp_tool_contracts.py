"""The built-in servers' own tools pass the kernel's tool contract checker."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from avo.testing.tools import check_metadata
from avo_mcp.registry import build_default_registry
from avo_mcp.servers import filesystem, git, http_fetch, sqlite


def test_builtin_server_tools_meet_the_contract(tmp_path: Path) -> None:
    database = tmp_path / "d.db"
    sqlite3.connect(database).close()
    registries = [
        filesystem.build_registry(),
        git.build_registry(tmp_path),
        sqlite.build_registry(database),
        build_default_registry(),
    ]
    names = []
    for registry in registries:
        for name in registry.names():
            metadata = check_metadata(registry.get(name))
            names.append(metadata.name)
    assert {"list_directory", "git_log", "query", "list_tables", "describe_table"} <= set(names)
    check_metadata(http_fetch.fetch_tool())


@pytest.mark.parametrize("risk_of", [("read_file", "inspect"), ("write_file", "modify")])
def test_default_registry_declares_risk(risk_of) -> None:
    name, risk = risk_of
    assert build_default_registry().get(name).metadata.effective_risk.value == risk
