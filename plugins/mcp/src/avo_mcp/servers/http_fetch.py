"""``python -m avo_mcp.servers.http_fetch``: HTTP GET through the egress policy.

Every URL, and every redirect hop, is checked by avo-tools' ``EgressPolicy``
(the one ``web_fetch`` uses): only http(s), no credentials in URLs, no
loopback/private/link-local/metadata destinations unless ``--allow-network``
names them explicitly.
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from avo.models import ToolRisk
from avo.tools import FunctionTool, ToolRegistry


class FetchArguments(BaseModel):
    """Arguments of ``fetch``."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1)
    max_bytes: int = Field(default=16 * 1024, gt=0, le=1_048_576)
    timeout_seconds: float = Field(default=15.0, gt=0, le=120)


def fetch_tool(allow_networks: tuple[str, ...] = ()) -> FunctionTool[FetchArguments]:
    """The ``fetch`` tool under an egress policy allowing ``allow_networks``."""
    from avo_tools.egress import EgressPolicy

    policy = EgressPolicy(allow_networks=allow_networks)

    async def fetch(args: FetchArguments) -> dict[str, Any]:
        from avo_tools.egress import fetch as egress_fetch

        result = await egress_fetch(
            args.url,
            policy=policy,
            headers={"User-Agent": "avo-mcp-http-fetch/1.0"},
            max_bytes=args.max_bytes,
            timeout_seconds=args.timeout_seconds,
        )
        return {
            "url": result.url,
            "final_url": result.final_url,
            "status_code": result.status_code,
            "content_type": result.content_type,
            "text": result.body.decode("utf-8", errors="replace"),
            "truncated": result.truncated,
        }

    return FunctionTool(
        name="fetch",
        description="GET an http(s) URL (public destinations only) and return its text.",
        arguments_model=FetchArguments,
        function=fetch,
        risk=ToolRisk.INSPECT,
    )


def main(argv: list[str] | None = None) -> int:
    """Serve ``fetch`` on stdio."""
    parser = argparse.ArgumentParser(prog="python -m avo_mcp.servers.http_fetch")
    parser.add_argument(
        "--allow-network",
        action="append",
        default=[],
        metavar="CIDR",
        help="also allow this address/network (e.g. an internal mirror); repeatable",
    )
    args = parser.parse_args(argv)
    from avo_mcp.servers._stdio import serve

    return serve(ToolRegistry([fetch_tool(tuple(args.allow_network))]), name="http_fetch")


if __name__ == "__main__":
    raise SystemExit(main())
