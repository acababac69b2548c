"""Workspace files as MCP resources under ``avo://workspace/<path>``.

Listing walks the workspace in sorted order, skips hidden directories (``.git``,
``.venv``...) and ``__pycache__``, never follows symlinks out of the root, and
stops at :data:`RESOURCE_LIMIT` entries. Reading checks, in this order: the URI
prefix, a null byte, containment of the resolved path in the root (before any
existence check), then that it is a regular file.
"""

from __future__ import annotations

import base64
import mimetypes
import os
from pathlib import Path
from urllib.parse import quote, unquote

from avo_mcp.framing import INVALID_PARAMS, JsonDict

RESOURCE_PREFIX = "avo://workspace/"
RESOURCE_LIMIT = 200
MAX_READ_BYTES = 1024 * 1024
RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for an unknown resource

_SKIP_DIRS = frozenset({"__pycache__", "node_modules"})


class ResourceError(Exception):
    """A resources/read request that cannot be served; carries the JSON-RPC code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _mime_type(path: Path) -> str:
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "text/plain"


class WorkspaceResources:
    """Lists and reads the files of one workspace root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve(strict=True)

    def uri_for(self, path: Path) -> str:
        """The resource URI of a file inside the root."""
        return RESOURCE_PREFIX + quote(path.relative_to(self.root).as_posix(), safe="/")

    def listing(self, limit: int = RESOURCE_LIMIT) -> list[JsonDict]:
        """Up to ``limit`` file resources, in sorted path order."""
        resources: list[JsonDict] = []
        for directory, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS
            )
            for filename in sorted(filenames):
                path = Path(directory) / filename
                if path.is_symlink() or not path.is_file():
                    continue
                rel = path.relative_to(self.root).as_posix()
                resources.append(
                    {
                        "uri": self.uri_for(path),
                        "name": rel,
                        "mimeType": _mime_type(path),
                        "size": path.stat().st_size,
                    }
                )
                if len(resources) >= limit:
                    return resources
        return resources

    def resolve(self, uri: str) -> Path:
        """The file a URI names, or ResourceError."""
        if not isinstance(uri, str) or not uri.startswith(RESOURCE_PREFIX):
            raise ResourceError(
                INVALID_PARAMS, f"unknown resource URI {uri!r}; expected {RESOURCE_PREFIX}<path>"
            )
        rel = unquote(uri[len(RESOURCE_PREFIX) :])
        if "\x00" in rel:
            raise ResourceError(INVALID_PARAMS, f"resource URI {uri!r} contains a null byte")
        if not rel:
            raise ResourceError(INVALID_PARAMS, f"resource URI {uri!r} names no file")
        candidate = (self.root / rel).resolve()
        try:
            candidate.relative_to(self.root)
        except ValueError:
            raise ResourceError(
                INVALID_PARAMS, f"resource URI {uri!r} points outside the workspace"
            ) from None
        if not candidate.is_file():
            raise ResourceError(RESOURCE_NOT_FOUND, f"resource not found: {uri}")
        return candidate

    def read(self, uri: str) -> list[JsonDict]:
        """``contents`` for resources/read: text when UTF-8, else a base64 blob."""
        path = self.resolve(uri)
        with path.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
        if len(data) > MAX_READ_BYTES:
            raise ResourceError(
                INVALID_PARAMS,
                f"resource {uri} is larger than {MAX_READ_BYTES} bytes; use read_file instead",
            )
        content: JsonDict = {"uri": uri, "mimeType": _mime_type(path)}
        try:
            content["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            content["mimeType"] = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            content["blob"] = base64.b64encode(data).decode("ascii")
        return [content]

    @staticmethod
    def templates() -> list[JsonDict]:
        """The one resource template: any workspace file by path."""
        return [
            {
                "uriTemplate": RESOURCE_PREFIX + "{+path}",
                "name": "workspace-file",
                "description": "A file in the workspace, by its path relative to the root.",
            }
        ]


__all__ = [
    "MAX_READ_BYTES",
    "RESOURCE_LIMIT",
    "RESOURCE_NOT_FOUND",
    "RESOURCE_PREFIX",
    "ResourceError",
    "WorkspaceResources",
]
