"""Where avo keeps the OAuth tokens of remote MCP servers.

One JSON file (``~/.avo/mcp-oauth.json`` beside ``mcp.json``) maps each
server's URL to its record: client registration, access and refresh tokens,
their expiry and scopes. It is written atomically (a temporary file renamed
over it) and readable by its owner only (0600), like avo's other MCP
credentials.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from avo.exceptions import MCPError


class MCPAuthError(MCPError):
    """An MCP server's authorization failed or needs the user."""


class TokenStore:
    """OAuth records by server URL in a JSON file (0600, written atomically); None: memory."""

    def __init__(self, path: Path | str | None) -> None:
        self.path = Path(path) if path is not None else None
        self._memory: dict[str, dict[str, Any]] = {}

    def _load(self) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return self._memory
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise MCPAuthError(f"cannot read MCP OAuth tokens {self.path}: {exc}") from exc
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> dict[str, Any]:
        """The record for ``key`` (empty when none)."""
        record = self._load().get(key)
        return dict(record) if isinstance(record, dict) else {}

    def put(self, key: str, record: Mapping[str, Any]) -> None:
        """Replace the record for ``key``."""
        data = self._load()
        data[key] = dict(record)
        self._save(data)

    def delete(self, key: str) -> bool:
        """Forget ``key``; True when there was a record."""
        data = self._load()
        found = data.pop(key, None) is not None
        if found:
            self._save(data)
        return found

    def _save(self, data: dict[str, dict[str, Any]]) -> None:
        if self.path is None:
            self._memory = data
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".mcp-oauth.", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, sort_keys=True)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def default_token_path(environ: Mapping[str, str] | None = None) -> Path:
    """``~/.avo/mcp-oauth.json`` (``HOME`` from ``environ`` when given), beside mcp.json."""
    home = (environ or {}).get("HOME")
    return (Path(home) if home else Path.home()) / ".avo" / "mcp-oauth.json"


__all__ = ["MCPAuthError", "TokenStore", "default_token_path"]
