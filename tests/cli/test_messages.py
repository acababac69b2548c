"""Messages say what is wrong and how to fix it; nothing fails silently."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import subprocess
import tomllib

import pytest
from cli_kit import CLI, FAKE_ANSWER, write

_PR_CAPBSET_DROP, _CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 24, 1, 2


def _as_unprivileged() -> None:  # in the child, before exec: root obeys permission bits
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def test_a_healthy_database_in_a_read_only_directory_is_not_called_corrupt(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", FAKE_ANSWER)
    assert cli("run", "hello", "-d", "runs.db").code == 0
    cli.cwd.chmod(0o555)
    (cli.cwd / "runs.db").chmod(0o444)
    try:
        preexec = _as_unprivileged if os.geteuid() == 0 else None
        listing = subprocess.run(
            cli.argv("runs", "list", "-d", "runs.db"),
            capture_output=True,
            text=True,
            cwd=cli.cwd,
            env=cli.env(),
            preexec_fn=preexec,
            check=False,
        )
        assert listing.returncode == 0, listing.stderr
        assert "completed" in listing.stdout
        writing = subprocess.run(
            cli.argv("run", "again", "-d", "runs.db"),
            capture_output=True,
            text=True,
            cwd=cli.cwd,
            env=cli.env(),
            preexec_fn=preexec,
            check=False,
        )
        assert writing.returncode == 2
        first = writing.stderr.splitlines()[0]
        assert first.startswith("avo: ") and "read-only" in first and "corrupt" not in first
    finally:
        cli.cwd.chmod(0o755)
        (cli.cwd / "runs.db").chmod(0o644)


def test_skill_install_of_a_missing_file_says_so(cli: CLI) -> None:
    result = cli("skill", "install", "nonexist.md")
    assert result.code == 2
    assert result.first_err == (
        "avo: cannot install nonexist.md: no such file or directory; give a skill's .md file "
        "or a directory with SKILL.md"
    )


def test_the_desktop_notifier_hint_is_valid_config(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", 'notifiers = ["desktop"]\n' + FAKE_ANSWER)
    result = cli("run", "hello", PATH=str(cli.home))  # no notify-send anywhere on PATH
    assert result.code == 2
    first = result.first_err
    assert first.startswith("avo: the desktop notifier found no notify-send, osascript or ")
    hint = first.split("name it in avo.toml: ", 1)[1]
    parsed = tomllib.loads(hint)  # the hint is TOML the schema accepts
    settings = {"command": "/usr/bin/notify-send"}
    assert parsed == {"notifiers": [{"name": "desktop", "settings": settings}]}
    fake_notify = write(cli.home / "bin" / "notify-send", "#!/bin/sh\nexit 0\n")
    fake_notify.chmod(0o755)
    write(
        cli.cwd / "avo.toml",
        hint.replace("/usr/bin/notify-send", str(fake_notify)) + FAKE_ANSWER,
    )
    assert cli("run", "hello", PATH=str(cli.home)).code == 0


def test_a_failing_notifier_is_reported(cli: CLI) -> None:
    write(
        cli.cwd / "avo.toml",
        'notifiers = [{name = "webhook", settings = {url = "http://127.0.0.1:9/hook", '
        "retries = 0, timeout = 1}}]\n" + FAKE_ANSWER,
    )
    result = cli("run", "hello")
    assert result.code == 0
    warning = next(line for line in result.err.splitlines() if line.startswith("avo: warning:"))
    assert warning.startswith("avo: warning: notifier 'webhook' could not send the notification")


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        (
            '{name = "logging", settings = {levle = "DEBUG"}}',
            "unknown key 'hooks[0].settings.levle'",
        ),
        ('{name = "logging", settings = {level = "LOUD"}}', "logging hook level 'LOUD'"),
    ],
)
def test_a_mistyped_hook_setting_is_refused(cli: CLI, hook: str, expected: str) -> None:
    write(cli.cwd / "avo.toml", f"hooks = [{hook}]\n" + FAKE_ANSWER)
    result = cli("run", "hello")
    assert result.code == 2
    assert result.first_err.startswith("avo: ") and expected in result.first_err


def test_cancel_and_resume_errors_name_the_run(cli: CLI) -> None:
    write(cli.cwd / "avo.toml", FAKE_ANSWER)
    run_id = json.loads(cli("run", "hello", "--json").out)["run_id"]
    assert cli("runs", "cancel", run_id).first_err == (
        f"avo: run {run_id} already finished (completed); there is nothing to cancel"
    )
    assert cli("runs", "cancel", "zzz").first_err == (
        "avo: run 'zzz' was not found in the event store"
    )
