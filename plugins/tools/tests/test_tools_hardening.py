"""Hardening regressions of the workspace tools (issue 13, items 10 and 11).

- ``glob`` never lists a name outside the workspace, whatever symlinks the
  workspace holds (the same containment ``grep`` has);
- ``test_runner`` never runs stale bytecode: an edit that keeps a file's size
  within the same second is what the tests see.

The executors here are real: a subprocess on the host (tests only; the tools
themselves refuse to run without a bound sandbox) and bubblewrap when installed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from avo_tools import bind_sandbox, bind_workspace, glob_tool, grep_tool
from avo_tools import test_runner_tool as make_test_runner
from avo_tools.shell_tool import forget_workspace_bytecode
from avo_tools.workspace import Workspace


@dataclass
class _Result:
    exit_code: int
    stdout: str
    stderr: str
    duration_ms: float


class _SubprocessExecutor:
    """Runs ``sh -c`` in the workspace with this interpreter first on PATH (tests only)."""

    async def run(
        self,
        command: str,
        *,
        workspace_dir: Path,
        env: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
    ) -> _Result:
        environ = dict(os.environ)
        environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
        environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        environ.pop("PYTHONDONTWRITEBYTECODE", None)
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_shell(
            command,
            cwd=workspace_dir,
            env=environ,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout_seconds or 120)
        return _Result(
            proc.returncode or 0,
            out.decode(),
            err.decode(),
            (time.perf_counter() - started) * 1000,
        )


# ------------------------------------------------------------------ glob (item 10)


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A workspace holding symlinks (to a directory and a file) that point outside it."""
    root = tmp_path / "ws"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("inside = 1\n")
    (root / "src" / "deep" / "b.py").write_text("inside = 2\n")
    outside = tmp_path / "outside"
    (outside / "nested").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret\n")
    (outside / "nested" / "secret-key.pem").write_text("secret\n")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "src" / "deep" / "up").symlink_to(outside, target_is_directory=True)
    (root / "secret-file.txt").symlink_to(outside / "secret.txt")
    (root / "loop").symlink_to(root, target_is_directory=True)
    return root


@pytest.mark.parametrize(
    "pattern",
    ["**/*", "**/secret*", "*", "*/*", "**/*.pem", "src/**/*", "linked/*", "src/deep/up/**/*"],
)
async def test_glob_never_lists_a_name_outside_the_workspace(linked: Path, pattern: str) -> None:
    with bind_workspace(linked):
        found = await glob_tool().invoke({"pattern": pattern})
        grepped = await grep_tool().invoke({"pattern": "secret|inside"})
    assert not [m for m in found["matches"] if "secret" in m], found
    assert all((linked / m).resolve().is_relative_to(linked) for m in found["matches"])
    assert [m["path"] for m in grepped["matches"]] == ["src/a.py", "src/deep/b.py"]


async def test_glob_still_finds_every_real_file(linked: Path) -> None:
    with bind_workspace(linked):
        found = await glob_tool().invoke({"pattern": "**/*.py"})
    assert found["matches"] == ["src/a.py", "src/deep/b.py"]


async def test_glob_refuses_a_directory_swapped_for_a_symlink_mid_walk(tmp_path: Path) -> None:
    """A directory replaced by a link after the walk listed it is not entered.

    The swap is timed from inside the walk (the moment it enters ``b``, by
    scandir or open, whichever the walk uses): real files, a real rename race.
    """
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    for name in ("a", "b", "c"):
        (root / name).mkdir(parents=True)
        (root / name / "f.txt").write_text(name)
    real_scandir, real_open = os.scandir, os.open
    swapped: list[bool] = []

    def swap(entering: object) -> None:
        if not swapped and isinstance(entering, str) and os.path.basename(entering) == "b":
            swapped.append(True)  # first: the swap itself opens and lists b
            shutil.rmtree(root / "b")
            (root / "b").symlink_to(outside, target_is_directory=True)

    def scandir(path: Any = ".") -> Any:
        swap(os.fspath(path) if not isinstance(path, int) else None)
        return real_scandir(path)

    def open_(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        swap(os.fspath(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    with bind_workspace(root), pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "scandir", scandir)
        patch.setattr(os, "open", open_)
        found = await glob_tool().invoke({"pattern": "**/*"})
    assert swapped, "the walk never entered b"
    assert "b/secret.txt" not in found["matches"], found
    assert {"a/f.txt", "c/f.txt"} <= set(found["matches"])


# ------------------------------------------------------------ test_runner (item 11)

_FIXED = 1_700_000_000  # a whole second: both versions of calc.py carry mtimes inside it


def _write(path: Path, text: str, mtime_ns: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def _project(root: Path) -> None:
    root.mkdir()
    _write(root / "calc.py", "def add(a, b):\n    return a - b\n", _FIXED * 10**9 + 100_000_000)
    (root / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )


async def _edit_within_the_same_second_and_rerun(root: Path, executor: object) -> dict[str, object]:
    # The user's own interpreter imported calc once: its bytecode sits in __pycache__.
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", "import calc"], cwd=root, env=environ, check=True)
    assert list((root / "__pycache__").glob("calc.*.pyc"))
    with bind_workspace(root), bind_sandbox(executor):  # type: ignore[arg-type]
        first = await make_test_runner().invoke({})
        assert first["failed"] == 1, first
        # Same size, same second: CPython's timestamp check cannot tell the files apart.
        _write(root / "calc.py", "def add(a, b):\n    return a + b\n", _FIXED * 10**9 + 900_000_000)
        return await make_test_runner().invoke({})


async def test_test_runner_sees_an_edit_that_keeps_size_and_second(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    _project(root)
    second = await _edit_within_the_same_second_and_rerun(root, _SubprocessExecutor())
    assert second["passed"] == 1 and second["success"] is True, second["output"]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
async def test_test_runner_in_bubblewrap_sees_an_edit_that_keeps_size_and_second(
    tmp_path: Path,
) -> None:
    from avo_sandbox import BubblewrapExecutor

    root = tmp_path / "proj"
    _project(root)
    executor = BubblewrapExecutor(environment={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    second = await _edit_within_the_same_second_and_rerun(root, executor)
    assert second["passed"] == 1 and second["success"] is True, second["output"]


def test_only_the_workspace_sources_bytecode_is_forgotten(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.cpython-311.pyc").write_bytes(b"kept")
    layout = {
        "pkg/mod.py": "x = 1\n",
        "pkg/__pycache__/mod.cpython-311.pyc": "stale",
        "pkg/__pycache__/mod.cpython-311-pytest-9.2.0.pyc": "stale",
        "pkg/__pycache__/gone.cpython-311.pyc": "orphan: no source, kept",
        "env/pyvenv.cfg": "home = /usr\n",
        "env/lib/site.py": "",
        "env/lib/__pycache__/site.cpython-311.pyc": "an environment's: kept",
    }
    for name, text in layout.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "linked").mkdir()
    (root / "linked" / "mod.py").write_text("")
    (root / "linked" / "__pycache__").symlink_to(outside, target_is_directory=True)
    assert forget_workspace_bytecode(Workspace(root)) == 2
    left = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.pyc"))
    assert left == [
        "env/lib/__pycache__/site.cpython-311.pyc",
        "pkg/__pycache__/gone.cpython-311.pyc",
    ]
    assert (outside / "mod.cpython-311.pyc").read_bytes() == b"kept"
