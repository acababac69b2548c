"""Every command reads one configuration: flags > env > avo.toml > user config > defaults."""

from __future__ import annotations

import json
import os
import pty
import select
import stat
import subprocess
import time

import pytest
from cli_kit import CLI, FAKE_ANSWER, write

from avo.models import TokenUsage
from avo.testing.providers import ScriptedHTTPServer

RUNS_DB = (
    FAKE_ANSWER
    + """
hooks = []

[store]
location = "runs.db"
"""
)


def test_store_location_in_avo_toml_is_used_by_every_command(cli: CLI) -> None:
    write(
        cli.cwd / "avo.toml",
        'hooks = ["ledger"]\n' + FAKE_ANSWER + '\n[store]\nlocation = "runs.db"\n',
    )
    ran = cli("run", "hello", "--json")
    assert ran.code == 0, ran.err
    run_id = json.loads(ran.out)["run_id"]
    assert (cli.cwd / "runs.db").is_file() and not (cli.cwd / "avo.db").exists()
    listed = cli("runs", "list", "--json")
    assert listed.code == 0, listed.err
    assert [row["run_id"] for row in json.loads(listed.out)] == [run_id]
    cost = cli("cost", "--json")
    assert cost.code == 0, cost.err
    assert json.loads(cost.out)["database"] == "runs.db"
    assert cli("runs", "inspect", run_id).code == 0
    assert cli("replay", run_id).code == 0


def test_precedence_flag_then_env_then_workspace_then_user(cli: CLI) -> None:
    user_config = cli.home / ".config" / "avo" / "config.toml"
    write(user_config, '[store]\nlocation = "user.db"\n[policy]\nmax_steps = 7\n')
    shown = json.loads(cli("config", "show", "--json").out)
    assert shown["values"]["store.location"] == "user.db"
    assert shown["sources"]["store.location"] == str(user_config)
    assert shown["values"]["policy.max_steps"] == 7
    write(cli.cwd / "avo.toml", '[store]\nlocation = "work.db"\n')
    shown = json.loads(cli("config", "show", "--json").out)
    assert shown["sources"]["store.location"].endswith("avo.toml")
    assert shown["sources"]["policy.max_steps"] == str(user_config)  # tables merge by key
    shown = json.loads(cli("config", "show", "--json", AVO_DATABASE_PATH="env.db").out)
    assert shown["sources"]["store.location"] == "env AVO_DATABASE_PATH"
    shown = json.loads(
        cli("-d", "flag.db", "config", "show", "--json", AVO_DATABASE_PATH="env.db").out
    )
    assert (shown["values"]["store.location"], shown["sources"]["store.location"]) == (
        "flag.db",
        "flag -d/--database",
    )


def test_config_show_table_masks_secrets(cli: CLI) -> None:
    write(
        cli.cwd / "avo.toml",
        '[provider]\nname = "openai"\n[provider.settings]\napi_key = "sk-live-abcdefghijkl"\n',
    )
    shown = cli("config", "show")
    assert shown.code == 0, shown.err
    assert shown.out.splitlines()[0].split() == ["KEY", "VALUE", "SOURCE"]
    assert "sk-live" not in shown.out and "***" in shown.out
    assert "provider.name" in shown.out and '"openai"' in shown.out


def test_setup_writes_user_config_and_an_owner_only_key(cli: CLI) -> None:
    done = cli(
        "setup",
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--api-key-stdin",
        "--permission-mode",
        "default",
        stdin="sk-setup-0123456789abcdef\n",
    )
    assert done.code == 0, done.err
    config = cli.home / ".config" / "avo" / "config.toml"
    assert done.out.splitlines()[0] == f"wrote {config}"
    keys = cli.home / ".config" / "avo" / "credentials.toml"
    assert stat.S_IMODE(os.stat(keys).st_mode) == 0o600
    assert "sk-setup" not in config.read_text() and "sk-setup" not in done.out
    shown = json.loads(cli("config", "show", "--json").out)
    assert shown["values"]["provider.name"] == "openai"
    assert shown["values"]["provider.settings.model"] == "gpt-4o-mini"
    assert shown["values"]["permission.mode"] == "default"
    assert shown["stored_keys"] == ["AVO_OPENAI_API_KEY"]
    doctor = cli("doctor")
    assert doctor.code == 0, doctor.out
    assert doctor.out.splitlines()[:2] == ["provider: openai", "model: gpt-4o-mini"]
    assert "API key configured: yes" in doctor.out and "sk-setup" not in doctor.out


def test_doctor_reads_avo_toml_not_only_the_environment(cli: CLI) -> None:
    write(
        cli.cwd / "avo.toml",
        '[provider]\nname = "groq"\n[provider.settings]\nmodel = "llama-3.1-8b-instant"\n',
    )
    doctor = cli("doctor")
    assert doctor.code == 1
    assert doctor.out.splitlines()[0] == "provider: groq"
    assert "model: llama-3.1-8b-instant" in doctor.out
    assert "configured by: " in doctor.out and "avo.toml" in doctor.out
    assert "config error: AVO_GROQ_API_KEY is required for provider 'groq'" in doctor.out
    keyed = cli("doctor", AVO_GROQ_API_KEY="gsk_0123456789abcdef")
    assert keyed.code == 0 and "API key configured: yes" in keyed.out


def test_nothing_configured_says_how_to_set_up(cli: CLI) -> None:
    result = cli("run", "hello")
    assert result.code == 2
    assert result.first_err.startswith(
        "avo: (no config file): no provider configured: run `avo setup`, set [provider] name "
        "in avo.toml, pass --provider NAME or set AVO_PROVIDER; available: "
    )
    doctor = cli("doctor")
    assert doctor.code == 1 and doctor.out.splitlines()[0] == "provider: (unset)"


def test_models_lists_declared_prices_and_unknowns(cli: CLI) -> None:
    listed = cli("models", "openai", "--json")
    assert listed.code == 0, listed.err
    rows = {row["model"]: row for row in json.loads(listed.out)}
    assert rows["gpt-4o-mini"]["input_usd_per_million"] == "0.15"
    assert rows["gpt-4o-mini"]["context_window"] == 128000
    assert rows["o1-preview"]["input_usd_per_million"] is None
    table = cli("models", "fake")
    assert table.out.splitlines()[1].split() == ["fake", "fake", *["unknown"] * 7]
    assert cli("models", "nope").first_err.startswith("avo: unknown provider 'nope'")


def test_shell_completion(cli: CLI) -> None:
    script = cli("completion", "bash")
    assert script.code == 0 and "complete -o default -F _avo_complete avo" in script.out
    write(cli.cwd / "avo.toml", FAKE_ANSWER)
    run_id = json.loads(cli("run", "hi", "--json").out)["run_id"]
    words = cli("runs", "", _AVO_COMPLETE="1", _AVO_CWORD="2")
    assert {"list", "resume", "cancel", "inspect"} <= set(words.out.split())
    ids = cli("runs", "inspect", run_id[:4], _AVO_COMPLETE="1", _AVO_CWORD="3")
    assert ids.out.split() == [run_id]
    flags = cli("run", "--pro", _AVO_COMPLETE="1", _AVO_CWORD="2")
    assert flags.out.split() == ["--provider"]


def test_first_use_on_a_terminal_offers_setup_then_runs(cli: CLI) -> None:
    """No provider anywhere, on a real pseudo-terminal: avo run asks, writes, then runs."""
    providers = pytest.importorskip("avo_providers.wire_fakes")
    wire = providers.OpenAIWire()
    with ScriptedHTTPServer([wire.text_stream("set up and running", TokenUsage())]) as server:
        leader, follower = pty.openpty()
        env = cli.env(AVO_OPENAI_BASE_URL=server.url + "/v1", TERM="dumb")
        process = subprocess.Popen(
            cli.argv("run", "hello"),
            stdin=follower,
            stdout=follower,
            stderr=follower,
            cwd=cli.cwd,
            env=env,
            start_new_session=True,
        )
        os.close(follower)
        seen = b""

        def expect(text: str, timeout: float = 30) -> None:
            nonlocal seen
            deadline = time.monotonic() + timeout
            while text.encode() not in seen:
                assert time.monotonic() < deadline, f"never saw {text!r} in {seen!r}"
                if select.select([leader], [], [], 0.2)[0]:
                    try:
                        seen += os.read(leader, 4096)
                    except OSError:
                        break

        expect("No model provider is configured. Set one up now? [Y/n] ")
        os.write(leader, b"y\n")
        expect("Provider (")
        os.write(leader, b"openai\n")
        expect("Model [gpt-4o]: ")
        os.write(leader, b"gpt-4o-mini\n")
        expect("API key (AVO_OPENAI_API_KEY; Enter to skip): ")
        os.write(leader, b"sk-from-the-terminal-0123\n")
        expect("Default permission mode (")
        os.write(leader, b"\n")
        expect("set up and running")
        assert process.wait(timeout=60) == 0
        os.close(leader)
    assert b"sk-from-the-terminal" not in seen  # the key was not echoed
    shown = json.loads(cli("config", "show", "--json").out)
    assert shown["values"]["provider.name"] == "openai"
    assert shown["stored_keys"] == ["AVO_OPENAI_API_KEY"]
    sent = server.requests[0]
    assert sent.header("authorization") == "Bearer sk-from-the-terminal-0123"
