"""Which sandbox works on this machine: is a Docker engine answering, is ``bwrap`` installed.

Both probes are quick and import nothing heavy: the Docker one opens the
engine's socket (``DOCKER_HOST`` or ``/var/run/docker.sock``) and asks
``GET /_ping`` with a one-second timeout; the bubblewrap one looks for the
``bwrap`` binary. Each returns None when the backend can work, else one line
saying why not and how to fix it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from collections.abc import Mapping
from urllib.parse import urlparse

from avo.exceptions import SandboxError

DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock"
PROBE_TIMEOUT_SECONDS = 1.0


def _ping(sock: socket.socket, host: str) -> bool:
    sock.sendall(f"GET /_ping HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    reply = sock.recv(64)
    return reply.startswith(b"HTTP/") and b" 200" in reply.split(b"\r\n", 1)[0]


def docker_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the docker backend cannot run commands here (None when an engine answers)."""
    env = os.environ if environ is None else environ
    if importlib.util.find_spec("docker") is None:
        return "the docker Python package is missing (pip install 'avo-sandbox[docker]')"
    target = env.get("DOCKER_HOST", "").strip() or f"unix://{DEFAULT_DOCKER_SOCKET}"
    parsed = urlparse(target)
    try:
        if parsed.scheme == "unix":
            path = parsed.path or DEFAULT_DOCKER_SOCKET
            if not os.path.exists(path):
                return f"no Docker engine answers at {target} (the socket does not exist)"
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(PROBE_TIMEOUT_SECONDS)
                sock.connect(path)
                answered = _ping(sock, "docker")
        elif parsed.scheme in ("tcp", "http"):
            address = (parsed.hostname or "127.0.0.1", parsed.port or 2375)
            with socket.create_connection(address, timeout=PROBE_TIMEOUT_SECONDS) as sock:
                answered = _ping(sock, address[0])
        else:
            return f"DOCKER_HOST={target} is not a unix:// or tcp:// address"
    except OSError as exc:
        return f"no Docker engine answers at {target} ({exc.strerror or exc})"
    return None if answered else f"the Docker engine at {target} did not answer /_ping"


def bubblewrap_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the bubblewrap backend cannot run commands here (None when ``bwrap`` is found)."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (e.g. apt-get install bubblewrap)"
    return None


PROBES = {"docker": docker_problem, "bubblewrap": bubblewrap_problem}
"""Backends in order of preference."""


def choose_backend(environ: Mapping[str, str] | None = None) -> str:
    """``docker`` when an engine answers, else ``bubblewrap`` when installed, else SandboxError."""
    reasons = []
    for name, probe in PROBES.items():
        problem = probe(environ)
        if problem is None:
            return name
        reasons.append(f"{name}: {problem}")
    raise SandboxError("no sandbox works on this machine: " + "; ".join(reasons))


__all__ = ["PROBES", "bubblewrap_problem", "choose_backend", "docker_problem"]
