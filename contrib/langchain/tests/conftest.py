"""Fixtures for the avo-langchain tests: LangChain's fake chat model taught to bind tools."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.utils.function_calling import convert_to_openai_tool


def pytest_configure(config: pytest.Config) -> None:
    # langchain-tests brings pytest-benchmark; its one timing test (test_init_time)
    # runs once here, not thousands of rounds (figures belong in benchmarks/).
    if hasattr(config.option, "benchmark_disable"):
        config.option.benchmark_disable = True


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """LangChain's scripted chat model, plus ``bind_tools`` recording what it was shown."""

    bound: ClassVar[list[list[dict[str, Any]]]] = []
    seen: ClassVar[list[list[Any]]] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        self.bound.append(formatted)
        return self.bind(tools=formatted, **kwargs)

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def _stream(self, messages: list[Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Text word by word, then each tool call's arguments in two fragments (as
        vendors stream them), then usage and the finish reason."""
        message = self._generate(messages, *args, **kwargs).generations[0].message
        for token in re.split(r"(\s)", message.content or ""):
            if token:
                yield ChatGenerationChunk(message=AIMessageChunk(content=token))
        for index, call in enumerate(message.tool_calls):
            args = json.dumps(call["args"])
            half = len(args) // 2
            for name, call_id, fragment in (
                (call["name"], call["id"], args[:half]),
                (None, None, args[half:]),
            ):
                piece = {"name": name, "id": call_id, "args": fragment, "index": index}
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", tool_call_chunks=[piece])
                )
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
            )
        )


@pytest.fixture
def fake_chat() -> type[ToolCallingFakeChatModel]:
    ToolCallingFakeChatModel.bound = []
    ToolCallingFakeChatModel.seen = []
    return ToolCallingFakeChatModel
