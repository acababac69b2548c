"""``[engine.settings]`` of the ``temporal`` engine, with the environment over avo.toml.

Every key has a variable that wins over the file (``AVO_TEMPORAL_ADDRESS``,
``AVO_TEMPORAL_NAMESPACE``, ``AVO_TEMPORAL_TASK_QUEUE``, ``AVO_TEMPORAL_API_KEY``,
``AVO_TEMPORAL_TLS``, ``AVO_TEMPORAL_TLS_CERT``, ``AVO_TEMPORAL_TLS_KEY``,
``AVO_TEMPORAL_TLS_CA``, ``AVO_TEMPORAL_CONNECT_TIMEOUT_SECONDS``,
``AVO_TEMPORAL_MODEL_TIMEOUT_SECONDS``, ``AVO_TEMPORAL_HEARTBEAT_SECONDS``).
Bad values raise :class:`~avo.exceptions.ConfigError` naming the key and
what would fix it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from avo.exceptions import ConfigError

DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_TASK_QUEUE = "avo"

ENV_KEYS: dict[str, str] = {
    "address": "AVO_TEMPORAL_ADDRESS",
    "namespace": "AVO_TEMPORAL_NAMESPACE",
    "task_queue": "AVO_TEMPORAL_TASK_QUEUE",
    "api_key": "AVO_TEMPORAL_API_KEY",
    "tls": "AVO_TEMPORAL_TLS",
    "tls_cert": "AVO_TEMPORAL_TLS_CERT",
    "tls_key": "AVO_TEMPORAL_TLS_KEY",
    "tls_ca": "AVO_TEMPORAL_TLS_CA",
    "connect_timeout_seconds": "AVO_TEMPORAL_CONNECT_TIMEOUT_SECONDS",
    "model_timeout_seconds": "AVO_TEMPORAL_MODEL_TIMEOUT_SECONDS",
    "heartbeat_seconds": "AVO_TEMPORAL_HEARTBEAT_SECONDS",
}

_HOST_PORT = re.compile(r"^[A-Za-z0-9._\-\[\]:]+:\d{1,5}$")


class TemporalSettings(BaseModel):
    """Where the Temporal server is and how runs reach the workers."""

    model_config = ConfigDict(extra="forbid")

    address: str = Field(
        default=DEFAULT_ADDRESS, description="host:port of the Temporal frontend (gRPC)."
    )
    namespace: str = Field(default="default", min_length=1, description="Temporal namespace.")
    task_queue: str = Field(
        default=DEFAULT_TASK_QUEUE,
        min_length=1,
        description="Task queue runs are submitted to and workers poll (avo worker --task-queue).",
    )
    api_key: str | None = Field(default=None, description="API key (Temporal Cloud); a secret.")
    tls: bool = Field(default=False, description="Connect with TLS (implied by tls_cert / tls_ca).")
    tls_cert: str | None = Field(
        default=None, description="Client certificate (PEM file) for mTLS."
    )
    tls_key: str | None = Field(default=None, description="Client private key (PEM file) for mTLS.")
    tls_ca: str | None = Field(default=None, description="Server CA certificate (PEM file).")
    connect_timeout_seconds: float = Field(
        default=5.0, gt=0, le=300, description="Give up reaching the server after this long."
    )
    model_timeout_seconds: float = Field(
        default=600.0, gt=0, description="Longest one model call activity may take."
    )
    heartbeat_seconds: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="A worker that stops heartbeating this long is taken for dead: its calls "
        "move to another worker. Raise it when busy workers are taken for dead (a call "
        "retried elsewhere while its first attempt still runs); lower it to notice dead "
        "workers sooner.",
    )

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        if not _HOST_PORT.match(value):
            raise ValueError(f"{value!r} is not host:port (e.g. 127.0.0.1:7233)")
        return value

    @field_validator("tls_cert", "tls_key", "tls_ca")
    @classmethod
    def _pem(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).is_file():
            raise ValueError(f"{value!r} is not a readable file; give the path of a PEM file")
        return value

    def public(self) -> dict[str, Any]:
        """What a run records about its engine: where to reach it, never a secret."""
        return {"address": self.address, "namespace": self.namespace, "task_queue": self.task_queue}


def _env_value(key: str, raw: str) -> Any:
    if key == "tls":
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    return raw


def load_settings(
    settings: Mapping[str, Any] | None, environ: Mapping[str, str] | None
) -> TemporalSettings:
    """``settings`` (``[engine.settings]``) with the ``AVO_TEMPORAL_*`` variables over it."""
    table = dict(settings or {})
    for key, variable in ENV_KEYS.items():
        raw = (environ or {}).get(variable)
        if raw:
            table[key] = _env_value(key, raw)
    try:
        return TemporalSettings.model_validate(table)
    except ValidationError as exc:
        problem = exc.errors()[0]
        key = ".".join(str(part) for part in problem["loc"]) or "settings"
        variable = ENV_KEYS.get(key)
        where = f"[engine.settings] {key}" + (f" (or {variable})" if variable else "")
        known = ", ".join(TemporalSettings.model_fields)
        message = problem["msg"].removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden":
            message = f"unknown key; the temporal engine accepts: {known}"
        elif key.endswith("_seconds"):
            field = TemporalSettings.model_fields[key]
            message += f" (got {problem.get('input')!r}; give seconds, e.g. the default "
            message += f"{field.default:g})"
        raise ConfigError(f"{where}: {message}", key=f"engine.settings.{key}") from None


__all__ = ["DEFAULT_ADDRESS", "DEFAULT_TASK_QUEUE", "ENV_KEYS", "TemporalSettings", "load_settings"]
