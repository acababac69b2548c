"""Installing avo as a user would: ``pip install .`` from a checkout, and from built wheels.

Both happen offline in fresh virtual environments:

* the third-party libraries avo needs (pydantic, httpx, ...) are taken from
  this test environment: every non-avo distribution is linked into a staging
  directory that the fresh venv sees through a ``.pth`` file, so pip finds
  them installed and never goes to an index;
* the avo packages themselves come only from the checkout (``pip install .``
  at the root resolves them through the meta package's direct references) or
  from wheels built here (``pip wheel`` of every package, the meta package
  pinned with ``AVO_PIN_LOCAL_PACKAGES=1``).

Then ``avo --version`` and a run with the built-in fake provider, in a
workspace of its own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = """
tools = ["glob"]

[provider]
name = "fake"
[[provider.settings.script]]
tool_call = {name = "glob", arguments = {pattern = "*.txt"}}
[[provider.settings.script]]
content = "installed and working"
"""

pytestmark = pytest.mark.slow


def _stage_third_party(target: Path) -> Path:
    """Link every non-avo distribution of this environment into ``target``."""
    target.mkdir()
    for dist in metadata.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        if name.startswith("avo") or name in ("pip", "setuptools") or not dist.files:
            continue
        base = Path(str(dist.locate_file("")))
        for top in {Path(str(f)).parts[0] for f in dist.files if ".." not in Path(str(f)).parts}:
            source, link = base / top, target / top
            if source.exists() and not link.exists():
                link.symlink_to(source)
    return target


def _fresh_venv(path: Path, staged: Path) -> Path:
    venv.EnvBuilder(with_pip=True, symlinks=True).create(path)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "_avo_third_party.pth").write_text(f"{staged}\n", encoding="utf-8")
    return python


def _pip(python: Path, *args: str, **env: str) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_NO_INDEX": "1", **env},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _check_avo(python: Path, work: Path) -> None:
    avo = python.parent / "avo"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AVO_", "XDG_"))}
    env.pop("PYTHONPATH", None)
    env["HOME"] = str(work.parent / "home")  # a user with nothing configured
    version = subprocess.run([str(avo), "--version"], capture_output=True, text=True, env=env)
    assert version.returncode == 0 and version.stdout == "avo 1.0.0\n", version.stderr
    (work / "avo.toml").write_text(CONFIG, encoding="utf-8")
    (work / "notes.txt").write_text("hi\n", encoding="utf-8")
    ran = subprocess.run(
        [str(avo), "run", "is it installed?", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert (result["status"], result["output"]) == ("completed", "installed and working")
    assert result["failures"] == []  # glob ran, bound to the workspace
    where = subprocess.run(
        [str(python), "-c", "import avo, avo_tools; print(avo.__file__, avo_tools.__file__)"],
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    assert str(python.parent.parent) in where  # installed into the venv, not borrowed


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _stage_third_party(tmp_path_factory.mktemp("third-party") / "site")


def test_pip_install_dot_at_the_root_installs_the_checkout(staged: Path, tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path / "venv", staged)
    _pip(python, "install", "--no-build-isolation", str(ROOT))
    work = tmp_path / "work"
    work.mkdir()
    _check_avo(python, work)


def test_built_wheels_install_into_a_fresh_venv(staged: Path, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    packages = [ROOT / "kernel", *sorted(p.parent for p in ROOT.glob("plugins/*/pyproject.toml"))]
    for package in packages:
        _pip(
            Path(sys.executable),
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(package),
        )
    _pip(
        Path(sys.executable),
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(dist),
        str(ROOT),
        AVO_PIN_LOCAL_PACKAGES="1",
    )
    meta = next(dist.glob("avo-1.0.0-*.whl"))
    assert meta.is_file()
    python = _fresh_venv(tmp_path / "venv", staged)
    _pip(python, "install", "--find-links", str(dist), "avo")
    work = tmp_path / "work"
    work.mkdir()
    _check_avo(python, work)
