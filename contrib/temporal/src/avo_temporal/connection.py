"""Connect to the Temporal server the settings name; one clear error when it is not there."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from avo.exceptions import EngineError
from avo_temporal.settings import TemporalSettings


def _tls(settings: TemporalSettings) -> Any:
    from temporalio.service import TLSConfig

    if not (settings.tls or settings.tls_cert or settings.tls_ca):
        return False
    if bool(settings.tls_cert) != bool(settings.tls_key):
        raise EngineError(
            "[engine.settings] tls_cert and tls_key go together (mTLS needs both); "
            "give both or neither",
            engine="temporal",
        )

    def read(path: str | None) -> bytes | None:
        return Path(path).read_bytes() if path else None

    return TLSConfig(
        server_root_ca_cert=read(settings.tls_ca),
        client_cert=read(settings.tls_cert),
        client_private_key=read(settings.tls_key),
    )


async def connect(settings: TemporalSettings) -> Any:
    """A ``temporalio`` client for ``settings``; EngineError when the server cannot be reached."""
    from temporalio.client import Client

    try:
        return await Client.connect(
            settings.address,
            namespace=settings.namespace,
            api_key=settings.api_key,
            tls=_tls(settings),
            connect_timeout=timedelta(seconds=settings.connect_timeout_seconds),
        )
    except EngineError:
        raise
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EngineError(
            f"cannot reach the Temporal server at {settings.address} (namespace "
            f"{settings.namespace!r}): {reason}; start one (temporal server start-dev) or set "
            "[engine.settings] address / AVO_TEMPORAL_ADDRESS",
            engine="temporal",
        ) from None


__all__ = ["connect"]
