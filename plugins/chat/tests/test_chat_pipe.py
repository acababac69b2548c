"""avo chat over pipes: the same session as on the terminal, as plain text."""

from __future__ import annotations

import shutil

import pytest
from chat_kit import SESSION_CONFIG as CONFIG
from chat_kit import Place


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="!commands need a sandbox (bubblewrap)")
def test_the_session_over_a_pipe_is_plain_text(place: Place) -> None:
    place.config(CONFIG)
    entries = [
        "create notes",
        "change @notes.md",
        "/undo",
        "!cat notes.md",
        "what does it say",
        "/compact",
        "/cost",
    ]
    done = place.pipe("chat", stdin="\n".join(entries) + "\n")
    assert done.returncode == 0, done.stderr
    out, err = done.stdout, done.stderr
    assert "\x1b" not in out and "\x1b" not in err  # no colours, no cursor movement
    # answers and command output on stdout, in order
    assert out.index("created notes.md") < out.index("changed it") < out.index("version one")
    assert "It says version one." in out
    assert "- notes.md holds version one" in out  # the Markdown as the model wrote it
    assert "restored notes.md" in out
    assert "total" in out  # /cost's table
    # tool calls, notices on stderr
    assert "→ write_file path=notes.md" in err and "✓ write_file" in err
    assert "✓ edit_file" in err and "@ attached notes.md" in err
    assert (place.workspace / "notes.md").read_text() == "version one\n"
    tasks = [str(run["task"]) for run in place.runs()]
    asked = next(task for task in tasks if task.startswith("what does it say"))
    assert '<attached source="$ cat notes.md (exit 0)">\nversion one\n</attached>' in asked
    changed = next(task for task in tasks if task.startswith("change @notes.md"))
    assert '<attached source="notes.md">\nversion one\n</attached>' in changed


def test_bad_input_is_one_line_and_the_chat_goes_on(place: Place) -> None:
    place.config(CONFIG)
    done = place.pipe("chat", stdin="/nosuch\n/grep\n/undo\n/model\n")
    assert "unknown command /nosuch" in done.stderr
    assert "/grep: /grep needs a PATTERN" in done.stderr
    assert "nothing to undo" in done.stderr
    assert "model: fake" in done.stdout
    assert done.returncode == 1  # errors were shown


def test_a_broken_config_is_one_line_and_exit_2(place: Place) -> None:
    place.config('[provider]\nname = "nosuch"\n')
    done = place.pipe("chat", stdin="hi\n")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "nosuch" in lines[0], done.stderr
