"""``avo login PROVIDER``: store a provider's API key; ``--list``; ``--remove``.

The key is read without echo at a terminal prompt, or from standard input
(``--stdin``, or whenever stdin is not a terminal), and stored in the OS keyring
when the ``keyring`` package is importable and has a backend, else in the
owner-only (0600) ``credentials.toml`` of the user config directory (see
:mod:`avo.compose.credentials`). It is stored under the provider's own variable
(``AVO_OPENAI_API_KEY``...), so the lookup order is: that variable in the
environment, then the stored key, then the vendor's conventional variable
(``OPENAI_API_KEY``...) where the provider plugin accepts one. The key itself
is never printed, logged or put in an error.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Mapping
from typing import Any

from avo.exceptions import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo login``'s arguments."""
    parser.add_argument("provider", nargs="?", metavar="PROVIDER", help="provider plugin name")
    parser.add_argument("--stdin", action="store_true", help="read the key from standard input")
    parser.add_argument("--list", action="store_true", help="which providers have a key, where")
    parser.add_argument("--remove", action="store_true", help="forget PROVIDER's stored key")
    parser.add_argument(
        "--no-keyring", action="store_true", help="store in the credentials file, not the keyring"
    )
    parser.add_argument("--json", action="store_true", help="--list as JSON")


def key_variables(spec: Any) -> tuple[str | None, list[str]]:
    """``(avo's own key variable, the vendor's conventional ones)`` a provider reads."""
    names = [v for v in getattr(spec, "env_vars", ()) if v.endswith(("_API_KEY", "_TOKEN"))]
    own = [name for name in names if name.startswith("AVO_")]
    return (own[0] if own else None), [name for name in names if not name.startswith("AVO_")]


def _specs(manager: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in manager.names("provider"):
        try:
            found[name] = manager.get("provider", name)
        except Exception:  # a broken plugin: listed by `avo plugin list`, not here
            continue
    return found


def _variable(specs: Mapping[str, Any], provider: str | None) -> str:
    if not provider:
        raise ConfigError("name a provider: avo login PROVIDER (see avo models)", key="provider")
    spec = specs.get(provider)
    if spec is None:
        raise ConfigError(
            f"unknown provider {provider!r}; installed: {', '.join(sorted(specs)) or '-'}",
            key="provider",
        )
    variable, _ = key_variables(spec)
    if variable is None:
        raise ConfigError(
            f"provider {provider!r} declares no API key variable; it needs no login",
            key="provider",
        )
    return variable


def _read_key(args: argparse.Namespace, provider: str) -> str:
    if args.stdin or not sys.stdin.isatty():
        key = sys.stdin.readline().strip()
    else:
        key = getpass.getpass(f"API key for {provider} (input hidden): ").strip()
    if not key:
        raise ConfigError(
            f"no API key given for {provider}; paste it at the prompt, or pipe it: "
            f"avo login {provider} --stdin < keyfile",
            key="api_key",
        )
    if any(ch.isspace() for ch in key):
        raise ConfigError(
            f"the API key given for {provider} contains whitespace; give the key alone",
            key="api_key",
        )
    return key


def _listing(specs: Mapping[str, Any], environ: Mapping[str, str]) -> list[dict[str, Any]]:
    from avo.compose.credentials import stored_where

    where = stored_where(environ)
    rows = []
    for name, spec in sorted(specs.items()):
        variable, conventional = key_variables(spec)
        if variable is None:
            continue
        fallback = next((var for var in conventional if environ.get(var)), None)
        if environ.get(variable):
            used = f"environment ({variable})"
        elif variable in where:
            used = f"stored ({where[variable]})"
        elif fallback:
            used = f"vendor variable ({fallback})"
        else:
            used = "none"
        rows.append(
            {
                "provider": name,
                "variable": variable,
                "stored": where.get(variable),
                "in_environment": bool(environ.get(variable)),
                "fallback": fallback,
                "used": used,
            }
        )
    return rows


def run(args: argparse.Namespace) -> int:
    """Store, list or remove API keys."""
    import os

    from avo.compose.credentials import (
        keyring_module,
        remove_credential,
        store_credential,
    )
    from avo.plugins.manager import PluginManager

    environ: Mapping[str, str] = getattr(args, "avo_environ", None) or os.environ
    manager = getattr(args, "avo_plugins", None) or PluginManager(environ=environ)
    specs = _specs(manager)
    if args.list:
        from avo.cli._output import print_json, print_table

        rows = _listing(specs, environ)
        if args.json:
            print_json(rows)
        else:
            table = [(r["provider"], r["variable"], r["stored"] or "-", r["used"]) for r in rows]
            print_table(args, ["PROVIDER", "VARIABLE", "STORED", "KEY USED"], table)
        return 0
    variable = _variable(specs, args.provider)
    if args.remove:
        if remove_credential(variable, environ):
            print(f"removed the stored API key for {args.provider} ({variable})")
        else:
            print(f"no API key was stored for {args.provider} ({variable})")
        return 0
    key = _read_key(args, args.provider)
    use_keyring = not args.no_keyring and keyring_module() is not None
    path = store_credential(variable, key, environ, keyring=use_keyring)
    where = "the OS keyring (service 'avo')" if use_keyring else f"{path} (owner-only, 0600)"
    print(f"stored the API key for {args.provider} as {variable} in {where}")
    if environ.get(variable):
        print(f"note: {variable} is set in the environment, and the environment wins")
    return 0


__all__ = ["configure", "key_variables", "run"]
