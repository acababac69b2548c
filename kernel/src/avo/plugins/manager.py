"""The plugin manager: pluggy over entry points, metadata first, import later.

There is no global manager: each runtime or CLI invocation builds its own
:class:`PluginManager`, and tests build a fresh one (``autoload=False``) so
they never see whatever happens to be installed.

Life of a plugin:

1. **Discovery** reads entry points and each distribution's declared
   ``avo-kernel`` requirement from metadata. No plugin code is imported. A
   distribution whose requirement excludes this kernel is refused here.
2. **Loading** happens when a name is first used (:meth:`PluginManager.get`)
   or when every plugin is checked (:meth:`PluginManager.load_all`, used by
   ``avo plugin list``). The entry point's object is registered with pluggy and
   its ``avo_register_<kind>(register)`` hooks are called.
3. **Isolation**: a plugin that fails to import, raises in a hook, implements a
   hook the kernel does not know, or claims a name another package already
   claimed is recorded in :attr:`PluginManager.problems` (name, package,
   version, reason) and skipped; every other plugin keeps working.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pluggy

from avo import hookspecs
from avo.exceptions import PluginConflictError, PluginError
from avo.plugins._bounded import LOAD_TIMEOUT_ENV, LoadTimeout, call_bounded
from avo.plugins._bounded import load_timeout as load_timeout_from
from avo.plugins._declared import installed_holder, may_register, metadata_problem, undeclared
from avo.plugins._records import (
    PluginProblem,
    Registration,
    _kernel_version,
    _SafeHookRelay,
    _split,
    _with_canonical,
)
from avo.plugins.discovery import (
    KERNEL_DISTRIBUTION,
    PluginEntry,
    cache_dir,
    canonical_name,
    discover_all,
)
from avo.plugins.specs import HOOK_OF_KIND, KIND_OF_SPEC

ESSENTIAL_PLUGINS: tuple[tuple[str, str], ...] = (("command", "plugin"),)
"""``(kind, name)`` of kernel plugins no switch can disable, so ``avo plugin
remove`` still works after a broken package was installed (pytest's
essential plugins)."""

RESERVED_KINDS: frozenset[str] = frozenset({"command"})
"""Kinds whose kernel-shipped names always win a name clash: a third-party
``avo.commands: plugin`` cannot take ``avo plugin`` (or ``avo run``) away from
the user; it is ignored and reported (:attr:`PluginManager.shadowed`)."""

KINDS: tuple[str, ...] = tuple(HOOK_OF_KIND)
_FRONT_END_KINDS: frozenset[str] = frozenset({"command", "slash_command", "engine"})
"""Kinds a front end uses, not a run: left out of the plugin set a run records (an
engine decides where a run is driven, never what it does)."""
_FALSE = {"0", "false", "no", "off"}


class PluginManager:
    """Discovers, loads and isolates avo plugins; one per runtime or CLI call.

    :param environ: the injectable environment. ``AVO_PLUGINS_AUTOLOAD=0``
        disables entry-point autoloading, ``AVO_PLUGINS_BLOCK=a,b`` blocks
        plugins (by name, ``kind:name`` or package), ``AVO_PLUGINS_ALLOW=a,b``
        loads only the listed ones.
    :param autoload: ``False`` loads no entry point except
        :data:`ESSENTIAL_PLUGINS` (tests pass this and :meth:`register` what
        they need; the others still show as disabled in :meth:`status`); the
        environment wins when it sets ``AVO_PLUGINS_AUTOLOAD``.
    :param block: names to block in addition to ``AVO_PLUGINS_BLOCK``.
    :param allow: an allow-list; ``AVO_PLUGINS_ALLOW`` wins when set.
    :param path: where to look for distributions (default ``sys.path``).
    :param load_timeout: seconds a plugin's import and registration hooks may
        take before it is reported broken and skipped (``AVO_PLUGINS_LOAD_TIMEOUT``
        wins; default 10).

    With a cache directory (``AVO_PLUGINS_CACHE``, ``$XDG_CACHE_HOME/avo`` or
    ``$HOME/.cache/avo`` from ``environ``) the entry points are cached while no
    path directory or plugin dist-info changes.
    """

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        autoload: bool | None = None,
        block: Iterable[str] = (),
        allow: Iterable[str] | None = None,
        path: Sequence[str] | None = None,
        load_timeout: float | None = None,
    ) -> None:
        env = environ if environ is not None else os.environ
        self.load_timeout = load_timeout_from(env, load_timeout)
        env_autoload = env.get("AVO_PLUGINS_AUTOLOAD")
        if env_autoload is not None and env_autoload.strip():
            autoload = env_autoload.strip().lower() not in _FALSE
        self.autoload = True if autoload is None else autoload
        self.block = _split(env.get("AVO_PLUGINS_BLOCK")) | set(block)
        env_allow = _split(env.get("AVO_PLUGINS_ALLOW"))
        self.allow: set[str] | None = env_allow or (set(allow) if allow is not None else None)
        self._path = path
        directory = cache_dir(env)
        self._entry_cache = directory / "entry-points.json" if directory else None
        self.kernel_version = _kernel_version()
        self.pluggy = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pluggy.add_hookspecs(hookspecs)
        self.hook: Any = _SafeHookRelay(self)
        self._entries: dict[tuple[str, str], list[PluginEntry]] | None = None
        self._excluded: dict[tuple[str, str], tuple[PluginEntry, str]] = {}
        self._registrations: dict[tuple[str, str], Registration] = {}
        self._problems: dict[tuple[str, str], PluginProblem] = {}
        self._hook_problems: list[PluginProblem] = []
        self._shadowed: list[PluginProblem] = []
        self._loaded_values: dict[int, str] = {}
        # (kind, name) each distribution declares in its entry points (switches aside).
        self._declared: dict[str, set[tuple[str, str]]] = {}
        # Modules whose import timed out: never waited on again by this manager.
        self._hung_modules: set[str] = set()

    # ------------------------------------------------------------ discovery

    def _selected(self, entry: PluginEntry) -> str | None:
        """Why ``entry`` is switched off, or None when it may load."""
        key = (entry.kind, entry.name)
        essential = (
            key in ESSENTIAL_PLUGINS and canonical_name(entry.package or "") == KERNEL_DISTRIBUTION
        )
        if essential:
            return None
        labels = {entry.name, f"{entry.kind}:{entry.name}", canonical_name(entry.package or "")}
        if labels & _with_canonical(self.block):
            return "blocked by AVO_PLUGINS_BLOCK / [plugins] block"
        if self.allow is not None:
            if not labels & _with_canonical(self.allow):
                return "not in the allow-list (AVO_PLUGINS_ALLOW / [plugins] allow)"
        elif not self.autoload:
            return "autoloading is disabled (AVO_PLUGINS_AUTOLOAD=0)"
        return None

    def discover(self) -> dict[tuple[str, str], list[PluginEntry]]:
        """Read every avo entry point from metadata (once); import nothing."""
        if self._entries is not None:
            return self._entries
        entries: dict[tuple[str, str], list[PluginEntry]] = {}
        for group_entries in discover_all(path=self._path, cache_file=self._entry_cache).values():
            for entry in group_entries:
                key = (entry.kind, entry.name)
                self._declared.setdefault(canonical_name(entry.package or ""), set()).add(key)
                reason = self._selected(entry)
                if reason is not None:
                    self._excluded[key] = (entry, reason)
                    continue
                entries.setdefault(key, []).append(entry)
        for key, candidates in entries.items():
            self._check_metadata(key, candidates)
        self._entries = entries
        return entries

    def _check_metadata(self, key: tuple[str, str], candidates: list[PluginEntry]) -> None:
        if key[0] in RESERVED_KINDS and len({c.package or "?" for c in candidates}) > 1:
            self._keep_kernel_entry(key, candidates)  # drops the clashing third-party entries
        problem = metadata_problem(key, candidates, self.kernel_version)
        if problem is not None:
            self._problems[key] = problem

    def _keep_kernel_entry(self, key: tuple[str, str], candidates: list[PluginEntry]) -> None:
        """In a clash over a reserved kind, keep the kernel's entry and report the others."""
        kind, name = key
        own = [c for c in candidates if canonical_name(c.package or "") == KERNEL_DISTRIBUTION]
        if not own:
            return
        for other in candidates:
            if other in own:
                continue
            self._shadowed.append(
                PluginProblem(
                    name,
                    kind,
                    other.package,
                    other.version,
                    f"name conflict: {kind} {name!r} is the kernel's own and always wins; "
                    f"this one is ignored: rename it, or remove it with "
                    f"`avo plugin remove {other.package}`",
                )
            )
        candidates[:] = own

    # -------------------------------------------------------------- loading

    def register(
        self,
        plugin: Any,
        name: str | None = None,
        *,
        package: str | None = None,
        version: str | None = None,
    ) -> list[Registration]:
        """Register an in-process plugin object and collect what it registers.

        Raises :class:`PluginError` when the object is invalid (unknown hook,
        bad hook signature, raising hook) and :class:`PluginConflictError`
        when it claims a name another plugin already holds.
        """
        label = name or getattr(plugin, "__name__", None) or repr(plugin)
        added, problem = self._load_object(plugin, label, package, version, in_process=True)
        if problem is not None:
            error = PluginConflictError if problem.startswith("name conflict") else PluginError
            raise error(f"plugin {label!r}: {problem}", plugin=label, package=package)
        return added

    def _load_object(
        self,
        plugin: Any,
        label: str,
        package: str | None,
        version: str | None,
        *,
        in_process: bool = False,
    ) -> tuple[list[Registration], str | None]:
        """Register ``plugin`` with pluggy and run its registration hooks.

        Returns what it registered, or the reason it was isolated (and then
        nothing it registered is kept). A plugin loaded from an entry point may
        only register names its distribution declares as entry points; a
        declared name the switches disable (or that is in conflict) is left
        out. An in-process plugin may not take a name an enabled installed
        plugin of another package declares: that is a conflict too, whichever
        is loaded first.
        """
        if id(plugin) in self._loaded_values:
            return [], None
        pm = self.pluggy
        try:
            pm.register(plugin, name=f"{label}#{len(self._loaded_values)}")
        except (pluggy.PluginValidationError, ValueError) as exc:
            return [], f"invalid plugin: {exc}"
        plugin_name = pm.get_name(plugin) or label
        unknown = [
            caller.name
            for caller in pm.get_hookcallers(plugin) or ()
            if caller.spec is None
            and not any(i.optionalhook for i in caller.get_hookimpls() if i.plugin is plugin)
        ]
        if unknown:
            pm.unregister(plugin)
            return [], f"implements hooks the kernel does not know: {', '.join(sorted(unknown))}"
        collected: list[Registration] = []

        def collect() -> str | None:
            for kind, hook_name in HOOK_OF_KIND.items():
                caller = getattr(pm.hook, hook_name)
                for impl in caller.get_hookimpls():
                    if impl.plugin is not plugin:
                        continue
                    register = self._make_register(kind, collected, package, version, plugin_name)
                    try:
                        impl.function(*[register for _ in impl.argnames])
                    except Exception as exc:
                        return f"raised in {hook_name}: {type(exc).__name__}: {exc}"
            return None

        try:
            failure = call_bounded(collect, self.load_timeout, label=label)
        except LoadTimeout:
            failure = self._too_slow("its registration hooks", label)
        if failure is not None:
            pm.unregister(plugin)
            return [], failure
        if not in_process:
            refusal = undeclared(self, collected, package)
            if refusal is not None:
                pm.unregister(plugin)
                return [], refusal
            collected = [r for r in collected if may_register(self, r.kind, r.name, package)]
        for reg in collected:
            key = (reg.kind, reg.name)
            held = self._registrations.get(key)
            holder: str | None
            if held is not None:
                holder = f"{held.package or held.plugin} {held.version or ''}".rstrip()
            else:
                holder = installed_holder(self, key, package) if in_process else None
            if holder is not None:
                pm.unregister(plugin)
                return [], (
                    f"name conflict: {reg.kind} {reg.name!r} is registered by both {holder}"
                    + f" and {package or label} {version or ''}".rstrip()
                )
        try:
            pm.check_pending()
        except pluggy.PluginValidationError as exc:  # pragma: no cover - caught above
            pm.unregister(plugin)
            return [], f"invalid plugin: {exc}"
        for reg in collected:
            self._registrations[(reg.kind, reg.name)] = reg
        self._loaded_values[id(plugin)] = plugin_name
        return collected, None

    def _make_register(
        self,
        kind: str,
        collected: list[Registration],
        package: str | None,
        version: str | None,
        plugin_name: str,
    ) -> Callable[[Any], None]:
        def register(spec: Any) -> None:
            spec_kind = KIND_OF_SPEC.get(type(spec))
            if spec_kind != kind:
                raise PluginError(
                    f"{HOOK_OF_KIND[kind]} got {type(spec).__name__}; expected the {kind} spec type"
                )
            name = getattr(spec, "name", "")
            if not isinstance(name, str) or not name:
                raise PluginError(f"a {kind} spec needs a non-empty name")
            collected.append(Registration(kind, name, spec, package, version, plugin_name))

        return register

    def _load_entry(self, entry: PluginEntry) -> None:
        key = (entry.kind, entry.name)
        if key in self._registrations or key in self._problems:
            return
        module = entry.value.split(":", 1)[0].strip()
        try:
            if module in self._hung_modules:
                raise LoadTimeout(entry.name)
            plugin = call_bounded(entry.factory, self.load_timeout, label=entry.name)
        except LoadTimeout:
            self._hung_modules.add(module)
            reason = self._too_slow(f"importing {entry.value}", entry.name)
            self._problems[key] = PluginProblem(
                entry.name, entry.kind, entry.package, entry.version, reason
            )
            return
        except (Exception, SystemExit) as exc:  # a plugin calling sys.exit() is broken too
            reason = f"failed to import {entry.value}: {type(exc).__name__}: {exc}"
            self._problems[key] = PluginProblem(
                entry.name, entry.kind, entry.package, entry.version, reason
            )
            return
        _, problem = self._load_object(plugin, entry.name, entry.package, entry.version)
        if problem is None and key not in self._registrations:
            problem = (
                f"entry point {entry.group}:{entry.name} loaded but registered no "
                f"{entry.kind} named {entry.name!r}"
            )
        if problem is not None:
            self._problems[key] = PluginProblem(
                entry.name, entry.kind, entry.package, entry.version, problem
            )

    def _too_slow(self, what: str, name: str) -> str:
        return (
            f"did not finish loading within {self.load_timeout:g} s ({what} hangs); it is "
            f"skipped: block it with AVO_PLUGINS_BLOCK={name} or give it longer with "
            f"{LOAD_TIMEOUT_ENV}"
        )

    def load(self, kind: str, name: str) -> None:
        """Import and register the plugin for ``kind``/``name`` if it is not loaded yet."""
        if (kind, name) in self._registrations:
            return
        for entry in self.discover().get((kind, name), ()):
            self._load_entry(entry)

    def load_kind(self, kind: str) -> None:
        """Load every enabled plugin of one kind (e.g. all stores, to match a scheme)."""
        for (entry_kind, name), _ in list(self.discover().items()):
            if entry_kind == kind:
                self.load(entry_kind, name)

    def load_all(self) -> None:
        """Load every enabled plugin, recording problems (``avo plugin list``)."""
        for kind, name in list(self.discover()):
            self.load(kind, name)

    # -------------------------------------------------------------- queries

    def get(self, kind: str, name: str) -> Any:
        """The spec registered for ``kind``/``name``, loading its plugin on first use.

        Raises :class:`PluginConflictError` for a name two packages claim and
        :class:`PluginError` (listing the available names) otherwise.
        """
        if kind not in KINDS:
            raise PluginError(f"unknown plugin kind {kind!r}; kinds: {', '.join(KINDS)}")
        self.load(kind, name)
        reg = self._registrations.get((kind, name))
        if reg is not None:
            return reg.spec
        problem = self._problems.get((kind, name))
        if problem is not None:
            error = PluginConflictError if "name conflict" in problem.reason else PluginError
            raise error(str(problem), plugin=name, package=problem.package)
        excluded = self._excluded.get((kind, name))
        if excluded is not None:
            entry, reason = excluded
            raise PluginError(
                f"{kind} plugin {name!r} from {entry.package} {entry.version} is disabled: "
                f"{reason}",
                plugin=name,
                package=entry.package,
            )
        available = ", ".join(self.names(kind)) or "(none installed)"
        raise PluginError(f"unknown {kind} {name!r}; available: {available}", plugin=name)

    def registration(self, kind: str, name: str) -> Registration:
        """Like :meth:`get`, but with the package and version that registered it."""
        self.get(kind, name)
        return self._registrations[(kind, name)]

    def names(self, kind: str) -> list[str]:
        """Names usable for ``kind``: discovered (not known broken) plus registered."""
        found = {
            name for (k, name) in self.discover() if k == kind and (k, name) not in self._problems
        }
        found |= {name for (k, name) in self._registrations if k == kind}
        return sorted(found)

    def specs(self, kind: str) -> dict[str, Any]:
        """Specs already loaded for ``kind`` (call :meth:`load_kind` first for all)."""
        return {name: reg.spec for (k, name), reg in self._registrations.items() if k == kind}

    def entries(self, *, include_disabled: bool = False) -> list[PluginEntry]:
        """Every discovered entry point the switches leave enabled (or all of them)."""
        found = [entry for group in self.discover().values() for entry in group]
        if include_disabled:
            found += [entry for entry, _ in self._excluded.values()]
        return found

    @property
    def problems(self) -> list[PluginProblem]:
        """Every plugin refused or isolated so far, in a stable order."""
        ordered = sorted(self._problems.values(), key=lambda p: (p.kind, p.name))
        return ordered + list(self._shadowed) + list(self._hook_problems)

    @property
    def shadowed(self) -> list[PluginProblem]:
        """Third-party plugins ignored because they clash with a kernel-reserved name."""
        self.discover()
        return list(self._shadowed)

    def status(self) -> list[dict[str, Any]]:
        """One row per plugin: name, kind, package, version, status, reason."""
        from avo.plugins._declared import status_rows

        self.load_all()
        return status_rows(self)

    # ------------------------------------------------------------- run support

    def _hook_failed(self, plugin_name: str, hook_name: str, exc: BaseException) -> PluginProblem:
        reg = next((r for r in self._registrations.values() if r.plugin == plugin_name), None)
        problem = PluginProblem(
            reg.name if reg else plugin_name,
            reg.kind if reg else "plugin",
            reg.package if reg else None,
            reg.version if reg else None,
            f"raised in {hook_name}: {type(exc).__name__}: {exc}",
        )
        self._hook_problems.append(problem)
        return problem

    def call_observers(self, hook_name: str, **kwargs: Any) -> list[PluginProblem]:
        """Call a run-lifecycle hook on every plugin; return a problem per one that raised.

        Each implementation runs on its own: one that raises is recorded in
        :attr:`problems` and returned here (the runtime reports it as a
        HOOK_FAILED event and a warning); the others still run.
        """
        relay: _SafeHookRelay = self.hook
        return relay.call(hook_name, kwargs)[1]

    def plugin_set(self) -> list[dict[str, Any]]:
        """The loaded plugins a run is composed from (front-end commands excluded), sorted."""
        return [
            reg.as_dict()
            for key, reg in sorted(self._registrations.items())
            if reg.kind not in _FRONT_END_KINDS
        ]

    def check_plugin_set(self, recorded: Iterable[Mapping[str, Any]]) -> list[str]:
        """Differences between a run's recorded plugin set and what is here now.

        Returns human-readable lines, one per plugin that is gone, disabled,
        now shipped by another package, or changed major version; an empty
        list means resuming is safe as far as plugins go. Reads metadata only.
        """
        from avo.plugins._plugin_set import plugin_set_differences

        return plugin_set_differences(self, recorded)


__all__ = [
    "ESSENTIAL_PLUGINS",
    "RESERVED_KINDS",
    "PluginManager",
    "PluginProblem",
    "Registration",
]
