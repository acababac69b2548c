"""Shared helpers for the kernel tests."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from avo import FunctionTool, ModelResponse, ToolCall


class EchoArgs(BaseModel):
    """Arguments of the echo tool."""

    text: str = ""
    n: int = 0


def _call(name: str = "echo", call_id: str | None = None, **arguments: Any) -> ModelResponse:
    kwargs: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id is not None:
        kwargs["tool_call_id"] = call_id
    return ModelResponse(tool_call=ToolCall(**kwargs))


def _answer(text: str = "done", **usage: int) -> ModelResponse:
    if usage:
        return ModelResponse.model_validate({"content": text, "usage": usage})
    return ModelResponse(content=text)


@pytest.fixture
def call() -> Any:
    """Build a scripted response asking for one tool call: ``call("echo", n=1)``."""
    return _call


@pytest.fixture
def answer() -> Any:
    """Build a scripted final answer: ``answer("done", input_tokens=3)``."""
    return _answer


@pytest.fixture
def effects() -> list[dict[str, Any]]:
    """What the echo tool was called with."""
    return []


@pytest.fixture
def echo_tool(effects: list[dict[str, Any]]) -> FunctionTool[EchoArgs]:
    """A tool that records its arguments and echoes them."""

    def run(args: EchoArgs) -> dict[str, Any]:
        effects.append(args.model_dump())
        return {"echo": args.text, "n": args.n}

    return FunctionTool(
        name="echo", description="Echo the text.", arguments_model=EchoArgs, function=run
    )


class Waits:
    """An injectable ``sleep`` for AgentRuntime: records each wait instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def waits() -> Waits:
    """A recording ``sleep``: ``AgentRuntime(..., sleep=waits)``; ``waits.delays``."""
    return Waits()
