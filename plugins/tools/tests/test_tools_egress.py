"""SSRF suite for the egress policy and web_fetch.

No test touches the internet: refusals use an injected resolver (no DNS), and
the fetch tests talk to HTTP servers on 127.0.0.1 that the policy explicitly
allows — only that one address — with ``allow_networks``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from avo.exceptions import ToolExecutionError
from avo_tools.egress import EgressPolicy, fetch, parse_host_address, parse_ipv4_loose
from avo_tools.errors import EgressDeniedError
from avo_tools.web_tools import parse_duckduckgo_html, web_fetch_tool, web_search_tool

DNS = {
    "public.example": ["93.184.215.14"],
    "rebind-to-loopback.example": ["127.0.0.1"],
    "rebind-to-metadata.example": ["169.254.169.254"],
    "mixed.example": ["93.184.215.14", "10.1.2.3"],
    "v6-mapped.example": ["::ffff:127.0.0.1"],
    "127.0.0.1.nip.io": ["127.0.0.1"],
}


async def fake_resolver(host: str, port: int) -> list[str]:
    if host not in DNS:
        raise OSError(f"no such host {host}")
    return DNS[host]


POLICY = EgressPolicy(resolver=fake_resolver)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://2130706433/",  # decimal
        "http://0x7f000001/",  # hex
        "http://0177.0.0.1/",  # octal
        "http://0177.0000.0000.0001/",
        "http://127.1/",  # short form
        "http://0x7f.1/",
        "http://127.0.0.1./",  # trailing dot
        "http://[::1]/",
        "http://[0:0:0:0:0:0:0:1]/",
        "http://[::ffff:127.0.0.1]/",  # IPv4-mapped, dotted
        "http://[::ffff:7f00:1]/",  # IPv4-mapped, hex
        "http://[::ffff:a9fe:a9fe]/",  # mapped 169.254.169.254
        "http://[::127.0.0.1]/",  # IPv4-compatible
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of the metadata address
        "http://[2002:7f00:1::]/",  # 6to4 of loopback
        "http://[fe80::1%25eth0]/",  # link-local with zone id
        "http://[fd00:ec2::254]/",  # AWS IPv6 metadata (unique local)
        "http://169.254.169.254/latest/meta-data/",
        "http://2852039166/",  # 169.254.169.254 in decimal
        "http://0xa9fea9fe/",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.0.1/",
        "http://100.64.0.1/",  # CGNAT
        "http://100.100.100.200/",  # Alibaba metadata (CGNAT)
        "http://224.0.0.1/",  # multicast
        "http://[ff02::1]/",
        "http://240.0.0.1/",  # reserved
        "http://255.255.255.255/",
        "http://0.0.0.0/",
        "http://0/",
        "http://[::]/",
        "http://localhost/",
        "http://LOCALHOST:8080/",
        "http://foo.localhost/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://metadata/",
        "http://rebind-to-loopback.example/",
        "http://rebind-to-metadata.example/latest/meta-data/",
        "http://mixed.example/",  # one private answer is enough to refuse
        "http://v6-mapped.example/",
        "http://127.0.0.1.nip.io/",
        "http://\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3/",  # circled "localhost"
        "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",  # fullwidth 127.0.0.1
        "http://127\u30020\u30020\u30021/",  # ideographic full stops
        "http://169\uff0e254\uff0e169\uff0e254/",  # fullwidth full stops
        "http://unresolvable.example/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "ftp://public.example/",
        "http://user:pass@public.example/",
        "http:///nohost",
    ],
)
async def test_ssrf_targets_are_refused(url: str) -> None:
    decision = await POLICY.check(url)
    assert not decision.allowed, url
    assert decision.reason
    with pytest.raises(EgressDeniedError, match="egress refused"):
        await POLICY.require(url)


async def test_public_destination_is_allowed() -> None:
    decision = await POLICY.check("https://public.example/page")
    assert decision.allowed and decision.addresses == ("93.184.215.14",)
    assert (await POLICY.check("http://93.184.215.14/")).allowed


def test_loose_ipv4_spellings() -> None:
    assert str(parse_ipv4_loose("2130706433")) == "127.0.0.1"
    assert str(parse_ipv4_loose("0x7f.0.0.1")) == "127.0.0.1"
    assert str(parse_ipv4_loose("017700000001")) == "127.0.0.1"
    assert str(parse_ipv4_loose("10.1")) == "10.0.0.1"
    assert parse_ipv4_loose("256.1.1.1") is None
    assert parse_ipv4_loose("example") is None
    assert parse_host_address("public.example") is None


# ------------------------------------------------------------ loopback servers
class _Recorder(BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}
    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        status, headers, body = self.routes.get(self.path, (404, {}, b"not found"))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _server() -> Iterator[tuple[str, type[_Recorder]]]:
    handler = type("Handler", (_Recorder,), {"routes": {}, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def server_a() -> Iterator[tuple[str, type[_Recorder]]]:
    yield from _server()


@pytest.fixture
def server_b() -> Iterator[tuple[str, type[_Recorder]]]:
    yield from _server()


# The one explicitly allowed test address; everything else private stays refused.
LOOPBACK_TEST_POLICY = EgressPolicy(resolver=fake_resolver, allow_networks=("127.0.0.1/32",))


async def test_web_fetch_reads_an_allowed_loopback_server(server_a) -> None:  # type: ignore[no-untyped-def]
    base, handler = server_a
    handler.routes["/page"] = (200, {"Content-Type": "text/plain"}, b"hello " * 10_000)
    tool = web_fetch_tool(policy=LOOPBACK_TEST_POLICY)
    out = await tool.invoke({"url": f"{base}/page", "max_bytes": 100})
    assert out["status_code"] == 200
    assert out["content"] == ("hello " * 10_000)[:100]
    assert out["truncated"] is True


async def test_default_policy_refuses_the_loopback_server(server_a) -> None:  # type: ignore[no-untyped-def]
    base, handler = server_a
    handler.routes["/page"] = (200, {}, b"should never be read")
    with pytest.raises(ToolExecutionError, match="egress refused"):
        await web_fetch_tool(policy=EgressPolicy(resolver=fake_resolver)).invoke(
            {"url": f"{base}/page"}
        )
    assert handler.seen == []


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://127.0.0.2/",
        "http://localhost/",
        "http://rebind-to-loopback.example/",
        "http://0x0a000001/",
        "file:///etc/passwd",
    ],
)
async def test_redirects_into_private_space_are_refused(server_a, location: str) -> None:  # type: ignore[no-untyped-def]
    base, handler = server_a
    handler.routes["/hop"] = (302, {"Location": location}, b"")
    with pytest.raises(EgressDeniedError, match="egress refused"):
        await fetch(f"{base}/hop", policy=LOOPBACK_TEST_POLICY)
    assert [s["path"] for s in handler.seen] == ["/hop"]


async def test_cross_origin_redirect_drops_caller_headers(server_a, server_b) -> None:  # type: ignore[no-untyped-def]
    base_a, handler_a = server_a
    base_b, handler_b = server_b
    handler_a.routes["/same"] = (302, {"Location": "/final"}, b"")
    handler_a.routes["/final"] = (200, {}, b"a")
    handler_a.routes["/cross"] = (307, {"Location": f"{base_b}/final"}, b"")
    handler_b.routes["/final"] = (200, {}, b"b")
    headers = {"Authorization": "Bearer secret", "X-Api-Key": "k", "User-Agent": "avo-test"}

    same = await fetch(f"{base_a}/same", policy=LOOPBACK_TEST_POLICY, headers=headers)
    assert same.body == b"a" and same.redirects == (f"{base_a}/final",)
    assert handler_a.seen[-1]["authorization"] == "Bearer secret"

    cross = await fetch(f"{base_a}/cross", policy=LOOPBACK_TEST_POLICY, headers=headers)
    assert cross.body == b"b" and cross.final_url == f"{base_b}/final"
    final = handler_b.seen[-1]
    assert "authorization" not in final and "x-api-key" not in final
    assert final["user-agent"] == "avo-test"


async def test_redirect_loops_stop(server_a) -> None:  # type: ignore[no-untyped-def]
    base, handler = server_a
    handler.routes["/loop"] = (302, {"Location": "/loop"}, b"")
    with pytest.raises(EgressDeniedError, match="too many redirects"):
        await fetch(f"{base}/loop", policy=LOOPBACK_TEST_POLICY)


class _Search:
    def __init__(self) -> None:
        self.queries: list[tuple[str, int]] = []

    async def search(self, query: str, *, max_results: int) -> list[dict[str, str]]:
        self.queries.append((query, max_results))
        return [
            {"title": f"r{i}", "url": f"https://e.example/{i}", "snippet": ""} for i in range(9)
        ]


async def test_web_search_uses_injected_client() -> None:
    client = _Search()
    out = await web_search_tool(client=client).invoke({"query": "avo runtime", "max_results": 3})
    assert client.queries == [("avo runtime", 3)]
    assert [r["title"] for r in out["results"]] == ["r0", "r1", "r2"]


def test_duckduckgo_html_parsing() -> None:
    page = (
        '<a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg='
        'https%3A%2F%2Fexample.org%2Fdoc&amp;rut=x">Example <b>Doc</b></a>'
        '<a class="result__snippet" href="x">A &amp; B</a>'
    )
    assert parse_duckduckgo_html(page) == [
        {"title": "Example Doc", "url": "https://example.org/doc", "snippet": "A & B"}
    ]


async def test_web_fetch_rejects_non_http_schemes_at_validation() -> None:
    with pytest.raises(Exception, match="url must be http or https"):
        await web_fetch_tool(policy=POLICY).invoke({"url": "file:///etc/passwd"})


def test_connection_is_pinned_to_the_checked_address() -> None:
    from avo_tools.egress import _pin

    url, host, ext = _pin("https://public.example:8443/a?b=1", "93.184.215.14")
    assert url == "https://93.184.215.14:8443/a?b=1"
    assert host == "public.example:8443"
    assert ext == {"sni_hostname": "public.example"}
    url, host, ext = _pin("http://v6.example/x", "2606:2800:220:1::1")
    assert url == "http://[2606:2800:220:1::1]/x" and host == "v6.example" and ext == {}
    url, host, ext = _pin("https://b\u00fccher.example/", "93.184.215.14")
    assert host == "xn--bcher-kva.example" and ext == {"sni_hostname": "xn--bcher-kva.example"}
