"""Lazy module attributes (PEP 562): import a public name's module on first use.

Packages with heavy or circular submodules export names without importing them::

    from avo.lazy import lazy_exports

    _EXPORTS = {"PluginManager": "avo.plugins.manager"}
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())

Stdlib only, so ``import avo`` stays fast.
"""

from __future__ import annotations

import importlib

# Not `from typing import ...`: `import avo` must not pay for typing (see avo/__init__).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping
    from typing import Any


def lazy_exports(
    module_name: str,
    exports: Mapping[str, str],
    namespace: MutableMapping[str, Any] | None = None,
) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``name`` from ``exports[name]`` (a module path).

    With ``namespace`` (the module's ``globals()``), a resolved value is cached
    there so the next access is a plain attribute lookup.
    """

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        if namespace is not None:
            namespace[name] = value
        return value

    return __getattr__


__all__ = ["lazy_exports"]
