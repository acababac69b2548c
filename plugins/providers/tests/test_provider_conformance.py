"""Every shipped adapter passes the kernel's provider conformance suite on loopback HTTP."""

from __future__ import annotations

from typing import Any, ClassVar

from avo.models import TokenUsage
from avo.testing.providers import ProviderConformance, ScriptedResponse
from avo_providers.anthropic import AnthropicProvider
from avo_providers.base_http import MiniMaxConfig, ProviderConfig
from avo_providers.gemini import GeminiProvider
from avo_providers.minimax import MiniMaxProvider
from avo_providers.ollama import OllamaCloudProvider, OllamaProvider
from avo_providers.openai_compatible import OpenAICompatibleProvider
from avo_providers.openai_responses import OpenAIResponsesProvider
from avo_providers.openai_vendors import CerebrasProvider, GroqProvider, OpenRouterProvider
from avo_providers.wire_fakes import (
    AnthropicWire,
    GeminiWire,
    OllamaWire,
    OpenAIWire,
    ResponsesWire,
)


class _WireConformance(ProviderConformance):
    wire: ClassVar[Any]
    provider_class: ClassVar[Any]

    def make_provider(self, base_url: str, api_key: str) -> Any:
        return self.provider_class(ProviderConfig(model="m", api_key=api_key, base_url=base_url))

    def text_response(self, text: str, usage: TokenUsage) -> ScriptedResponse:
        return self.wire.text(text, usage)

    def tool_call_response(self, call_id, name, arguments, usage) -> ScriptedResponse:
        return self.wire.tool_call(call_id, name, arguments, usage)

    def text_stream_response(self, text, usage) -> ScriptedResponse:
        return self.wire.text_stream(text, usage)

    def tool_call_stream_response(self, call_id, name, arguments, usage) -> ScriptedResponse:
        return self.wire.tool_call_stream(call_id, name, arguments, usage)

    def error_response(self, status: int, message: str) -> ScriptedResponse:
        return self.wire.error(status, message)

    def nameless_tool_call_response(self) -> ScriptedResponse:
        return self.wire.tool_call("call_9", None, {}, TokenUsage())

    def tool_calls_response(self, calls, usage) -> ScriptedResponse:
        return self.wire.tool_calls(calls, usage)

    def truncated_response(self, text, usage) -> ScriptedResponse:
        return self.wire.truncated(text, usage)

    def truncated_stream_response(self) -> ScriptedResponse:
        return self.wire.truncated_stream()


class TestOpenAIConformance(_WireConformance):
    vendor = "OpenAI"
    wire = OpenAIWire()
    provider_class = OpenAICompatibleProvider


class TestOpenAIResponsesConformance(_WireConformance):
    vendor = "OpenAI"
    wire = ResponsesWire()
    provider_class = OpenAIResponsesProvider


class TestGroqConformance(_WireConformance):
    vendor = "Groq"
    wire = OpenAIWire()
    provider_class = GroqProvider


class TestCerebrasConformance(_WireConformance):
    vendor = "Cerebras"
    wire = OpenAIWire()
    provider_class = CerebrasProvider


class TestOpenRouterConformance(_WireConformance):
    vendor = "OpenRouter"
    wire = OpenAIWire()
    provider_class = OpenRouterProvider


class TestAnthropicConformance(_WireConformance):
    vendor = "Anthropic"
    wire = AnthropicWire()
    provider_class = AnthropicProvider


class TestGeminiConformance(_WireConformance):
    vendor = "Gemini"
    wire = GeminiWire()
    provider_class = GeminiProvider
    stable_tool_call_ids = False


class TestOllamaConformance(_WireConformance):
    vendor = "Ollama"
    wire = OllamaWire()
    provider_class = OllamaProvider
    stable_tool_call_ids = False


class TestOllamaCloudConformance(_WireConformance):
    vendor = "Ollama Cloud"
    wire = OllamaWire()
    provider_class = OllamaCloudProvider
    stable_tool_call_ids = False


class TestMiniMaxOpenAIConformance(_WireConformance):
    vendor = "MiniMax"
    wire = OpenAIWire()

    def make_provider(self, base_url: str, api_key: str) -> Any:
        config = MiniMaxConfig(model="m", api_key=api_key, base_url=base_url, api_style="openai")
        return MiniMaxProvider(config)


class TestMiniMaxAnthropicConformance(_WireConformance):
    vendor = "MiniMax"
    wire = AnthropicWire()

    def make_provider(self, base_url: str, api_key: str) -> Any:
        config = MiniMaxConfig(model="m", api_key=api_key, base_url=base_url, api_style="anthropic")
        return MiniMaxProvider(config)
