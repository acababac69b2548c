"""AvoLangChainModel: any avo model provider as a LangChain chat model.

Wrap a provider (``FakeProvider``, one an ``avo.toml`` composes, an
``avo-providers`` adapter) and use it wherever LangChain takes a
``BaseChatModel``: chains, agents, ``bind_tools``, ``with_structured_output``,
streaming, callbacks and tracing.

Each call sends the provider one ``ModelRequest`` holding the converted
messages (see :mod:`avo_langchain.messages`), the bound tools (as LangChain
would show them to a vendor) and, for ``with_structured_output(method=
"json_schema")``, the schema as ``output_schema``; the response comes back as
an ``AIMessage`` with its tool calls, token usage and finish reason.

What the wrapper does itself: ``stop`` sequences cut the answer at the first
one; ``timeout`` bounds each call; ``max_retries`` retries a provider error
that says trying again can help (``ProviderError.retryable``), waiting what
the vendor asked or a short backoff. ``temperature`` and ``max_tokens`` are
reported to LangChain's tracing; sampling itself is the avo provider's own
setting (its ``[provider.settings]``), because an avo request does not carry it.
``tool_choice``: a tool's name (or ``{"function": {"name": ...}}``) sends only
that tool, ``"none"`` sends none; ``"auto"``, ``"any"`` and ``"required"``
send all of them and the model chooses.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Sequence
from operator import itemgetter
from typing import Any, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, model_validator

from avo.exceptions import ConfigError, ProviderError
from avo.models import ModelRequest, ModelResponse, ToolMetadata, new_id
from avo_langchain.messages import (
    from_langchain_messages,
    to_langchain_ai_message,
    usage_metadata,
)
from avo_langchain.tools import metadata_from_lc

T = TypeVar("T")
_PASSED_THROUGH = ("tools", "tool_choice", "output_schema", "model")


class _LoopThread:
    """One event loop in a daemon thread, for the sync API (``invoke``, ``stream``).

    Every sync call of every model runs its coroutine here, so a provider that
    keeps connections (bound to the loop that opened them) sees one loop.
    """

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def run(cls, coroutine: Coroutine[Any, Any, T]) -> T:
        with cls._lock:
            if cls._loop is None:
                cls._loop = asyncio.new_event_loop()
                threading.Thread(
                    target=cls._loop.run_forever, name="avo-langchain", daemon=True
                ).start()
        return asyncio.run_coroutine_threadsafe(coroutine, cls._loop).result()


def _cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first stop sequence it contains."""
    ends = [text.find(s) for s in stop if s and s in text]
    return text[: min(ends)] if ends else text


def _chosen(tools: list[ToolMetadata], choice: Any) -> list[ToolMetadata]:
    """The tools ``tool_choice`` leaves in the request."""
    if choice in (None, "auto", "any", "required", True):
        return tools
    if choice in ("none", False):
        return []
    name = choice
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
    for tool in tools:
        if tool.name == name:
            return [tool]
    raise ConfigError(
        f"tool_choice {choice!r} names no bound tool; choose one of "
        f"{[t.name for t in tools]}, 'auto', 'any', 'required' or 'none'"
    )


class AvoLangChainModel(BaseChatModel):
    """An avo ``ModelProvider`` as a LangChain chat model.

    ``AvoLangChainModel(provider=FakeProvider([...]))``; ``model`` names the
    model in traces (default: the provider's ``model`` attribute).
    """

    model_config = ConfigDict(populate_by_name=True, arbitrary_types_allowed=True)

    provider: Any = Field(exclude=True)
    """The avo provider: anything with ``async generate(ModelRequest) -> ModelResponse``."""
    model_name: str = Field(default="", alias="model")
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    stop: list[str] | None = None
    max_retries: int = 0
    streaming: bool = False

    @model_validator(mode="after")
    def _check(self) -> AvoLangChainModel:
        if not callable(getattr(self.provider, "generate", None)):
            raise ConfigError(
                f"AvoLangChainModel needs an avo provider with async generate(request); got "
                f"{type(self.provider).__name__}"
            )
        if self.max_retries < 0:
            raise ConfigError(f"max_retries {self.max_retries} must be 0 or more")
        if not self.model_name:
            found = getattr(self.provider, "model", None) or getattr(self.provider, "name", None)
            self.model_name = str(found or type(self.provider).__name__)
        return self

    @property
    def _llm_type(self) -> str:
        return "avo"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "provider": getattr(self.provider, "name", type(self.provider).__name__),
            "model": self.model_name,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider="avo",
            ls_model_name=str(kwargs.get("model") or self.model_name),
            ls_model_type="chat",
        )
        if self.temperature is not None:
            params["ls_temperature"] = self.temperature
        if self.max_tokens is not None:
            params["ls_max_tokens"] = self.max_tokens
        if stop or self.stop:
            params["ls_stop"] = list(stop or self.stop or [])
        return params

    # ------------------------------------------------------------------ tools

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind LangChain tools, pydantic models, functions or JSON schemas as tools."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            _chosen([metadata_from_lc(t) for t in formatted], tool_choice)  # fail early
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def with_structured_output(  # type: ignore[override]
        self,
        schema: dict[str, Any] | type,
        *,
        method: str = "function_calling",
        include_raw: bool = False,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Answers parsed into ``schema``.

        ``function_calling``: the schema as the one tool the model is offered;
        ``json_schema``: the schema as the request's ``output_schema`` (for
        providers that can ask their vendor for JSON in that shape);
        ``json_mode``: the answer parsed as JSON. ``strict`` is accepted for
        LangChain compatibility; avo providers decide strictness themselves.
        """
        if method == "function_calling":
            return super().with_structured_output(schema, include_raw=include_raw, **kwargs)
        if kwargs:
            raise ConfigError(f"with_structured_output got unknown arguments {sorted(kwargs)}")
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        parser: Runnable[Any, Any] = (
            PydanticOutputParser(pydantic_object=schema)  # type: ignore[arg-type]
            if is_model
            else JsonOutputParser()
        )
        if method == "json_schema":
            llm: Runnable[Any, Any] = self.bind(output_schema=convert_to_json_schema(schema))
        elif method == "json_mode":
            llm = self
        else:
            raise ConfigError(
                f"structured output method {method!r} is unknown; use function_calling, "
                "json_schema or json_mode"
            )
        if not include_raw:
            return llm | parser
        with_parsed = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        ).with_fallbacks(
            [RunnablePassthrough.assign(parsed=lambda _: None)], exception_key="parsing_error"
        )
        return RunnableMap(raw=llm) | with_parsed

    # ------------------------------------------------------------------ calls

    def _request(
        self, messages: list[BaseMessage], run_id: Any, kwargs: dict[str, Any]
    ) -> ModelRequest:
        unknown = [k for k in kwargs if k not in _PASSED_THROUGH and not k.startswith("ls_")]
        if unknown:
            raise ConfigError(
                f"AvoLangChainModel got call arguments it cannot send an avo provider: "
                f"{sorted(unknown)}; set them in the provider's settings instead"
            )
        tools = [metadata_from_lc(tool) for tool in kwargs.get("tools") or ()]
        return ModelRequest(
            run_id=str(run_id or f"langchain-{new_id()}"),
            step=1,
            messages=from_langchain_messages(messages),
            tools=_chosen(tools, kwargs.get("tool_choice")),
            output_schema=kwargs.get("output_schema"),
        )

    async def _call(self, request: ModelRequest) -> ModelResponse:
        attempt = 0
        while True:
            try:
                call = self.provider.generate(request)
                if self.timeout:
                    return await asyncio.wait_for(call, self.timeout)  # type: ignore[no-any-return]
                return await call  # type: ignore[no-any-return]
            except TimeoutError as exc:
                error: ProviderError = ProviderError(
                    f"the avo provider did not answer within {self.timeout} s", retryable=True
                )
                error.__cause__ = exc
            except ProviderError as exc:
                error = exc
            if not error.retryable or attempt >= self.max_retries:
                raise error
            wait = error.retry_after if error.retry_after is not None else 0.5 * 2**attempt
            attempt += 1
            await asyncio.sleep(min(wait, 8.0))

    def _result(self, response: ModelResponse, stop: list[str] | None) -> ChatResult:
        message = to_langchain_ai_message(response, model=self.model_name)
        stops = stop or self.stop
        if stops and isinstance(message.content, str):
            message.content = _cut_at_stop(message.content, stops)
        return ChatResult(
            generations=[ChatGeneration(message=message)],
            llm_output={"model_name": self.model_name},
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        run_id = run_manager.run_id if run_manager else None
        response = await self._call(self._request(messages, run_id, kwargs))
        return self._result(response, stop)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        run_id = run_manager.run_id if run_manager else None
        request = self._request(messages, run_id, kwargs)
        return self._result(_LoopThread.run(self._call(request)), stop)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        request = self._request(messages, run_manager.run_id if run_manager else None, kwargs)
        stops = [s for s in (stop or self.stop or []) if s]
        stream = getattr(self.provider, "stream", None)
        if not callable(stream):  # not a streaming provider: the whole answer as one chunk
            result = self._result(await self._call(request), stop)
            chunk = _as_chunk(result.generations[0].message)
            if run_manager and isinstance(chunk.message.content, str):
                await run_manager.on_llm_new_token(chunk.message.content, chunk=chunk)
            yield chunk
            return
        held = ""  # text kept back while it could still be the start of a stop sequence
        keep = max((len(s) for s in stops), default=1) - 1
        async for piece in stream(request):
            text = ""
            if piece.text:
                held += piece.text
                cut = _cut_at_stop(held, stops) if stops else held
                if cut != held:  # a stop sequence: send what comes before it, then end
                    yield await _text_chunk(cut, run_manager)
                    return
                text, held = (held[:-keep], held[-keep:]) if keep else (held, "")
            chunk = _chunk_of(piece, text, self.model_name)
            if chunk is not None:
                if run_manager and text:
                    await run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
        if held:
            yield await _text_chunk(held, run_manager)


async def _text_chunk(
    text: str, run_manager: AsyncCallbackManagerForLLMRun | None
) -> ChatGenerationChunk:
    chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
    if run_manager:
        await run_manager.on_llm_new_token(text, chunk=chunk)
    return chunk


def _chunk_of(piece: Any, text: str, model: str) -> ChatGenerationChunk | None:
    """One avo ``ModelChunk`` as a LangChain chunk (None when it carries nothing)."""
    fields: dict[str, Any] = {"content": text}
    delta = piece.tool_call_delta
    if delta:
        fields["tool_call_chunks"] = [
            {
                "name": delta.get("name"),
                "args": delta.get("arguments"),
                "id": delta.get("id"),
                "index": delta.get("index", 0),
                "type": "tool_call_chunk",
            }
        ]
    if piece.usage is not None:
        fields["usage_metadata"] = usage_metadata(piece.usage)
    if piece.finish_reason:
        fields["response_metadata"] = {"finish_reason": piece.finish_reason, "model_name": model}
    if len(fields) == 1 and not text:
        return None
    return ChatGenerationChunk(message=AIMessageChunk(**fields))


def _as_chunk(message: BaseMessage) -> ChatGenerationChunk:
    """A whole ``AIMessage`` as one stream chunk (its tool calls as chunks)."""
    assert isinstance(message, AIMessage)
    import json

    calls = [
        {
            "name": call["name"],
            "args": json.dumps(call["args"]),
            "id": call["id"],
            "index": index,
            "type": "tool_call_chunk",
        }
        for index, call in enumerate(message.tool_calls)
    ]
    return ChatGenerationChunk(
        message=AIMessageChunk(
            content=message.content,
            tool_call_chunks=calls,
            usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata,
            id=message.id,
        )
    )


__all__ = ["AvoLangChainModel"]
