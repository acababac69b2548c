"""Cross-package test helpers: throwaway plugin packages, wheels and venvs.

A plugin package is written as a real source tree (pyproject.toml with entry
points, ``src/``), built into a wheel with ``pip wheel --no-build-isolation``
(hatchling comes from the test environment, so no network is needed), and
installed into a fresh venv by ``avo plugin install``. The venv sees the test
environment's packages (the kernel and its dependencies) through a ``.pth``
file, so pip resolves the plugin's ``avo-kernel`` requirement offline and
installs only the plugin into the venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def write_package(
    root: Path,
    name: str,
    *,
    version: str = "1.0.0",
    entry_points: dict[str, dict[str, str]],
    plugin_source: str,
    requires: tuple[str, ...] = ("avo-kernel>=1.0,<2",),
) -> Path:
    """Write a plugin package ``avo-<name>`` (import package ``avo_<name>``)."""
    module = f"avo_{name.replace('-', '_')}"
    target = root / f"avo-{name}"
    (target / "src" / module).mkdir(parents=True)
    deps = ", ".join(f'"{r}"' for r in requires)
    eps = "\n".join(
        f'[project.entry-points."{group}"]\n'
        + "\n".join(f'{ep} = "{value}"' for ep, value in entries.items())
        for group, entries in entry_points.items()
    )
    (target / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["hatchling"]
            build-backend = "hatchling.build"

            [project]
            name = "avo-{name}"
            version = "{version}"
            requires-python = ">=3.11"
            dependencies = [{deps}]

            [tool.hatch.build.targets.wheel]
            packages = ["src/{module}"]

            """
        )
        + eps
        + "\n",
        encoding="utf-8",
    )
    (target / "src" / module / "__init__.py").write_text("", encoding="utf-8")
    (target / "src" / module / "plugin.py").write_text(
        textwrap.dedent(plugin_source), encoding="utf-8"
    )
    return target


def build_wheel(package: Path, out: Path) -> Path:
    """Build ``package`` into a wheel in ``out`` (offline: no build isolation)."""
    before = set(out.glob("*.whl")) if out.exists() else set()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--wheel-dir",
            str(out),
            str(package),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = set(out.glob("*.whl")) - before
    return wheel


@dataclass
class Venv:
    """A fresh venv that also sees the test environment's packages."""

    path: Path
    python: Path
    cwd: Path

    def avo(
        self, *args: str, stdin: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run ``python -m avo.cli ARGS`` inside the venv (offline pip)."""
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith("AVO_")
        }
        environment.update(
            {
                "PIP_NO_INDEX": "1",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                # the status cache lives in the test's own directory, so every
                # `avo plugin list` after install/remove also checks invalidation
                "XDG_CACHE_HOME": str(self.cwd.parent / "cache"),
                **env,
            }
        )
        environment.pop("PYTHONPATH", None)
        return subprocess.run(
            [str(self.python), "-m", "avo.cli", *args],
            capture_output=True,
            text=True,
            input=stdin,
            env=environment,
            cwd=self.cwd,
            check=False,
        )

    def pip_install(self, *wheels: Path) -> None:
        """Install ``wheels`` into the venv with pip alone (offline, no dependencies)."""
        subprocess.run(
            [str(self.python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
            + [str(wheel) for wheel in wheels],
            check=True,
            capture_output=True,
        )

    def avo_json(self, *args: str) -> Any:
        """Run an avo command with ``--json`` and parse its output."""
        result = self.avo(*args, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def python_run(self, code: str) -> subprocess.CompletedProcess[str]:
        """Run Python code in the venv."""
        environment = {k: v for k, v in os.environ.items() if not k.startswith("AVO_")}
        environment.pop("PYTHONPATH", None)
        return subprocess.run(
            [str(self.python), "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            env=environment,
            cwd=self.cwd,
            check=False,
        )


@dataclass(frozen=True)
class Kit:
    """What the cross-package tests use to make packages (see the module docstring)."""

    write_package: Any
    build_wheel: Any


@pytest.fixture
def kit() -> Kit:
    """Package-writing and wheel-building helpers."""
    return Kit(write_package=write_package, build_wheel=build_wheel)


@pytest.fixture
def plugin_venv(tmp_path: Path) -> Venv:
    """A venv whose own site-packages starts empty (pip and avo come via .pth)."""
    path = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parent = [p for p in sys.path if p and Path(p).is_dir() and not p.startswith(str(tmp_path))]
    (Path(purelib) / "_avo_test_parent_env.pth").write_text("\n".join(parent) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    return Venv(path=path, python=python, cwd=work)
