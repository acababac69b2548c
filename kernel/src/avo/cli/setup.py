"""``avo setup``: write the user config (provider, model, API key, permission mode).

The config goes to ``config.toml`` in the user's config directory (``avo
config show`` prints where); the key goes to the owner-only credentials file
(:mod:`avo.compose.credentials`), never into the config. Asked interactively
on a terminal, or given with flags (``--provider openai --model gpt-4o-mini
--api-key-stdin --permission-mode default``). ``avo run`` offers it when
nothing is configured and it can ask.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from avo.exceptions import AvoError, ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``avo setup``'s arguments."""
    parser.add_argument("--provider", metavar="NAME", help="provider plugin (see avo models)")
    parser.add_argument("--model", metavar="MODEL", help="model name")
    parser.add_argument(
        "--api-key-stdin", action="store_true", help="read the API key from standard input"
    )
    parser.add_argument(
        "--permission-mode", metavar="MODE", help="default permission mode (e.g. default)"
    )
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")


def _isatty() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _ask(question: str, default: str | None = None, choices: list[str] | None = None) -> str:
    shown = f" [{default}]" if default else ""
    hint = f" ({', '.join(choices)})" if choices and len(choices) <= 12 else ""
    while True:
        print(f"{question}{hint}{shown}: ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        answer = line.strip() or (default or "")
        if not answer:
            continue
        if choices and answer not in choices:
            print(f"  {answer!r} is not one of: {', '.join(choices)}", file=sys.stderr)
            continue
        return answer


def _key_variable(spec: Any) -> str | None:
    names = [v for v in getattr(spec, "env_vars", ()) if v.endswith(("_API_KEY", "_TOKEN"))]
    return names[0] if names else None


def write_user_config(
    environ: Any, *, provider: str, model: str | None, permission_mode: str | None
) -> str:
    """Set provider, model and permission mode in the user config (other tables kept)."""
    import tomllib

    from avo.compose._toml import dumps
    from avo.compose.resolve import user_config_path

    path = user_config_path(environ)
    if path is None:
        raise ConfigError("no user config directory: set HOME, XDG_CONFIG_HOME or AVO_CONFIG_DIR")
    table: dict[str, Any] = {}
    if path.is_file():
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                f"{path}: not valid TOML ({exc}); fix or delete it, then run avo setup again",
                file=str(path),
            ) from None
    existing = table.get("provider")
    current: dict[str, Any] = existing if isinstance(existing, dict) else {}
    settings = dict(current.get("settings", {})) if current.get("name") == provider else {}
    if model:
        settings["model"] = model
    table["provider"] = {"name": provider, **({"settings": settings} if settings else {})}
    if permission_mode:
        table["permission"] = {"mode": permission_mode}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        dumps(table, header="written by `avo setup`; a workspace avo.toml overrides it"),
        encoding="utf-8",
    )
    return str(path)


def _choose(args: argparse.Namespace, manager: Any, interactive: bool) -> dict[str, Any]:
    providers = [n for n in manager.names("provider") if n != "fake"] or manager.names("provider")
    provider = args.provider or (
        _ask("Provider", providers[0] if providers else None, providers) if interactive else None
    )
    if not provider:
        raise AvoError("avo setup needs --provider NAME (or run it on a terminal to be asked)")
    spec = manager.get("provider", provider)
    models = list(getattr(spec, "models", ()) or ())
    model = args.model
    if model is None and interactive and models:
        model = _ask("Model", models[0], None)
    key_variable = _key_variable(spec)
    key = None
    if args.api_key_stdin:
        key = sys.stdin.readline().strip() or None
    elif interactive and key_variable:
        key = getpass.getpass(f"API key ({key_variable}; Enter to skip): ").strip() or None
    modes = manager.names("permission")
    mode = args.permission_mode
    if mode is None and interactive and modes:
        mode = _ask("Default permission mode", "default" if "default" in modes else modes[0], modes)
    if mode is not None and mode not in modes:
        raise AvoError(f"unknown permission mode {mode!r}; installed: {', '.join(modes) or '-'}")
    return {
        "provider": provider,
        "model": model,
        "key": key,
        "key_variable": key_variable,
        "mode": mode,
    }


def setup(args: argparse.Namespace, *, interactive: bool | None = None) -> int:
    """Ask (or take from flags) and write the user config and the key."""
    from avo.compose.credentials import store_credential
    from avo.plugins.manager import PluginManager

    environ = getattr(args, "avo_environ", None)
    manager = getattr(args, "avo_plugins", None) or PluginManager(environ=environ)
    ask = _isatty() if interactive is None else interactive
    chosen = _choose(args, manager, ask and not args.api_key_stdin)
    path = write_user_config(
        environ, provider=chosen["provider"], model=chosen["model"], permission_mode=chosen["mode"]
    )
    stored = None
    if chosen["key"]:
        if not chosen["key_variable"]:
            raise AvoError(f"provider {chosen['provider']!r} takes no API key; drop the key")
        stored = str(store_credential(chosen["key_variable"], chosen["key"], environ))
    result = {
        "config": path,
        "provider": chosen["provider"],
        "model": chosen["model"],
        "permission_mode": chosen["mode"],
        "key_stored_in": stored,
        "key_variable": chosen["key_variable"] if stored else None,
    }
    if getattr(args, "json", False):
        from avo.cli._output import print_json

        print_json(result)
        return 0
    print(f"wrote {path}")
    if stored:
        print(f"stored {chosen['key_variable']} in {stored} (owner-only; the environment wins)")
    print("check it with: avo config show")
    return 0


def offer_setup(args: Any) -> bool:
    """On a terminal with nothing configured, offer ``avo setup``; True when it ran."""
    if not _isatty():
        return False
    print("No model provider is configured. Set one up now? [Y/n] ", end="", file=sys.stderr)
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("", "y", "yes"):
        return False
    ns = argparse.Namespace(
        provider=None,
        model=None,
        api_key_stdin=False,
        permission_mode=None,
        json=False,
        avo_environ=getattr(args, "avo_environ", None),
        avo_plugins=getattr(args, "avo_plugins", None),
    )
    setup(ns, interactive=True)
    return True


def run(args: argparse.Namespace) -> int:
    """``avo setup``."""
    return setup(args)


__all__ = ["configure", "offer_setup", "run", "setup", "write_user_config"]
