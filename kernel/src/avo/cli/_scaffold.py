"""``avo plugin init``: scaffold a separately versioned plugin package.

The generated package has the shape every avo package has
(``pyproject.toml``, ``README.md``, ``src/avo_<name>/``, ``tests/``), declares
itself only through entry points, and ships a working example with a passing
test that uses :mod:`avo.testing`.

The files come from ``avo/cli/scaffolds/``: ``kinds.toml`` lists each kind's
entry-point group, summary and README usage; ``<kind>/plugin.py.tmpl`` and
``<kind>/test_plugin.py.tmpl`` are its code. They are :class:`string.Template`
texts (``${name}``, ``${dist}``, ``${module}``, ``${kind}``, ``${group}``,
``${summary}``, ``${usage}``), so a new kind is a folder and a table.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template

from avo.exceptions import AvoError

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


def _templates() -> Traversable:
    return files("avo.cli").joinpath("scaffolds")


@cache
def kinds() -> dict[str, dict[str, str]]:
    """Every scaffolded kind: ``{kind: {"group", "summary", "usage"}}``."""
    table = tomllib.loads(_templates().joinpath("kinds.toml").read_text(encoding="utf-8"))
    return {kind: {k: str(v).strip() for k, v in entry.items()} for kind, entry in table.items()}


def _render(relative: str, values: dict[str, str]) -> str:
    text = _templates().joinpath(relative).read_text(encoding="utf-8")
    return Template(text).substitute(values)


def scaffold(name: str, *, kind: str, directory: Path | None = None) -> Path:
    """Create the package for plugin ``name`` of ``kind``; returns its directory."""
    if not _NAME.match(name):
        raise AvoError(
            f"invalid plugin name {name!r}: use lower-case letters, digits, '-' or '_', "
            "starting with a letter (e.g. shout)"
        )
    known = kinds()
    if kind not in known:
        raise AvoError(f"unknown plugin kind {kind!r}; choose one of {', '.join(known)}")
    dist = name.replace("_", "-")
    module = name.replace("-", "_")
    target = directory if directory is not None else Path.cwd() / f"avo-{dist}"
    if target.exists() and any(target.iterdir()):
        raise AvoError(f"{target} already exists and is not empty; pick another --directory")
    entry = known[kind]
    values = {"name": name, "dist": dist, "module": module, "kind": kind}
    values |= {"group": entry["group"], "summary": entry["summary"]}
    values["usage"] = Template(entry["usage"]).substitute(values)
    outputs = {
        "pyproject.toml": "pyproject.toml.tmpl",
        "README.md": "README.md.tmpl",
        f"src/avo_{module}/__init__.py": "__init__.py.tmpl",
        f"src/avo_{module}/plugin.py": f"{kind}/plugin.py.tmpl",
        f"tests/test_{module}_plugin.py": f"{kind}/test_plugin.py.tmpl",
    }
    for relative, template in outputs.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(template, values), encoding="utf-8")
    return target


GROUPS = {kind: entry["group"] for kind, entry in kinds().items()}
"""Kind -> entry-point group, for the CLI's ``--kind`` choices."""

__all__ = ["GROUPS", "kinds", "scaffold"]
