"""LangChainProvider: any LangChain chat model as an avo model provider.

Each request's transcript goes to the chat model as LangChain messages (see
:mod:`avo_langchain.messages`) with the run's tools bound through the model's
own ``bind_tools`` (so each integration formats them for its vendor); the
``AIMessage`` that comes back becomes the run's ``ModelResponse``: the answer,
or the tool calls (LangChain's call ids kept as the calls' ``vendor_id``),
with token usage and finish reason when the integration reports them.

``stream`` streams the answer's text as it arrives and gives the tool calls
once the model has finished them (LangChain assembles the fragments).

A chat model that cannot call tools (no ``bind_tools``) is sent the
transcript alone; the run then gets answers, never tool calls. An exception
from the chat model becomes a ``ProviderError``: retryable unless it is a
programming error (``TypeError``, ``ValueError``, ``NotImplementedError``...).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk

from avo.exceptions import AvoError, ConfigError, ProviderError
from avo.models import ModelRequest, ModelResponse
from avo.providers.streaming import ModelChunk
from avo_langchain.messages import from_langchain_ai_message, to_langchain_messages

log = logging.getLogger(__name__)
_NOT_RETRYABLE = (TypeError, ValueError, NotImplementedError, AttributeError, KeyError)


def _model_name(chat_model: BaseChatModel) -> str:
    for field in ("model_name", "model", "model_id"):
        value = getattr(chat_model, field, None)
        if isinstance(value, str) and value:
            return value
    return type(chat_model).__name__


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            item if isinstance(item, str) else str(item.get("text", ""))
            for item in content
            if isinstance(item, str) or (isinstance(item, dict) and item.get("type") == "text")
        )
    return ""


class LangChainProvider:
    """An avo provider that asks a LangChain ``BaseChatModel``."""

    name = "langchain"

    def __init__(self, chat_model: BaseChatModel, *, model: str | None = None) -> None:
        if not isinstance(chat_model, BaseChatModel):
            raise ConfigError(
                f"LangChainProvider needs a LangChain BaseChatModel, got "
                f"{type(chat_model).__name__}"
            )
        self.chat_model = chat_model
        self.model = model or _model_name(chat_model)
        self._warned = False

    def _runnable(self, request: ModelRequest) -> Any:
        if not request.tools:
            return self.chat_model
        tools = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                },
            }
            for tool in request.tools
        ]
        try:
            return self.chat_model.bind_tools(tools)
        except NotImplementedError:
            if not self._warned:
                log.warning(
                    "LangChain chat model %s cannot call tools; sending it the transcript only",
                    self.model,
                )
                self._warned = True
            return self.chat_model

    def _failed(self, exc: Exception) -> ProviderError:
        error = ProviderError(
            f"LangChain chat model {self.model!r} failed: {type(exc).__name__}: {exc}",
            retryable=not isinstance(exc, _NOT_RETRYABLE),
        )
        error.__cause__ = exc
        return error

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """The chat model's answer or tool calls for ``request``."""
        runnable = self._runnable(request)
        try:
            message = await runnable.ainvoke(to_langchain_messages(request.messages))
        except AvoError:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc
        return from_langchain_ai_message(message)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """The answer's text as it arrives, then the tool calls, usage and finish reason."""
        runnable = self._runnable(request)
        total: AIMessageChunk | None = None
        try:
            async for chunk in runnable.astream(to_langchain_messages(request.messages)):
                if not isinstance(chunk, AIMessageChunk):
                    continue
                total = chunk if total is None else total + chunk
                text = _text(chunk.content)
                if text:
                    yield ModelChunk(text=text)
        except AvoError:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc
        if total is None:
            raise ProviderError(f"LangChain chat model {self.model!r} streamed nothing")
        response = from_langchain_ai_message(total)
        for index, call in enumerate(response.tool_calls):
            yield ModelChunk(
                tool_call_delta={
                    "index": index,
                    "id": call.vendor_id,
                    "name": call.name,
                    "arguments": json.dumps(call.arguments),
                }
            )
        reason = response.finish_reason.value if response.finish_reason else None
        yield ModelChunk(finish_reason=reason, usage=response.usage)

    def __repr__(self) -> str:
        return f"LangChainProvider({self.model!r})"


def load_chat_model(
    path: str, *, model: str | None = None, kwargs: Mapping[str, Any] | None = None
) -> BaseChatModel:
    """Build a chat model from ``"package.module:Name"`` (a class or a factory function)."""
    import importlib

    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ConfigError(
            f"chat_model {path!r} is not an import path; write 'package.module:ClassName' "
            "(e.g. 'langchain_openai:ChatOpenAI')",
            key="provider.settings.chat_model",
        )
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"chat_model {path!r}: cannot import {module_name!r} ({exc}); install the "
            "LangChain integration that provides it",
            key="provider.settings.chat_model",
        ) from exc
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ConfigError(
                f"chat_model {path!r}: {module_name!r} has no {attribute!r}",
                key="provider.settings.chat_model",
            )
    arguments = dict(kwargs or {})
    if model:
        arguments.setdefault("model", model)
    try:
        built = target(**arguments)
    except Exception as exc:
        raise ConfigError(
            f"chat_model {path!r} refused its settings ({type(exc).__name__}: {exc}); fix "
            "[provider.settings] kwargs",
            key="provider.settings.kwargs",
        ) from exc
    if not isinstance(built, BaseChatModel):
        raise ConfigError(
            f"chat_model {path!r} built a {type(built).__name__}, not a LangChain chat model",
            key="provider.settings.chat_model",
        )
    return built


__all__ = ["LangChainProvider", "load_chat_model"]
