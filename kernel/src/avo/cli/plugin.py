"""``avo plugin list|show|install|remove|init``."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from avo.exceptions import AvoError
from avo.plugins.discovery import KERNEL_DISTRIBUTION, canonical_name
from avo.plugins.manager import PluginManager
from avo.plugins.specs import HOOK_OF_KIND


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``plugin`` subcommands to ``parser``."""
    from avo.cli._scaffold import kinds as scaffold_kinds  # the kinds in cli/scaffolds

    actions = parser.add_subparsers(dest="plugin_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="installed plugins with their status")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument(
        "--refresh", action="store_true", help="re-check every plugin, ignoring the status cache"
    )
    show = actions.add_parser("show", help="one plugin's hooks, entry point and settings schema")
    show.add_argument("name")
    show.add_argument("--kind", choices=sorted(HOOK_OF_KIND), help="when the name is ambiguous")
    show.add_argument("--json", action="store_true", help="print JSON")
    install = actions.add_parser("install", help="pip-install plugin packages and verify them")
    install.add_argument("specs", nargs="+", metavar="SPEC", help="anything pip install accepts")
    remove = actions.add_parser("remove", help="uninstall the package that ships a plugin")
    remove.add_argument("name", help="a plugin name or its package name")
    remove.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    init = actions.add_parser("init", help="scaffold a new plugin package")
    init.add_argument("name", help="the plugin name, e.g. shout (package avo-shout)")
    init.add_argument(
        "--kind",
        required=True,
        choices=list(scaffold_kinds()),
    )
    init.add_argument(
        "--directory", type=Path, default=None, help="where to create it (default ./avo-NAME)"
    )


def run(args: argparse.Namespace) -> int:
    """Dispatch to the chosen action."""
    environ: Mapping[str, str] | None = getattr(args, "avo_environ", None)
    manager = getattr(args, "avo_plugins", None) or PluginManager(environ=environ)
    action = args.plugin_action
    if action == "list":
        return _list(manager, environ, as_json=args.json, refresh=args.refresh)
    if action == "show":
        return _show(manager, args.name, kind=args.kind, as_json=args.json)
    if action == "install":
        return _install(args.specs, environ)
    if action == "remove":
        return _remove(manager, args.name, yes=args.yes)
    from avo.cli._scaffold import scaffold

    target = scaffold(args.name, kind=args.kind, directory=args.directory)
    print(f"created {target} (package avo-{canonical_name(args.name)}, kind {args.kind})")
    print(f"next: pip install -e '{target}[test]' && python -m pytest {target / 'tests'}")
    return 0


# ------------------------------------------------------------------- list


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    cells = [[str(row.get(col) or "-") for col in columns] for row in rows]
    widths = [max([len(col), *(len(r[i]) for r in cells)]) for i, col in enumerate(columns)]
    lines = ["  ".join(col.upper().ljust(w) for col, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def _list(
    manager: PluginManager, environ: Mapping[str, str] | None, *, as_json: bool, refresh: bool
) -> int:
    import os

    from avo.plugins.status_cache import cached_status

    env = os.environ if environ is None else environ
    rows = cached_status(manager, env, refresh=refresh)
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no avo plugins installed")
        return 0
    print(_table(rows, ["name", "kind", "package", "version", "status"]))
    troubled = [row for row in rows if row["status"] != "ok"]
    if troubled:
        print()
        for row in troubled:
            print(f"{row['kind']} {row['name']!r} ({row['package']}): {row['reason']}")
    return 0


# ------------------------------------------------------------------- show


def _schema(spec: Any) -> Any:
    model = getattr(spec, "settings_model", None)
    return model.model_json_schema() if model is not None else None


def _spec_details(spec: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    for field in dataclasses.fields(spec):
        if field.name in ("name", "factory", "settings_model", "configure", "run"):
            continue
        value = getattr(spec, field.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        elif isinstance(value, Mapping):  # pricing: (in, out) pairs; context windows: ints
            value = {
                str(k): [str(x) for x in v] if isinstance(v, tuple | list) else v
                for k, v in value.items()
            }
        elif isinstance(value, tuple):
            value = list(value)
        elif hasattr(value, "value"):
            value = value.value
        details[field.name] = value
    return details


def _show(manager: PluginManager, name: str, *, kind: str | None, as_json: bool) -> int:
    candidates = sorted(
        {k for (k, n) in manager.discover() if n == name and (kind is None or k == kind)}
        | {k for k in HOOK_OF_KIND if (kind is None or k == kind) and name in manager.specs(k)}
    )
    if not candidates:
        installed = sorted({n for (_, n) in manager.discover()})
        raise AvoError(f"no plugin named {name!r}; installed: {', '.join(installed) or '(none)'}")
    if len(candidates) > 1:
        raise AvoError(
            f"{name!r} names plugins of several kinds ({', '.join(candidates)}); "
            f"pass --kind {candidates[0]}"
        )
    chosen = candidates[0]
    reg = manager.registration(chosen, name)
    entry = next(iter(manager.discover().get((chosen, name), ())), None)
    plugin_object = manager.pluggy.get_plugin(reg.plugin)
    hooks = sorted(c.name for c in manager.pluggy.get_hookcallers(plugin_object) or ())
    docs = (getattr(reg.spec, "description", "") or getattr(reg.spec, "help", "")).strip()
    info = {
        "name": name,
        "kind": chosen,
        "package": reg.package,
        "version": reg.version,
        "entry_point": f"{entry.group}: {entry.name} = {entry.value}" if entry else None,
        "kernel_requirement": entry.kernel_requirement if entry else None,
        "hooks": hooks,
        "docs": docs.splitlines()[0] if docs else "",
        "details": _spec_details(reg.spec),
        "settings_schema": _schema(reg.spec),
    }
    if as_json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"{name} ({chosen})  {reg.package or 'in-process'} {reg.version or ''}".rstrip())
    if info["docs"]:
        print(f"  {info['docs']}")
    print(f"  entry point: {info['entry_point'] or '-'}")
    print(f"  requires:    avo-kernel{info['kernel_requirement'] or ' (any)'}")
    print(f"  hooks:       {', '.join(hooks) or '-'}")
    for key, value in info["details"].items():
        if key not in ("description", "help") and value not in ((), [], {}, "", None):
            print(f"  {key + ':':<12} {value}")
    schema = info["settings_schema"]
    if schema:
        print("  settings:")
        for line in json.dumps(schema, indent=2).splitlines():
            print(f"    {line}")
    else:
        print("  settings:    (none)")
    return 0


# ---------------------------------------------------------- install/remove


def _pip(*arguments: str) -> int:
    import subprocess

    command = [sys.executable, "-m", "pip", *arguments]
    print("$ " + " ".join(command), flush=True)
    return subprocess.run(command, check=False).returncode


def _install(specs: list[str], environ: Mapping[str, str] | None) -> int:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        report_path = Path(scratch) / "report.json"
        code = _pip("install", "--report", str(report_path), *specs)
        if code != 0:
            raise AvoError(f"pip install {' '.join(specs)} failed with exit code {code}")
        report = json.loads(report_path.read_text(encoding="utf-8")) if report_path.exists() else {}
    installed = {
        canonical_name(item["metadata"]["name"]): item["metadata"].get("version", "")
        for item in report.get("install", [])
        if item.get("metadata", {}).get("name")
    }
    importlib.invalidate_caches()
    manager = PluginManager(environ=environ)
    added = sorted(
        {
            (entry.kind, entry.name)
            for entry in manager.entries(include_disabled=True)
            if canonical_name(entry.package or "") in installed
        }
    )
    if not added:
        what = ", ".join(f"{n} {v}" for n, v in sorted(installed.items())) or "nothing new"
        print(f"installed {what}; no new avo plugins in it")
        return 0
    broken = 0
    for kind, name in added:
        try:
            reg = manager.registration(kind, name)
        except AvoError as exc:
            broken += 1
            print(f"  broken: {kind} {name!r}: {exc}")
            continue
        print(f"  added:  {kind} {name!r} from {reg.package} {reg.version}")
    return 1 if broken else 0


def _remove(manager: PluginManager, name: str, *, yes: bool) -> int:
    from importlib import metadata

    entries = manager.entries(include_disabled=True)
    packages = {entry.package for entry in entries if entry.name == name and entry.package}
    if not packages:
        packages = {
            entry.package
            for entry in entries
            if entry.package and canonical_name(entry.package) == canonical_name(name)
        }
    if not packages:
        try:
            packages = {metadata.distribution(name).metadata["Name"]}
        except metadata.PackageNotFoundError:
            raise AvoError(f"no installed plugin or package named {name!r}") from None
    if len(packages) > 1:
        raise AvoError(
            f"{name!r} is provided by several packages ({', '.join(sorted(packages))}); "
            "remove one by its package name"
        )
    package = packages.pop()
    if canonical_name(package) == KERNEL_DISTRIBUTION:
        raise AvoError(
            f"refusing to remove {package}: it is the avo kernel every plugin runs on "
            f"(use pip uninstall {package} if you really mean it)"
        )
    provided = sorted(
        f"{e.kind} {e.name}"
        for e in entries
        if canonical_name(e.package or "") == canonical_name(package)
    )
    if not yes:
        what = f" (provides {', '.join(provided)})" if provided else ""
        print(f"Remove {package}{what}? [y/N]: ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            print()
            raise AvoError(
                "plugin remove needs a confirmation and standard input has none; "
                f"pass --yes to remove {package} without asking"
            )
        answer = line.strip().lower()
        if answer not in ("y", "yes"):
            print("aborted; nothing removed")
            return 1
    code = _pip("uninstall", "--yes", package)
    if code != 0:
        raise AvoError(f"pip uninstall {package} failed with exit code {code}")
    print(f"removed {package}")
    return 0


__all__ = ["configure", "run"]
