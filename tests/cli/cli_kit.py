"""Helpers of the CLI test suite (imported by its tests; see conftest.py).

The CLI as a user meets it: ``avo`` in a subprocess, real files, real signals.

Every test gets a home directory of its own (so no user config, cache or
stored key leaks in from the machine) and a workspace directory to run in.
``cli(...)`` runs ``python -m avo.cli`` there and returns the exit code,
stdout, stderr and stderr's first line; ``cli.start(...)`` starts it in the
background for signal tests. Every SQLite store the suite writes is listed
in ``STORES`` so ``test_zz_replay.py`` can replay every run it made.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

STORES: list[Path] = []
"""SQLite files the CLI tests wrote runs into (replayed at the end of the suite)."""


@dataclass
class Result:
    """One finished ``avo`` invocation."""

    code: int
    out: str
    err: str

    @property
    def first_err(self) -> str:
        """The first line of stderr (what a user reads first)."""
        return self.err.splitlines()[0] if self.err else ""


@dataclass
class CLI:
    """Runs ``avo`` in a workspace with a private home directory."""

    cwd: Path
    home: Path
    python: str = sys.executable

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a user with nothing configured, plus ``extra``."""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AVO_", "XDG_"))}
        base.pop("PYTHONPATH", None)
        base.update(
            {
                "HOME": str(self.home),
                "XDG_CACHE_HOME": str(self.home / ".cache"),
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONUNBUFFERED": "1",
                "NO_COLOR": "1",
            }
        )
        base.update(extra)
        return base

    def argv(self, *args: str) -> list[str]:
        """The command line of ``avo ARGS``."""
        return [self.python, "-m", "avo.cli", *args]

    def __call__(
        self,
        *args: str,
        stdin: str | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
        **env: str,
    ) -> Result:
        """Run ``avo ARGS`` to completion."""
        done = subprocess.run(
            self.argv(*args),
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            cwd=cwd or self.cwd,
            env=self.env(**env),
            timeout=timeout,
            check=False,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def shell(self, command: str, **env: str) -> Result:
        """Run a shell pipeline (``avo`` is ``python -m avo.cli`` on it)."""
        avo = f"{self.python} -m avo.cli"
        done = subprocess.run(
            ["bash", "-c", command.replace("avo ", avo + " ")],
            capture_output=True,
            text=True,
            cwd=self.cwd,
            env=self.env(**env),
            timeout=120,
            check=False,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def start(self, *args: str, stdin_open: bool = False, **env: str) -> subprocess.Popen[str]:
        """Start ``avo ARGS`` in the background (its own process group).

        ``stdin_open``: stdin is a pipe nobody writes to (a prompt waits on it).
        """
        return subprocess.Popen(
            self.argv(*args),
            stdin=subprocess.PIPE if stdin_open else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.cwd,
            env=self.env(**env),
            start_new_session=True,
        )


def wait_for(predicate: object, *, timeout: float = 60.0, what: str = "condition") -> None:
    """Poll ``predicate()`` until it is true (fails the test after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def finish(process: subprocess.Popen[str], timeout: float = 60) -> Result:
    """Wait for a background ``avo`` and collect its output."""
    out, err = process.communicate(timeout=timeout)
    return Result(process.returncode, out, err)


def interrupt(process: subprocess.Popen[str], signum: int = signal.SIGINT) -> None:
    """Send ``signum`` to the background ``avo`` (as Ctrl-C / kill would)."""
    os.kill(process.pid, signum)


def write(path: Path, text: str) -> Path:
    """Write ``text`` (dedented) to ``path``, creating parents."""
    import textwrap

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


FAKE_ANSWER = """
[provider]
name = "fake"
[[provider.settings.script]]
content = "done"
usage = {input_tokens = 5, output_tokens = 2}
"""
"""An avo.toml whose run answers "done" at once."""


NOTE_PLUGIN = '''
"""avo-journal: a third-party tool that writes a journal line before and after it works."""

import asyncio
from pathlib import Path

from pydantic import BaseModel

from avo.models import ToolRisk
from avo.plugins import ToolSpec, provides


class NoteArgs(BaseModel):
    text: str
    seconds: float = 0.0


def make_tool(settings, *, workspace=None):
    from avo.tools import FunctionTool

    journal = Path(workspace or ".") / "journal.txt"

    async def note(args):
        with journal.open("a") as out:
            out.write(f"start {args.text}\\n")
        await asyncio.sleep(args.seconds)
        with journal.open("a") as out:
            out.write(f"done {args.text}\\n")
        return f"noted {args.text}"

    return FunctionTool(
        name="note",
        description="Write a note to the journal (slowly if asked).",
        arguments_model=NoteArgs,
        function=note,
        risk=ToolRisk.MODIFY,
    )


tool = provides(ToolSpec(name="note", factory=make_tool, risk=ToolRisk.MODIFY))
'''
"""The third-party tool plugin the recovery tests install (package avo-journal)."""


def plugin_venv_with_journal(root: Path) -> str:
    """A fresh venv with ``avo-journal`` built into a wheel and pip-installed; its python.

    The venv sees the test environment's packages (avo and its plugins) through
    a ``.pth`` file, so pip installs only the plugin, offline.
    """
    import textwrap
    import venv

    package = root / "avo-journal"
    (package / "src" / "avo_journal").mkdir(parents=True)
    (package / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [build-system]
            requires = ["hatchling"]
            build-backend = "hatchling.build"

            [project]
            name = "avo-journal"
            version = "0.1.0"
            requires-python = ">=3.11"
            dependencies = ["avo-kernel>=1.0,<2"]

            [project.entry-points."avo.tools"]
            note = "avo_journal.plugin:tool"

            [tool.hatch.build.targets.wheel]
            packages = ["src/avo_journal"]
            """
        ),
        encoding="utf-8",
    )
    (package / "src" / "avo_journal" / "__init__.py").write_text("", encoding="utf-8")
    (package / "src" / "avo_journal" / "plugin.py").write_text(NOTE_PLUGIN, encoding="utf-8")
    dist = root / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--wheel-dir",
            str(dist),
            str(package),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = list(dist.glob("*.whl"))
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parent = [p for p in sys.path if p and Path(p).is_dir() and not p.startswith(str(root))]
    (Path(purelib) / "_avo_test_parent_env.pth").write_text("\n".join(parent) + "\n")
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    return str(python)


def kill(process: subprocess.Popen[str]) -> Result:
    """SIGKILL the background ``avo`` (a crash: no cleanup) and collect what it printed."""
    process.kill()
    out, err = process.communicate(timeout=30)
    return Result(process.returncode, out, err)
