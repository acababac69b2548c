"""Dependencies of the ``avo`` meta package, read from the tree (a hatchling metadata hook).

The meta package is the kernel plus every plugin under ``plugins/`` (the ones
``[tool.avo-meta] extras`` names become extras instead, e.g. PostgreSQL, whose
driver not everyone wants) and every ``contrib/`` package as an extra of its
own name. Versions are each package's own.

Built from a checkout, each dependency is a direct reference to its local
directory, so ``pip install .`` at the root installs the tree you have, not
whatever an index holds. ``AVO_PIN_LOCAL_PACKAGES=1`` (what the release and
wheel-install checks set) pins ``name==version`` instead: the meta wheel then
resolves from built wheels or an index.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface


def _project(path: Path) -> dict[str, Any]:
    data = tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(data["project"])


def _requirement(path: Path, *, local: bool) -> str:
    project = _project(path)
    if local:
        return f"{project['name']} @ {path.resolve().as_uri()}"
    return f"{project['name']}=={project['version']}"


class MetaPackageHook(MetadataHookInterface):
    """Fill ``dependencies`` and ``optional-dependencies`` from the tree."""

    def update(self, metadata: dict[str, Any]) -> None:
        root = Path(self.root)
        local = os.environ.get("AVO_PIN_LOCAL_PACKAGES", "").strip() not in ("1", "true", "yes")
        if not (root / "kernel" / "pyproject.toml").is_file():
            local = False  # an sdist without the tree: only pins make sense
        config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        named_extras: dict[str, list[str]] = (
            config.get("tool", {}).get("avo-meta", {}).get("extras", {})
        )
        as_extra = {folder for folders in named_extras.values() for folder in folders}
        dependencies = [_requirement(root / "kernel", local=local)]
        for path in sorted((root / "plugins").glob("*/pyproject.toml")):
            folder = f"plugins/{path.parent.name}"
            if folder not in as_extra:
                dependencies.append(_requirement(path.parent, local=local))
        extras = {
            name: [_requirement(root / folder, local=local) for folder in folders]
            for name, folders in named_extras.items()
        }
        for path in sorted((root / "contrib").glob("*/pyproject.toml")):
            folder = f"contrib/{path.parent.name}"
            if folder not in as_extra:
                extras[path.parent.name] = [_requirement(path.parent, local=local)]
        metadata["dependencies"] = [*dependencies, "rich>=13"]
        metadata["optional-dependencies"] = extras
