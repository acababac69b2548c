"""API keys stored by ``avo setup``, read back as a fallback for the environment.

Keys live in ``credentials.toml`` in the user's config directory (see
:func:`avo.compose.resolve.user_config_dir`), created owner-only (0600) in an
owner-only directory, as a table of environment-variable names::

    [env]
    AVO_OPENAI_API_KEY = "sk-..."

The environment always wins: a stored key is used only when its variable is
unset. Providers read keys from the ``environ`` they are given, so composing
with :func:`with_credentials` is all it takes; nothing else reads this file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

from avo.exceptions import ConfigError

CREDENTIALS_FILE = "credentials.toml"


def credentials_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where stored keys live (None without a user config directory)."""
    from avo.compose.resolve import user_config_dir

    directory = user_config_dir(environ)
    return directory / CREDENTIALS_FILE if directory is not None else None


def load_credentials(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The stored ``{VARIABLE: value}`` pairs (empty when there is no file)."""
    path = credentials_path(environ)
    if path is None or not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"cannot read stored credentials {path}: {exc}; fix or delete the file "
            "and run `avo setup` again",
            file=str(path),
        ) from None
    table = data.get("env", {})
    return {str(k): str(v) for k, v in table.items() if isinstance(v, str) and v}


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def store_credential(variable: str, value: str, environ: Mapping[str, str] | None = None) -> Path:
    """Store ``variable = value`` (owner-only file); returns the file's path."""
    path = credentials_path(environ)
    if path is None:
        raise ConfigError(
            "no user config directory: set HOME, XDG_CONFIG_HOME or AVO_CONFIG_DIR",
            key="AVO_CONFIG_DIR",
        )
    stored = load_credentials(environ)
    stored[variable] = value
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lines = ["# API keys stored by `avo setup` (the environment wins over these).", "[env]"]
    lines += [f"{name} = {_quote(secret)}" for name, secret in sorted(stored.items())]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path


class _WithCredentials(Mapping[str, str]):
    """``environ`` first, then the stored keys (read once)."""

    def __init__(self, environ: Mapping[str, str], stored: Mapping[str, str]) -> None:
        self._environ = environ
        self._stored = stored

    def __getitem__(self, key: str) -> str:
        value = self._environ.get(key)
        if value:
            return value
        if key in self._stored:
            return self._stored[key]
        if value is not None:
            return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        yield from self._environ
        yield from (k for k in self._stored if k not in self._environ)

    def __len__(self) -> int:
        return len(self._environ) + sum(1 for k in self._stored if k not in self._environ)


def with_credentials(environ: Mapping[str, str]) -> Mapping[str, str]:
    """``environ`` with stored keys as a fallback (``environ`` itself when none are stored)."""
    if isinstance(environ, _WithCredentials):
        return environ
    stored = load_credentials(environ)
    return _WithCredentials(environ, stored) if stored else environ


__all__ = [
    "CREDENTIALS_FILE",
    "credentials_path",
    "load_credentials",
    "store_credential",
    "with_credentials",
]
