"""`avo mcp add|list|remove` and the mcp.json helpers."""

from __future__ import annotations

import argparse
import io
import json
import stat
from pathlib import Path

import pytest

from avo.cli import main
from avo_mcp.cli import configure_mcp, run_mcp
from avo_mcp.config import (
    McpCliError,
    default_config_path,
    load_servers,
    resolve_env,
    servers_from_config,
)


def _avo(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), environ={"HOME": "/nonexistent"})
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_add_list_remove_through_avo_cli(tmp_path: Path, capsys) -> None:
    config = tmp_path / "cfg" / "mcp.json"
    code, out, _ = _avo(
        capsys,
        "mcp",
        "--config",
        str(config),
        "add",
        "fs",
        "--env",
        "API_TOKEN=s3cret",
        "--env",
        "ROOT=/srv",
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "--flag",
    )
    assert code == 0, out
    assert "added MCP server fs" in out
    data = json.loads(config.read_text())
    assert data["fs"] == {
        "command": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "--flag"],
        "env": {"API_TOKEN": "s3cret", "ROOT": "/srv"},
    }
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    # options before the name and `--` work too
    code, _, _ = _avo(
        capsys,
        "mcp",
        "--config",
        str(config),
        "add",
        "--env",
        "DB_PASSWORD=pw",
        "db",
        "--",
        "python",
        "-m",
        "avo_mcp.servers.sqlite",
        "--database",
        "x.db",
    )
    assert code == 0
    assert load_servers(config)["db"]["command"][:2] == ["python", "-m"]

    code, out, _ = _avo(capsys, "mcp", "--config", str(config), "list")
    assert code == 0
    assert "s3cret" not in out
    assert "=pw" not in out
    assert "API_TOKEN=***" in out
    assert "DB_PASSWORD=***" in out
    assert "ROOT=/srv" in out
    assert out.splitlines()[0].split() == ["NAME", "COMMAND"]

    code, out, _ = _avo(capsys, "mcp", "--config", str(config), "list", "--json")
    assert code == 0
    listed = {row["name"]: row for row in json.loads(out)}
    assert "s3cret" not in out and "=pw" not in out
    assert listed["db"]["transport"] == "stdio"
    assert listed["db"]["command"][:2] == ["python", "-m"]
    assert listed["db"]["env"] == {"DB_PASSWORD": "***"}
    assert listed["fs"]["env"]["API_TOKEN"] == "***" and listed["fs"]["env"]["ROOT"] == "/srv"
    assert {row["config"] for row in listed.values()} == {str(config)}

    code, _, err = _avo(capsys, "mcp", "--config", str(config), "remove", "nope", "--yes")
    assert code == 2
    assert "no MCP server named 'nope'" in err and "configured: db, fs" in err
    code, out, _ = _avo(capsys, "mcp", "--config", str(config), "remove", "fs", "--yes")
    assert code == 0 and "removed MCP server fs" in out
    assert set(load_servers(config)) == {"db"}

    code, _, err = _avo(capsys, "mcp", "--config", str(config), "add", "bad name!", "cmd")
    assert code == 2 and "invalid MCP server name 'bad name!'" in err
    code, _, err = _avo(capsys, "mcp", "--config", str(config), "add", "empty")
    assert code == 2 and "give the command" in err
    code, _, err = _avo(capsys, "mcp", "--config", str(config), "add", "x", "--env", "NOEQ", "c")
    assert code == 2 and "--env expects KEY=VALUE, got 'NOEQ'" in err


def _args(config: Path, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure_mcp(parser)
    return parser.parse_args(["--config", str(config), *argv])


def test_remove_asks_for_confirmation(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"a": {"command": ["x"]}, "b": {"command": ["y"]}}))
    out = io.StringIO()
    assert run_mcp(_args(config, "remove", "a"), stdout=out, input_fn=lambda _: "n") == 1
    assert "aborted" in out.getvalue()
    assert set(load_servers(config)) == {"a", "b"}
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "y"

    assert run_mcp(_args(config, "remove", "a"), stdout=out, input_fn=answer) == 0
    assert prompts == ["Remove MCP server 'a'? [y/N] "]
    assert set(load_servers(config)) == {"b"}


def test_list_empty_and_default_path(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_mcp(_args(tmp_path / "none.json", "list"), stdout=out) == 0
    assert "no MCP servers configured" in out.getvalue()
    assert default_config_path({"HOME": str(tmp_path)}) == tmp_path / ".avo" / "mcp.json"


def test_load_validation_and_claude_code_shape(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"t": {"command": "uvx", "args": ["mcp-server-time"]}}})
    )
    assert load_servers(config) == {"t": {"command": ["uvx", "mcp-server-time"], "env": {}}}
    config.write_text("{not json")
    with pytest.raises(McpCliError, match="cannot read MCP config"):
        load_servers(config)
    config.write_text(json.dumps({"t": {"command": []}}))
    with pytest.raises(McpCliError, match="needs a non-empty 'command' list"):
        load_servers(config)


def test_var_expansion(tmp_path: Path) -> None:
    entry = {
        "command": ["${TOOL_HOME}/bin/srv", "--root", "$ROOT"],
        "env": {"TOKEN": "${GH_TOKEN}", "KEEP": "${UNSET_VAR}"},
    }
    environ = {"TOOL_HOME": "/opt/t", "ROOT": "/srv", "GH_TOKEN": "abc"}
    assert resolve_env(entry, environ) == {
        "command": ["/opt/t/bin/srv", "--root", "/srv"],
        "env": {"TOKEN": "abc", "KEEP": "${UNSET_VAR}"},
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"gh": entry}))
    (server,) = servers_from_config(config, environ=environ, timeout_seconds=5)
    assert server.name == "gh"
    assert server.command[0] == "/opt/t/bin/srv"
    assert server.env == {"TOKEN": "abc", "KEEP": "${UNSET_VAR}"}
    assert server.timeout_seconds == 5


def test_serve_mcp_rejects_a_missing_root(tmp_path: Path, capsys) -> None:
    code, _, err = _avo(capsys, "serve-mcp", "--workspace-root", str(tmp_path / "nope"))
    assert code == 2
    assert "is not a directory" in err


def test_http_servers_in_config(tmp_path: Path, capsys) -> None:
    from avo_mcp import MCPHttpServer

    config = tmp_path / "mcp.json"
    code, out, err = _avo(
        capsys,
        "mcp",
        "--config",
        str(config),
        "add",
        "web",
        "--url",
        "https://mcp.example.test/mcp",
        "--header",
        "Authorization=Bearer ${WEB_TOKEN}",
        "--header",
        "X-Team=core",
    )
    assert code == 0, err
    assert load_servers(config)["web"] == {
        "url": "https://mcp.example.test/mcp",
        "headers": {"Authorization": "Bearer ${WEB_TOKEN}", "X-Team": "core"},
    }
    code, out, _ = _avo(capsys, "mcp", "--config", str(config), "list")
    assert "https://mcp.example.test/mcp" in out
    assert "Authorization=***" in out and "X-Team=core" in out and "WEB_TOKEN" not in out
    code, out, _ = _avo(capsys, "mcp", "--config", str(config), "list", "--json")
    (web,) = [row for row in json.loads(out) if row["name"] == "web"]
    assert web["transport"] == "http" and web["url"] == "https://mcp.example.test/mcp"
    assert web["headers"] == {"Authorization": "***", "X-Team": "core"}
    (server,) = servers_from_config(config, environ={"WEB_TOKEN": "t0k"})
    assert isinstance(server, MCPHttpServer)
    assert server.name == "web"
    assert server.headers["Authorization"] == "Bearer t0k"
    code, _, err = _avo(
        capsys, "mcp", "--config", str(config), "add", "both", "--url", "http://x/mcp", "cmd"
    )
    assert code == 2 and "either --url or a command" in err
    code, _, err = _avo(
        capsys, "mcp", "--config", str(config), "add", "h", "--header", "A=b", "cmd"
    )
    assert code == 2 and "--header only applies to --url servers" in err
    code, _, err = _avo(capsys, "mcp", "--config", str(config), "add", "u", "--url", "ftp://x")
    assert code == 2 and "--url must be an http(s) URL" in err


def test_header_in_curl_form_and_bad_headers(tmp_path: Path, capsys) -> None:
    config = tmp_path / "mcp.json"
    code, _, err = _avo(
        capsys,
        "mcp",
        "--config",
        str(config),
        "add",
        "remote",
        "--url",
        "https://mcp.example.test/mcp",
        "--header",
        "Authorization: Bearer x=y",
        "--header",
        "X-Api-Key=k:v",
    )
    assert code == 0, err
    assert load_servers(config)["remote"]["headers"] == {
        "Authorization": "Bearer x=y",
        "X-Api-Key": "k:v",
    }
    code, _, err = _avo(
        capsys, "mcp", "--config", str(config), "add", "r2", "--url", "http://x/mcp",
        "--header", "no separator",
    )  # fmt: skip
    assert code == 2 and "--header expects 'Name: value' or Name=value" in err
    code, _, err = _avo(
        capsys, "mcp", "--config", str(config), "add", "r3", "--url", "http://x/mcp",
        "--header", "Bad Name: v",
    )  # fmt: skip
    assert code == 2 and "is not a valid HTTP header name" in err


def test_servers_from_config_reads_home_from_environ(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".avo").mkdir(parents=True)
    (home / ".avo" / "mcp.json").write_text(json.dumps({"t": {"command": ["mcp-server-time"]}}))
    (server,) = servers_from_config(environ={"HOME": str(home), "PATH": "/usr/bin"})
    assert server.name == "t"
    assert load_servers(environ={"HOME": str(home)}) == {
        "t": {"command": ["mcp-server-time"], "env": {}}
    }
    assert servers_from_config(environ={"HOME": str(tmp_path / "empty")}) == []
