"""Settings of the ``command`` and ``http`` hooks (validated by compose)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

EventName = Literal["pre_tool_use", "post_tool_use", "stop", "notification"]


class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        default=None, min_length=1, description="how reasons and faults name this hook"
    )
    events: list[EventName] = Field(default_factory=lambda: ["pre_tool_use"])
    tools: list[str] = Field(
        default_factory=list, description="tool-name globs the hook is fired for (default: all)"
    )
    timeout: float = Field(default=10.0, gt=0, le=600, description="seconds")


class CommandHookSettings(_Common):
    """``{name = "command", settings = {command = ["./guard.sh"], timeout = 5}}``.

    ``env`` adds variables (``${VAR}`` is expanded from the environment);
    secret-named variables of the environment (``*_KEY``, ``*_TOKEN``,
    ``*_SECRET``, ``*_PASSWORD``) are not passed on unless listed in ``pass_env``.
    """

    command: list[str] | str
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: list[str] = Field(default_factory=list)

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: list[str] | str) -> list[str] | str:
        if not value or (isinstance(value, str) and not value.strip()):
            raise ValueError("command must name an executable")
        return value


class HttpHookSettings(_Common):
    """``{name = "http", settings = {url = "https://hooks.example/avo", timeout = 3}}``.

    ``headers`` values may use ``${VAR}`` (expanded from the environment, masked
    in every message).
    """

    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https:// (got {value!r})")
        return value


__all__ = ["CommandHookSettings", "EventName", "HttpHookSettings"]
