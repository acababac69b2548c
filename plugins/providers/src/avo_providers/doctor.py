"""``avo doctor`` (§21.3): which provider, model, endpoint and style; is a key configured.

Never prints a key: only ``API key configured: yes/no``. A configuration that
cannot build prints ``config error: <why>`` and exits 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

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


def _fallback_lines(name: str, environ: Mapping[str, str]) -> list[str]:
    """What can be said from the environment alone when the provider cannot be built."""
    prefix = env_prefix(name) if name else "AVO"
    catalog = PROVIDER_MODELS.get(name, ("(unknown)",))
    model = environ.get(f"{prefix}_MODEL") or environ.get("AVO_MODEL") or catalog[0]
    base_url = environ.get(f"{prefix}_BASE_URL") or "(default)"
    style = API_STYLE.get(name, "(n/a)")
    if name == "minimax":
        style = environ.get("AVO_MINIMAX_API_STYLE", "anthropic")
    has_key = any(environ.get(var) for var in API_KEY_ENV.get(name, ()))
    return [
        f"model: {model}",
        f"base URL: {base_url}",
        f"API style: {style}",
        f"API key configured: {'yes' if has_key else 'no'}",
    ]


def doctor_report(environ: Mapping[str, str] | None = None) -> tuple[list[str], bool]:
    """The report lines and whether the configuration builds."""
    from avo_providers.config import build_provider_from_env

    env: Mapping[str, str] = os.environ if environ is None else environ
    name = (env.get("AVO_PROVIDER") or "").strip().lower()
    lines = [f"provider: {name or '(unset)'}"]
    try:
        provider = build_provider_from_env(env)
    except (AvoError, ValueError) as exc:
        lines.extend(_fallback_lines(name, env))
        lines.append(f"config error: {exc}")
        return lines, False
    lines.extend(_describe(provider))
    for route_name, route in getattr(provider, "routes", ()):
        details = ", ".join(line.replace(": ", "=", 1) for line in _describe(route))
        lines.append(f"route {route_name}: {details}")
    return lines, True


def configure(parser: Any) -> None:
    """``avo doctor`` takes no arguments."""
    parser.description = "Show the configured model provider and whether it is usable."


def run(args: Any, *, environ: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """Print the report; exit 0 when the provider builds, 1 on a config error."""
    lines, ok = doctor_report(environ)
    stream = out if out is not None else sys.stdout
    for line in lines:
        print(line, file=stream)
    return 0 if ok else 1


__all__ = ["configure", "doctor_report", "run"]
