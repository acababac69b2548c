"""``avo login``: the key stored owner-only, used by the next run, and never printed.

A real ``avo`` subprocess with a private home; the provider is the openai plugin
talking to a loopback server that records what it was sent.
"""

from __future__ import annotations

import json
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_kit import CLI, write

from avo.models import TokenUsage
from avo.testing.providers import ScriptedHTTPServer

KEY = "sk-login-roundtrip-4f9a8b7c6d5e"


@pytest.fixture
def server() -> Iterator[ScriptedHTTPServer]:
    with ScriptedHTTPServer() as running:
        yield running


def _everything_printed(*results: object) -> str:
    return "\n".join(f"{r.out}\n{r.err}" for r in results)  # type: ignore[attr-defined]


def test_login_round_trip_stores_0600_uses_the_key_and_never_prints_it(
    cli: CLI, server: ScriptedHTTPServer
) -> None:
    pytest.importorskip("avo_providers")
    from avo_providers.wire_fakes import OpenAIWire

    login = cli("login", "openai", "--stdin", "--no-keyring", stdin=KEY + "\n")
    assert login.code == 0, login.err
    path = cli.home / ".config" / "avo" / "credentials.toml"
    assert f"as AVO_OPENAI_API_KEY in {path} (owner-only, 0600)" in login.out
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert KEY in path.read_text()

    listed = cli("login", "--list", "--json")
    row = next(r for r in json.loads(listed.out) if r["provider"] == "openai")
    assert row == {
        "provider": "openai",
        "variable": "AVO_OPENAI_API_KEY",
        "stored": "file",
        "in_environment": False,
        "fallback": None,
        "used": "stored (file)",
    }

    # The next run uses the stored key (no AVO_OPENAI_API_KEY in its environment).
    server.push(OpenAIWire().text("hi", TokenUsage(input_tokens=3, output_tokens=1)))
    write(
        cli.cwd / "avo.toml",
        '[provider]\nname = "openai"\n[provider.settings]\nmodel = "gpt-4o-mini"\n',
    )
    ran = cli("run", "hello", "--json", AVO_OPENAI_BASE_URL=server.url + "/v1")
    assert ran.code == 0, ran.err
    assert server.requests[-1].header("authorization") == f"Bearer {KEY}"
    doctor = cli("doctor", AVO_OPENAI_BASE_URL=server.url + "/v1")
    assert "API key from: stored by avo login (file)" in doctor.out

    # ...and a vendor variable is a fallback that doctor points out.
    vendor = cli("doctor", "--provider", "anthropic", ANTHROPIC_API_KEY="sk-ant-vendor-000000")
    assert "API key from: ANTHROPIC_API_KEY (environment)" in vendor.out
    assert "note: ANTHROPIC_API_KEY is the vendor's variable" in vendor.out

    removed = cli("login", "--remove", "openai")
    assert removed.out.strip() == "removed the stored API key for openai (AVO_OPENAI_API_KEY)"
    assert KEY not in path.read_text()
    again = cli("run", "hello", AVO_OPENAI_BASE_URL=server.url + "/v1")
    assert again.code != 0 and "AVO_OPENAI_API_KEY" in again.err

    # Never printed, never recorded.
    assert KEY not in _everything_printed(login, listed, ran, doctor, removed, again)
    for database in cli.cwd.glob("*.db"):
        with sqlite3.connect(database) as conn:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"):
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    assert KEY not in repr(row), table


def test_login_refuses_unknown_providers_and_empty_keys(cli: CLI) -> None:
    pytest.importorskip("avo_providers")
    unknown = cli("login", "opneai", "--stdin", stdin="sk-x\n")
    assert unknown.code == 2
    assert unknown.first_err.startswith("avo: unknown provider 'opneai'; installed: ")
    empty = cli("login", "openai", "--stdin", stdin="\n")
    assert empty.code == 2
    assert empty.first_err == (
        "avo: no API key given for openai; paste it at the prompt, or pipe it: "
        "avo login openai --stdin < keyfile"
    )
    assert not (cli.home / ".config" / "avo" / "credentials.toml").exists()


def test_a_path_is_written_nowhere_else(cli: CLI, tmp_path: Path) -> None:
    pytest.importorskip("avo_providers")
    custom = tmp_path / "conf"
    done = cli("login", "groq", "--stdin", "--no-keyring", stdin=KEY, AVO_CONFIG_DIR=str(custom))
    assert done.code == 0, done.err
    assert (custom / "credentials.toml").is_file()
    assert not (cli.home / ".config" / "avo").exists()


def _keyring_env(cli: CLI) -> dict[str, str]:
    """The keyring package's file backend (keyrings.alt), kept under the test's home."""
    return {
        "PYTHON_KEYRING_BACKEND": "keyrings.alt.file.PlaintextKeyring",
        "XDG_DATA_HOME": str(cli.home / ".local" / "share"),
    }


def _in_keyring(cli: CLI, variable: str) -> str | None:
    """What the keyring holds for ``variable`` (read by another process, as a user would)."""
    import subprocess
    import sys

    read = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import json, keyring; print(json.dumps(keyring.get_password('avo', {variable!r})))",
        ],
        env=cli.env(**_keyring_env(cli)),
        capture_output=True,
        text=True,
        check=True,
    )
    value = json.loads(read.stdout)
    return value if value is None else str(value)


def test_login_into_the_keyring_then_the_run_uses_it_and_remove_forgets_it(
    cli: CLI, server: ScriptedHTTPServer
) -> None:
    pytest.importorskip("avo_providers")
    pytest.importorskip("keyrings.alt")
    from avo_providers.wire_fakes import ResponsesWire

    ring = _keyring_env(cli)
    login = cli("login", "openai", "--stdin", stdin=KEY + "\n", **ring)
    assert login.code == 0, login.err
    assert login.out.strip() == (
        "stored the API key for openai as AVO_OPENAI_API_KEY in the OS keyring (service 'avo')"
    )
    assert _in_keyring(cli, "AVO_OPENAI_API_KEY") == KEY
    path = cli.home / ".config" / "avo" / "credentials.toml"
    assert KEY not in path.read_text()  # the file only names what the keyring holds
    assert 'names = ["AVO_OPENAI_API_KEY"]' in path.read_text()

    listed = cli("login", "--list", "--json", **ring)
    row = next(r for r in json.loads(listed.out) if r["provider"] == "openai")
    assert (row["stored"], row["used"]) == ("keyring", "stored (keyring)")

    # The Responses adapter reads the same key (AVO_OPENAI_API_KEY) as the Chat one.
    server.push(ResponsesWire().text("hi", TokenUsage(input_tokens=3, output_tokens=1)))
    write(
        cli.cwd / "avo.toml",
        '[provider]\nname = "openai-responses"\n[provider.settings]\nmodel = "gpt-4.1"\n',
    )
    ran = cli("run", "hello", "--json", AVO_OPENAI_BASE_URL=server.url + "/v1", **ring)
    assert ran.code == 0, ran.err
    assert server.requests[-1].path == "/v1/responses"
    assert server.requests[-1].header("authorization") == f"Bearer {KEY}"
    doctor = cli("doctor", AVO_OPENAI_BASE_URL=server.url + "/v1", **ring)
    assert "API key from: stored by avo login (keyring)" in doctor.out

    removed = cli("login", "--remove", "openai", **ring)
    assert removed.out.strip() == "removed the stored API key for openai (AVO_OPENAI_API_KEY)"
    assert _in_keyring(cli, "AVO_OPENAI_API_KEY") is None
    again = cli("run", "hello", AVO_OPENAI_BASE_URL=server.url + "/v1", **ring)
    assert again.code != 0 and "AVO_OPENAI_API_KEY" in again.err
    assert KEY not in _everything_printed(login, listed, ran, doctor, removed, again)
