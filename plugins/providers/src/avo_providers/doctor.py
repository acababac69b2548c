"""``avo doctor``: which provider, model, endpoint and style; is a key configured.

The provider comes from the same configuration every command uses (flags >
environment > workspace avo.toml > user config, see ``avo config show``), not
from ``AVO_PROVIDER`` alone. Never prints a key: only ``API key configured:
yes/no``. A configuration that cannot build prints ``config error: <why>`` and
exits 1. The last line says whether the optional native accelerator is loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from avo import native
from avo.exceptions import AvoError
from avo_providers.catalog import API_KEY_ENV, API_STYLE, PROVIDER_MODELS, env_prefix


def _describe(provider: Any) -> list[str]:
    base_url = getattr(provider, "base_url", None)
    endpoint = None
    if hasattr(provider, "endpoint"):
        endpoint = provider.endpoint(stream=False)
    configured = getattr(provider, "api_key_configured", None)
    lines = [
        f"model: {getattr(provider, 'model', '(unknown)')}",
        f"base URL: {base_url or '(n/a)'}",
    ]
    if endpoint:
        lines.append(f"endpoint: {endpoint}")
    lines.append(f"API style: {getattr(provider, 'api_style', '(n/a)')}")
    if configured is not None:
        lines.append(f"API key configured: {'yes' if configured else 'no'}")
    return lines


def _key_source(name: str, environ: Mapping[str, str]) -> list[str]:
    """Where the key comes from, by name (never the key itself): avo's own variable in
    ``environ``, the key ``avo login`` stored, or the vendor's variable (with a note)."""
    from avo.compose.credentials import stored_where

    names = API_KEY_ENV.get(name, ())
    if not names:
        return []
    own = names[0]
    if environ.get(own):
        return [f"API key from: {own} (environment)"]
    where = stored_where(environ)
    if own in where:
        return [f"API key from: stored by avo login ({where[own]})"]
    for var in names[1:]:
        if environ.get(var):
            return [
                f"API key from: {var} (environment)",
                f"note: {var} is the vendor's variable, accepted as a fallback; {own} or "
                f"`avo login {name}` take precedence over it",
            ]
    return []


def _fallback_lines(
    name: str, environ: Mapping[str, str], settings: Mapping[str, Any] | None = None
) -> list[str]:
    """What the configuration says when the provider cannot be built."""
    given = dict(settings or {})
    prefix = env_prefix(name) if name else "AVO"
    catalog = PROVIDER_MODELS.get(name, ("(unknown)",))
    model = (
        given.get("model")
        or environ.get(f"{prefix}_MODEL")
        or environ.get("AVO_MODEL")
        or catalog[0]
    )
    base_url = given.get("base_url") or environ.get(f"{prefix}_BASE_URL") or "(default)"
    style = API_STYLE.get(name, "(n/a)")
    if name == "minimax":
        style = environ.get("AVO_MINIMAX_API_STYLE", "anthropic")
    has_key = bool(given.get("api_key")) or any(
        environ.get(var) for var in API_KEY_ENV.get(name, ())
    )
    return [
        f"model: {model}",
        f"base URL: {base_url}",
        f"API style: {style}",
        f"API key configured: {'yes' if has_key else 'no'}",
    ]


def doctor_report(
    environ: Mapping[str, str] | None = None,
    *,
    config: str | None = None,
    provider: str | None = None,
    database: str | None = None,
) -> tuple[list[str], bool]:
    """The report lines and whether the configured provider builds.

    ``config`` / ``provider`` are ``avo doctor``'s ``--config`` / ``--provider``.
    """
    from avo.compose import provider_from_config, resolve_config

    env: Mapping[str, str] = os.environ if environ is None else environ
    try:
        resolved = resolve_config(config, environ=env, provider=provider, database=database)
    except AvoError as exc:
        return ["provider: (unknown)", f"config error: {exc}"], False
    name = resolved.config.provider.name if resolved.config.provider else ""
    lines = [f"provider: {name or '(unset)'}"]
    if not name:
        lines.append(
            "config error: no provider configured: run `avo setup`, set [provider] name in "
            "avo.toml, pass --provider NAME or set AVO_PROVIDER"
        )
        return lines, False
    source = f"configured by: {resolved.source('provider.name')}"
    try:
        built = provider_from_config(resolved)
    except (AvoError, ValueError) as exc:
        settings = resolved.config.provider.settings if resolved.config.provider else {}
        lines.extend(_fallback_lines(name, resolved.environ, settings))
        lines.append(f"config error: {exc}")
        return [*lines, source], False
    lines.extend(_describe(built))
    lines.extend(_key_source(name, env))
    for route_name, route in getattr(built, "routes", ()):
        details = ", ".join(line.replace(": ", "=", 1) for line in _describe(route))
        lines.append(f"route {route_name}: {details}")
    return [*lines, source], True


def configure(parser: Any) -> None:
    """``avo doctor [--config FILE] [--provider NAME] [--json]``."""
    parser.description = "Show the configured model provider and whether it is usable."
    parser.add_argument("--config", "-c", default=None, metavar="FILE", help="avo.toml to use")
    parser.add_argument("--provider", default=None, metavar="NAME", help="check this provider")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: Any, *, environ: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """Print the report; exit 0 when the provider builds, 1 on a config error."""
    env = environ if environ is not None else getattr(args, "avo_environ", None)
    lines, ok = doctor_report(
        env,
        config=getattr(args, "config", None),
        provider=getattr(args, "provider", None),
        database=getattr(args, "database", None),
    )
    lines = [*lines, f"native accelerator: {native.status().describe()}"]
    stream = out if out is not None else sys.stdout
    if getattr(args, "json", False):
        import json

        report = dict(line.split(": ", 1) for line in lines if ": " in line)
        print(json.dumps({"ok": ok, **report}, indent=2), file=stream)
        return 0 if ok else 1
    for line in lines:
        print(line, file=stream)
    return 0 if ok else 1


__all__ = ["configure", "doctor_report", "run"]
