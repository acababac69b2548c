"""web_fetch and web_search: every outbound URL goes through one EgressPolicy."""

from __future__ import annotations

import html
import re
from typing import Any, Protocol
from urllib.parse import parse_qs, quote_plus, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from avo.models import ToolRisk
from avo.tools import FunctionTool
from avo_tools._build import build_tool
from avo_tools.egress import EgressPolicy, fetch

USER_AGENT = "avo-web-fetch/1.0 (+https://github.com/avo)"


class WebFetchArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, description="http:// or https:// URL")
    max_bytes: int = Field(default=16 * 1024, gt=0, le=1_048_576)
    timeout_seconds: float = Field(default=15.0, gt=0, le=120)

    @field_validator("url")
    @classmethod
    def _http_only(cls, value: str) -> str:
        scheme = urlsplit(value).scheme.lower()
        if scheme not in {"http", "https"}:
            raise ValueError(f"url must be http or https, got scheme {scheme or '(none)'!r}")
        return value


class WebSearchArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=512)
    max_results: int = Field(default=10, gt=0, le=50)


class SearchClient(Protocol):
    """A web search backend (injectable; the default scrapes DuckDuckGo's HTML page)."""

    async def search(self, query: str, *, max_results: int) -> list[dict[str, str]]: ...


_RESULT = re.compile(
    r'<a[^>]+class="result__a"[^>]+href="(?P<href>[^"]+)"[^>]*>(?P<title>.*?)</a>'
    r'(?:.*?class="result__snippet"[^>]*>(?P<snippet>.*?)</a>)?',
    re.DOTALL,
)
_TAGS = re.compile(r"<[^>]+>")


def _clean(fragment: str | None) -> str:
    return html.unescape(_TAGS.sub("", fragment or "")).strip()


class DuckDuckGoSearchClient:
    """Search through DuckDuckGo's HTML endpoint (no API key), through the egress policy."""

    endpoint = "https://html.duckduckgo.com/html/"

    def __init__(self, *, policy: EgressPolicy | None = None, transport: Any = None) -> None:
        self.policy = policy or EgressPolicy()
        self.transport = transport

    async def search(self, query: str, *, max_results: int) -> list[dict[str, str]]:
        """Return up to ``max_results`` ``{title, url, snippet}`` dicts."""
        page = await fetch(
            f"{self.endpoint}?q={quote_plus(query)}",
            policy=self.policy,
            headers={"User-Agent": USER_AGENT},
            max_bytes=1_048_576,
            transport=self.transport,
        )
        return parse_duckduckgo_html(page.body.decode("utf-8", "replace"))[:max_results]


def parse_duckduckgo_html(page: str) -> list[dict[str, str]]:
    """Extract results from a DuckDuckGo HTML results page."""
    results = []
    for match in _RESULT.finditer(page):
        href = html.unescape(match.group("href"))
        target = parse_qs(urlsplit(href).query).get("uddg")
        url = unquote(target[0]) if target else href
        results.append(
            {
                "title": _clean(match.group("title")),
                "url": url,
                "snippet": _clean(match.group("snippet")),
            }
        )
    return results


def web_fetch_tool(
    *, policy: EgressPolicy | None = None, transport: Any = None
) -> FunctionTool[WebFetchArguments]:
    """Fetch a public URL (egress policy checked on every hop)."""
    active = policy or EgressPolicy()

    async def _web_fetch(args: WebFetchArguments) -> dict[str, object]:
        result = await fetch(
            args.url,
            policy=active,
            headers={"User-Agent": USER_AGENT},
            max_bytes=args.max_bytes,
            timeout_seconds=args.timeout_seconds,
            transport=transport,
        )
        return {
            "url": result.url,
            "final_url": result.final_url,
            "status_code": result.status_code,
            "content_type": result.content_type,
            "content": result.body.decode("utf-8", "replace"),
            "truncated": result.truncated,
            "redirects": list(result.redirects),
        }

    return build_tool(
        name="web_fetch",
        argument_kinds={"url": "url"},
        description=(
            "Fetch a public http(s) URL and return its first max_bytes. Private, loopback "
            "and cloud-metadata destinations are refused."
        ),
        arguments_model=WebFetchArguments,
        function=_web_fetch,
        risk=ToolRisk.EXECUTE,
    )


def web_search_tool(*, client: SearchClient | None = None) -> FunctionTool[WebSearchArguments]:
    """Search the web through ``client`` (default: DuckDuckGo HTML)."""
    active: SearchClient = client or DuckDuckGoSearchClient()

    async def _web_search(args: WebSearchArguments) -> dict[str, object]:
        results = await active.search(args.query, max_results=args.max_results)
        return {"query": args.query, "results": list(results)[: args.max_results]}

    return build_tool(
        name="web_search",
        argument_kinds={"query": "text"},
        description="Search the web; returns [{title, url, snippet}].",
        arguments_model=WebSearchArguments,
        function=_web_search,
        risk=ToolRisk.EXECUTE,
    )


__all__ = [
    "DuckDuckGoSearchClient",
    "SearchClient",
    "WebFetchArguments",
    "WebSearchArguments",
    "parse_duckduckgo_html",
    "web_fetch_tool",
    "web_search_tool",
]
