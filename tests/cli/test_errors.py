"""Bad input gets one line on stderr and a non-zero exit, never a traceback or a hang.

Each test runs ``avo`` as a user would and checks the exit code and the exact
first line of stderr.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from cli_kit import CLI, FAKE_ANSWER, write

from avo.testing.plugins import write_distribution


def test_empty_task_is_one_line_not_a_traceback(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", FAKE_ANSWER)
    result = cli("run", "")
    assert result.code == 2
    assert result.first_err == (
        'avo: the task is empty; say what the agent should do, e.g. avo run "list the TODOs '
        'in src/" (or pipe it in with avo run -)'
    )
    assert "Traceback" not in result.err
    piped = cli("run", "-", stdin="   \n")
    assert piped.code == 2
    assert piped.first_err.startswith("avo: the task read from standard input is empty")


def test_task_from_stdin(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", FAKE_ANSWER)
    result = cli("run", "-", "-q", stdin="what is up?\n")
    assert (result.code, result.out, result.err) == (0, "done\n", "")


def test_plugin_remove_with_stdin_closed_does_not_crash(cli: CLI) -> None:
    result = cli("plugin", "remove", "avo-sandbox")  # stdin is empty: EOF at the prompt
    assert result.code == 2
    assert result.first_err == (
        "avo: plugin remove needs a confirmation and standard input has none; "
        "pass --yes to remove avo-sandbox without asking"
    )


def test_sandbox_workspace_that_does_not_exist(cli: CLI) -> None:
    result = cli("sandbox", "run", "--workspace", "/nope", "--", "true")
    assert result.code == 2
    assert result.first_err == "avo: --workspace /nope does not exist; pass an existing directory"


def test_closed_pipe_is_quiet(cli: CLI) -> None:
    result = cli.shell("avo plugin show openai | head -5")
    assert result.code == 0
    assert len(result.out.splitlines()) == 5
    assert result.err == ""
    # a reader that is gone before avo writes: EPIPE on the first write
    gone = cli.shell("set -o pipefail; avo plugin show openai | true")
    assert gone.code == 141 and gone.err == ""  # 128 + SIGPIPE, and nothing on stderr


def test_directory_as_database_names_the_flag_not_a_config_file(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", FAKE_ANSWER)
    folder = cli.cwd / "data"
    folder.mkdir()
    result = cli("run", "hi", "-d", str(folder))
    assert result.code == 2
    assert result.first_err == (
        f"avo: -d {str(folder)!r} is a directory, not an event store; give a file in it "
        f"(e.g. {folder / 'avo.db'}) or a store URL"
    )
    listing = cli("runs", "list", "-d", str(folder))
    assert listing.code == 2
    assert listing.first_err == (
        f"avo: the event store {folder} is a directory; pass -d with the store file in it "
        f"(e.g. {folder / 'avo.db'}) or a store URL"
    )


def test_usage_errors_are_one_line(cli: CLI) -> None:
    result = cli("run")
    assert result.code == 2
    assert result.err == (
        "avo run: the following arguments are required: TASK (see 'avo run --help')\n"
    )


def test_internal_errors_hide_the_traceback_unless_debug(cli: CLI, tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_distribution(
        site,
        "avo-boom",
        entry_points={"avo.commands": {"boom": "boom_cmd:plugin"}},
        modules={
            "boom_cmd": (
                "from avo.plugins import CommandSpec, provides\n"
                "def run(args):\n    raise RuntimeError('kaboom')\n"
                "plugin = provides(CommandSpec(name='boom', configure=lambda p: None, run=run))\n"
            )
        },
    )
    env = {"PYTHONPATH": str(site)}
    result = cli("boom", **env)
    assert result.code == 1
    assert result.err == (
        "avo: internal error: RuntimeError: kaboom (run again with --debug to see the "
        "traceback, and please report it)\n"
    )
    debug = cli("--debug", "boom", **env)
    assert debug.code == 1
    assert debug.first_err == "Traceback (most recent call last):"
    assert debug.err.splitlines()[-1] == "avo: internal error: RuntimeError: kaboom"


# ------------------------------------------------------------ issue 13, item 8


COMMAND_PLUGIN = """
from avo.plugins import CommandSpec, provides

def run(args):
    print("hijacked")
    return 0

plugin = provides(CommandSpec(name="plugin", configure=lambda p: None, run=run, help="mine"))
"""


def test_a_third_party_plugin_command_cannot_take_avo_plugin_away(cli: CLI, tmp_path: Path) -> None:
    """A package that also names its command ``plugin`` is ignored and reported."""
    site = tmp_path / "site"
    write_distribution(
        site,
        "avo-hijack",
        entry_points={"avo.commands": {"plugin": "hijack_cmd:plugin"}},
        modules={"hijack_cmd": COMMAND_PLUGIN},
    )
    env = {"PYTHONPATH": str(site)}
    listing = cli("plugin", "list", "--json", **env)
    assert listing.code == 0, listing.err
    assert listing.first_err == (
        "avo: warning: command plugin 'plugin' from avo-hijack 1.0.0: name conflict: command "
        "'plugin' is the kernel's own and always wins; this one is ignored: rename it, or "
        "remove it with `avo plugin remove avo-hijack`"
    )
    import json

    rows = json.loads(listing.out)
    kernel_row = [r for r in rows if r["name"] == "plugin" and r["package"] == "avo-kernel"]
    clash = [r for r in rows if r["name"] == "plugin" and r["package"] == "avo-hijack"]
    assert kernel_row[0]["status"] == "ok"
    assert clash[0]["status"] == "conflict"
    shown = cli("plugin", "show", "fake", **env)
    assert shown.code == 0 and "hijacked" not in shown.out


# ------------------------------------------------------------ issue 13, item 3


@pytest.mark.postgres
def test_database_urls_reach_the_store_intact(cli: CLI) -> None:
    """``avo run -d URL`` and ``avo -d URL`` keep ``postgresql://`` URLs whole."""
    dsn_file = Path(os.environ.get("AVO_TEST_SERVICES_DIR", "/tmp/avo-test-services"))
    dsn_file = dsn_file / "postgres.dsn"
    if not dsn_file.is_file() and not os.environ.get("AVO_TEST_POSTGRES_DSN"):
        pytest.skip("no PostgreSQL test server (run scripts/ensure-services.sh)")
    pytest.importorskip("avo_postgres")
    dsn = os.environ.get("AVO_TEST_POSTGRES_DSN") or dsn_file.read_text().strip()
    write(cli.cwd / "avo.toml", FAKE_ANSWER)
    first = cli("run", "over postgres", "-d", dsn, "--json")
    assert first.code == 0, first.err
    import json

    run_id = json.loads(first.out)["run_id"]
    second = cli("-d", dsn, "run", "again over postgres", "--json")
    assert second.code == 0, second.err
    listed = cli("-d", dsn, "runs", "list", "--json")
    ids = {row["run_id"] for row in json.loads(listed.out)}
    assert {run_id, json.loads(second.out)["run_id"]} <= ids


def test_global_options_pass_through(cli: CLI) -> None:
    assert sys.executable  # the suite's interpreter runs avo
    result = cli("--no-color", "--version")
    assert result.code == 0 and result.out.startswith("avo ")
