"""``avo config show``: the configuration every command uses, and where each value came from.

Resolution: flags > environment > workspace avo.toml > user config (``avo
setup``) > defaults (see :mod:`avo.compose.resolve`). Secret-looking values
are masked; stored API keys are listed by variable name only.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo config``'s subcommands."""
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    show = sub.add_parser("show", help="the resolved configuration and each value's source")
    show.add_argument("--json", action="store_true", help="print it as JSON")
    for name in ("--provider", "--model", "--store", "--permission-mode"):
        show.add_argument(name, default=None, help=f"as {name} would set it on avo run")
    sub.add_parser("path", help="where the user config and stored credentials live")


def _flat(table: Any, prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in table.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            rows.extend(_flat(value, dotted))
        else:
            rows.append((dotted, value))
    return rows


def _shown(key: str, value: Any) -> str:
    from avo.redaction import MASK, Redactor, is_secret_key

    if is_secret_key(key.rsplit(".", 1)[-1]) and value not in (None, ""):
        return MASK
    redacted = Redactor(environ={}).value(value)
    return json.dumps(redacted, ensure_ascii=False, default=str)


def _decoded(shown: str) -> Any:
    from avo.redaction import MASK

    return shown if shown == MASK else json.loads(shown)


def _show(args: argparse.Namespace) -> int:
    from avo.cli._context import resolved
    from avo.cli._output import print_json, print_table
    from avo.compose.credentials import credentials_path, load_credentials
    from avo.compose.resolve import user_config_path

    env = getattr(args, "avo_environ", None)
    config = resolved(
        args,
        provider=args.provider,
        model=args.model,
        store=args.store,
        permission_mode=args.permission_mode,
    )
    rows = [(key, _shown(key, value), config.source(key)) for key, value in _flat(config.raw)]
    stored = sorted(load_credentials(env))
    files = {
        "user_config": str(user_config_path(env) or "-"),
        "workspace_config": config.workspace_file,
        "credentials": str(credentials_path(env) or "-"),
        "stored_keys": stored,
    }
    if args.json:
        print_json(
            {
                "values": {
                    key: json.loads(value) if value != "***" else value for key, value, _ in rows
                },
                "sources": {key: source for key, _, source in rows},
                "store_location": config.store_location,
                **files,
            }
        )
        return 0
    print_table(args, ["KEY", "VALUE", "SOURCE"], rows)
    print()
    print(f"user config:      {files['user_config']}" + ("" if config.user_file else " (none)"))
    print(f"workspace config: {config.workspace_file or '(none in this directory)'}")
    keys = ", ".join(stored) if stored else "none"
    print(f"stored keys:      {keys} ({files['credentials']})")
    if not config.configured:
        print("no provider is configured: run `avo setup`")
    return 0


def _path(args: argparse.Namespace) -> int:
    from avo.compose.credentials import credentials_path
    from avo.compose.resolve import user_config_path

    env = getattr(args, "avo_environ", None)
    print(f"user config: {user_config_path(env) or '(no home directory)'}")
    print(f"credentials: {credentials_path(env) or '(no home directory)'}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Dispatch ``avo config SUBCOMMAND``."""
    return _show(args) if args.config_command == "show" else _path(args)


__all__ = ["configure", "run"]
