"""The one outbound boundary for model-supplied URLs (web_fetch and any future client).

:class:`EgressPolicy` refuses loopback, private, link-local, CGNAT, multicast,
reserved and unspecified destinations in every IPv4/IPv6 spelling — dotted,
decimal (``2130706433``), octal (``0177.0.0.1``), hex (``0x7f000001``),
shortened (``127.1``), IPv4-mapped / IPv4-compatible / 6to4 / NAT64 / Teredo
IPv6 (each embedded IPv4 address is classified too) — a fixed hostname
blocklist (``localhost``, cloud metadata hosts), and any hostname that resolves
to one of those (every answer is checked, so one private answer refuses).

Decisions are returned as :class:`EgressDecision`, never thrown; the fetcher
raises :class:`~avo_tools.errors.EgressDeniedError`. Every redirect hop is
checked again before it is followed, and on a cross-origin redirect every
caller-supplied header except ``User-Agent`` is dropped.

The connection is pinned to the address that was validated: the request goes
to the checked IP with the original ``Host`` header (and, for https, the
original name as TLS SNI / certificate hostname), so a DNS answer that changes
between the check and the connect (rebinding) cannot redirect it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from avo_tools.errors import EgressDeniedError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``async resolver(host, port) -> [address, ...]`` (injectable; tests never use DNS)."""

BLOCKED_HOSTNAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "ip6-loopback",
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)
BLOCKED_SUFFIXES = (".localhost", ".internal", ".local")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the system resolver (getaddrinfo), every address family."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def parse_ipv4_loose(text: str) -> ipaddress.IPv4Address | None:
    """Parse every inet_aton spelling: ``127.1``, ``0x7f.1``, ``0177.0.0.1``, ``2130706433``."""
    if not text or text.endswith(".."):
        return None
    parts = text[:-1].split(".") if text.endswith(".") else text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        lowered = part.lower()
        try:
            if lowered.startswith("0x"):
                number = int(lowered[2:] or "0", 16)
            elif len(lowered) > 1 and lowered.startswith("0"):
                number = int(lowered, 8)
            else:
                if not lowered.isdigit():
                    return None
                number = int(lowered, 10)
        except ValueError:
            return None
        numbers.append(number)
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = 0
    for n in leading:
        value = value * 256 + n
    value = value * 256 ** (5 - len(numbers)) + last
    return ipaddress.IPv4Address(value)


def parse_host_address(host: str) -> IPAddress | None:
    """The IP address a URL host spells, in any spelling, or None for a name."""
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if "%" in text:  # zone id: fe80::1%eth0 / fe80::1%25eth0
        text = text.split("%", 1)[0]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            return None
    return parse_ipv4_loose(text)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries (mapped, compatible, 6to4, NAT64, Teredo)."""
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    packed = int(address)
    if 1 < packed < 2**32:  # IPv4-compatible ::a.b.c.d (deprecated but routable by some stacks)
        found.append(ipaddress.IPv4Address(packed))
    if address in _NAT64 or address in _NAT64_LOCAL:
        found.append(ipaddress.IPv4Address(packed & 0xFFFFFFFF))
    return found


def classify_address(address: IPAddress) -> str | None:
    """Why ``address`` is not a public destination, or None when it is."""
    checks: list[tuple[bool, str]] = [
        (address.is_loopback, "loopback"),
        (address.is_unspecified, "unspecified"),
        (address.is_link_local, "link-local (cloud metadata lives here)"),
        (address.is_multicast, "multicast"),
        (isinstance(address, ipaddress.IPv4Address) and address in _CGNAT, "CGNAT (100.64/10)"),
        (address.is_private, "private"),
        (address.is_reserved, "reserved"),
        (not address.is_global, "not globally routable"),
    ]
    for failed, reason in checks:
        if failed:
            return reason
    if isinstance(address, ipaddress.IPv6Address):
        for inner in embedded_ipv4(address):
            inner_reason = classify_address(inner)
            if inner_reason is not None:
                return f"embeds {inner}, which is {inner_reason}"
    return None


@dataclass(frozen=True)
class EgressDecision:
    """The outcome of checking one URL: ``allowed`` or a ``reason`` it was refused."""

    url: str
    allowed: bool
    reason: str = ""
    addresses: tuple[str, ...] = ()


def _networks(items: Iterable[str]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in items)


@dataclass(frozen=True)
class EgressPolicy:
    """Which outbound URLs are allowed. Defaults refuse everything non-public.

    ``allow_networks`` explicitly allows listed addresses/networks when the URL
    spells the address literally (a test server on one loopback address, an
    internal mirror by IP). It never applies to hostnames: a name resolving
    into private space is exactly the DNS-rebinding attack, so it stays refused.
    """

    resolver: Resolver = system_resolver
    allow_networks: tuple[str, ...] = ()
    allowed_schemes: frozenset[str] = frozenset({"http", "https"})
    blocked_hostnames: frozenset[str] = BLOCKED_HOSTNAMES
    max_redirects: int = 5
    _allowed: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_allowed", _networks(self.allow_networks))

    def _explicitly_allowed(self, address: IPAddress) -> bool:
        return any(address.version == net.version and address in net for net in self._allowed)

    def _address_reason(self, address: IPAddress) -> str | None:
        if self._explicitly_allowed(address):
            return None
        return classify_address(address)

    async def check(self, url: str) -> EgressDecision:
        """Decide one URL (scheme, host spelling, blocklist, every resolved address)."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            return EgressDecision(url, False, f"malformed URL: {exc}")
        scheme = parts.scheme.lower()
        if scheme not in self.allowed_schemes:
            return EgressDecision(url, False, f"scheme {scheme or '(none)'!r} is not allowed")
        host = (parts.hostname or "").lower()
        if not host.isascii():
            # IDNA (with NFKC nameprep), as the HTTP client will: fullwidth digits,
            # ideographic dots and look-alike letters become their ASCII forms first.
            try:
                host = host.encode("idna").decode("ascii").lower()
            except UnicodeError:
                return EgressDecision(url, False, f"invalid international hostname {host!r}")
        host = host.rstrip(".")
        if not host:
            return EgressDecision(url, False, "URL has no host")
        if parts.username or parts.password:
            return EgressDecision(url, False, "URLs with credentials are not allowed")
        literal = parse_host_address(host)
        if literal is not None:
            reason = self._address_reason(literal)
            if reason is not None:
                return EgressDecision(url, False, f"destination {host} is {reason}")
            return EgressDecision(url, True, addresses=(str(literal),))
        if host in self.blocked_hostnames or host.endswith(BLOCKED_SUFFIXES):
            return EgressDecision(url, False, f"host {host!r} is on the blocklist")
        default_port = 443 if scheme == "https" else 80
        try:
            answers = await self.resolver(host, port or default_port)
        except OSError as exc:
            return EgressDecision(url, False, f"cannot resolve {host!r}: {exc}")
        if not answers:
            return EgressDecision(url, False, f"{host!r} resolved to no address")
        for answer in answers:
            address = parse_host_address(answer)
            if address is None:
                return EgressDecision(url, False, f"{host!r} resolved to a non-address {answer!r}")
            reason = classify_address(address)
            if reason is not None:
                return EgressDecision(
                    url, False, f"{host!r} resolves to {answer}, which is {reason}"
                )
        return EgressDecision(url, True, addresses=tuple(answers))

    async def require(self, url: str) -> EgressDecision:
        """Like :meth:`check` but raise EgressDeniedError when refused."""
        decision = await self.check(url)
        if not decision.allowed:
            raise EgressDeniedError(f"egress refused for {url}: {decision.reason}", url=url)
        return decision


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, (parts.hostname or "").lower(), port


def _pin(url: str, address: str) -> tuple[str, str, dict[str, Any]]:
    """``url`` rewritten to connect to ``address``; the Host header; TLS extensions."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    literal = f"[{address}]" if ":" in address else address
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    named = f"[{host}]" if ":" in host else host
    host_header = named if parts.port is None else f"{named}:{parts.port}"
    extensions: dict[str, Any] = {}
    if parts.scheme.lower() == "https" and parse_host_address(host) is None:
        extensions["sni_hostname"] = host
    return parts._replace(netloc=netloc).geturl(), host_header, extensions


@dataclass(frozen=True)
class FetchResult:
    """What :func:`fetch` returns: the final URL and the first ``max_bytes`` of the body."""

    url: str
    final_url: str
    status_code: int
    content_type: str
    body: bytes
    truncated: bool
    redirects: tuple[str, ...]


async def fetch(
    url: str,
    *,
    policy: EgressPolicy,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = 16 * 1024,
    timeout_seconds: float = 15.0,
    transport: Any = None,
) -> FetchResult:
    """GET ``url`` through ``policy``: every hop checked, cross-origin headers dropped."""
    import httpx  # lazily: the plugin module must stay cheap to import

    current = url
    request_headers = dict(headers or {})
    hops: list[str] = []
    async with httpx.AsyncClient(
        follow_redirects=False, trust_env=False, timeout=timeout_seconds, transport=transport
    ) as client:
        for _ in range(policy.max_redirects + 1):
            decision = await policy.require(current)
            pinned, host_header, extensions = _pin(current, decision.addresses[0])
            pinned_headers = {**request_headers, "Host": host_header}
            async with client.stream(
                "GET", pinned, headers=pinned_headers, extensions=extensions
            ) as response:
                location = response.headers.get("location")
                if response.is_redirect and location:
                    target = urljoin(current, location)
                    if _origin(target) != _origin(current):
                        request_headers = {
                            k: v for k, v in request_headers.items() if k.lower() == "user-agent"
                        }
                    hops.append(target)
                    current = target
                    continue
                body = bytearray()
                truncated = False
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > max_bytes:
                        truncated = True
                        del body[max_bytes:]
                        break
                return FetchResult(
                    url=url,
                    final_url=current,
                    status_code=response.status_code,
                    content_type=response.headers.get("content-type", ""),
                    body=bytes(body),
                    truncated=truncated,
                    redirects=tuple(hops),
                )
    raise EgressDeniedError(
        f"too many redirects (more than {policy.max_redirects}) fetching {url}", url=url
    )


__all__ = [
    "BLOCKED_HOSTNAMES",
    "EgressDecision",
    "EgressPolicy",
    "FetchResult",
    "Resolver",
    "classify_address",
    "embedded_ipv4",
    "fetch",
    "parse_host_address",
    "parse_ipv4_loose",
    "system_resolver",
]
