"""API keys stored by ``avo login`` / ``avo setup``, read back as a fallback for the environment.

Keys live in ``credentials.toml`` in the user's config directory (see
:func:`avo.compose.resolve.user_config_dir`), created owner-only (0600) in an
owner-only directory, as a table of environment-variable names::

    [env]
    AVO_OPENAI_API_KEY = "sk-..."

``avo login --keyring`` keeps a key in the OS keyring instead (service
``avo``, user name the variable) when the ``keyring`` package is importable
and has a usable backend; the file then lists only the variable's name under
``[keyring] names``.

The environment always wins: a stored key is used only when its variable is
unset. Providers read keys from the ``environ`` they are given, so composing
with :func:`with_credentials` is all it takes; nothing else reads this file.
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from avo.exceptions import ConfigError

CREDENTIALS_FILE = "credentials.toml"


def credentials_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where stored keys live (None without a user config directory)."""
    from avo.compose.resolve import user_config_dir

    directory = user_config_dir(environ)
    return directory / CREDENTIALS_FILE if directory is not None else None


KEYRING_SERVICE = "avo"
"""The OS keyring service ``avo login`` stores keys under (user name: the variable)."""


def _read(environ: Mapping[str, str] | None) -> tuple[dict[str, str], list[str]]:
    """The file's ``[env]`` pairs and the variables it says are kept in the OS keyring."""
    path = credentials_path(environ)
    if path is None or not path.is_file():
        return {}, []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"cannot read stored credentials {path}: {exc}; fix or delete the file "
            "and run `avo login` again",
            file=str(path),
        ) from None
    table = data.get("env", {})
    pairs = {str(k): str(v) for k, v in table.items() if isinstance(v, str) and v}
    held = data.get("keyring", {}).get("names", [])
    return pairs, [str(name) for name in held if isinstance(name, str)]


def keyring_module() -> Any:
    """The ``keyring`` package when it is importable and has a usable backend, else None."""
    import importlib

    try:
        keyring = importlib.import_module("keyring")
        fail = importlib.import_module("keyring.backends.fail")
    except Exception:  # not installed, or broken: keys go to the file
        return None
    try:
        if isinstance(keyring.get_keyring(), fail.Keyring):
            return None
    except Exception:
        return None
    return keyring


def load_credentials(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The stored ``{VARIABLE: value}`` pairs: the file's, and those in the OS keyring."""
    pairs, held = _read(environ)
    if held:
        ring = keyring_module()
        for name in held:
            try:
                value = ring.get_password(KEYRING_SERVICE, name) if ring is not None else None
            except Exception:  # a locked keyring: the key is not available
                value = None
            if value:
                pairs.setdefault(name, value)
    return pairs


def stored_where(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{VARIABLE: "file" | "keyring"}`` for every stored key (values never read out)."""
    pairs, held = _read(environ)
    where = dict.fromkeys(pairs, "file")
    where.update(dict.fromkeys(held, "keyring"))
    return where


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _path(environ: Mapping[str, str] | None) -> Path:
    path = credentials_path(environ)
    if path is None:
        raise ConfigError(
            "no user config directory: set HOME, XDG_CONFIG_HOME or AVO_CONFIG_DIR",
            key="AVO_CONFIG_DIR",
        )
    return path


def _write(path: Path, pairs: Mapping[str, str], held: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lines = ["# API keys stored by `avo login` (the environment wins over these).", "[env]"]
    lines += [f"{name} = {_quote(secret)}" for name, secret in sorted(pairs.items())]
    if held:
        lines += ["", "[keyring]  # kept in the OS keyring, service 'avo'"]
        lines.append("names = [" + ", ".join(_quote(name) for name in sorted(held)) + "]")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)


def store_credential(
    variable: str,
    value: str,
    environ: Mapping[str, str] | None = None,
    *,
    keyring: bool = False,
) -> Path:
    """Store ``variable = value`` (owner-only file, or the OS keyring with ``keyring=True``
    when one is usable); returns the credentials file's path."""
    path = _path(environ)
    pairs, held = _read(environ)
    ring = keyring_module() if keyring else None
    if ring is not None:
        try:
            ring.set_password(KEYRING_SERVICE, variable, value)
        except Exception as exc:
            from avo.exceptions import CredentialError

            raise CredentialError(
                f"the OS keyring refused to store {variable} ({type(exc).__name__}); "
                "unlock it, or store the key in the file with --no-keyring",
            ) from None
        pairs.pop(variable, None)
        held = sorted({*held, variable})
    else:
        pairs[variable] = value
        held = [name for name in held if name != variable]
    _write(path, pairs, held)
    return path


def remove_credential(variable: str, environ: Mapping[str, str] | None = None) -> bool:
    """Forget the stored ``variable`` (file and keyring); False when none was stored."""
    pairs, held = _read(environ)
    if variable not in pairs and variable not in held:
        return False
    if variable in held:
        ring = keyring_module()
        if ring is not None:
            with contextlib.suppress(Exception):  # already gone from the keyring
                ring.delete_password(KEYRING_SERVICE, variable)
    pairs.pop(variable, None)
    _write(_path(environ), pairs, [name for name in held if name != variable])
    return True


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
    "KEYRING_SERVICE",
    "credentials_path",
    "keyring_module",
    "load_credentials",
    "remove_credential",
    "store_credential",
    "stored_where",
    "with_credentials",
]
