"""Vendor-shaped answers for :class:`avo.testing.providers.ScriptedHTTPServer`.

Each ``*Wire`` class builds the documented response bodies and stream events of
one wire format (OpenAI Chat Completions and Responses, Anthropic Messages, Gemini
``generateContent``, Ollama ``/api/chat``), including errors with rate-limit
headers, so tests of this package (and of anything built on it) can run a
provider against a real loopback server. Besides a text answer and a tool
call: several tool calls in one turn (``tool_calls``), an answer cut off at
the output limit (``truncated``) and a refusal (``refusal``), each also
streamed. Test-only: imports pytest through :mod:`avo.testing.providers`.
"""

from avo_providers.wire_fakes._anthropic import AnthropicWire
from avo_providers.wire_fakes._common import Call
from avo_providers.wire_fakes._gemini import GeminiWire
from avo_providers.wire_fakes._ollama import OllamaWire
from avo_providers.wire_fakes._openai import OpenAIWire
from avo_providers.wire_fakes._responses import ResponsesWire

__all__ = ["AnthropicWire", "Call", "GeminiWire", "OllamaWire", "OpenAIWire", "ResponsesWire"]
