"""Names: model-safe tool names without collisions, and sensible server names.

Providers accept tool names matching ``[A-Za-z0-9_-]{1,64}``; MCP allows more
(``weather.get``, 100-character names). Sanitising can make two tools share a
name (``weather.get`` and ``weather_get``; two long names with the same first
64 characters). :func:`assign_tool_names` resolves that deterministically: a
tool whose name was already model-safe keeps it, every other tool in the clash
gets a suffix derived from a hash of its full name, so the names do not depend
on the order the server lists its tools in, and no tool (or server) is refused.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from pathlib import PurePath
from typing import TypeVar
from urllib.parse import urlsplit

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64

# Launchers whose first argument is not what the server is called.
_LAUNCHERS = frozenset(
    {
        "npx",
        "npm",
        "pnpm",
        "pnpx",
        "yarn",
        "bunx",
        "bun",
        "node",
        "deno",
        "uvx",
        "uv",
        "pipx",
        "python",
        "python3",
        "py",
        "docker",
        "podman",
        "env",
        "sh",
        "bash",
        "exec",
        "run",
        "tool",
        "dlx",
    }
)
_SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".py", ".sh")
K = TypeVar("K", bound=Hashable)
_GENERIC_STEMS = frozenset({"index", "main", "server", "cli", "dist", "build", "__main__"})


def tool_name_for(remote_name: str, prefix: str = "") -> str:
    """A model-safe tool name: ``[A-Za-z0-9_-]{1,64}`` (other characters become ``_``)."""
    return _INVALID_NAME_CHARS.sub("_", f"{prefix}{remote_name}")[:MAX_TOOL_NAME] or "_"


def _suffixed(base: str, full: str, taken: set[str]) -> str:
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()
    for width in range(6, len(digest) + 1, 2):
        candidate = f"{base[: MAX_TOOL_NAME - width - 1]}_{digest[:width]}"
        if candidate not in taken:
            return candidate
    raise AssertionError("sha256 ran out of distinct suffixes")  # pragma: no cover


def assign_tool_names(items: Sequence[tuple[K, str]]) -> dict[K, str]:
    """Model-safe, unique names for ``(key, full_name)`` pairs, independent of their order.

    ``full_name`` is the name with any prefix (``server__tool``). A name that
    sanitising leaves alone keeps it; the others in a clash become
    ``<base>_<hash of the full name>``.
    """
    groups: dict[str, list[tuple[K, str]]] = defaultdict(list)
    for key, full in items:
        groups[tool_name_for(full)].append((key, full))
    names: dict[K, str] = {}
    pending: list[tuple[str, K, str, str]] = []
    for base, group in groups.items():
        if len(group) == 1:
            names[group[0][0]] = base
            continue
        ordered = sorted(group, key=lambda item: (item[1] != base, item[1], repr(item[0])))
        keeper_key, keeper_full = ordered[0]
        if keeper_full == base:
            names[keeper_key] = base
            rest = ordered[1:]
        else:
            rest = ordered
        pending.extend((full, key, base, full) for key, full in rest)
    taken = set(names.values())
    for _, key, base, full in sorted(pending, key=lambda item: (item[0], repr(item[1]))):
        name = _suffixed(base, full, taken)
        taken.add(name)
        names[key] = name
    return names


def default_server_name(command: Iterable[str]) -> str:
    """What to call a stdio server nobody named, from its command line.

    ``npx -y @modelcontextprotocol/server-everything@1.0`` -> ``server-everything``;
    ``uvx mcp-server-time`` -> ``mcp-server-time``; ``python -m avo_mcp.servers.git``
    -> ``git``; ``node build/weather/index.js`` -> ``weather``.
    """
    argv = list(command)
    words: list[str] = []
    skip_value = False
    for i, arg in enumerate(argv):
        if skip_value:
            skip_value = False
            continue
        if arg in ("-m", "--from", "--with", "-p", "--package") and i + 1 < len(argv):
            if arg == "-m":
                return _clean(argv[i + 1].rsplit(".", 1)[-1]) or "mcp-server"
            skip_value = arg != "-m"
            continue
        if arg.startswith("-"):
            continue
        words.append(arg)
    for word in words:
        candidate = _name_from_word(word)
        if candidate:
            return candidate
    return _clean(PurePath(argv[0]).name) if argv else "mcp-server"


def _name_from_word(word: str) -> str:
    path = PurePath(word)
    stem = path.name
    if stem.lower() in _LAUNCHERS or re.fullmatch(r"python3(\.\d+)?", stem.lower()):
        return ""
    if word.startswith("@") or ("/" not in word and "@" in word):
        package = word.split("/", 1)[-1] if word.startswith("@") else word
        return _clean(package.split("@", 1)[0])
    if stem.endswith(_SCRIPT_SUFFIXES):
        stem = stem.rsplit(".", 1)[0]
        parents = [p for p in path.parent.parts if p not in ("/", ".", "..")]
        while stem.lower() in _GENERIC_STEMS and parents:
            stem = parents.pop()
    return _clean(stem)


def _clean(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")


def default_http_server_name(url: str) -> str:
    """``mcp.example.com`` for a remote server, ``localhost-3001`` for a local one."""
    parts = urlsplit(url)
    host = parts.hostname or "mcp-server"
    if host in ("localhost", "127.0.0.1", "::1") and parts.port:
        return f"{'localhost' if host != '::1' else 'ip6-localhost'}-{parts.port}"
    return host


__all__ = [
    "MAX_TOOL_NAME",
    "assign_tool_names",
    "default_http_server_name",
    "default_server_name",
    "tool_name_for",
]
