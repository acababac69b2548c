"""Every session a developer or CI runs.

``python3 -m nox`` (what ``scripts/test.sh`` and ``.ci/run`` call) runs the
default sessions: lint, types, tests. The package list always comes from the
tree (``kernel/``, ``plugins/*``, ``contrib/*``), never from a hand-kept list.

- ``tests``      every package installed editable in one venv; the whole suite
                 (with the avo_native extension built when cargo is present,
                 then the kernel suite once more with it forced off)
- ``lint``       ruff check + ruff format --check
- ``types``      mypy --strict on the kernel
- ``package``    one session per package: that package (and the local packages
                 it depends on) alone, with its own tests
- ``kernel_only``the kernel alone; ``import avo`` must pull in nothing optional
- ``bench``      every ``benchmarks/*.py``
- ``demo``       the main job: ``avo run`` on SQLite, then ``avo runs inspect``
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PYTHON = "3.11"
# hatchling: tests/ build throwaway plugin wheels offline (pip wheel --no-build-isolation).
# junitparser: avo-evals' tests read its JUnit reports with a standard parser.
# keyring + keyrings.alt: `avo login` into a keyring, through keyrings.alt's file backend.
TEST_DEPS = [
    "pytest>=8",
    "pytest-asyncio>=0.24",
    "pytest-cov>=5",
    "hypothesis>=6",
    "hatchling>=1.21",
    "junitparser>=3.1",
    "keyring>=24",
    "keyrings.alt>=5",
]

nox.options.sessions = ["lint", "types", "tests"]
nox.options.error_on_missing_interpreters = True


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _packages() -> list[Path]:
    """The kernel, then every plugin and contrib package, found in the tree."""
    found = [ROOT / "kernel"]
    for parent in ("plugins", "contrib"):
        found += sorted(p.parent for p in (ROOT / parent).glob("*/pyproject.toml"))
    return found


def _project(path: Path) -> dict:
    return tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _spec(path: Path) -> str:
    """``-e`` target with every optional extra, so all optional code paths are tested."""
    extras = sorted(_project(path).get("optional-dependencies", {}))
    return f"{path}[{','.join(extras)}]" if extras else str(path)


def _local_closure(path: Path) -> list[Path]:
    """``path`` plus the local packages it depends on (transitively), kernel first."""
    by_name = {_canonical(_project(p)["name"]): p for p in _packages()}
    wanted: list[Path] = []

    def visit(package: Path) -> None:
        if package in wanted:
            return
        for requirement in _project(package).get("dependencies", []):
            match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
            local = by_name.get(_canonical(match.group(1))) if match else None
            if local is not None:
                visit(local)
        wanted.append(package)

    visit(path)
    return wanted


def _build_requirements(packages: list[Path]) -> list[str]:
    """Every package's ``[build-system] requires``, read from the tree."""
    found: set[str] = set()
    for package in packages:
        data = tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))
        found.update(data.get("build-system", {}).get("requires", []))
    return sorted(found)


def _install_editable(session: nox.Session, packages: list[Path], *, test: bool = True) -> None:
    # Build backends once, then build every package without isolation: one
    # download instead of one per package.
    session.install(*_build_requirements(packages), "editables")
    args: list[str] = ["--no-build-isolation"]
    for package in packages:
        args += ["-e", _spec(package)]
    session.install(*args, *(TEST_DEPS if test else ()))


def _test_dirs(packages: list[Path]) -> list[str]:
    dirs = [str(p / "tests") for p in packages if (p / "tests").is_dir()]
    if (ROOT / "tests").is_dir() and len(packages) > 1:
        dirs.append(str(ROOT / "tests"))
    return dirs


def _ensure_services(session: nox.Session) -> None:
    script = ROOT / "scripts" / "ensure-services.sh"
    if script.exists():
        session.run("bash", str(script), external=True)


def _build_native(session: nox.Session) -> bool:
    """Build the optional avo_native extension into the session's venv, if cargo is here."""
    if shutil.which("cargo") is None:
        session.log(
            "cargo not found: avo_native is not built; its property tests skip and the "
            "kernel runs its pure-Python code (the same results)"
        )
        return False
    python = str(Path(session.bin) / "python")
    # run_install: part of setting the venv up, so `nox -s tests --install-only` builds it too.
    session.run_install("bash", str(ROOT / "scripts" / "build-native.sh"), python, external=True)
    return True


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The whole suite of every package, in one venv, with coverage of the kernel.

    With the extension built, the kernel suite then runs once more with it
    turned off (``AVO_NATIVE=0``): the pure-Python code must pass on its own.
    """
    packages = _packages()
    _install_editable(session, packages)
    native = _build_native(session)
    _ensure_services(session)
    session.run(
        "python",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--cov=avo",
        "--cov-report=term:skip-covered",
        *_test_dirs(packages),
        *session.posargs,
    )
    if native and not session.posargs:
        session.log("the kernel suite again, with avo_native turned off (AVO_NATIVE=0)")
        session.run(
            "python",
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            str(ROOT / "kernel" / "tests"),
            env={"AVO_NATIVE": "0"},
        )


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole tree."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def types(session: nox.Session) -> None:
    """mypy --strict on the kernel (with its optional extras, whose imports it checks) and
    on the SQLite store plugin (the default store: its concurrency code is typed as strictly)."""
    sqlite = ROOT / "plugins" / "sqlite"
    session.install("-e", _spec(ROOT / "kernel"), "-e", str(sqlite), "mypy>=1.11", "pytest>=8")
    session.run("mypy", str(ROOT / "kernel" / "src" / "avo"))
    session.run("mypy", "--strict", str(sqlite / "src" / "avo_sqlite"))


@nox.session(python=PYTHON)
@nox.parametrize("package", [str(p.relative_to(ROOT)) for p in _packages()])
def package(session: nox.Session, package: str) -> None:
    """One package with only the local packages it depends on, and its own tests."""
    path = ROOT / package
    closure = _local_closure(path)
    _install_editable(session, closure)
    if "postgres" in package:
        _ensure_services(session)
    if (path / "tests").is_dir():
        session.run("python", "-m", "pytest", "-p", "no:cacheprovider", str(path / "tests"))
    else:
        session.error(f"{package} has no tests/ directory")


@nox.session(python=PYTHON)
def kernel_only(session: nox.Session) -> None:
    """The kernel alone (not editable): ``import avo`` pulls in nothing optional."""
    session.install(str(ROOT / "kernel"))
    session.run("python", str(ROOT / "scripts" / "check_kernel_imports.py"))
    session.run("avo", "--version")
    session.run("avo", "plugin", "list")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Run every benchmark script with all shipped plugins installed."""
    _install_editable(session, _packages())
    _build_native(session)
    # Not avo dependencies: only benchmarks/langgraph_compare.py uses them (the
    # versions its published figures were measured with).
    session.install(
        "langgraph==1.2.24",
        "langgraph-checkpoint==4.3.2",
        "langgraph-checkpoint-sqlite==3.1.2",
        "langchain-core==1.8.3",
    )
    _ensure_services(session)
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        session.log(f"--- {script.name}")
        session.run("python", str(script))


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The main job: a real ``avo run`` on SQLite, then ``avo runs inspect`` of it."""
    _install_editable(session, _packages(), test=False)
    session.run("bash", str(ROOT / "scripts" / "main-job.sh"), external=True)
